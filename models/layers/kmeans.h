#pragma once
// Lloyd's k-means with faiss's defaults (what RecBole's NCL asks faiss for): L2 distances,
// initial centroids a seeded random sample of distinct points, at most 256 points per centroid
// used for training (a seeded random subset beyond that), 25 iterations, and an empty cluster
// refilled by splitting a populated one (faiss's rule: a cluster drawn with probability
// proportional to its size, its centroid copied and both copies nudged apart by ±1/1024 per
// coordinate). Replaces faiss, which is neither a dependency nor deterministic across builds.
//
// The assignment step (the cost: n · k · d multiply-adds per iteration) runs on the ThreadPool;
// each point is assigned by one thread and centroids are summed in a fixed order, so results
// do not depend on the thread count.
#include <cstdint>

#include <torch/torch.h>

namespace recbole::models::layers {

struct KMeansOptions {
  int64_t k = 1;
  int64_t iterations = 25;
  int64_t max_points_per_centroid = 256;
  uint64_t seed = 1234;
};

struct KMeansResult {
  torch::Tensor centroids;   // [k, d] float32, CPU
  torch::Tensor assignment;  // [n] int64: the nearest final centroid of every input point
};

// x: [n, d] float32 on the CPU with n ≥ k ≥ 1 (otherwise a recbole::Error: faiss aborts too).
KMeansResult kmeans(const torch::Tensor& x, const KMeansOptions& options);

// The index of the nearest centroid (L2; ties to the lower index) of every row of x:
// x [n, d], centroids [k, d], both float32 CPU → [n] int64.
torch::Tensor nearest_centroids(const torch::Tensor& x, const torch::Tensor& centroids);

}  // namespace recbole::models::layers
