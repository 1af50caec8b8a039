#include "models/layers/self_attention.h"

#include <cmath>

#include "models/layers/attention.h"

namespace recbole::models::layers {

MultiHeadSelfAttentionImpl::MultiHeadSelfAttentionImpl(int64_t width, int64_t heads, double dropout)
    : heads_(heads), dropout_(dropout) {
  TORCH_CHECK(heads >= 1 && width % heads == 0, "MultiHeadSelfAttention: width ", width,
              " is not a multiple of heads ", heads);
  in_proj_weight = register_parameter("in_proj_weight", torch::empty({3 * width, width}));
  in_proj_bias = register_parameter("in_proj_bias", torch::empty({3 * width}));
  // libtorch's order: out_proj's own initialisation first, then xavier on the input projection
  // and zero biases.
  out_proj = register_module("out_proj", torch::nn::Linear(width, width));
  torch::NoGradGuard no_grad;
  torch::nn::init::xavier_uniform_(in_proj_weight);
  in_proj_bias.zero_();
  out_proj->bias.zero_();
}

torch::Tensor MultiHeadSelfAttentionImpl::forward(const torch::Tensor& x) {
  const int64_t b = x.size(0), l = x.size(1), width = x.size(2);
  const torch::Tensor qkv = torch::nn::functional::linear(x, in_proj_weight, in_proj_bias);
  const torch::Tensor no_mask = torch::zeros({b, 1, 1, l}, x.options());
  const double scale = 1.0 / std::sqrt(static_cast<double>(width / heads_));
  return out_proj->forward(attention_context(qkv, no_mask, heads_, scale, dropout_, is_training()));
}

}  // namespace recbole::models::layers
