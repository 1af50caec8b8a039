#include "recbole/data/split.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <numeric>

#include "recbole/data/random_order.h"
#include "recbole/utils/error.h"

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

}  // namespace

SplitDataset split_dataset(const Dataset& dataset, const DatasetOptions& options) {
  SplitDataset out;
  Split* parts[3] = {&out.train, &out.valid, &out.test};
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

  // The ordered table: one random gather, then every pass below is sequential or per group.
  std::vector<int64_t> rows = order_rows(dataset, ea, options.seed);
  std::vector<int32_t> row_users(static_cast<size_t>(n)), row_items(static_cast<size_t>(n));
  constexpr int64_t kAhead = 32;  // prefetch distance of the random gather
  for (int64_t p = 0; p < n; ++p) {
    if (p + kAhead < n) {
      __builtin_prefetch(&users[rows[p + kAhead]]);
      __builtin_prefetch(&items[rows[p + kAhead]]);
    }
    row_users[p] = users[rows[p]];
    row_items[p] = items[rows[p]];
  }

  if (ea.split == EvalArgs::SplitKind::kRatio && ea.group_by == "none") {
    const std::vector<int64_t> sizes = split_sizes_by_ratio(n, ea.ratios);
    int64_t begin = 0;
    for (size_t k = 0; k < 3; ++k) {
      append_slice(*parts[k], rows, row_users, row_items, begin, begin + sizes[k]);
      begin += sizes[k];
    }
    return out;
  }

  // Group by user, groups in order of first appearance, rows in order within a group.
  std::vector<int32_t> group_of(static_cast<size_t>(dataset.n_users()), -1);
  std::vector<int64_t> group_size;
  for (int64_t p = 0; p < n; ++p) {
    int32_t& g = group_of[static_cast<size_t>(row_users[p])];
    if (g < 0) {
      g = static_cast<int32_t>(group_size.size());
      group_size.push_back(0);
    }
    ++group_size[static_cast<size_t>(g)];
  }
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
  for (size_t g = 0; g < n_groups; ++g) {
    const int64_t total = group_size[g];
    if (ea.split == EvalArgs::SplitKind::kRatio) {
      const std::vector<int64_t> s = split_sizes_by_ratio(total, ea.ratios);
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
  for (size_t k = 0; k < 3; ++k) {
    parts[k]->rows.resize(static_cast<size_t>(totals[k]));
    parts[k]->users.resize(static_cast<size_t>(totals[k]));
    parts[k]->items.resize(static_cast<size_t>(totals[k]));
  }
  // One pass in order: the c-th row of its group goes to the part whose range holds c.
  std::vector<int64_t> rank(n_groups, 0);
  for (int64_t p = 0; p < n; ++p) {
    const size_t g = static_cast<size_t>(group_of[static_cast<size_t>(row_users[p])]);
    int64_t c = rank[g]++;
    size_t k = 0;
    while (c >= sizes[3 * g + k]) c -= sizes[3 * g + k++];
    const int64_t at = offset[3 * g + k] + c;
    parts[k]->rows[at] = rows[p];
    parts[k]->users[at] = row_users[p];
    parts[k]->items[at] = row_items[p];
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
  ~FileWriter() {
    if (file_ != nullptr) {
      std::fclose(file_);
      std::remove(tmp_.c_str());
    }
  }
  std::string& buffer() { return buffer_; }
  void maybe_flush() {
    if (buffer_.size() >= kFlush) flush();
  }
  void commit() {
    flush();
    const bool failed = std::fclose(file_) != 0;
    file_ = nullptr;
    if (failed) {
      std::remove(tmp_.c_str());
      throw DataError(tmp_ + ": write failed");
    }
    std::error_code ec;
    std::filesystem::rename(tmp_, path_, ec);
    if (ec) {
      std::remove(tmp_.c_str());
      throw DataError(path_ + ": cannot rename from " + tmp_ + ": " + ec.message());
    }
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
  for (const auto& [part, s] : parts) {
    const std::string path =
        (std::filesystem::path(out_dir) / (dataset.name() + "." + part + ".inter")).string();
    FileWriter w(path);
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
    w.commit();
  }
}

}  // namespace recbole::data
