#include "models/sequential/fpmc.h"

#include "models/layers/init.h"
#include "models/layers/losses.h"
#include "models/layers/sequence.h"
#include "models/shared_keys.h"
#include "recbole/config/config.h"

namespace recbole::models {

FPMC::FPMC(const ModelContext& ctx) : Model("FPMC", ctx) {
  const int64_t d = keys::embedding_size().get(ctx.config);
  using layers::Init;
  ui_ = register_table("UI_embedding", ctx.n_users, d, Init::kXavierNormal);
  iu_ = register_table("IU_embedding", ctx.n_items, d, Init::kXavierNormal);
  li_ = register_table("LI_embedding", ctx.n_items, d, Init::kXavierNormal);
  il_ = register_table("IL_embedding", ctx.n_items, d, Init::kXavierNormal);
  to(ctx.device.device());
}

torch::Tensor FPMC::last_items(const data::Batch& batch) const {
  return layers::item_seq(batch)
      .gather(1, (layers::item_seq_len(batch) - 1).unsqueeze(1))
      .squeeze(1);
}

torch::Tensor FPMC::score(const data::Batch& batch, const torch::Tensor& items) const {
  const torch::Tensor mf = (ui_.index_select(0, batch.users) * iu_.index_select(0, items)).sum(1);
  // LI has RecBole's padding_idx 0: its lookups give row 0 no gradient.
  const torch::Tensor fmc =
      (il_.index_select(0, items) * torch::embedding(li_, last_items(batch), 0)).sum(1);
  return mf + fmc;
}

torch::Tensor FPMC::calculate_loss(const data::Batch& batch) {
  return layers::bpr_loss(score(batch, batch.items), score(batch, batch.neg_items));
}

torch::Tensor FPMC::predict(const data::Batch& batch) { return score(batch, batch.items); }

torch::Tensor FPMC::full_sort_predict(const data::Batch& batch) {
  return torch::matmul(ui_.index_select(0, batch.users), iu_.t()) +
         torch::matmul(li_.index_select(0, last_items(batch)), il_.t());
}

RECBOLE_REGISTER_MODEL(FPMC) {
  using config::Key;
  using config::KeyType;
  register_model(
      {"FPMC",
       "sequential",
       InputType::kPairwise,
       "Factorizing personalized Markov chains: MF plus a factorised transition from the last "
       "item",
       {keys::embedding_size().decl("Dimension of the four tables"),
        Key("loss_type", KeyType::kString).choices({"BPR"}).help("BPR only")},
       [](const ModelContext& ctx) { return std::make_shared<FPMC>(ctx); }});
}

}  // namespace recbole::models
