#pragma once
// Rows of a sparse interaction matrix as a dense 0/1 block, for the models and sources that read
// whole user histories (the fitted item-item models, user-rows training batches).
#include <cstdint>
#include <vector>

#include <torch/torch.h>

#include "recbole/data/interaction_matrix.h"

namespace recbole::data {

// The rows `users` of `x`: [B, n_items] float32 on the CPU, 1 where the user holds the item.
torch::Tensor dense_rows(const InteractionMatrix& x, const std::vector<int64_t>& users);

}  // namespace recbole::data
