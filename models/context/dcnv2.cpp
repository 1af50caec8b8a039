#include "models/context/dcnv2.h"

#include "models/layers/key_checks.h"
#include "models/shared_keys.h"
#include "recbole/config/config.h"
#include "recbole/utils/error.h"

namespace recbole::models {

DCNV2::DCNV2(const ModelContext& ctx)
    : ContextModel("DCNV2", ctx),
      mixed_(ctx.config.get_bool("mixed")),
      reg_weight_(keys::reg_weight().get(ctx.config)),
      layers_(ctx.config.get_int("cross_layer_num")) {
  const std::string structure = ctx.config.get_string("structure");
  if (structure != "stacked" && structure != "parallel")
    throw ConfigError(ctx.config.source("structure") +
                      ": DCNV2: structure: expected stacked or "
                      "parallel, got \"" +
                      structure + "\"");
  stacked_ = structure == "stacked";
  const int64_t d = num_fields_ * embedding_size_;
  for (int64_t l = 0; l < layers_; ++l) {
    const std::string s = std::to_string(l);
    if (mixed_) {
      const int64_t e = ctx.config.get_int("expert_num"), r = ctx.config.get_int("low_rank");
      u_.push_back(register_parameter("cross_u" + s, torch::randn({e, d, r})));
      v_.push_back(register_parameter("cross_v" + s, torch::randn({e, d, r})));
      c_.push_back(register_parameter("cross_c" + s, torch::randn({e, r, r})));
    } else {
      w_.push_back(register_parameter("cross_w" + s, torch::randn({d, d})));
    }
    b_.push_back(register_parameter("cross_b" + s, torch::zeros({d})));
  }
  if (mixed_)
    for (int64_t k = 0; k < ctx.config.get_int("expert_num"); ++k)
      gates_.push_back(register_module("gate" + std::to_string(k), torch::nn::Linear(d, 1)));
  const std::vector<int64_t> sizes = mlp_sizes(ctx, d);
  mlp_ = register_module("mlp", layers::ContextMLP(sizes, keys::dropout_prob().get(ctx.config),
                                                   "relu", /*batch_norm=*/true));
  predict_ =
      register_module("predict", torch::nn::Linear(stacked_ ? sizes.back() : d + sizes.back(), 1));
  finish();
}

torch::Tensor DCNV2::cross(const torch::Tensor& x0) {
  torch::Tensor x = x0;  // [B, D]
  for (int64_t l = 0; l < layers_; ++l) {
    if (!mixed_) {
      x = x0 * (x.matmul(w_[l].t()) + b_[l]) + x;
      continue;
    }
    std::vector<torch::Tensor> gate;
    for (auto& g : gates_) gate.push_back(g->forward(x));
    torch::Tensor weight = torch::softmax(torch::cat(gate, 1), 1);             // [B, E]
    torch::Tensor vx = torch::tanh(torch::einsum("bd,edr->ber", {x, v_[l]}));  // [B, E, r]
    torch::Tensor cx = torch::tanh(torch::einsum("ers,bes->ber", {c_[l], vx}));
    torch::Tensor ux = torch::einsum("edr,ber->bed", {u_[l], cx});  // [B, E, D]
    torch::Tensor experts = x0.unsqueeze(1) * (ux + b_[l]);
    x = x + (weight.unsqueeze(2) * experts).sum(1);
  }
  return x;
}

torch::Tensor DCNV2::logits(const data::Batch& batch) {
  torch::Tensor x0 = embed(batch).flatten(1);
  torch::Tensor out = stacked_ ? predict_->forward(mlp_->forward(cross(x0)))
                               : predict_->forward(torch::cat({cross(x0), mlp_->forward(x0)}, 1));
  return torch::sigmoid(out).squeeze(1);
}

torch::Tensor DCNV2::regularizer() {
  if (layers_ == 0 || reg_weight_ == 0) return {};
  torch::Tensor reg;
  for (int64_t l = 0; l < layers_; ++l) {
    torch::Tensor n = mixed_ ? c_[l].norm() + v_[l].norm() + u_[l].norm() : w_[l].norm();
    reg = reg.defined() ? reg + n : n;
  }
  return reg_weight_ * reg;
}

RECBOLE_REGISTER_MODEL(DCNV2) {
  using config::Key;
  using config::KeyType;
  register_model(
      {"DCNV2",
       "context",
       InputType::kPointwise,
       "DCN-V2: a matrix (or low-rank mixture) cross network with an MLP, σ output and BCE",
       {Key("mixed", KeyType::kBool)
            .help("Mixture of low-rank experts instead of full cross matrices"),
        Key("structure", KeyType::kString).help("stacked (MLP over the cross output) or parallel"),
        Key("cross_layer_num", KeyType::kInt).min(0).help("Number of cross layers"),
        Key("expert_num", KeyType::kInt).min(1).help("Experts per cross layer (mixed)"),
        Key("low_rank", KeyType::kInt).min(1).help("Rank of the experts (mixed)"),
        keys::embedding_size().decl("Width of the field embeddings"),
        keys::mlp_hidden_size().decl("Sizes of the MLP's hidden layers"),
        keys::reg_weight().decl("Weight of the model's norm regulariser (added once per batch)"),
        keys::dropout_prob().decl("Dropout before every MLP layer, in [0, 1)")},
       [](const ModelContext& ctx) { return std::make_shared<DCNV2>(ctx); }});
}

}  // namespace recbole::models
