#pragma once
// NextItNet (Yuan et al. 2019) as RecBole defines it: the item vectors [B, L, C] pass
// `block_num` × |dilations| residual blocks; block k with dilation d_k (the dilations list
// repeated) is
//   y = ReLU(LayerNorm(conv_{d}(x))),  z = ReLU(LayerNorm(conv_{2d}(y))),  out = z + x,
// each conv causal (kernel_size taps over the current and earlier positions, zero left-padding,
// with bias; LayerNorm over the C channels, eps 1e-8). h = Linear(C → C) of the last column
// L − 1 of the output (not the last item's: a shorter sequence is read through its padding, as
// RecBole; the receptive field 1 + 2(k−1)·Σd covers the whole width at the defaults).
// Loss: CE or BPR, plus reg_weight · (‖E‖ + ‖W_final‖ + Σ ‖every conv kernel and LayerNorm γ‖),
// unsquared norms. Init: E U(±√(1/n_items)), the final Linear xavier-normal with bias 0.1, the
// convs and LayerNorms libtorch's defaults.
#include <vector>

#include "models/sequential/sequential_model.h"

namespace recbole::models {

class NextItNet : public SequentialModel {
 public:
  explicit NextItNet(const ModelContext& ctx);
  torch::Tensor encode(const data::Batch& batch) override;
  torch::Tensor calculate_loss(const data::Batch& batch) override;
  // The blocks' output at every position: [B, L, C] for item_seq [B, L]; position t reads the
  // items at positions ≤ t only (the causality test reads it).
  torch::Tensor encode_all(const torch::Tensor& item_seq);

 private:
  // One causal convolution with its LayerNorm and ReLU: x [B, C, L] → [B, C, L].
  torch::Tensor conv_step(size_t k, const torch::Tensor& x);

  int64_t kernel_size_;
  double reg_weight_;
  std::vector<int64_t> dilation_;            // per convolution (two per block)
  std::vector<torch::nn::Conv1d> convs_;     // [C, C, kernel_size] kernels with bias
  std::vector<torch::nn::LayerNorm> norms_;  // over C
  torch::nn::Linear final_{nullptr};
};

}  // namespace recbole::models
