#pragma once
// GRU4Rec (Hidasi et al. 2016; RecBole's variant): item embeddings → dropout → a GRU without
// biases over the sequence → a Linear (hidden → embedding) → the state at the last real item.
// Init: the item table xavier_normal, the first GRU layer's input and hidden weights
// xavier_uniform, deeper layers and the Linear libtorch's defaults (as RecBole).
//
// The GRU runs on the sequences packed by length and the Linear only at each row's last step:
// the positions after a row's last item never reach its output (the GRU is causal), so the
// result is the function RecBole computes over all L positions, for 39 of its 50 steps on
// ml-100k's training samples.
#include "models/sequential/sequential_model.h"

namespace recbole::models {

class GRU4Rec : public SequentialModel {
 public:
  explicit GRU4Rec(const ModelContext& ctx);
  torch::Tensor encode(const data::Batch& batch) override;

 private:
  double dropout_;
  torch::nn::GRU gru_{nullptr};
  torch::nn::Linear dense_{nullptr};
};

}  // namespace recbole::models
