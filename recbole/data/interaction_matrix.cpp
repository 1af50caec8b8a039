#include "recbole/data/interaction_matrix.h"

#include <algorithm>
#include <stdexcept>

#include "recbole/utils/huge_pages.h"

namespace recbole::data {

InteractionMatrix::InteractionMatrix(int64_t n_users, int64_t n_items,
                                     const std::vector<int32_t>& users,
                                     const std::vector<int32_t>& items)
    : n_users_(n_users), n_items_(n_items) {
  if (users.size() != items.size())
    throw std::invalid_argument("InteractionMatrix: users and items differ in length");
  // Counting sort by user keeps this linear in the number of interactions.
  indptr_.assign(n_users + 1, 0);
  for (int32_t u : users) ++indptr_[u + 1];
  for (int64_t u = 0; u < n_users; ++u) indptr_[u + 1] += indptr_[u];
  indices_.resize(users.size());
  std::vector<int64_t> fill(indptr_.begin(), indptr_.end() - 1);
  for (size_t k = 0; k < users.size(); ++k) indices_[fill[users[k]]++] = items[k];
  // Sort and deduplicate each row, compacting in place.
  int64_t out = 0;
  for (int64_t u = 0; u < n_users; ++u) {
    auto b = indices_.begin() + indptr_[u], e = indices_.begin() + indptr_[u + 1];
    std::sort(b, e);
    auto last = std::unique(b, e);
    indptr_[u] = out;
    for (auto it = b; it != last; ++it) indices_[out++] = *it;
  }
  indptr_[n_users] = out;
  indices_.resize(out);
  indices_.shrink_to_fit();
  on_huge_pages();
}

void InteractionMatrix::on_huge_pages() {
  // Sampling and masking read rows of users in random order.
  collapse_to_huge_pages(indptr_.data(), indptr_.size() * sizeof(int64_t));
  collapse_to_huge_pages(indices_.data(), indices_.size() * sizeof(int32_t));
}

InteractionMatrix InteractionMatrix::merge(const InteractionMatrix& a, const InteractionMatrix& b) {
  if (a.n_users_ != b.n_users_ || a.n_items_ != b.n_items_)
    throw std::invalid_argument("InteractionMatrix::merge: shapes differ");
  InteractionMatrix m;
  m.n_users_ = a.n_users_;
  m.n_items_ = a.n_items_;
  m.indptr_.assign(a.n_users_ + 1, 0);
  m.indices_.reserve(a.indices_.size() + b.indices_.size());
  for (int64_t u = 0; u < a.n_users_; ++u) {
    std::set_union(a.row_begin(u), a.row_end(u), b.row_begin(u), b.row_end(u),
                   std::back_inserter(m.indices_));
    m.indptr_[u + 1] = static_cast<int64_t>(m.indices_.size());
  }
  m.on_huge_pages();
  return m;
}

bool InteractionMatrix::contains(int32_t user, int32_t item) const {
  return std::binary_search(row_begin(user), row_end(user), item);
}

std::vector<int32_t> InteractionMatrix::nonempty_users() const {
  std::vector<int32_t> out;
  for (int64_t u = 0; u < n_users_; ++u)
    if (indptr_[u + 1] > indptr_[u]) out.push_back(static_cast<int32_t>(u));
  return out;
}

std::vector<int64_t> InteractionMatrix::item_degrees() const {
  std::vector<int64_t> deg(n_items_, 0);
  for (int32_t i : indices_) ++deg[i];
  return deg;
}

}  // namespace recbole::data
