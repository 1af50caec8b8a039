#include "models/knowledge/kgnnls.h"

#include "models/layers/knowledge.h"
#include "models/layers/losses.h"
#include "recbole/config/config.h"
#include "recbole/data/negative_sampler.h"

namespace recbole::models {

KGNNLS::KGNNLS(const ModelContext& ctx)
    : KGCN(ctx, "KGNNLS"),
      ls_weight_(ctx.config.get_double("ls_weight")),
      n_entities_(ctx.need<data::KnowledgeGraph>().n_entities()) {
  const data::InteractionMatrix& train = ctx.train;
  for (int32_t u = 0; u < train.n_users(); ++u)
    for (const int32_t* it = train.row_begin(u); it != train.row_end(u); ++it)
      labels_[int64_t{u} * n_entities_ + *it] = 1.0f;
  data::Rng rng(static_cast<uint64_t>(ctx.config.get_int("seed")) ^ 0x6b676e6e6c73ULL);
  for (int64_t k = 0, n = train.nnz(); k < n; ++k) {
    const auto u = static_cast<int64_t>(rng.below(uint64_t(ctx.n_users) + 1));
    const auto i = static_cast<int64_t>(rng.below(uint64_t(ctx.n_items) + 1));
    labels_.emplace(u * n_entities_ + i, 0.0f);  // a training pair keeps its 1
  }
}

torch::Tensor KGNNLS::smoothed_labels(const torch::Tensor& users, const torch::Tensor& items,
                                      const Field& field, const torch::Tensor& logits) {
  const int64_t b = users.size(0);
  const torch::Tensor u_host = DeviceManager::to_host(users).contiguous();
  const torch::Tensor i_host = DeviceManager::to_host(items).contiguous();
  // Labels and reset masks of levels 1..n_iter (level 0 is always held out).
  std::vector<torch::Tensor> label{torch::full({b, 1}, 0.5f)}, reset{torch::zeros({b, 1})};
  for (size_t j = 1; j < field.entities.size(); ++j) {
    const torch::Tensor e = DeviceManager::to_host(field.entities[j]).contiguous();
    const int64_t w = e.size(1);
    torch::Tensor l = torch::empty({b, w}), m = torch::empty({b, w});
    const int64_t* pe = e.data_ptr<int64_t>();
    float* pl = l.data_ptr<float>();
    float* pm = m.data_ptr<float>();
    for (int64_t r = 0; r < b; ++r) {
      const int64_t u = u_host.data_ptr<int64_t>()[r], item = i_host.data_ptr<int64_t>()[r];
      for (int64_t c = 0; c < w; ++c) {
        const int64_t ent = pe[r * w + c];
        float v = 0.5f;
        if (ent != item) {
          const auto it = labels_.find(u * n_entities_ + ent);
          if (it != labels_.end()) v = it->second;
        }
        pl[r * w + c] = v;
        pm[r * w + c] = v != 0.5f ? 1.0f : 0.0f;
      }
    }
    label.push_back(device_manager().place(l));
    reset.push_back(device_manager().place(m));
  }
  label[0] = device_manager().place(label[0]);
  reset[0] = device_manager().place(reset[0]);
  for (int64_t i = 0; i < n_iter_; ++i) {
    std::vector<torch::Tensor> next;
    for (int64_t j = 0; j < n_iter_ - i; ++j) {
      const torch::Tensor a = neighbor_weights(logits, field, j);  // [B, K^j, K]
      const int64_t width = a.size(1);
      const torch::Tensor agg =
          (a * label[size_t(j) + 1].view({b, width, k_})).sum(2) / static_cast<double>(k_);
      next.push_back(reset[size_t(j)] * label[size_t(j)] + (1 - reset[size_t(j)]) * agg);
    }
    label = std::move(next);
  }
  return label[0].view({b});
}

layers::PartForward KGNNLS::loss_part(const data::Batch& part, int64_t batch_rows) {
  const int64_t n = part.users.size(0);
  const torch::Tensor users = part.users.repeat({2});
  const torch::Tensor items = torch::cat({part.items, part.neg_items});
  const torch::Tensor u = layers::gather_rows(user_embedding_, users);
  const torch::Tensor logits = relation_logits(u);
  const Field field = receptive_field(items);
  const torch::Tensor v = item_vectors(logits, field);
  const torch::Tensor scores = (u * v).sum(1);
  const torch::Tensor target =
      torch::cat({torch::ones({n}, scores.options()), torch::zeros({n}, scores.options())});
  const auto bce_sum = [&](const torch::Tensor& logit) {
    return torch::binary_cross_entropy_with_logits(logit, target, /*weight=*/{},
                                                   /*pos_weight=*/{}, at::Reduction::Sum);
  };
  const torch::Tensor ls = bce_sum(smoothed_labels(users, items, field, logits));
  return {(bce_sum(scores) + ls_weight_ * ls) / static_cast<double>(2 * batch_rows), {u, v}};
}

RECBOLE_REGISTER_MODEL(KGNNLS) {
  std::vector<config::KeyDecl> keys = kgcn_keys();
  keys.push_back(config::Key("ls_weight", config::KeyType::kFloat)
                     .min(0)
                     .help("Weight of the label-smoothness loss"));
  register_model(
      {"KGNNLS", "knowledge", InputType::kPairwise,
       "KGCN with label smoothness: labels propagated over the same weighted KG neighbourhoods",
       std::move(keys), [](const ModelContext& ctx) { return std::make_shared<KGNNLS>(ctx); }});
}

}  // namespace recbole::models
