#include "recbole/data/sequence_store.h"

#include <algorithm>
#include <string>

#include "recbole/data/split.h"
#include "recbole/utils/error.h"

namespace recbole::data {

SequenceStore SequenceStore::build(const Dataset& dataset, const DatasetOptions& options,
                                   int64_t max_len) {
  const EvalArgs& ea = options.eval_args;
  const Table& inter = dataset.inter_table();
  const std::string& time = options.time_field;
  if (time.empty() || !inter.has(time) || inter.column(time).type != FieldType::kFloat)
    throw ConfigError(
        "TIME_FIELD: sequential models order each user's interactions by time, "
        "and the dataset " +
        dataset.name() + " has no loaded float field \"" + time +
        "\"; set TIME_FIELD to its time field and add that to load_col.inter");
  if (ea.order != "TO")
    throw ConfigError("eval_args: order: sequential models need TO (time order), got \"" +
                      ea.order +
                      "\"; an eval_args dict replaces the sequential preset's whole dict, so give "
                      "split and order with it (e.g. {split: {LS: valid_and_test}, order: TO})");
  // The stable float32 time order, then a stable counting sort by user: per user, time order
  // with ties in file order (RecBole's sort by (user, time)).
  const std::vector<int64_t> order = order_rows(dataset, ea, /*seed=*/0);
  const std::vector<int32_t>& u = dataset.inter_users();
  const std::vector<int32_t>& it = dataset.inter_items();
  std::vector<int32_t> users(order.size()), items(order.size());
  for (size_t k = 0; k < order.size(); ++k) {
    users[k] = u[static_cast<size_t>(order[k])];
    items[k] = it[static_cast<size_t>(order[k])];
  }
  return from_ordered(dataset.n_users(), users, items, ea, max_len);
}

SequenceStore SequenceStore::from_ordered(int64_t n_users, const std::vector<int32_t>& users,
                                          const std::vector<int32_t>& items,
                                          const EvalArgs& eval_args, int64_t max_len) {
  if (max_len < 1)
    throw ConfigError("MAX_ITEM_LIST_LENGTH: expected int >= 1, got " + std::to_string(max_len));
  if (eval_args.split == EvalArgs::SplitKind::kRatio && eval_args.group_by != "user")
    throw ConfigError(
        "eval_args: group_by: sequential models split each user's samples; "
        "expected user, got \"" +
        eval_args.group_by + "\"");
  SequenceStore s;
  s.max_len_ = max_len;
  s.offsets_.assign(static_cast<size_t>(n_users) + 1, 0);
  for (int32_t user : users) ++s.offsets_[static_cast<size_t>(user) + 1];
  for (size_t k = 1; k < s.offsets_.size(); ++k) s.offsets_[k] += s.offsets_[k - 1];
  s.items_.resize(items.size());
  std::vector<int64_t> next(s.offsets_.begin(), s.offsets_.end() - 1);
  for (size_t r = 0; r < users.size(); ++r)
    s.items_[static_cast<size_t>(next[static_cast<size_t>(users[r])]++)] = items[r];
  s.split(eval_args);
  return s;
}

void SequenceStore::split(const EvalArgs& ea) {
  auto add = [&](SequenceSamples& part, int32_t user, int64_t pos) {
    part.positions.push_back(pos);
    part.users.push_back(user);
    part.targets.push_back(items_[static_cast<size_t>(pos)]);
  };
  const int64_t n = n_users();
  for (int32_t user = 0; user < n; ++user) {
    const int64_t begin = offsets_[static_cast<size_t>(user)];
    const int64_t count = offsets_[static_cast<size_t>(user) + 1] - begin;
    if (count == 1) ++short_.one;
    if (count == 2) ++short_.two;
    if (count == 3) ++short_.three;
    const int64_t k = count - 1;  // samples: every interaction but the first
    if (k <= 0) continue;
    const int64_t first = begin + 1;
    int64_t sizes[3] = {k, 0, 0};
    if (ea.split == EvalArgs::SplitKind::kLeaveOneOut) {
      const int64_t wanted = ea.leave_one_mode == "valid_and_test" ? 2 : 1;
      const int64_t held = std::min(wanted, k - 1);
      sizes[0] = k - held;
      if (ea.leave_one_mode == "valid_and_test") {
        // Held out from the end: test takes the last, valid the one before when there are two.
        if (held == 2) sizes[1] = 1, sizes[2] = 1;
        if (held == 1) sizes[2] = 1;
      } else if (ea.leave_one_mode == "valid_only") {
        sizes[1] = held;
      } else {
        sizes[2] = held;
      }
    } else {
      const std::vector<int64_t> r = split_sizes_by_ratio(k, ea.ratios);
      for (size_t j = 0; j < 3 && j < r.size(); ++j) sizes[j] = r[j];
    }
    int64_t pos = first;
    SequenceSamples* parts[3] = {&train_, &valid_, &test_};
    for (int j = 0; j < 3; ++j)
      for (int64_t c = 0; c < sizes[j]; ++c) add(*parts[j], user, pos++);
  }
}

}  // namespace recbole::data
