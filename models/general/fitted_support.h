#pragma once
// Shared machinery of the fitted-once models (Random, Pop, ItemKNN, EASE, ADMMSLIM,
// SLIMElastic): sparse views of the training matrix, the item Gram matrix XᵀX, scoring a block
// of users through dense or row-sparse weights, the memory check made before a large fit, and a
// parallel loop over independent pieces of a fit.
//
// Conventions: X is the binary training matrix [n_users, n_items] (InteractionMatrix; duplicate
// (user, item) pairs count once). Fits run on the CPU, where X lives, so a fitted model is the
// same whatever the device; the fitted state is then placed on the device manager's device as
// registered buffers, and scores are returned there.
#include <cstdint>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "recbole/data/dense_rows.h"
#include "recbole/data/interaction_matrix.h"
#include "recbole/runtime/device_manager.h"

namespace recbole::models {

// A 0/1 matrix in compressed sparse rows; row r holds indices[indptr[r] .. indptr[r+1]),
// ascending.
struct BinaryCsr {
  int64_t n_rows = 0;
  int64_t n_cols = 0;
  std::vector<int64_t> indptr{0};
  std::vector<int32_t> indices;
  int64_t row_size(int64_t r) const { return indptr[r + 1] - indptr[r]; }
};

// Xᵀ: item → users, rows ascending.
BinaryCsr transpose(const data::InteractionMatrix& x);
// X itself in BinaryCsr form (a copy).
BinaryCsr as_csr(const data::InteractionMatrix& x);

// A float matrix in compressed sparse rows, built on the CPU by a fit. Tensors: indptr
// [n_rows + 1] int64, indices [nnz] int64, values [nnz] float32, all on the CPU.
struct CsrWeights {
  torch::Tensor indptr, indices, values;
};

// Builds CSR weights [n_rows, n_cols] from entries grouped by column: columns[c] lists the
// (row, value) pairs of column c. Rows come out ascending within each row's slice.
CsrWeights csr_from_columns(int64_t n_rows,
                            const std::vector<std::vector<std::pair<int32_t, float>>>& columns);
// Builds CSR weights from entries grouped by row: rows[r] lists (column, value) pairs, any order.
CsrWeights csr_from_rows(const std::vector<std::vector<std::pair<int32_t, float>>>& rows);

// A user-id tensor (any device, int64) as a CPU vector.
std::vector<int64_t> to_vector(const torch::Tensor& users);

// XᵀX (co-occurrence counts, diagonal = item degrees): [n_items, n_items] of `dtype` on the CPU,
// from the sparse rows (cost Σ_u |X_u|²).
torch::Tensor item_gram(const data::InteractionMatrix& x, torch::ScalarType dtype);

// scores[b, :] = Σ_{i ∈ X[users[b]]} W[i, :]   (X·W for item-to-item weights W [n_items, n_cols]).
// W: CSR tensors on any device (copied to the CPU). Returns [B, n_cols] float32 on the CPU.
torch::Tensor history_times_csr(const data::InteractionMatrix& x, const std::vector<int64_t>& users,
                                const torch::Tensor& indptr, const torch::Tensor& indices,
                                const torch::Tensor& values, int64_t n_cols);

// scores[b, :] = Σ_v W[users[b], v] · X[v, :]   (W·X for user-to-user weights W [n_users,
// n_users]). Returns [B, n_items] float32 on the CPU.
torch::Tensor csr_times_history(const data::InteractionMatrix& x, const std::vector<int64_t>& users,
                                const torch::Tensor& indptr, const torch::Tensor& indices,
                                const torch::Tensor& values);

// CSR weights (any device) as a dense [n_rows, n_cols] float32 CPU tensor.
torch::Tensor csr_to_dense(const torch::Tensor& indptr, const torch::Tensor& indices,
                           const torch::Tensor& values, int64_t n_cols);

// Replaces the contents (and shape) of a registered buffer in place, so that the module's entry
// and the model's member stay one tensor. `value` must have the buffer's dtype and device.
void assign_buffer(torch::Tensor& buffer, const torch::Tensor& value);

// Bytes of memory this process may still allocate: /proc/meminfo's MemAvailable, lowered by a
// cgroup (v2 or v1) limit minus current usage when one is set. -1 when nothing can be read.
int64_t available_memory_bytes();

// Throws recbole::Error before a fit that needs `bytes` when that exceeds
// available_memory_bytes(): "<model>: fitting needs <N> GiB (<what>) but only <M> GiB of memory
// is available; ...". `what` says how the need is computed, e.g. "3 × n_items² float32,
// n_items = 60000". Does nothing when the available memory cannot be read.
void require_memory(const std::string& model, double bytes, const std::string& what);

}  // namespace recbole::models
