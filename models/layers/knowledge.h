#pragma once
// What the knowledge models share (RecBole's knowledge_aware_recommender helpers): the graph a
// model is built from, the fixed sampled neighbour tables of KGCN and KGNNLS, the TransR
// projection of CKE and KGAT, and the graph inputs of KGIN and MCCLK (interaction matrices, the
// KG edge list, edge sampling, per-head scatter mean and softmax, the kNN entity graph).
#include <cstdint>
#include <functional>
#include <vector>

#include <torch/torch.h>

#include "models/layers/graph.h"
#include "recbole/data/knowledge_graph.h"

namespace recbole::models::layers {

// The knowledge task's batch columns (data::Batch::columns), by RecBole's field names: a batch of
// KG triples beside the recommendation rows ([B_kg] int64 each; B_kg need not equal B): entity
// ids (items are entities 0..n_items-1), relation ids and a sampled negative tail per triple.
inline constexpr const char* kKgHeads = "head_id";
inline constexpr const char* kKgRelations = "relation_id";
inline constexpr const char* kKgTails = "tail_id";
inline constexpr const char* kKgNegTails = "neg_tail_id";

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

// ---- KGIN / MCCLK graph inputs (RecBole's get_norm_inter_matrix('si') and kg_graph) ----
// Node ids: user u → u, entity e → n_users + e (N = n_users + n_entities). Both matrices come from
// the training interactions only, a repeated (user, item) pair counting once.

// The user block of D⁻¹A: [n_users × n_entities]; row u holds 1/deg(u) at each of u's distinct
// training items (entity id = item id), so M·E is the mean of the user's item rows. Zero rows
// for users without training items.
SparseMatrix user_item_mean_matrix(const data::InteractionMatrix& train, int64_t n_entities);

// D⁻¹A over all N nodes (row, not symmetric, normalisation): A[u, n_users + i] = A[n_users + i,
// u] = 1 per distinct training pair, each row divided by its non-zeros (zero rows stay zero).
SparseMatrix row_normalized_interaction_graph(const data::InteractionMatrix& train,
                                              int64_t n_entities);

// The directed KG edges in triple order: messages flow tail → head. [n_edges] int64 each.
struct KgEdges {
  torch::Tensor heads, tails, relations;
  int64_t size() const { return heads.defined() ? heads.size(0) : 0; }
  KgEdges index_select(const torch::Tensor& kept) const;  // kept: [k] int64 on their device
};
KgEdges kg_edge_list(const data::KnowledgeGraph& graph, const DeviceManager& device);

// RecBole's _edge_sampling: floor(n_edges · rate) distinct edge positions drawn uniformly
// without replacement from a stream seeded with `seed` (rate = the KEPT fraction), ascending
// (messages are then summed in triple order). rate <= 0 or >= 1 keeps every edge (RecBole
// samples only when node_dropout_rate > 0). → [k] int64, CPU.
torch::Tensor sample_edges(int64_t n_edges, double rate, uint64_t seed);

// Per-head mean of the rows of src ([n_edges, d]) over the edges whose index ([n_edges] int64)
// is that head → [n, d]; zero for an index value with no edge (torch_scatter's scatter_mean).
// index_add + counts, so gradients flow to src.
torch::Tensor scatter_mean(const torch::Tensor& src, const torch::Tensor& index, int64_t n);

// Softmax of src ([n_edges] or [n_edges, c]) within each group of equal index, per column,
// shifted by the group's maximum (torch_scatter's scatter_softmax); gradients flow to src.
torch::Tensor segment_softmax(const torch::Tensor& src, const torch::Tensor& index, int64_t n);

// RecBole's sparse dropout of an interaction matrix: each stored value kept with probability
// 1 − p (torch's seeded global generator) and scaled by 1 / (1 − p). p = 0 returns m.
SparseMatrix sparse_dropout(const SparseMatrix& m, double p);

// The k largest cosine similarities of each row of x ([n, d] float32, any device; no gradient)
// with every row (itself included), without materialising n × n: row blocks, each scanned over
// column tiles of one matrix product, blocks in parallel on the ThreadPool (CPU) or in turn
// (CUDA). Values are those of the products (exact, not approximated); equal values go to the
// lower column. → values [n, k] float32 descending, indices [n, k] int64, both CPU.
struct TopK {
  torch::Tensor values, indices;
};
TopK cosine_topk(const torch::Tensor& x, int64_t k);
// The same for the rows `rows` of x alone (ids in [0, n)) against every row: values, indices
// [m, k], row i of the result that of x's row rows[i] in cosine_topk(x, k).
TopK cosine_topk(const torch::Tensor& x, int64_t k, const std::vector<int64_t>& rows);

// MCCLK's build_adj: S = the rows' top-k cosine similarities (cosine_topk), then
// D^{-1/2} S D^{-1/2} with D = the row sums of S (an inf from a zero sum becomes 0). [n × n].
SparseMatrix knn_graph(const torch::Tensor& x, int64_t k);
// The rows [0, first_rows) of knn_graph(x, k), the other rows empty: [n × n]. It scans the
// similarities of those rows and of their neighbours (whose row sums D needs) only — MCCLK reads
// the kNN graph at the item rows alone, 1,598 of ml-100k's 34,629 entities.
SparseMatrix knn_graph(const torch::Tensor& x, int64_t k, int64_t first_rows);

}  // namespace recbole::models::layers
