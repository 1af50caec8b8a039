#include "models/general/enmf.h"

#include "models/layers/autoencoder.h"
#include "models/layers/dropout.h"
#include "models/layers/history.h"
#include "models/layers/init.h"
#include "models/layers/key_checks.h"
#include "models/shared_keys.h"
#include "recbole/config/config.h"

namespace recbole::models {
namespace {

// Rows `ids` of `table`; rows of id 0 carry no gradient (nn.Embedding's padding_idx).
torch::Tensor lookup_without_pad_grad(const torch::Tensor& table, const torch::Tensor& ids) {
  const torch::Tensor rows = table.index_select(0, ids);
  return torch::where((ids == 0).unsqueeze(1), rows.detach(), rows);
}

}  // namespace

ENMF::ENMF(const ModelContext& ctx)
    : Model("ENMF", ctx),
      dropout_prob_(keys::dropout_prob().get(ctx.config)),
      reg_weight_(keys::reg_weight().get(ctx.config)),
      negative_weight_(ctx.config.get_double("negative_weight")) {
  const int64_t d = keys::embedding_size().get(ctx.config);
  // Row 0 included: RecBole's initialiser overwrites the zeros of padding_idx.
  user_embedding_ = register_table("user_embedding", ctx.n_users, d, layers::Init::kXavierNormal);
  item_embedding_ = register_table("item_embedding", ctx.n_items, d, layers::Init::kXavierNormal);
  h_ = register_module("H_i", torch::nn::Linear(torch::nn::LinearOptions(d, 1).bias(false)));
  layers::initialize(*h_, layers::Init::kXavierNormal);
  const layers::PaddedHistory history = layers::padded_history(ctx.train);
  pad_slots_ = (history.ids.size(1) - history.lengths).to(torch::kFloat32);
  if (!ctx.config.get_bool("pad_slots_as_positives")) pad_slots_.zero_();
  to(ctx.device.device());
  pad_slots_ = ctx.device.place(pad_slots_);
}

torch::Tensor ENMF::calculate_loss(const data::Batch& batch) {
  const torch::Tensor rows = layers::user_rows(batch, train_, device_manager());
  const torch::Tensor& users = batch.users;
  const torch::Tensor h = h_->weight.view({-1});  // [d]
  const torch::Tensor p = lookup_without_pad_grad(user_embedding_, users);
  const torch::Tensor p_drop = layers::dropout(p, dropout_prob_, is_training());
  // History lookups send no gradient into q_0 either (padding_idx).
  const torch::Tensor q_lookup =
      torch::cat({item_embedding_.slice(0, 0, 1).detach(), item_embedding_.slice(0, 1)});
  const torch::Tensor r = torch::matmul(p_drop * h, q_lookup.t());  // [B, n_items]
  const torch::Tensor f = (1 - negative_weight_) * r.pow(2) - 2 * r;
  // Real slots: the user's items; padded slots: L − |u| copies of item 0.
  const torch::Tensor positive =
      (f * rows).sum() + (f.select(1, 0) * pad_slots_.index_select(0, users)).sum();
  const torch::Tensor& q = item_embedding_;
  const torch::Tensor whole = (torch::matmul(q.t(), q) * torch::matmul(p.t(), p) *
                               torch::matmul(h_->weight.t(), h_->weight))
                                  .sum();
  torch::Tensor loss = negative_weight_ * whole + positive;
  if (reg_weight_ != 0) loss = loss + reg_weight_ * (user_embedding_.norm() + q.norm());
  return loss;
}

torch::Tensor ENMF::full_sort_predict(const data::Batch& batch) {
  const torch::Tensor p = user_embedding_.index_select(0, batch.users) * h_->weight.view({-1});
  return torch::matmul(p, item_embedding_.t());
}

bool ENMF::score_factors(torch::Tensor* users, torch::Tensor* items) const {
  torch::NoGradGuard no_grad;
  *users = user_embedding_ * h_->weight.view({1, -1});
  *items = item_embedding_.detach();
  return true;
}

RECBOLE_REGISTER_MODEL(ENMF) {
  using config::Key;
  using config::KeyType;
  register_model(
      {"ENMF",
       "general",
       InputType::kUserRows,
       "Efficient neural matrix factorisation: non-sampling whole-data squared loss",
       {keys::embedding_size().decl("Dimension of user and item embeddings"),
        keys::dropout_prob().decl("Dropout on the user embeddings of the positive "
                                  "term"),
        keys::reg_weight().decl("Weight of the full-table norms"),
        Key("pad_slots_as_positives", KeyType::kBool)
            .help("RecBole's quirk: the padded slots of the history count as positives of the "
                  "pad item (false: they are masked)"),
        Key("negative_weight", KeyType::kFloat)
            .min(0)
            .max(1)
            .help("Weight c0 of every (user, item) pair as a negative")},
       [](const ModelContext& ctx) { return std::make_shared<ENMF>(ctx); }});
}

}  // namespace recbole::models
