#include "recbole/data/split.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <new>
#include <numeric>
#include <thread>
#include <utility>
#include <vector>

#include "recbole/data/bucket_offsets.h"
#include "recbole/data/random_order.h"
#include "recbole/utils/error.h"
#include "recbole/utils/huge_pages.h"
#include "recbole/utils/thread_pool.h"

namespace recbole::data {

std::vector<int64_t> split_sizes_by_ratio(int64_t total, const std::vector<double>& ratios) {
  // Python: tot_ratio = sum(ratios); ratios = [r / tot_ratio ...]; cnt = [int(r * tot) ...].
  double tot_ratio = 0;
  for (double r : ratios) tot_ratio += r;
  std::vector<double> p(ratios.size());
  for (size_t i = 0; i < ratios.size(); ++i) p[i] = ratios[i] / tot_ratio;
  const double tot = static_cast<double>(total);
  const size_t k = p.size();
  std::vector<int64_t> cnt(k);
  for (size_t i = 0; i < k; ++i) cnt[i] = static_cast<int64_t>(p[i] * tot);
  int64_t rest = 0;
  for (size_t i = 1; i < k; ++i) rest += cnt[i];
  cnt[0] = total - rest;
  for (size_t i = 1; i < k; ++i) {
    if (cnt[0] <= 1) break;
    const double share = p[k - i] * tot;
    if (0 < share && share < 1) {
      cnt[k - i] += 1;
      cnt[0] -= 1;
    }
  }
  return cnt;
}

std::vector<int64_t> order_rows(const Dataset& dataset, const EvalArgs& eval_args, int64_t seed) {
  const int64_t n = dataset.n_inters();
  if (eval_args.order == "RO") {
    return random_permutation(n, static_cast<uint64_t>(seed));
  }
  if (eval_args.order != "TO") {
    throw ConfigError("eval_args: order: expected RO or TO, got \"" + eval_args.order + "\"");
  }
  const std::string& time_field = dataset.options().time_field;
  const Table& inter = dataset.inter_table();
  if (!inter.has(time_field) || inter.column(time_field).type != FieldType::kFloat) {
    throw DataError(inter.source() + ": eval_args order TO needs the float column " + time_field +
                    " (TIME_FIELD), which is not loaded; add it to load_col.inter");
  }
  // RecBole sorts its float32 tensor of the (possibly normalised) times with a stable argsort.
  const std::vector<double>& time = inter.column(time_field).floats;
  std::vector<float> key(time.size());
  for (size_t r = 0; r < time.size(); ++r) key[r] = static_cast<float>(time[r]);
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    const float x = key[a], y = key[b];
    if (std::isnan(y)) return !std::isnan(x);
    return x < y;
  });
  return order;
}

