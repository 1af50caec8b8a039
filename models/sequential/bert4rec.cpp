#include "models/sequential/bert4rec.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "models/layers/dropout.h"
#include "models/layers/item_cross_entropy.h"
#include "models/layers/key_checks.h"
#include "models/layers/losses.h"
#include "models/layers/sequence.h"
#include "models/sequential/sasrec.h"
#include "recbole/config/config.h"
#include "recbole/utils/splitmix.h"

namespace recbole::models {

namespace {

// Uniform draws from one SplitMix64 stream.
struct Draws {
  uint64_t state;
  double unit() { return static_cast<double>(splitmix64_next(state) >> 11) * 0x1.0p-53; }
  int64_t below(int64_t n) { return static_cast<int64_t>(unit() * static_cast<double>(n)); }
};

}  // namespace

BERT4Rec::BERT4Rec(const ModelContext& ctx)
    : SequentialModel("BERT4Rec", ctx),
      n_items_(ctx.n_items),
      mask_ratio_(ctx.config.get_double("mask_ratio")),
      ft_ratio_(ctx.config.get_double("ft_ratio")),
      dropout_(ctx.config.get_double("hidden_dropout_prob")) {
  mask_k_ = static_cast<int64_t>(std::floor(mask_ratio_ * static_cast<double>(max_len_)));
  const layers::TransformerOptions o = transformer_options(ctx.config);
  const double std = ctx.config.get_double("initializer_range");
  const int64_t d = o.hidden_size;
  item_embedding_ =
      register_parameter("item_embedding", torch::empty({ctx.n_items + 1, d}).normal_(0.0, std));
  position_embedding_ =
      register_parameter("position_embedding", torch::empty({max_len_, d}).normal_(0.0, std));
  encoder_ = register_module("encoder", layers::TransformerEncoder(o));
  auto layer_norm = [&] {
    return torch::nn::LayerNorm(torch::nn::LayerNormOptions({d}).eps(o.layer_norm_eps));
  };
  layer_norm_ = register_module("layer_norm", layer_norm());
  output_ffn_ = register_module("output_ffn", torch::nn::Linear(d, d));
  output_ln_ = register_module("output_ln", layer_norm());
  output_bias_ = register_parameter("output_bias", torch::zeros({ctx.n_items}));
  layers::init_transformer_weights(*this, std);
  to(ctx.device.device());
}

torch::Tensor BERT4Rec::forward_all(const torch::Tensor& seq) {
  const int64_t l = seq.size(1);
  torch::Tensor x = lookup(seq) + position_embedding_.narrow(0, 0, l).unsqueeze(0);
  x = layers::dropout(layer_norm_->forward(x), dropout_, is_training());
  return encoder_->forward(x, layers::attention_mask(seq, /*causal=*/false));
}

torch::Tensor BERT4Rec::output_head(const torch::Tensor& h) {
  return output_ln_->forward(layers::activation(output_ffn_->forward(h), "gelu"));
}

torch::Tensor BERT4Rec::mask_last(const torch::Tensor& item_seq, const torch::Tensor& item_seq_len,
                                  int64_t mask_id) {
  torch::Tensor shifted = torch::cat({item_seq.narrow(1, 1, item_seq.size(1) - 1),
                                      torch::zeros({item_seq.size(0), 1}, item_seq.options())},
                                     1);
  return shifted.scatter_(1, (item_seq_len - 1).unsqueeze(1), mask_id);
}

torch::Tensor BERT4Rec::encode(const data::Batch& batch) {
  // Keys past a row's length are padding, masked out of every attention: the batch's columns
  // past its longest row change nothing.
  const int64_t longest = layers::item_seq_len(batch).max().item<int64_t>();
  const torch::Tensor seq =
      mask_last(layers::item_seq(batch), layers::item_seq_len(batch), n_items_)
          .narrow(1, 0, longest);
  return output_head(layers::gather_last(forward_all(seq), layers::item_seq_len(batch)));
}

torch::Tensor BERT4Rec::score_items(const torch::Tensor& h, const torch::Tensor& items) const {
  return (h * item_embedding_.index_select(0, items)).sum(-1) + output_bias_.index_select(0, items);
}

torch::Tensor BERT4Rec::full_sort_predict(const data::Batch& batch) {
  return torch::matmul(encode(batch), output_items().t()) + output_bias_;
}

BERT4Rec::Masked BERT4Rec::mask(const data::Batch& batch) const {
  Masked m;
  m.seq = DeviceManager::to_host(layers::item_seq(batch)).clone().contiguous();
  const torch::Tensor len = DeviceManager::to_host(layers::item_seq_len(batch)).contiguous();
  const int64_t b = m.seq.size(0), L = m.seq.size(1);
  Draws draw{static_cast<uint64_t>(
      torch::randint(std::numeric_limits<int64_t>::max(), {1}, torch::kInt64).item<int64_t>())};
  const bool last_item_mode = draw.unit() < ft_ratio_;
  int64_t* s = m.seq.data_ptr<int64_t>();
  const int64_t* n = len.data_ptr<int64_t>();
  std::vector<int64_t> rows, positions, pos_items, neg_items, masked;
  m.offsets.assign(1, 0);
  for (int64_t r = 0; r < b; ++r) {
    int64_t* row = s + r * L;
    const int64_t n_r = std::min(n[r], L);
    masked.clear();
    if (last_item_mode) {
      masked.push_back(n_r - 1);
    } else {
      for (int64_t p = 0; p < n_r && row[p] != 0; ++p)
        if (draw.unit() < mask_ratio_) masked.push_back(p);
    }
    // The last K masked positions count, position 0 never (RecBole's quirks, see the header).
    const size_t first = masked.size() > static_cast<size_t>(mask_k_)
                             ? masked.size() - static_cast<size_t>(mask_k_)
                             : 0;
    for (size_t k = first; k < masked.size(); ++k) {
      const int64_t p = masked[k];
      if (p == 0) continue;
      rows.push_back(r);
      positions.push_back(p);
      pos_items.push_back(row[p]);
      if (bpr_) {
        // An item not in the row (a row holding every item, possible only in toy data, takes
        // the last draw rather than looping for ever).
        int64_t neg = 1 + draw.below(n_items_ - 1);
        for (int tries = 0; tries < 1000 && std::find(row, row + n_r, neg) != row + n_r; ++tries)
          neg = 1 + draw.below(n_items_ - 1);
        neg_items.push_back(neg);
      }
    }
    for (const int64_t p : masked) row[p] = n_items_;
    m.offsets.push_back(static_cast<int64_t>(rows.size()));
  }
  auto tensor = [](const std::vector<int64_t>& v) {
    return torch::tensor(v, torch::kInt64).view({static_cast<int64_t>(v.size())});
  };
  m.rows = tensor(rows);
  m.positions = tensor(positions);
  m.pos_items = tensor(pos_items);
  m.neg_items = tensor(neg_items);
  return m;
}

torch::Tensor BERT4Rec::loss_sum(const Masked& m, int64_t begin, int64_t end) {
  const int64_t e0 = m.offsets[static_cast<size_t>(begin)];
  const int64_t e1 = m.offsets[static_cast<size_t>(end)];
  if (e1 == e0) return output_bias_.sum() * 0.0;
  const torch::Tensor seq = m.seq.narrow(0, begin, end - begin);
  const int64_t l = (seq > 0).sum(1).max().item<int64_t>();  // the rows' longest length
  const DeviceManager& device = device_manager();
  const torch::Tensor out = forward_all(device.place(seq.narrow(1, 0, l)));
  const torch::Tensor flat = device.place((m.rows.narrow(0, e0, e1 - e0) - begin) * l +
                                          m.positions.narrow(0, e0, e1 - e0));
  // The head works row by row, so only the counted positions go through it.
  const torch::Tensor h = output_head(out.reshape({-1, out.size(2)}).index_select(0, flat));
  const torch::Tensor pos = device.place(m.pos_items.narrow(0, e0, e1 - e0));
  if (bpr_) {
    const torch::Tensor neg = device.place(m.neg_items.narrow(0, e0, e1 - e0));
    return -torch::log(1e-14 + torch::sigmoid(score_items(h, pos) - score_items(h, neg))).sum();
  }
  return layers::item_cross_entropy(h, output_items(), output_bias_, pos);
}

torch::Tensor BERT4Rec::calculate_loss(const data::Batch& batch) {
  const Masked m = mask(batch);
  return loss_sum(m, 0, m.seq.size(0)) / static_cast<double>(std::max<int64_t>(1, m.counted()));
}

torch::Tensor BERT4Rec::train_step(const data::Batch& batch, TrainStep& step) {
  // As SequentialModel's micro-batches, with the masks drawn once for the whole batch and each
  // part's loss divided by the batch's counted positions: the gradient of the batch's mean.
  const Masked m = mask(longest_first(batch));
  const double counted = static_cast<double>(std::max<int64_t>(1, m.counted()));
  return step_in_parts(step, m.seq.size(0), [&](int64_t start, int64_t n) {
    return loss_sum(m, start, start + n) / counted;
  });
}

RECBOLE_REGISTER_MODEL(BERT4Rec) {
  std::vector<config::KeyDecl> keys = transformer_keys();
  keys.push_back(config::Key("mask_ratio", config::KeyType::kFloat)
                     .min(0)
                     .max(1)
                     .help("Probability that a position is masked (cloze batches); the last "
                           "floor(mask_ratio * MAX_ITEM_LIST_LENGTH) masks of a row count"));
  keys.push_back(config::Key("ft_ratio", config::KeyType::kFloat)
                     .min(0)
                     .max(1)
                     .help("Probability that a batch masks only each row's last item"));
  register_model({"BERT4Rec", "sequential", InputType::kNextItem,
                  "Bidirectional transformer trained as a cloze task over masked items",
                  std::move(keys),
                  [](const ModelContext& ctx) { return std::make_shared<BERT4Rec>(ctx); }});
}

}  // namespace recbole::models
