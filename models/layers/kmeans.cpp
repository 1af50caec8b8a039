#include "models/layers/kmeans.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "recbole/utils/error.h"
#include "recbole/utils/thread_pool.h"

namespace recbole::models::layers {

namespace {

// Nearest centroid of each of the n rows of x (row-major [n, d]) among c ([k, d]).
void assign(const float* x, int64_t n, const float* c, int64_t k, int64_t d, int64_t* out) {
  constexpr int64_t kChunk = 64;
  parallel_for_blocks(n, kChunk, [&](int64_t, int64_t first, int64_t last) {
    for (int64_t p = first; p < last; ++p) {
      const float* xp = x + p * d;
      float best = std::numeric_limits<float>::infinity();
      int64_t best_j = 0;
      for (int64_t j = 0; j < k; ++j) {
        const float* cj = c + j * d;
        float dist = 0;
        for (int64_t t = 0; t < d; ++t) {
          const float diff = xp[t] - cj[t];
          dist += diff * diff;
        }
        if (dist < best) best = dist, best_j = j;
      }
      out[p] = best_j;
    }
  });
}

// Refills empty clusters by splitting populated ones, as faiss does.
void split_empty(std::vector<float>& c, std::vector<int64_t>& sizes, int64_t n, int64_t d,
                 std::mt19937_64& rng) {
  constexpr float kEps = 1.0f / 1024;
  const auto k = static_cast<int64_t>(sizes.size());
  for (int64_t ci = 0; ci < k; ++ci) {
    if (sizes[static_cast<size_t>(ci)] != 0) continue;
    // Cluster cj with probability (size − 1) / (n − k), drawn by walking the sizes.
    int64_t cj = 0;
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    for (;;) {
      const double r = unit(rng);
      if (r * static_cast<double>(n - k) < static_cast<double>(sizes[static_cast<size_t>(cj)] - 1))
        break;
      cj = (cj + 1) % k;
    }
    float* a = c.data() + ci * d;
    float* b = c.data() + cj * d;
    for (int64_t t = 0; t < d; ++t) {
      const float v = b[t];
      a[t] = t % 2 == 0 ? v * (1 + kEps) : v * (1 - kEps);
      b[t] = t % 2 == 0 ? v * (1 - kEps) : v * (1 + kEps);
    }
    sizes[static_cast<size_t>(ci)] = sizes[static_cast<size_t>(cj)] / 2;
    sizes[static_cast<size_t>(cj)] -= sizes[static_cast<size_t>(ci)];
  }
}

}  // namespace

torch::Tensor nearest_centroids(const torch::Tensor& x, const torch::Tensor& centroids) {
  const torch::Tensor xs = x.to(torch::kFloat32).contiguous();
  const torch::Tensor cs = centroids.to(torch::kFloat32).contiguous();
  torch::Tensor out = torch::empty({xs.size(0)}, torch::kInt64);
  assign(xs.data_ptr<float>(), xs.size(0), cs.data_ptr<float>(), cs.size(0), xs.size(1),
         out.data_ptr<int64_t>());
  return out;
}

KMeansResult kmeans(const torch::Tensor& x, const KMeansOptions& options) {
  if (x.dim() != 2 || !x.is_cpu() || x.scalar_type() != torch::kFloat32)
    throw Error("kmeans: expected an [n, d] float32 CPU tensor, got " + c10::str(x.sizes()));
  const int64_t n_all = x.size(0), d = x.size(1), k = options.k;
  if (k < 1 || k > n_all)
    throw Error("kmeans: " + std::to_string(k) + " clusters need at least as many points, got " +
                std::to_string(n_all));
  std::mt19937_64 rng(options.seed);
  std::vector<int64_t> perm(static_cast<size_t>(n_all));
  std::iota(perm.begin(), perm.end(), int64_t{0});
  std::shuffle(perm.begin(), perm.end(), rng);
  // Training points: all, or a random subset of k · max_points_per_centroid.
  torch::Tensor train = x.contiguous();
  const int64_t cap = k * options.max_points_per_centroid;
  if (n_all > cap) {
    std::vector<int64_t> subset(perm.begin(), perm.begin() + cap);
    train = x.index_select(0, torch::tensor(subset, torch::kInt64)).contiguous();
    std::iota(perm.begin(), perm.begin() + cap, int64_t{0});
    perm.resize(static_cast<size_t>(cap));
    std::shuffle(perm.begin(), perm.end(), rng);
  }
  const int64_t n = train.size(0);
  const float* xp = train.data_ptr<float>();
  std::vector<float> c(static_cast<size_t>(k * d));
  for (int64_t j = 0; j < k; ++j)
    std::copy(xp + perm[static_cast<size_t>(j)] * d, xp + (perm[static_cast<size_t>(j)] + 1) * d,
              c.begin() + j * d);

  std::vector<int64_t> labels(static_cast<size_t>(n));
  std::vector<double> sums(static_cast<size_t>(k * d));
  std::vector<int64_t> sizes(static_cast<size_t>(k));
  for (int64_t it = 0; it < options.iterations; ++it) {
    assign(xp, n, c.data(), k, d, labels.data());
    std::fill(sums.begin(), sums.end(), 0.0);
    std::fill(sizes.begin(), sizes.end(), 0);
    for (int64_t p = 0; p < n; ++p) {
      const int64_t j = labels[static_cast<size_t>(p)];
      ++sizes[static_cast<size_t>(j)];
      for (int64_t t = 0; t < d; ++t) sums[static_cast<size_t>(j * d + t)] += xp[p * d + t];
    }
    for (int64_t j = 0; j < k; ++j) {
      if (sizes[static_cast<size_t>(j)] == 0) continue;
      for (int64_t t = 0; t < d; ++t)
        c[static_cast<size_t>(j * d + t)] =
            static_cast<float>(sums[static_cast<size_t>(j * d + t)] /
                               static_cast<double>(sizes[static_cast<size_t>(j)]));
    }
    split_empty(c, sizes, n, d, rng);
  }
  KMeansResult result;
  result.centroids = torch::from_blob(c.data(), {k, d}, torch::kFloat32).clone();
  result.assignment = nearest_centroids(x, result.centroids);
  return result;
}

}  // namespace recbole::models::layers
