#include "recbole/data/negative_sampler.h"

#include <cmath>

#include "recbole/utils/error.h"
#include "recbole/utils/huge_pages.h"
#include "recbole/utils/splitmix.h"

namespace recbole::data {

Rng::Rng(uint64_t seed) {
  uint64_t z = seed;
  for (auto& s : s_) s = splitmix64_next(z);  // splitmix64 expands the seed into the state
}

uint64_t Rng::next() {
  auto rotl = [](uint64_t x, int k) { return (x << k) | (x >> (64 - k)); };
  const uint64_t result = rotl(s_[1] * 5, 7) * 9;
  const uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return result;
}

NegativeSampler::NegativeSampler(const InteractionMatrix& exclude, const std::string& distribution,
                                 double alpha, const std::vector<int64_t>& item_counts,
                                 uint64_t bitmap_limit_bytes)
    : exclude_(&exclude), n_items_(exclude.n_items()) {
  if (n_items_ < 2) throw DataError("negative sampling: the dataset has no items");
  for (int64_t u = 0; u < exclude.n_users(); ++u)
    if (exclude.row_size(static_cast<int32_t>(u)) >= n_items_ - 1)
      throw DataError(
          "negative sampling: user id " + std::to_string(u) +
          " has interacted with every item, so no negative item can be sampled; "
          "filter such users (user_inter_num_interval) or set train_neg_sample_args: ~");
  const uint64_t cells = static_cast<uint64_t>(exclude.n_users()) * static_cast<uint64_t>(n_items_);
  if (cells <= bitmap_limit_bytes * 8) {
    bits_.assign((cells + 63) / 64, 0);
    for (int64_t u = 0; u < exclude.n_users(); ++u)
      for (const int32_t* it = exclude.row_begin(static_cast<int32_t>(u));
           it != exclude.row_end(static_cast<int32_t>(u)); ++it) {
        const uint64_t k = static_cast<uint64_t>(u) * static_cast<uint64_t>(n_items_) + *it;
        bits_[k >> 6] |= uint64_t(1) << (k & 63);
      }
  } else {
    build_filter();
  }
  if (distribution == "uniform") return;
  if (distribution != "popularity")
    throw ConfigError("train_neg_sample_args.distribution: expected uniform or popularity, got \"" +
                      distribution + "\"");
  popularity_ = true;
  // Vose's alias method: O(1) draws with weights count^alpha; ids with count 0 are never drawn.
  std::vector<double> w(n_items_, 0.0);
  double total = 0;
  for (int64_t i = 1; i < n_items_ && i < static_cast<int64_t>(item_counts.size()); ++i)
    if (item_counts[i] > 0) total += (w[i] = std::pow(static_cast<double>(item_counts[i]), alpha));
  if (total <= 0) throw DataError("negative sampling: no item has a positive popularity count");
  prob_.assign(n_items_, 0.0);
  alias_.assign(n_items_, 0);
  std::vector<int32_t> small, large;
  std::vector<double> scaled(n_items_);
  for (int64_t i = 0; i < n_items_; ++i) {
    scaled[i] = w[i] * n_items_ / total;
    (scaled[i] < 1.0 ? small : large).push_back(static_cast<int32_t>(i));
  }
  while (!small.empty() && !large.empty()) {
    int32_t s = small.back(), l = large.back();
    small.pop_back();
    prob_[s] = scaled[s];
    alias_[s] = l;
    scaled[l] -= 1.0 - scaled[s];
    if (scaled[l] < 1.0) {
      large.pop_back();
      small.push_back(l);
    }
  }
  // Leftovers are 1 up to rounding; they point to themselves.
  for (int32_t l : large) prob_[l] = 1.0, alias_[l] = l;
  for (int32_t s : small) prob_[s] = 1.0, alias_[s] = s;
}

int32_t NegativeSampler::draw(Rng& rng) const {
  if (!popularity_) return static_cast<int32_t>(1 + rng.below(n_items_ - 1));
  const int32_t i = static_cast<int32_t>(rng.below(n_items_));
  return rng.uniform() < prob_[i] ? i : alias_[i];
}

void NegativeSampler::build_filter() {
  const std::vector<int64_t>& indptr = exclude_->indptr();
  const uint64_t total = static_cast<uint64_t>(exclude_->nnz()) * kFilterBitsPerItem;
  resize_on_huge_pages(filter_, static_cast<size_t>((total + 63) / 64));
  for (int64_t u = 0; u < exclude_->n_users(); ++u) {
    const uint64_t first = static_cast<uint64_t>(indptr[u]) * kFilterBitsPerItem;
    const uint64_t bits = static_cast<uint64_t>(indptr[u + 1] - indptr[u]) * kFilterBitsPerItem;
    for (const int32_t* it = exclude_->row_begin(static_cast<int32_t>(u));
         it != exclude_->row_end(static_cast<int32_t>(u)); ++it) {
      uint64_t a, b;
      filter_positions(*it, bits, a, b);
      a += first;
      b += first;
      filter_[a >> 6] |= uint64_t(1) << (a & 63);
      filter_[b >> 6] |= uint64_t(1) << (b & 63);
    }
  }
}

void NegativeSampler::prefetch_filter(int64_t user) const {
  constexpr uint64_t kMaxWords = 64;  // 8 cache lines; a longer row is read on demand
  if (!bits_.empty()) {
    // The user's bitmap row, whichever item the draw picks (rows of up to 4096 items).
    const uint64_t first = static_cast<uint64_t>(user) * static_cast<uint64_t>(n_items_) / 64;
    const uint64_t last = (static_cast<uint64_t>(user) + 1) * static_cast<uint64_t>(n_items_) / 64;
    if (last - first < kMaxWords)
      for (uint64_t w = first & ~uint64_t{7}; w <= last; w += 8)
        __builtin_prefetch(bits_.data() + w);
    return;
  }
  const int64_t* indptr = exclude_->indptr().data();
  const uint64_t first = static_cast<uint64_t>(indptr[user]) * kFilterBitsPerItem / 64;
  const uint64_t last = static_cast<uint64_t>(indptr[user + 1]) * kFilterBitsPerItem / 64;
  // From the first word's cache line: stepping 8 words from an unaligned start could miss the
  // row's last line.
  for (uint64_t w = first & ~uint64_t{7}; w <= last && w < first + kMaxWords; w += 8)
    __builtin_prefetch(filter_.data() + w);
}

int32_t NegativeSampler::sample(int32_t user, Rng& rng) const {
  // Rejection: redraw while the item is one of the user's. Popular items may all be excluded for
  // a heavy user, so after many rejections fall back to uniform draws, which always terminate
  // (the constructor checked that every user lacks at least one item).
  for (int attempt = 0; attempt < 256; ++attempt) {
    const int32_t item = draw(rng);
    if (item > 0 && !excluded(user, item)) return item;
  }
  for (;;) {
    const int32_t item = static_cast<int32_t>(1 + rng.below(n_items_ - 1));
    if (!excluded(user, item)) return item;
  }
}

}  // namespace recbole::data
