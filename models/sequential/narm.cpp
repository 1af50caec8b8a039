#include "models/sequential/narm.h"

#include "kernels/jit_gemm.h"
#include "models/layers/dropout.h"
#include "models/layers/gru.h"
#include "models/layers/init.h"
#include "models/layers/key_checks.h"
#include "models/layers/narm_encoder.h"
#include "models/layers/sequence.h"
#include "models/shared_keys.h"
#include "recbole/config/config.h"
#include "recbole/utils/error.h"

namespace recbole::models {

NARM::NARM(const ModelContext& ctx) : SequentialModel("NARM", ctx) {
  const int64_t d = keys::embedding_size().get(ctx.config);
  const int64_t hidden = ctx.config.get_int("hidden_size");
  const std::vector<double> p = ctx.config.get_double_list("dropout_probs");
  if (p.size() != 2)
    throw ConfigError(ctx.config.source("dropout_probs") +
                      ": dropout_probs: expected two probabilities [embedding, context], got " +
                      std::to_string(p.size()));
  emb_dropout_ = p[0];
  ct_dropout_ = p[1];
  item_embedding_ = register_table("item_embedding", ctx.n_items, d, layers::Init::kXavierNormal);
  gru_ = register_module("gru", torch::nn::GRU(torch::nn::GRUOptions(d, hidden)
                                                   .num_layers(ctx.config.get_int("n_layers"))
                                                   .bias(false)
                                                   .batch_first(true)));
  auto linear = [](int64_t in, int64_t out) {
    return torch::nn::Linear(torch::nn::LinearOptions(in, out).bias(false));
  };
  a1_ = register_module("a1", linear(hidden, hidden));
  a2_ = register_module("a2", linear(hidden, hidden));
  v_ = register_module("v", linear(hidden, 1));
  b_ = register_module("b", linear(2 * hidden, d));
  {
    torch::NoGradGuard no_grad;
    for (auto* l : {&a1_, &a2_, &v_, &b_}) torch::nn::init::xavier_normal_((*l)->weight);
  }
  to(ctx.device.device());
}

torch::Tensor NARM::encode(const data::Batch& batch) {
  const int64_t longest = layers::item_seq_len(batch).max().item<int64_t>();
  const torch::Tensor seq = layers::item_seq(batch).narrow(1, 0, longest);
  const torch::Tensor x = layers::dropout(lookup(seq), emb_dropout_, is_training());
  const torch::Tensor g = layers::gru_outputs(gru_, x);  // [B, l, hidden]
  // [c_l ; c_g]. The attention's mask m_t: RecBole's item_seq > 0, which for right-padded rows
  // is t < len (what is used here, so that nothing after a row's last item is read even when the
  // row holds items there).
  const torch::Tensor c = layers::dropout(
      layers::narm_encoder(g, a1_->weight, a2_->weight, v_->weight, layers::item_seq_len(batch)),
      ct_dropout_, is_training());
  return kernels::jit_linear(c, b_->weight);
}

RECBOLE_REGISTER_MODEL(NARM) {
  using config::Key;
  using config::KeyType;
  register_model(
      {"NARM",
       "sequential",
       InputType::kNextItem,
       "Neural attentive session recommendation: a GRU with a global and an attentive local "
       "encoder",
       {keys::embedding_size().decl("Dimension of the item embeddings"),
        Key("hidden_size", KeyType::kInt).min(1).help("Dimension of the GRU state"),
        Key("n_layers", KeyType::kInt).min(1).help("GRU layers"),
        Key("dropout_probs", KeyType::kFloatList)
            .min(0)
            .max(0.999999)
            .help("Dropout on the embeddings and on the joined encoders, [p_emb, p_ct]"),
        Key("loss_type", KeyType::kString)
            .choices({"CE", "BPR"})
            .help("CE over every item, or BPR with a sampled negative")},
       [](const ModelContext& ctx) { return std::make_shared<NARM>(ctx); }});
}

}  // namespace recbole::models
