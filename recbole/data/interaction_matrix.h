#pragma once
// InteractionMatrix: user → items in compressed sparse rows (CSR), the form every hot path uses
// (negative sampling exclusions, history masks, fitted models). Rows hold distinct item ids in
// ascending order; ids are the remapped ones (0 = padding, never present).
#include <cstdint>
#include <vector>

namespace recbole::data {

class InteractionMatrix {
 public:
  InteractionMatrix() = default;
  // Builds from parallel arrays of (user, item) pairs; duplicates collapse.
  // users, items: [n] int32, values in [0, n_users) and [0, n_items).
  InteractionMatrix(int64_t n_users, int64_t n_items, const std::vector<int32_t>& users,
                    const std::vector<int32_t>& items);

  // Row-wise union (same shape): e.g. train ∪ valid for the test-time history.
  static InteractionMatrix merge(const InteractionMatrix& a, const InteractionMatrix& b);

  int64_t n_users() const { return n_users_; }
  int64_t n_items() const { return n_items_; }
  int64_t nnz() const { return static_cast<int64_t>(indices_.size()); }

  // indptr: [n_users + 1] int64; indices: [nnz] int32, sorted within each row.
  const std::vector<int64_t>& indptr() const { return indptr_; }
  const std::vector<int32_t>& indices() const { return indices_; }

  int64_t row_size(int32_t user) const { return indptr_[user + 1] - indptr_[user]; }
  const int32_t* row_begin(int32_t user) const { return indices_.data() + indptr_[user]; }
  const int32_t* row_end(int32_t user) const { return indices_.data() + indptr_[user + 1]; }
  bool contains(int32_t user, int32_t item) const;

  // Users with at least one item, ascending.
  std::vector<int32_t> nonempty_users() const;
  // [n_items] number of users holding each item.
  std::vector<int64_t> item_degrees() const;

 private:
  void on_huge_pages();

  int64_t n_users_ = 0;
  int64_t n_items_ = 0;
  std::vector<int64_t> indptr_{0};
  std::vector<int32_t> indices_;
};

}  // namespace recbole::data