namespace {

// Appends rows [begin, end) of (rows, users, items) to `s`.
void append_slice(Split& s, const std::vector<int64_t>& rows, const std::vector<int32_t>& users,
                  const std::vector<int32_t>& items, int64_t begin, int64_t end) {
  s.rows.insert(s.rows.end(), rows.begin() + begin, rows.begin() + end);
  s.users.insert(s.users.end(), users.begin() + begin, users.begin() + end);
  s.items.insert(s.items.end(), items.begin() + begin, items.begin() + end);
}

// Tables below this many rows are split on the calling thread alone (threads would cost more
// than they save). Each worker holds a count per user, hence the cap.
constexpr int64_t kParallelRows = int64_t{1} << 16;
constexpr unsigned kMaxWorkers = 8;

// Workers: the ThreadPool's size (key num_threads), capped.
int worker_count(int64_t n) {
  if (n < kParallelRows) return 1;
  return std::clamp(ThreadPool::instance().threads(), 1, static_cast<int>(kMaxWorkers));
}

// Runs fn(t) for every t in [0, workers) on the ThreadPool.
template <class Fn>
void run_workers(int workers, const Fn& fn) {
  parallel_for(workers, [&](int64_t t, int) { fn(static_cast<int>(t)); });
}

// Start of chunk t of [0, n) cut into `chunks` nearly equal chunks (t = chunks gives n).
int64_t chunk_begin(int64_t n, int t, int chunks) {
  return n / chunks * t + std::min<int64_t>(t, n % chunks);
}

// A user and an item of one Dataset row, side by side so that a random read of a row is one
// cache miss, not two.
struct UserItem {
  int32_t user;
  int32_t item;
};

// The Dataset's users and items interleaved, on huge pages (the gather reads them in random
// order: with 4 KiB pages nearly every read would also miss the TLB).
void interleave_users_items(const std::vector<int32_t>& users, const std::vector<int32_t>& items,
                            UserItem* out) {
  for (size_t r = 0; r < users.size(); ++r) out[r] = {users[r], items[r]};
}

// users[p] = table[rows[p]].user, items[p] = table[rows[p]].item for p in [begin, end).
void gather_rows(const int64_t* rows, const UserItem* table, int32_t* users, int32_t* items,
                 int64_t begin, int64_t end) {
  constexpr int64_t kAhead = 32;  // prefetch distance of the random reads
  for (int64_t p = begin; p < end; ++p) {
    if (p + kAhead < end) __builtin_prefetch(&table[rows[p + kAhead]]);
    const UserItem ui = table[rows[p]];
    users[p] = ui.user;
    items[p] = ui.item;
  }
}

// One ordered row on its way to its part: its group, item and Dataset row. Row is uint32_t when
// the table allows (12 bytes a row instead of 16 in the largest scratch array).
template <class Row>
struct GroupedRow {
  int32_t group;
  int32_t item;
  Row row;
};

// Writes the ordered table (rows, and per ordered row its user and item) to the parts. A user's
// group is group_of[user]; group g has sizes[3g + k] rows in part k, starting at offset[3g + k];
// its c-th row (in order) goes to the part whose range holds c. Parts are group slices in group
// order and rows keep their order within a group, so the parts are a stable sort of the table by
// group, cut per group.
//
// Writing each row straight to its place misses the cache on every row once there are many
// groups. Instead, rows are first moved stably into buckets of 2^shift consecutive groups (one
// sequential write stream per bucket), then each bucket is written out on its own: its groups'
// slices of the parts are contiguous and small enough to stay in cache. Both passes are split
// over workers; a stable counting sort gives the same order however it is split.
template <class Row>
void scatter_by_group(std::vector<int64_t>& rows, HugeArray<int32_t>& row_groups,
                      HugeArray<int32_t>& row_items, const std::vector<int32_t>& group_of,
                      const std::vector<int32_t>& group_user, const std::vector<int64_t>& sizes,
                      const std::vector<int64_t>& offset, const int64_t totals[3],
                      Split* const parts[3], int workers) {
  const int64_t n = static_cast<int64_t>(rows.size());
  const int64_t n_groups = static_cast<int64_t>(group_user.size());
  // At most 2^11 buckets: more write streams than that thrash the cache and TLB.
  constexpr int kMaxBucketBits = 11;
  int shift = 0;
  while (((n_groups - 1) >> shift) >= (int64_t{1} << kMaxBucketBits)) ++shift;
  const int64_t n_buckets = ((n_groups - 1) >> shift) + 1;

  // cursor[t * n_buckets + b]: first, rows of chunk t in bucket b; then, where the next of them
  // goes in `bucketed` (buckets in order, chunks in order within a bucket: stable).
  std::vector<int64_t> cursor(static_cast<size_t>(workers * n_buckets), 0);
  // row_groups holds users until this pass replaces them by their groups.
  int32_t* groups = row_groups.data();
  run_workers(workers, [&](int t) {
    int64_t* count = &cursor[static_cast<size_t>(t * n_buckets)];
    const int64_t end = chunk_begin(n, t + 1, workers);
    constexpr int64_t kAhead = 16;
    for (int64_t p = chunk_begin(n, t, workers); p < end; ++p) {
      if (p + kAhead < end) __builtin_prefetch(&group_of[static_cast<size_t>(groups[p + kAhead])]);
      const int32_t g = group_of[static_cast<size_t>(groups[p])];
      groups[p] = g;
      ++count[g >> shift];
    }
  });
  const std::vector<int64_t> bucket_begin = bucket_offsets(cursor, workers, n_buckets);

  HugeArray<GroupedRow<Row>> bucketed(n);
  GroupedRow<Row>* out = bucketed.data();
  run_workers(workers, [&](int t) {
    int64_t* next = &cursor[static_cast<size_t>(t * n_buckets)];
    const int32_t* items = row_items.data();
    const int64_t end = chunk_begin(n, t + 1, workers);
    for (int64_t p = chunk_begin(n, t, workers); p < end; ++p) {
      const int32_t g = groups[p];
      out[next[g >> shift]++] = {g, items[p], static_cast<Row>(rows[p])};
    }
  });
  // The ordered table is no longer needed: free it before the parts are allocated.
  std::vector<int64_t>().swap(rows);
  row_groups.release();
  row_items.release();

  // Zeroing the parts is a pass over memory of its own: share it among the workers, each array
  // to the least loaded worker, largest arrays first.
  struct Allocation {
    size_t bytes;
    int worker;
    std::function<void()> run;
  };
  std::vector<Allocation> allocations;
  for (size_t k = 0; k < 3; ++k) {
    const size_t size = static_cast<size_t>(totals[k]);
    Split& s = *parts[k];
    allocations.push_back({size * sizeof(int64_t), 0, [&s, size] { s.rows.resize(size); }});
    allocations.push_back({size * sizeof(int32_t), 0, [&s, size] { s.users.resize(size); }});
    allocations.push_back({size * sizeof(int32_t), 0, [&s, size] { s.items.resize(size); }});
  }
  std::stable_sort(allocations.begin(), allocations.end(),
                   [](const Allocation& a, const Allocation& b) { return a.bytes > b.bytes; });
  std::vector<size_t> load(static_cast<size_t>(workers), 0);
  for (Allocation& a : allocations) {
    a.worker = static_cast<int>(std::min_element(load.begin(), load.end()) - load.begin());
    load[static_cast<size_t>(a.worker)] += a.bytes;
  }
  std::exception_ptr allocation_error;
  std::mutex allocation_mutex;
  run_workers(workers, [&](int t) {
    for (const Allocation& a : allocations) {
      if (a.worker != t) continue;
      try {
        a.run();
      } catch (...) {
        const std::lock_guard<std::mutex> lock(allocation_mutex);
        allocation_error = std::current_exception();
      }
    }
  });
  if (allocation_error) std::rethrow_exception(allocation_error);

  int64_t* part_rows[3];
  int32_t* part_users[3];
  int32_t* part_items[3];
  for (size_t k = 0; k < 3; ++k) {
    part_rows[k] = parts[k]->rows.data();
    part_users[k] = parts[k]->users.data();
    part_items[k] = parts[k]->items.data();
  }
  std::atomic<int64_t> next_bucket{0};
  std::vector<std::vector<int64_t>> ranks(static_cast<size_t>(workers),
                                          std::vector<int64_t>(size_t{1} << shift));
  run_workers(workers, [&](int t) {
    std::vector<int64_t>& rank = ranks[static_cast<size_t>(t)];
    for (int64_t b = next_bucket++; b < n_buckets; b = next_bucket++) {
      const int64_t first_group = b << shift;
      std::fill(rank.begin(), rank.end(), 0);
      const int64_t end = bucket_begin[static_cast<size_t>(b + 1)];
      for (int64_t i = bucket_begin[static_cast<size_t>(b)]; i < end; ++i) {
        const GroupedRow<Row> e = out[i];
        const size_t g = static_cast<size_t>(e.group);
        int64_t c = rank[g - static_cast<size_t>(first_group)]++;
        size_t k = 0;
        while (c >= sizes[3 * g + k]) c -= sizes[3 * g + k++];
        const int64_t to = offset[3 * g + k] + c;
        part_rows[k][to] = static_cast<int64_t>(e.row);
        part_users[k][to] = group_user[g];
        part_items[k][to] = e.item;
      }
    }
  });
}

}  // namespace

