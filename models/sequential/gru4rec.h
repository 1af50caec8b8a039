#pragma once
// GRU4Rec (Hidasi et al. 2016; RecBole's variant): item embeddings → dropout → a GRU without
// biases over the sequence → a Linear (hidden → embedding) → the state at the last real item.
// Init: the item table xavier_normal, the first GRU layer's input and hidden weights
// xavier_uniform, deeper layers and the Linear libtorch's defaults (as RecBole).
//
// The GRU runs over the batch's positions up to its longest row and the Linear only at each
// row's last step: the positions after a row's last item never reach its output (the GRU is
// causal), so the result is the function RecBole computes over all L positions. Not packed by
// length: libtorch's packed GRU slices the packed input step by step, and each slice's backward
// is a zero tensor of the whole input added to the gradient (perf: ~45 % of an epoch in that
// add); padded, the epoch took 23.7 s instead of 72 s with the same loss. On the CPU the GRU is
// layers::gru_outputs, one autograd node a layer (models/layers/gru.h).
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
