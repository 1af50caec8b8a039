#pragma once
// Sums of table rows over a sparse row's ids: R_r· × T for the listed rows r of a 0/1 matrix R,
// as an embedding bag (RecBole's DMF first layer, FISM's and NAIS's history sums), so that a
// batch costs the degrees of its rows, never a dense [B, cols] row.
#include <torch/torch.h>

#include "recbole/data/interaction_matrix.h"
#include "recbole/runtime/device_manager.h"

namespace recbole::models::layers {

// Σ_{j ∈ row r of m} table[j] for every r in `rows` (int64 [R] on the host) → [R, d] on the
// table's device, with gradient to table.
torch::Tensor row_sums(const data::InteractionMatrix& m, const torch::Tensor& rows,
                       const torch::Tensor& table, const DeviceManager& device);

// The distinct ids of `ids` (int64 [B], any device) on the host, ascending, and for each entry
// of ids the position of its id among them (on the device): a batch repeats its users and
// items, so per-id work is done once and gathered back.
std::pair<torch::Tensor, torch::Tensor> distinct_ids(const torch::Tensor& ids,
                                                     const DeviceManager& device);

}  // namespace recbole::models::layers