SplitDataset split_dataset(const Dataset& dataset, const DatasetOptions& options) {
  SplitDataset out;
  Split* const parts[3] = {&out.train, &out.valid, &out.test};
  const std::vector<int32_t>& users = dataset.inter_users();
  const std::vector<int32_t>& items = dataset.inter_items();
  const int64_t n = dataset.n_inters();

  if (!options.benchmark_filename.empty()) {
    const std::vector<int64_t>& sizes = dataset.benchmark_sizes();
    if (sizes.size() != 3) {
      throw ConfigError("benchmark_filename: expected three parts [train, valid, test], got " +
                        std::to_string(sizes.size()));
    }
    std::vector<int64_t> rows(static_cast<size_t>(n));
    std::iota(rows.begin(), rows.end(), 0);
    int64_t begin = 0;
    for (size_t k = 0; k < 3; ++k) {
      append_slice(*parts[k], rows, users, items, begin, begin + sizes[k]);
      begin += sizes[k];
    }
    return out;
  }

  const EvalArgs& ea = options.eval_args;
  if (ea.split == EvalArgs::SplitKind::kRatio && ea.group_by != "user" && ea.group_by != "none") {
    throw ConfigError("eval_args: group_by: expected user or none, got \"" + ea.group_by + "\"");
  }
  const std::string& mode = ea.leave_one_mode;
  if (ea.split == EvalArgs::SplitKind::kLeaveOneOut && mode != "valid_and_test" &&
      mode != "valid_only" && mode != "test_only") {
    throw ConfigError(
        "eval_args: split.LS: expected valid_and_test, valid_only or test_only, "
        "got \"" +
        mode + "\"");
  }

  const int workers = worker_count(n);
  // The table does not depend on the order: build it on a second thread while the order is
  // drawn (torch's randperm and the TO sort run on one thread).
  HugeArray<UserItem> table(n);
  std::vector<int64_t> rows;
  if (workers > 1) {
    std::thread helper(interleave_users_items, std::cref(users), std::cref(items), table.data());
    try {
      rows = order_rows(dataset, ea, options.seed);
    } catch (...) {
      helper.join();
      throw;
    }
    helper.join();
  } else {
    interleave_users_items(users, items, table.data());
    rows = order_rows(dataset, ea, options.seed);
  }
  if (ea.split == EvalArgs::SplitKind::kRatio && ea.group_by == "none") {
    // Each part is a slice of the ordered table: gather its users and items in place.
    const std::vector<int64_t> sizes = split_sizes_by_ratio(n, ea.ratios);
    int64_t begin = 0;
    for (size_t k = 0; k < 3; ++k) {
      Split& s = *parts[k];
      const int64_t size = sizes[k];
      s.rows.assign(rows.begin() + begin, rows.begin() + begin + size);
      s.users.resize(static_cast<size_t>(size));
      s.items.resize(static_cast<size_t>(size));
      run_workers(workers, [&](int t) {
        gather_rows(s.rows.data(), table.data(), s.users.data(), s.items.data(),
                    chunk_begin(size, t, workers), chunk_begin(size, t + 1, workers));
      });
      begin += size;
    }
    return out;
  }

  // The ordered table's users (later replaced by their groups) and items: the one random
  // gather. Each worker also counts, over its chunk, the rows of each user and lists the users
  // in order of first appearance, so that numbering the groups in order of first appearance in
  // the whole table is a short merge rather than a serial pass over every row.
  const size_t n_users = static_cast<size_t>(dataset.n_users());
  HugeArray<int32_t> row_groups(n), row_items(n);
  std::vector<std::vector<int64_t>> user_rows(static_cast<size_t>(workers));
  std::vector<std::vector<int32_t>> first_users(static_cast<size_t>(workers));
  for (int t = 0; t < workers; ++t) {
    resize_on_huge_pages(user_rows[static_cast<size_t>(t)], n_users);
    first_users[static_cast<size_t>(t)].reserve(std::min(
        n_users, static_cast<size_t>(chunk_begin(n, t + 1, workers) - chunk_begin(n, t, workers))));
  }
  run_workers(workers, [&](int t) {
    const int64_t begin = chunk_begin(n, t, workers), end = chunk_begin(n, t + 1, workers);
    gather_rows(rows.data(), table.data(), row_groups.data(), row_items.data(), begin, end);
    int64_t* count = user_rows[static_cast<size_t>(t)].data();
    std::vector<int32_t>& first = first_users[static_cast<size_t>(t)];
    const int32_t* row_user = row_groups.data();
    constexpr int64_t kAhead = 16;
    for (int64_t p = begin; p < end; ++p) {
      if (p + kAhead < end) __builtin_prefetch(&count[row_user[p + kAhead]]);
      if (count[row_user[p]]++ == 0) first.push_back(row_user[p]);  // within reserve()
    }
  });
  table.release();

  // Group by user, groups in order of first appearance, rows in order within a group.
  std::vector<int32_t> group_of;
  resize_on_huge_pages(group_of, n_users);
  std::fill(group_of.begin(), group_of.end(), -1);
  std::vector<int32_t> group_user;
  for (const std::vector<int32_t>& first : first_users) {
    for (const int32_t u : first) {
      int32_t& g = group_of[static_cast<size_t>(u)];
      if (g < 0) {
        g = static_cast<int32_t>(group_user.size());
        group_user.push_back(u);
      }
    }
  }
  std::vector<int64_t> group_size(group_user.size(), 0);
  for (size_t g = 0; g < group_user.size(); ++g) {
    for (const std::vector<int64_t>& count : user_rows) {
      group_size[g] += count[static_cast<size_t>(group_user[g])];
    }
  }
  std::vector<std::vector<int64_t>>().swap(user_rows);
  const size_t n_groups = group_size.size();

  // Per-group part sizes: sizes[3g + k] rows of group g go to part k (train, valid, test).
  std::vector<int64_t> sizes(3 * n_groups, 0);
  int64_t m = 0;
  std::vector<size_t> leave_part;  // LS: target part of held-out slot j
  if (ea.split == EvalArgs::SplitKind::kLeaveOneOut) {
    m = mode == "valid_and_test" ? 2 : 1;
    leave_part = mode == "valid_and_test" ? std::vector<size_t>{0, 1, 2}
                 : mode == "valid_only"   ? std::vector<size_t>{0, 1}
                                          : std::vector<size_t>{0, 2};
  }
  // Most groups share their size with many others: compute each small size's parts once.
  constexpr int64_t kKnownTotals = int64_t{1} << 16;
  std::vector<std::array<int64_t, 3>> ratio_sizes;
  std::vector<bool> ratio_known;
  for (size_t g = 0; g < n_groups; ++g) {
    const int64_t total = group_size[g];
    if (ea.split == EvalArgs::SplitKind::kRatio) {
      std::array<int64_t, 3> s;
      if (total < kKnownTotals && static_cast<size_t>(total) < ratio_known.size() &&
          ratio_known[static_cast<size_t>(total)]) {
        s = ratio_sizes[static_cast<size_t>(total)];
      } else {
        const std::vector<int64_t> v = split_sizes_by_ratio(total, ea.ratios);
        s = {v[0], v[1], v[2]};
        if (total < kKnownTotals) {
          if (static_cast<size_t>(total) >= ratio_known.size()) {
            ratio_known.resize(static_cast<size_t>(total) + 1, false);
            ratio_sizes.resize(static_cast<size_t>(total) + 1);
          }
          ratio_known[static_cast<size_t>(total)] = true;
          ratio_sizes[static_cast<size_t>(total)] = s;
        }
      }
      for (size_t k = 0; k < 3; ++k) sizes[3 * g + k] = s[k];
    } else {
      // Leave-one-out: the first total - k rows train; the last k rows go one each to the last
      // k held-out slots (k = min(m, total - 1)).
      const int64_t k = std::min(m, total - 1);
      sizes[3 * g] = total - k;
      for (int64_t i = 0; i < k; ++i) {
        sizes[3 * g + leave_part[static_cast<size_t>(m + 1 - k + i)]] += 1;
      }
    }
  }
  // Where each group's slice starts in each part (parts are group slices in group order).
  std::vector<int64_t> offset(3 * n_groups);
  int64_t totals[3] = {0, 0, 0};
  for (size_t g = 0; g < n_groups; ++g) {
    for (size_t k = 0; k < 3; ++k) {
      offset[3 * g + k] = totals[k];
      totals[k] += sizes[3 * g + k];
    }
  }
  if (n_groups == 0) return out;
  if (n <= static_cast<int64_t>(UINT32_MAX)) {
    scatter_by_group<uint32_t>(rows, row_groups, row_items, group_of, group_user, sizes, offset,
                               totals, parts, workers);
  } else {
    scatter_by_group<int64_t>(rows, row_groups, row_items, group_of, group_user, sizes, offset,
                              totals, parts, workers);
  }
  return out;
}

