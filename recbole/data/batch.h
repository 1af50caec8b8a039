#pragma once
// Batch: one batch of named columns (RecBole's Interaction), what every model reads in
// calculate_loss, predict and full_sort_predict. Typed columns for what the task families
// share; a name → tensor map for feature fields. A column a batch does not carry is undefined.
//
// Sources build batches on the CPU; DeviceManager::place(Batch) moves every defined column to
// the device in one call. Row b of every [B, ...] column describes the same sample.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <torch/torch.h>

namespace recbole::data {

struct Batch {
  torch::Tensor users;         // [B] int64: the user of each row
  torch::Tensor items;         // [B] int64: the positive, labelled or target item
  torch::Tensor neg_items;     // [B] int64: a sampled negative (pairwise training)
  torch::Tensor labels;        // [B] float32 in {0, 1} or a rating (pointwise, labelled evaluation)
  torch::Tensor item_seq;      // [B, L] int64: item sequences, 0-padded on the right (sequential)
  torch::Tensor item_seq_len;  // [B] int64: the length of each sequence
  torch::Tensor history;       // [B, n_items] float32 0/1: each row's training items (user rows)
  std::map<std::string, torch::Tensor> features;  // feature fields by field name
  // Knowledge models: a batch of KG triples beside the recommendation rows ([B_kg] int64 each;
  // B_kg need not equal B): entity ids (items are entities 0..n_items-1) and relation ids.
  torch::Tensor kg_heads, kg_relations, kg_tails, kg_neg_tails;

  // The number of rows: the first dimension of the first defined column (0 when none).
  int64_t size() const {
    for (const torch::Tensor* t : {&users, &items, &item_seq, &labels, &history})
      if (t->defined()) return t->size(0);
    for (const auto& [name, t] : features)
      if (t.defined()) return t.size(0);
    return 0;
  }

  // Calls f(tensor&) for every defined column, the feature fields included.
  template <typename F>
  void for_each_column(F&& f) {
    for (torch::Tensor* t : {&users, &items, &neg_items, &labels, &item_seq, &item_seq_len,
                             &history, &kg_heads, &kg_relations, &kg_tails, &kg_neg_tails})
      if (t->defined()) f(*t);
    for (auto& [name, t] : features)
      if (t.defined()) f(t);
  }

  // Rows [start, start + n) of every defined column (views, no copy): a part of a batch. Every
  // column, the KG triples' too, must hold at least start + n rows.
  Batch narrow(int64_t start, int64_t n) const {
    Batch part = *this;
    part.for_each_column([&](torch::Tensor& t) { t = t.narrow(0, start, n); });
    return part;
  }

  // The rows `index` names ([m] int64 on the columns' device), in its order, from every column.
  Batch index_select(const torch::Tensor& index) const {
    Batch out = *this;
    out.for_each_column([&](torch::Tensor& t) { t = t.index_select(0, index); });
    return out;
  }
};

// A [n] int64 CPU tensor holding `values` (copied).
inline torch::Tensor id_tensor(const std::vector<int64_t>& values) {
  return torch::from_blob(const_cast<int64_t*>(values.data()),
                          {static_cast<int64_t>(values.size())}, torch::kInt64)
      .clone();
}

}  // namespace recbole::data
