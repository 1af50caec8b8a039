#include "models/context/xdeepfm.h"

#include "models/layers/key_checks.h"
#include "models/shared_keys.h"
#include "recbole/config/config.h"
#include "recbole/utils/error.h"
#include "recbole/utils/logging.h"

namespace recbole::models {

XDeepFM::XDeepFM(const ModelContext& ctx)
    : ContextModel("xDeepFM", ctx),
      direct_(ctx.config.get_bool("direct")),
      reg_weight_(keys::reg_weight().get(ctx.config)) {
  sizes_ = ctx.config.get_int_list("cin_layer_size");
  if (!direct_) {
    bool changed = false;
    for (size_t k = 0; k < sizes_.size(); ++k) {
      const int64_t even = sizes_[k] / 2 * 2;
      changed = changed || (k + 1 < sizes_.size() && even != sizes_[k]);
      sizes_[k] = even;
    }
    if (changed)
      log::warning("xDeepFM: with direct false the CIN layer sizes are rounded down to even");
  }
  int64_t hidden = num_fields_, out_width = 0;
  for (size_t k = 0; k < sizes_.size(); ++k) {
    const int64_t in = hidden * num_fields_;
    if (sizes_[k] < 1) throw ConfigError("xDeepFM: cin_layer_size: expected sizes >= 2");
    torch::Tensor w = torch::empty({sizes_[k], in, 1});
    torch::Tensor b = torch::empty({sizes_[k]});
    {
      torch::NoGradGuard no_grad;
      torch::nn::init::xavier_normal_(w);
      const double bound = 1.0 / std::sqrt(static_cast<double>(in));  // Conv1d's default bias
      b.uniform_(-bound, bound);
    }
    conv_w_.push_back(register_parameter("conv_w" + std::to_string(k), w.squeeze(2).clone()));
    conv_b_.push_back(register_parameter("conv_b" + std::to_string(k), b));
    const bool last = k + 1 == sizes_.size();
    if (direct_ || last) {
      out_width += sizes_[k];
      hidden = sizes_[k];
    } else {
      out_width += sizes_[k] / 2;
      hidden = sizes_[k] / 2;
    }
  }
  cin_linear_ = register_module("cin_linear", torch::nn::Linear(out_width, 1));
  std::vector<int64_t> sizes = mlp_sizes(ctx, num_fields_ * embedding_size_);
  sizes.push_back(1);
  mlp_ = register_module("mlp",
                         layers::ContextMLP(sizes, keys::dropout_prob().get(ctx.config), "relu"));
  finish();
}

torch::Tensor XDeepFM::logits(const data::Batch& batch) {
  torch::Tensor x0 = embed(batch);  // [B, F, d]
  const int64_t b = x0.size(0), d = x0.size(2);
  // The CIN in the layout [B, d, channels]: each layer's width-1 convolution over the H·F
  // products is then one [B·d, H·F] × [H·F, h] matrix product; the [B, H·F, d] layout made it B
  // products of d columns each, and an ml-100k epoch 23 s instead of 9 s (the same sums).
  const torch::Tensor x0t = x0.transpose(1, 2).unsqueeze(2);  // [B, d, 1, F]
  torch::Tensor x = x0.transpose(1, 2);                       // [B, d, H]
  std::vector<torch::Tensor> direct;
  for (size_t k = 0; k < sizes_.size(); ++k) {
    const torch::Tensor z = (x.unsqueeze(3) * x0t).reshape({b * d, -1});  // [B·d, H·F]
    const torch::Tensor o =
        torch::relu(torch::addmm(conv_b_[k], z, conv_w_[k].t())).view({b, d, -1});  // [B, d, h]
    if (direct_ || k + 1 == sizes_.size()) {
      direct.push_back(o);
      x = o;
    } else {
      auto halves = o.split(sizes_[k] / 2, 2);
      x = halves[0];
      direct.push_back(halves[1]);
    }
  }
  torch::Tensor cin = cin_linear_->forward(torch::cat(direct, 2).sum(1));
  torch::Tensor deep = mlp_->forward(x0.flatten(1));
  return (first_order(batch) + cin + deep).squeeze(1);
}

torch::Tensor XDeepFM::regularizer() {
  if (reg_weight_ == 0) return {};
  torch::Tensor reg;
  auto add = [&](const torch::Tensor& t) { reg = reg.defined() ? reg + t.norm() : t.norm(); };
  for (const auto& l : mlp_->linears()) add(l->weight);
  for (const torch::Tensor& t : first_order_->tables()) add(t);
  for (const torch::Tensor& w : conv_w_) add(w);
  return reg_weight_ * reg;
}

RECBOLE_REGISTER_MODEL(xDeepFM) {
  using config::Key;
  using config::KeyType;
  register_model(
      {"xDeepFM",
       "context",
       InputType::kPointwise,
       "xDeepFM: a compressed interaction network and an MLP over the field embeddings, plus "
       "first-order weights",
       {keys::embedding_size().decl("Width of the field embeddings"),
        keys::mlp_hidden_size().decl("Sizes of the MLP's hidden layers"),
        keys::reg_weight().decl("Weight of the model's norm regulariser (added once per batch)"),
        keys::dropout_prob().decl("Dropout before every MLP layer, in [0, 1)"),
        Key("direct", KeyType::kBool)
            .help("Every CIN layer feeds both the next layer and the output (no split)"),
        layers::sizes_key("cin_layer_size").help("Widths of the CIN layers")},
       [](const ModelContext& ctx) { return std::make_shared<XDeepFM>(ctx); }});
}

}  // namespace recbole::models