namespace {

// Buffered writer of one text file through a temporary name.
class FileWriter {
 public:
  explicit FileWriter(std::string path) : path_(std::move(path)), tmp_(path_ + ".tmp") {
    file_ = std::fopen(tmp_.c_str(), "wb");
    if (file_ == nullptr) throw DataError(tmp_ + ": cannot write: " + std::strerror(errno));
    buffer_.reserve(kFlush + 4096);
  }
  // Unless published, the temporary file goes: a failed dump leaves the old files as they were.
  ~FileWriter() {
    if (file_ != nullptr) std::fclose(file_);
    if (!published_) std::remove(tmp_.c_str());
  }
  std::string& buffer() { return buffer_; }
  void maybe_flush() {
    if (buffer_.size() >= kFlush) flush();
  }
  // Writes out and closes the temporary file; throws (and the destructor removes it) on error.
  void finish() {
    flush();
    const bool failed = std::fclose(file_) != 0;
    const int err = errno;
    file_ = nullptr;
    if (failed) throw DataError(tmp_ + ": write failed: " + std::strerror(err));
  }
  // Renames the finished temporary file over the destination.
  void publish() {
    std::error_code ec;
    std::filesystem::rename(tmp_, path_, ec);
    if (ec) throw DataError(path_ + ": cannot rename from " + tmp_ + ": " + ec.message());
    published_ = true;
  }

