#pragma once
// The prefix-sum step of a parallel, stable counting sort (the split's scatter by user group,
// the epoch shuffle's scatter to random buckets): `parts` workers or chunks each counted their
// rows per bucket; every part then writes its rows of a bucket after those of the parts before
// it, so the scatter keeps the row order within a bucket whatever the number of threads.
#include <cstdint>
#include <vector>

namespace recbole::data {

// counts: [parts × buckets], part-major (counts[p * buckets + b] = rows of part p in bucket b);
// replaced in place by where each part's first row of each bucket goes. Returns the buckets'
// bounds: [buckets + 1], bucket b is [begin[b], begin[b + 1]).
inline std::vector<int64_t> bucket_offsets(std::vector<int64_t>& counts, int64_t parts,
                                           int64_t buckets) {
  std::vector<int64_t> begin(static_cast<size_t>(buckets) + 1, 0);
  int64_t at = 0;
  for (int64_t b = 0; b < buckets; ++b) {
    begin[static_cast<size_t>(b)] = at;
    for (int64_t p = 0; p < parts; ++p) {
      int64_t& slot = counts[static_cast<size_t>(p * buckets + b)];
      const int64_t count = slot;
      slot = at;
      at += count;
    }
  }
  begin[static_cast<size_t>(buckets)] = at;
  return begin;
}

}  // namespace recbole::data
