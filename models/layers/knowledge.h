#pragma once
// What the knowledge models share (RecBole's knowledge_aware_recommender helpers): the graph a
// model is built from, the fixed sampled neighbour tables of KGCN and KGNNLS, and the TransR
// projection of CKE and KGAT.
#include <cstdint>
#include <functional>

#include <torch/torch.h>

#include "models/model.h"

namespace recbole::models::layers {

// ctx.knowledge, or a ConfigError naming the model (it was built outside the knowledge task).
const data::KnowledgeGraph& knowledge_graph_of(const ModelContext& ctx, const std::string& model);

// RecBole's construct_adj: the KG as an undirected multigraph (triple (h, r, t) puts (t, r) in
// h's list and (h, r) in t's, in triple order); every entity gets k neighbours: k distinct
// list positions when its list has at least k entries, k positions drawn with replacement
// otherwise, itself with relation 0 when it has none (the pad, virtual entities). Drawn once
// from a stream seeded with `seed`. → entities, relations: [n_entities, k] int64, CPU.
struct NeighborTable {
  torch::Tensor entities, relations;
};
NeighborTable sample_neighbors(const data::KnowledgeGraph& graph, int64_t k, uint64_t seed);

// TransR projection: row n of x [N, d] times the d × k matrix of its relation, row rels[n] of
// trans_w [R, d·k] viewed as d × k → [N, k]. Rows are grouped by relation and each group is one
// matrix product (gathering a d × k matrix per row would move N·d·k floats).
torch::Tensor transr_project(const torch::Tensor& x, const torch::Tensor& trans_w,
                             const torch::Tensor& rels, int64_t k);

// Runs task(t) for t = 0 .. n_tasks − 1: on the ThreadPool (one BLAS thread each) on the CPU, in
// order on CUDA. Tasks must write disjoint outputs, so results do not depend on the threads.
// Used by full rankings computed in chunks of users.
void run_chunks(int64_t n_tasks, bool on_cuda, const std::function<void(int64_t)>& task);

}  // namespace recbole::models::layers
