#pragma once
// Batch: one batch of named columns (RecBole's Interaction), what every model reads in
// calculate_loss, predict and full_sort_predict. Typed columns for what every task family
// shares; a family's own columns by name (`columns`: the sequential task's item sequences, the
// knowledge task's KG triples, named where that family's models are); a name → tensor map for
// feature fields. A typed column a batch does not carry is undefined.
//
// Sources build batches on the CPU; DeviceManager::place(Batch) moves every defined column to
// the device in one call. Row b of every [B, ...] column describes the same sample.
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include <torch/torch.h>

namespace recbole::data {

struct Batch {
  torch::Tensor users;      // [B] int64: the user of each row
  torch::Tensor items;      // [B] int64: the positive, labelled or target item
  torch::Tensor neg_items;  // [B] int64: a sampled negative (pairwise training)
  torch::Tensor labels;     // [B] float32 in {0, 1} or a rating (pointwise, labelled evaluation)
  torch::Tensor history;    // [B, n_items] float32 0/1: each row's training items (user rows)
  std::map<std::string, torch::Tensor> features;  // feature fields by field name
  // A task family's own columns by name. Row b of each describes the same sample as the typed
  // columns', except where the family says otherwise (the knowledge task's KG triples are a
  // batch of their own beside the rows).
  std::map<std::string, torch::Tensor> columns;

  // The family column `name`; std::out_of_range naming it when the batch does not carry it (a
  // model fed by another family's source).
  const torch::Tensor& column(const std::string& name) const {
    const auto it = columns.find(name);
    if (it == columns.end() || !it->second.defined())
      throw std::out_of_range("the batch has no column \"" + name +
                              "\" (a model of another task family's data?)");
    return it->second;
  }
  bool has(const std::string& name) const {
    const auto it = columns.find(name);
    return it != columns.end() && it->second.defined();
  }

  // The number of rows: the first dimension of the first defined typed column, else of a family
  // or feature column (0 when none).
  int64_t size() const {
    for (const torch::Tensor* t : {&users, &items, &labels, &history})
      if (t->defined()) return t->size(0);
    for (const auto* named : {&columns, &features})
      for (const auto& [name, t] : *named)
        if (t.defined()) return t.size(0);
    return 0;
  }

  // Calls f(tensor&) for every defined column, the feature fields included.
  template <typename F>
  void for_each_column(F&& f) {
    for (torch::Tensor* t : {&users, &items, &neg_items, &labels, &history})
      if (t->defined()) f(*t);
    for (auto* named : {&columns, &features})
      for (auto& [name, t] : *named)
        if (t.defined()) f(t);
  }

  // Rows [start, start + n) of every defined column (views, no copy): a part of a batch. Every
  // column, a family's too, must hold at least start + n rows.
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
