#include "tasks/sequential/sequential_serving.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "models/layers/sequence.h"
#include "recbole/utils/error.h"
#include "tasks/sequential/sequential_pipeline.h"

namespace recbole::serving {
namespace {

// item_seq [B, max_len] (the last max_len items of each sequence, oldest first, right-padded
// with 0) and item_seq_len [B] for the sequences [begin[r], end[r]).
data::Batch sequence_batch(const std::vector<const int32_t*>& begin,
                           const std::vector<const int32_t*>& end, int64_t max_len) {
  const int64_t rows = static_cast<int64_t>(begin.size());
  data::Batch b;
  b.users = torch::zeros({rows}, torch::kInt64);
  b.columns[models::layers::kItemSeq] = torch::zeros({rows, max_len}, torch::kInt64);
  b.columns[models::layers::kItemSeqLen] = torch::zeros({rows}, torch::kInt64);
  int64_t* seq = b.column(models::layers::kItemSeq).data_ptr<int64_t>();
  int64_t* len = b.column(models::layers::kItemSeqLen).data_ptr<int64_t>();
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t n =
        std::min<int64_t>(end[static_cast<size_t>(r)] - begin[static_cast<size_t>(r)], max_len);
    const int32_t* from = end[static_cast<size_t>(r)] - n;
    for (int64_t k = 0; k < n; ++k) seq[r * max_len + k] = from[k];
    len[r] = n;
  }
  return b;
}

class SequentialServing : public TaskServing {
 public:
  SequentialServing(std::vector<int64_t> offsets, std::vector<int32_t> items, int64_t max_len)
      : offsets_(std::move(offsets)), items_(std::move(items)), max_len_(max_len) {}

  data::Batch user_batch(const std::vector<int64_t>& users) const override {
    std::vector<const int32_t*> begin, end;
    for (int64_t u : users) {
      const int64_t lo = offsets_[static_cast<size_t>(u)],
                    hi = offsets_[static_cast<size_t>(u + 1)];
      if (lo == hi)
        throw Error("user id " + std::to_string(u) +
                    " has no items in the checkpoint's sequences: a sequential model has "
                    "nothing to predict the next item from");
      begin.push_back(items_.data() + lo);
      end.push_back(items_.data() + hi);
    }
    data::Batch b = sequence_batch(begin, end, max_len_);
    b.users = data::id_tensor(users);
    return b;
  }

  data::Batch history_batch(const std::vector<int32_t>& history, int64_t n_items) const override {
    (void)n_items;
    if (history.empty())
      throw Error("an empty item history: a sequential model needs at least one item");
    return sequence_batch({history.data()}, {history.data() + history.size()}, max_len_);
  }

 private:
  std::vector<int64_t> offsets_;
  std::vector<int32_t> items_;
  int64_t max_len_;
};

SectionWriter prepare_sequential_section(const tasks::TaskPipeline& task) {
  const auto* seq = dynamic_cast<const tasks::SequentialPipeline*>(&task);
  if (seq == nullptr) throw Error("sequential serving: the run's pipeline is not sequential");
  const data::SequenceStore& store = seq->store();
  // Tensors that never change, held by the writer for every best-model checkpoint of the run.
  const torch::Tensor offsets = data::id_tensor(store.offsets());
  const torch::Tensor items =
      torch::from_blob(const_cast<int32_t*>(store.items().data()),
                       {static_cast<int64_t>(store.items().size())}, torch::kInt32)
          .clone();
  const torch::Tensor max_len = torch::full({1}, store.max_len(), torch::kInt64);
  return [offsets, items, max_len](torch::serialize::OutputArchive& archive) {
    archive.write("offsets", offsets);
    archive.write("items", items);
    archive.write("max_len", max_len);
  };
}

torch::Tensor read_tensor(torch::serialize::InputArchive& archive, const char* key,
                          torch::ScalarType dtype, const std::string& path) {
  torch::Tensor t;
  if (!archive.try_read(key, t) || t.dim() != 1 || t.scalar_type() != dtype)
    throw Error("checkpoint " + path + ": its sequential serving section has no valid '" + key +
                "' entry (damaged, or written by another version)");
  return t.contiguous();
}

std::unique_ptr<TaskServing> load_sequential_section(torch::serialize::InputArchive& section,
                                                     const ServingSection& common,
                                                     const std::string& path) {
  const torch::Tensor offsets_t = read_tensor(section, "offsets", torch::kInt64, path);
  const torch::Tensor items_t = read_tensor(section, "items", torch::kInt32, path);
  const torch::Tensor max_len_t = read_tensor(section, "max_len", torch::kInt64, path);
  const std::string damaged = "checkpoint " + path + ": its users' item sequences are damaged";
  if (offsets_t.numel() != common.n_users + 1 || max_len_t.numel() != 1) throw Error(damaged);
  const int64_t max_len = max_len_t.item<int64_t>();
  if (max_len < 1) throw Error(damaged + " (MAX_ITEM_LIST_LENGTH < 1)");
  const int64_t* o = offsets_t.data_ptr<int64_t>();
  std::vector<int64_t> offsets(o, o + offsets_t.numel());
  const int32_t* it = items_t.data_ptr<int32_t>();
  std::vector<int32_t> items(it, it + items_t.numel());
  if (offsets.front() != 0 || offsets.back() != static_cast<int64_t>(items.size()) ||
      !std::is_sorted(offsets.begin(), offsets.end()))
    throw Error(damaged);
  for (int32_t i : items)
    if (i < 1 || i >= common.n_items) throw Error(damaged + " (an item id out of range)");
  return std::make_unique<SequentialServing>(std::move(offsets), std::move(items), max_len);
}

}  // namespace

TaskServingHooks sequential_serving_hooks() {
  return {prepare_sequential_section, load_sequential_section};
}

}  // namespace recbole::serving
