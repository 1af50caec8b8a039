#pragma once
// SequenceStore: the sequential task's data (RecBole's SequentialDataset), built without a copy
// per prefix. Each user's interactions are stored once, in time order; a sample is a position in
// that store: its target is the item there and its input the up to `max_len` items before it,
// of the same user (the sliding window RecBole's augmentation keeps). Batches cut the prefixes
// they need (write_input), so memory grows with the interactions, not with interactions × L.
//
// Order (RecBole's data_augmentation): by user, then by the time field compared as float32
// (after normalisation, as RecBole sorts its float32 tensor), ties kept in file order.
// Samples: every interaction but each user's first. Split of each user's k samples:
//   LS valid_and_test: the last to test, the one before to valid, the rest to train, where a
//     user with k = 2 has no valid sample and one with k = 1 only a training sample
//     (RecBole's leave-one-out: at most k − 1 samples are held out);
//   LS valid_only / test_only: the last to valid / test;
//   RS [a, b, c] grouped by user: split_sizes_by_ratio(k) per user.
// Deliberate difference: samples are listed by user id, then time (RecBole lists users in order
// of their first sample in time); training shuffles them and evaluation averages over rows, so
// no figure depends on it.
#include <cstdint>
#include <vector>

#include "recbole/data/dataset.h"
#include "recbole/data/dataset_options.h"

namespace recbole::data {

// Samples of one part: target positions in SequenceStore::items(), their users and targets.
struct SequenceSamples {
  std::vector<int64_t> positions;
  std::vector<int32_t> users;
  std::vector<int32_t> targets;
  int64_t size() const { return static_cast<int64_t>(positions.size()); }
};

class SequenceStore {
 public:
  // Orders and splits the dataset's interactions. Throws ConfigError naming the key when the
  // time field is not loaded (TIME_FIELD), the order is not TO (eval_args) or the split groups
  // RS by none (not supported for sequences).
  static SequenceStore build(const Dataset& dataset, const DatasetOptions& options,
                             int64_t max_len);
  // From items already in time order per user (tests, tools): users[r], items[r] for r in order.
  static SequenceStore from_ordered(int64_t n_users, const std::vector<int32_t>& users,
                                    const std::vector<int32_t>& items, const EvalArgs& eval_args,
                                    int64_t max_len);

  int64_t max_len() const { return max_len_; }
  int64_t n_users() const { return static_cast<int64_t>(offsets_.size()) - 1; }
  // [n_users + 1]: user u's items are items()[offsets()[u], offsets()[u + 1]).
  const std::vector<int64_t>& offsets() const { return offsets_; }
  // Every interaction's item, by user, in time order.
  const std::vector<int32_t>& items() const { return items_; }

  const SequenceSamples& train() const { return train_; }
  const SequenceSamples& valid() const { return valid_; }
  const SequenceSamples& test() const { return test_; }

  // The input of the sample at `position` of `user`: the up to max_len items before it, oldest
  // first, written to out[0 .. len) and zeros to out[len .. max_len); returns len (>= 1).
  int64_t write_input(int32_t user, int64_t position, int64_t* out) const {
    const int64_t begin = std::max(offsets_[static_cast<size_t>(user)], position - max_len_);
    const int64_t len = position - begin;
    for (int64_t k = 0; k < len; ++k) out[k] = items_[static_cast<size_t>(begin + k)];
    for (int64_t k = len; k < max_len_; ++k) out[k] = 0;
    return len;
  }

  // Users with 1, 2 and 3 interactions: no sample; a training sample only; no valid sample
  // (under LS valid_and_test).
  struct ShortUsers {
    int64_t one = 0, two = 0, three = 0;
  };
  const ShortUsers& short_users() const { return short_; }

 private:
  void split(const EvalArgs& eval_args);

  int64_t max_len_ = 50;
  std::vector<int64_t> offsets_{0};
  std::vector<int32_t> items_;
  SequenceSamples train_, valid_, test_;
  ShortUsers short_;
};

}  // namespace recbole::data
