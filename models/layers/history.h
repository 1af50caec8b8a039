#pragma once
// Padded history matrices (RecBole's Dataset.history_item_matrix / history_user_matrix): each
// row's ids left-aligned in a dense [rows, L] int64 matrix padded with 0, with lengths. L is the
// longest row, or max_len when rows are truncated; a truncated row keeps a random subset of its
// ids (RecBole keeps the first ids of a shuffled table), drawn from `seed`. Host tensors.
#include <cstdint>

#include <torch/torch.h>

#include "recbole/data/interaction_matrix.h"

namespace recbole::models::layers {

struct PaddedHistory {
  torch::Tensor ids;      // [rows, L] int64, 0-padded on the right
  torch::Tensor lengths;  // [rows] int64
};

// m's rows (users → items); max_len 0 keeps every id.
PaddedHistory padded_history(const data::InteractionMatrix& m, int64_t max_len = 0,
                             uint64_t seed = 0);

// [rows] float32 host tensor: max(|R_u|, 1)^-alpha for each row u of m (FISM's and NAIS's
// normalisation of a user's summed history; an empty row gets 1).
torch::Tensor history_length_scale(const data::InteractionMatrix& m, int64_t rows, double alpha);

// items → users: the transpose of a user → item matrix.
data::InteractionMatrix transpose(const data::InteractionMatrix& m);

}  // namespace recbole::models::layers
