#include "models/sequential/gru4rec.h"

#include "models/layers/dropout.h"
#include "models/layers/gru.h"
#include "models/layers/init.h"
#include "models/layers/key_checks.h"
#include "models/layers/sequence.h"
#include "models/shared_keys.h"
#include "recbole/config/config.h"

namespace recbole::models {

GRU4Rec::GRU4Rec(const ModelContext& ctx)
    : SequentialModel("GRU4Rec", ctx), dropout_(keys::dropout_prob().get(ctx.config)) {
  const int64_t d = keys::embedding_size().get(ctx.config);
  const int64_t hidden = ctx.config.get_int("hidden_size");
  item_embedding_ = register_table("item_embedding", ctx.n_items, d, layers::Init::kXavierNormal);
  gru_ = register_module("gru", torch::nn::GRU(torch::nn::GRUOptions(d, hidden)
                                                   .num_layers(ctx.config.get_int("num_layers"))
                                                   .bias(false)
                                                   .batch_first(true)));
  dense_ = register_module("dense", torch::nn::Linear(hidden, d));
  {
    torch::NoGradGuard no_grad;
    for (auto& p : gru_->named_parameters())
      if (p.key() == "weight_ih_l0" || p.key() == "weight_hh_l0")
        torch::nn::init::xavier_uniform_(p.value());
  }
  to(ctx.device.device());
}

torch::Tensor GRU4Rec::encode(const data::Batch& batch) {
  const int64_t longest = layers::item_seq_len(batch).max().item<int64_t>();
  const torch::Tensor x = layers::dropout(lookup(layers::item_seq(batch).narrow(1, 0, longest)),
                                          dropout_, is_training());
  const torch::Tensor g = layers::gru_outputs(gru_, x);  // [B, longest, hidden]
  return dense_->forward(layers::gather_last(g, layers::item_seq_len(batch)));
}

RECBOLE_REGISTER_MODEL(GRU4Rec) {
  using config::Key;
  using config::KeyType;
  register_model({"GRU4Rec",
                  "sequential",
                  InputType::kNextItem,
                  "Session-based recommendation with a GRU over the item sequence",
                  {keys::embedding_size().decl("Dimension of the item embeddings"),
                   Key("hidden_size", KeyType::kInt).min(1).help("Dimension of the GRU state"),
                   Key("num_layers", KeyType::kInt).min(1).help("GRU layers"),
                   keys::dropout_prob().decl("Dropout on the item embeddings"),
                   Key("loss_type", KeyType::kString)
                       .choices({"CE", "BPR"})
                       .help("CE over every item, or BPR with a sampled negative")},
                  [](const ModelContext& ctx) { return std::make_shared<GRU4Rec>(ctx); }});
}

}  // namespace recbole::models
