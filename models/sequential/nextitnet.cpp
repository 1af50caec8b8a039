#include "models/sequential/nextitnet.h"

#include <cmath>
#include <string>

#include "models/layers/key_checks.h"
#include "models/layers/sequence.h"
#include "models/shared_keys.h"
#include "recbole/config/config.h"

namespace recbole::models {

NextItNet::NextItNet(const ModelContext& ctx)
    : SequentialModel("NextItNet", ctx),
      kernel_size_(ctx.config.get_int("kernel_size")),
      reg_weight_(keys::reg_weight().get(ctx.config)) {
  const int64_t c = keys::embedding_size().get(ctx.config);
  const std::vector<int64_t> dilations = ctx.config.get_int_list("dilations");
  item_embedding_ = register_parameter("item_embedding", torch::empty({ctx.n_items, c}));
  for (int64_t b = 0; b < ctx.config.get_int("block_num"); ++b)
    for (int64_t d : dilations)
      for (int64_t factor : {1, 2}) {
        const std::string name = std::to_string(convs_.size());
        dilation_.push_back(d * factor);
        convs_.push_back(register_module(
            "conv" + name,
            torch::nn::Conv1d(torch::nn::Conv1dOptions(c, c, kernel_size_).dilation(d * factor))));
        norms_.push_back(register_module(
            "norm" + name, torch::nn::LayerNorm(torch::nn::LayerNormOptions({c}).eps(1e-8))));
      }
  final_ = register_module("final", torch::nn::Linear(c, c));
  {
    torch::NoGradGuard no_grad;
    const double bound = std::sqrt(1.0 / static_cast<double>(ctx.n_items));
    item_embedding_.uniform_(-bound, bound);
    torch::nn::init::xavier_normal_(final_->weight);
    final_->bias.fill_(0.1);
  }
  to(ctx.device.device());
}

torch::Tensor NextItNet::conv_step(size_t k, const torch::Tensor& x) {
  // Left zero-padding of (kernel − 1) · dilation keeps the convolution causal and L wide.
  const torch::Tensor padded =
      torch::constant_pad_nd(x, {(kernel_size_ - 1) * dilation_[k], 0}, 0.0);
  const torch::Tensor y = norms_[k]->forward(convs_[k]->forward(padded).transpose(1, 2));
  return torch::relu(y).transpose(1, 2);
}

torch::Tensor NextItNet::encode_all(const torch::Tensor& item_seq) {
  torch::Tensor x = lookup(item_seq).transpose(1, 2);  // [B, C, L]
  for (size_t k = 0; k < convs_.size(); k += 2) x = conv_step(k + 1, conv_step(k, x)) + x;
  return x.transpose(1, 2);
}

torch::Tensor NextItNet::encode(const data::Batch& batch) {
  const torch::Tensor out = encode_all(layers::item_seq(batch));
  return final_->forward(out.select(1, out.size(1) - 1));
}

torch::Tensor NextItNet::calculate_loss(const data::Batch& batch) {
  torch::Tensor loss = SequentialModel::calculate_loss(batch);
  if (reg_weight_ <= 0) return loss;
  torch::Tensor reg = item_embedding_.norm() + final_->weight.norm();
  for (size_t k = 0; k < convs_.size(); ++k)
    reg = reg + convs_[k]->weight.norm() + norms_[k]->weight.norm();
  return loss + reg_weight_ * reg;
}

RECBOLE_REGISTER_MODEL(NextItNet) {
  using config::Key;
  using config::KeyType;
  register_model(
      {"NextItNet",
       "sequential",
       InputType::kNextItem,
       "Dilated causal convolutions in residual blocks over the item sequence, read at its "
       "last column",
       {keys::embedding_size().decl("Dimension of items and channels"),
        Key("kernel_size", KeyType::kInt).min(1).help("Taps of each causal convolution"),
        Key("block_num", KeyType::kInt).min(1).help("Repetitions of the dilations list"),
        layers::sizes_key("dilations")
            .help("Dilation of each block's first convolution (its second uses twice it)"),
        keys::reg_weight().decl("Weight of the unsquared-norm regulariser"),
        Key("loss_type", KeyType::kString)
            .choices({"CE", "BPR"})
            .help("CE over every item, or BPR with a sampled negative")},
       [](const ModelContext& ctx) { return std::make_shared<NextItNet>(ctx); }});
}

}  // namespace recbole::models
