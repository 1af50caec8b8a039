#pragma once
// Graph machinery of the graph models (LightGCN, NGCF, SGL, NCL, SpectralCF, GCMC; later the
// knowledge-aware family): the user–item bipartite adjacency, normalised as RecBole does, held
// once on the host in compressed sparse rows, and a sparse × dense product with autograd.
//
// Node ids: user u → u, item i → n_users + i (N = n_users + n_items; the pad user 0 and the pad
// item, node n_users, are isolated unless the training split gives them edges, which it never
// does).
//
// Why our own product: libtorch's CPU sparse matmul runs on its intra-op threads, which this
// project keeps at 1 (see thread_pool.h); ours splits rows over the ThreadPool, balanced by
// non-zeros. Each output row is computed by one thread in a fixed order, so results do not
// depend on the thread count. On CUDA the same operator is a libtorch sparse tensor on the
// device (built once), multiplied with torch::mm.
#include <cstdint>
#include <memory>
#include <vector>

#include <torch/torch.h>

#include "recbole/data/interaction_matrix.h"
#include "recbole/runtime/device_manager.h"

namespace recbole::models::layers {

// A float32 matrix in compressed sparse rows on the host. Column indices within a row are
// ascending.
struct SparseMatrix {
  int64_t rows = 0, cols = 0;
  std::vector<int64_t> indptr{0};  // [rows + 1]
  std::vector<int32_t> indices;    // [nnz]
  std::vector<float> values;       // [nnz]

  int64_t nnz() const { return static_cast<int64_t>(indices.size()); }
  SparseMatrix transpose() const;
  // Builds from (row, col, value) triplets; duplicates are summed.
  static SparseMatrix from_triplets(int64_t rows, int64_t cols, const std::vector<int64_t>& r,
                                    const std::vector<int64_t>& c, const std::vector<float>& v);
};

// The symmetric bipartite adjacency A (N × N): A[u, n_users + i] = A[n_users + i, u] = w for
// every training pair (u, i), where w is 1 (binary: a repeated pair counts once; RecBole's
// LightGCN, NGCF, NCL, GCMC, SpectralCF) or the pair's multiplicity (weighted: SGL). No
// self-loops.
SparseMatrix bipartite_adjacency(int64_t n_users, int64_t n_items,
                                 const std::vector<int32_t>& users,
                                 const std::vector<int32_t>& items, bool weighted);
// The binary adjacency of a training matrix.
SparseMatrix bipartite_adjacency(const data::InteractionMatrix& train);

// D^{-1/2} A D^{-1/2} with deg_k = Σ_j A[k, j] + 1e-7 (for a binary A, the number of non-zeros;
// for a weighted one, the weighted row sum), as RecBole.
SparseMatrix symmetric_normalized(SparseMatrix a);

// A sparse operator ready for products on one device: the host CSR and its transpose (for the
// backward), or a libtorch sparse tensor on CUDA.
class GraphOperator {
 public:
  GraphOperator() = default;
  // `symmetric`: the matrix equals its transpose (the backward reuses it).
  GraphOperator(SparseMatrix m, bool symmetric, const DeviceManager& device);

  bool defined() const { return m_ != nullptr; }
  int64_t rows() const { return m_->rows; }
  int64_t cols() const { return m_->cols; }
  const SparseMatrix& matrix() const { return *m_; }
  const SparseMatrix& transposed() const { return *mt_; }
  // Shared with the autograd graph, which may outlive this operator (SGL rebuilds its views).
  std::shared_ptr<const SparseMatrix> shared_transposed() const { return mt_; }
  const torch::Tensor& device_tensor() const { return device_; }  // undefined on the CPU

 private:
  std::shared_ptr<const SparseMatrix> m_, mt_;
  torch::Tensor device_;  // CUDA: sparse COO [rows, cols] float32
};

// op · x with gradient to x: x [cols, d] float32 on the operator's device → [rows, d].
torch::Tensor spmm(const GraphOperator& op, const torch::Tensor& x);

// The host kernel, also used directly (no autograd): out = m · x, x [m.cols, d] contiguous
// float32 CPU → [m.rows, d].
torch::Tensor spmm_host(const SparseMatrix& m, const torch::Tensor& x);
// Row bounds [parts + 1] that cut m's rows into `parts` ranges of about equal non-zeros: the
// split the products use over the pool, for a caller running them inside its own phases.
std::vector<int64_t> balanced_rows(const SparseMatrix& m, int parts);
// Rows [first, last) of out = m · x (x [m.cols, d], out [m.rows, d], row-major float32), on the
// calling thread.
void spmm_rows(const SparseMatrix& m, const float* x, float* out, int64_t d, int64_t first,
               int64_t last);

// LightGCN's propagation: mean(E, ÂE, …, Â^L E) over layers 0..L (layer 0 included), where
// E = [users; items] is [N, d]. Returns the list E⁰..E^L when `layers` is given.
torch::Tensor mean_propagation(const GraphOperator& adj, const torch::Tensor& ego, int64_t n_layers,
                               std::vector<torch::Tensor>* layers = nullptr);

}  // namespace recbole::models::layers