 private:
  static constexpr size_t kFlush = size_t{1} << 20;
  void flush() {
    if (!buffer_.empty() &&
        std::fwrite(buffer_.data(), 1, buffer_.size(), file_) != buffer_.size()) {
      throw DataError(tmp_ + ": write failed: " + std::strerror(errno));
    }
    buffer_.clear();
  }
  std::string path_;
  std::string tmp_;
  std::FILE* file_ = nullptr;
  std::string buffer_;
  bool published_ = false;
};

void append_float(std::string& out, double v) {
  if (std::isnan(v)) return;  // missing
  char buf[32];
  const auto res = std::to_chars(buf, buf + sizeof(buf), v);
  out.append(buf, res.ptr);
}

}  // namespace

void dump_split(const Dataset& dataset, const SplitDataset& split, const std::string& out_dir) {
  std::error_code ec;
  std::filesystem::create_directories(out_dir, ec);
  if (ec) throw DataError(out_dir + ": cannot create directory: " + ec.message());
  const DatasetOptions& o = dataset.options();
  std::vector<const Column*> columns;
  for (const Column& c : dataset.inter_table().columns()) {
    if (!dataset.is_unused_inter_field(c.name)) columns.push_back(&c);
  }
  const std::pair<const char*, const Split*> parts[] = {
      {"train", &split.train}, {"valid", &split.valid}, {"test", &split.test}};
  // All three files are written to temporary files first and renamed only when all three are
  // complete: a failure (a full disk) leaves the previous split whole, never a mix of two.
  std::vector<std::unique_ptr<FileWriter>> writers;
  for (const auto& [part, s] : parts)
    writers.push_back(std::make_unique<FileWriter>(
        (std::filesystem::path(out_dir) / (dataset.name() + "." + part + ".inter")).string()));
  for (size_t p = 0; p < 3; ++p) {
    const Split* s = parts[p].second;
    FileWriter& w = *writers[p];
    std::string& out = w.buffer();
    for (size_t k = 0; k < columns.size(); ++k) {
      if (k) out += o.field_separator;
      out += columns[k]->header();
    }
    out += '\n';
    for (int64_t row : s->rows) {
      for (size_t k = 0; k < columns.size(); ++k) {
        if (k) out += o.field_separator;
        const Column& c = *columns[k];
        switch (c.type) {
          case FieldType::kToken: {
            const int32_t id = c.tokens[row];
            if (id > 0) out += c.vocab->token(id);  // 0 = padding = missing cell
            break;
          }
          case FieldType::kFloat:
            append_float(out, c.floats[row]);
            break;
          case FieldType::kTokenSeq:
            for (int64_t v = c.offsets[row]; v < c.offsets[row + 1]; ++v) {
              if (v > c.offsets[row]) out += o.seq_separator;
              out += c.vocab->token(c.tokens[v]);
            }
            break;
          case FieldType::kFloatSeq:
            for (int64_t v = c.offsets[row]; v < c.offsets[row + 1]; ++v) {
              if (v > c.offsets[row]) out += o.seq_separator;
              append_float(out, c.floats[v]);
            }
            break;
        }
      }
      out += '\n';
      w.maybe_flush();
    }
    w.finish();
  }
  for (auto& w : writers) w->publish();
}

}  // namespace recbole::data
