#include "models/context/ffm.h"
#include "models/shared_keys.h"

#include <algorithm>

#include "recbole/config/config.h"

namespace recbole::models {

FFM::FFM(const ModelContext& ctx) : ContextModel("FFM", ctx) {
  const int64_t n = num_fields_;
  // E order: token_seq, token, float_seq, float. FFM order: token, float, token_seq, float_seq.
  const int64_t ts = static_cast<int64_t>(fields_.token_seq.size());
  const int64_t t = static_cast<int64_t>(fields_.token.size());
  const int64_t fs = static_cast<int64_t>(fields_.float_seq.size());
  const int64_t f = static_cast<int64_t>(fields_.float_fields.size());
  std::vector<int64_t> order;
  std::vector<uint8_t> seq;
  for (int64_t k = 0; k < t; ++k) order.push_back(ts + k), seq.push_back(0);
  for (int64_t k = 0; k < f; ++k) order.push_back(ts + t + fs + k), seq.push_back(0);
  for (int64_t k = 0; k < ts; ++k) order.push_back(k), seq.push_back(1);
  for (int64_t k = 0; k < fs; ++k) order.push_back(ts + t + k), seq.push_back(1);
  const std::vector<std::string> e_names = fields_.names();
  std::vector<std::string> names;
  for (int64_t k : order) names.push_back(e_names[static_cast<size_t>(k)]);
  const std::vector<int64_t> field = field_map(ctx, names);  // by FFM position
  const int64_t views = *std::max_element(field.begin(), field.end()) + 1;
  for (int64_t k = 0; k < views; ++k)
    views_.push_back(register_module("view" + std::to_string(k),
                                     layers::ContextEmbedding(fields_, embedding_size_)));
  order_ = register_buffer("order", torch::tensor(order, torch::kInt64));
  seq_mask_ = register_buffer(
      "seq_mask",
      torch::tensor(std::vector<int64_t>(seq.begin(), seq.end())).to(torch::kBool).view({1, n, 1}));
  // Pair i < j: feature i as seen by j's field times feature j as seen by i's field.
  std::vector<int64_t> lv, lp, rv, rp;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = i + 1; j < n; ++j)
      lv.push_back(field[static_cast<size_t>(j)]), lp.push_back(i),
          rv.push_back(field[static_cast<size_t>(i)]), rp.push_back(j);
  left_view_ = register_buffer("left_view", torch::tensor(lv, torch::kInt64));
  left_pos_ = register_buffer("left_pos", torch::tensor(lp, torch::kInt64));
  right_view_ = register_buffer("right_view", torch::tensor(rv, torch::kInt64));
  right_pos_ = register_buffer("right_pos", torch::tensor(rp, torch::kInt64));
  finish(/*init_linears=*/false);
}

torch::Tensor FFM::logits(const data::Batch& batch) {
  std::vector<torch::Tensor> views;
  torch::Tensor first = views_[0]->forward(batch).index_select(1, order_);
  views.push_back(first);
  for (size_t k = 1; k < views_.size(); ++k)
    views.push_back(
        torch::where(seq_mask_, first, views_[k]->forward(batch).index_select(1, order_)));
  torch::Tensor v = torch::stack(views, 1);  // [B, view, n, d]
  using torch::indexing::Slice;
  torch::Tensor left = v.index({Slice(), left_view_, left_pos_});  // [B, P, d]
  torch::Tensor right = v.index({Slice(), right_view_, right_pos_});
  return first_order(batch).squeeze(1) + (left * right).sum({1, 2});
}

RECBOLE_REGISTER_MODEL(FFM) {
  using config::Key;
  using config::KeyType;
  register_model(
      {"FFM",
       "context",
       InputType::kPointwise,
       "field-aware factorisation machine: one embedding view per field, plus first-order weights",
       {keys::embedding_size().decl("Width of the field embeddings"), field_map_key()},
       [](const ModelContext& ctx) { return std::make_shared<FFM>(ctx); }});
}

}  // namespace recbole::models
