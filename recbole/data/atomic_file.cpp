#include "recbole/data/atomic_file.h"

#include <sys/stat.h>

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <limits>
#include <map>
#include <memory>
#include <string_view>
#include <thread>
#include <unordered_set>

#include "recbole/utils/error.h"
#include "recbole/utils/thread_pool.h"

namespace recbole::data {
namespace {

constexpr size_t kChunkBytes = size_t{8} << 20;

// The length of the well-formed UTF-8 sequence at s[i] (2 to 4 bytes), or 0.
size_t utf8_sequence(std::string_view s, size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  const size_t n = c >= 0xf5 ? 0 : c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 ? 2 : 0;
  if (n == 0 || i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k)
    if ((static_cast<unsigned char>(s[i + k]) & 0xc0) != 0x80) return 0;
  return n;
}

// A cell or header entry for an error message: at most 60 bytes, with control bytes (NUL
// included: it would end the message where it is printed) and bytes that are not UTF-8 written
// as \xNN, so that a binary or mis-encoded file still gives a readable message.
std::string quoted(std::string_view s) {
  constexpr size_t kMax = 60;
  static const char kHex[] = "0123456789abcdef";
  const std::string_view shown = s.substr(0, kMax);
  std::string out = "\"";
  for (size_t i = 0; i < shown.size();) {
    const auto c = static_cast<unsigned char>(shown[i]);
    const size_t n = c >= 0x80 ? utf8_sequence(shown, i) : (c >= 0x20 && c != 0x7f ? 1 : 0);
    if (n > 0) {
      out.append(shown.substr(i, n));
      i += n;
    } else {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
      ++i;
    }
  }
  if (s.size() > kMax) out += "...";
  out += "\"";
  return out;
}

// Yields the lines of a file read in large chunks; a line is a view into the chunk buffer,
// valid until the next call. Trailing '\r' is removed.
class LineReader {
 public:
  // Reads from byte `start` of the file (a line start), numbering the lines after `first_line`.
  explicit LineReader(const std::string& path, int64_t start = 0, int64_t first_line = 0)
      : path_(path), buffer_offset_(start), line_number_(first_line) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) {
      throw DataError(path + ": file not found");
    }
    if (S_ISDIR(st.st_mode)) throw DataError(path + ": is a directory, expected an atomic file");
    file_size_ = static_cast<int64_t>(st.st_size);
    limit_ = file_size_;
    file_ = std::fopen(path.c_str(), "rb");
    if (file_ == nullptr) throw DataError(path + ": cannot open: " + std::strerror(errno));
    if (start > 0 && fseeko(file_, static_cast<off_t>(start), SEEK_SET) != 0) {
      throw DataError(path + ": read error: " + std::strerror(errno));
    }
    // A small file gets a buffer of its own size: zeroing 8 MiB per file dominated reading the
    // many small files of tests (and made the fuzzer ~10x slower).
    const int64_t rest = std::max<int64_t>(file_size_ - start, 0);
    buffer_.resize(static_cast<size_t>(std::min<int64_t>(kChunkBytes, rest + 1)));
  }
  ~LineReader() {
    if (file_ != nullptr) std::fclose(file_);
  }
  LineReader(const LineReader&) = delete;
  LineReader& operator=(const LineReader&) = delete;

  bool next(std::string_view& line) {
    while (true) {
      const char* base = buffer_.data();
      const void* nl = std::memchr(base + begin_, '\n', end_ - begin_);
      if (nl != nullptr) {
        const size_t pos = static_cast<size_t>(static_cast<const char*>(nl) - base);
        line = std::string_view(base + begin_, pos - begin_);
        begin_ = pos + 1;
        return finish(line);
      }
      if (eof_) {
        if (begin_ == end_) return false;
        line = std::string_view(base + begin_, end_ - begin_);
        begin_ = end_;
        return finish(line);
      }
      refill();
    }
  }

  int64_t line_number() const { return line_number_; }
  int64_t file_size() const { return file_size_; }
  // File offset of the next line.
  int64_t offset() const { return buffer_offset_ + static_cast<int64_t>(begin_); }
  // Stops at file offset `limit` (>= offset(), a line start), as if the file ended there.
  void set_limit(int64_t limit) {
    limit_ = limit;
    if (buffer_offset_ + static_cast<int64_t>(end_) >= limit_) {
      end_ = static_cast<size_t>(limit_ - buffer_offset_);
      eof_ = true;
    }
  }
  // The bytes currently buffered and not yet returned (to estimate the rows of the file).
  std::string_view buffered() const {
    return std::string_view(buffer_.data() + begin_, end_ - begin_);
  }
  // Reads the first chunk now (so that buffered() has something to look at).
  void prefetch() {
    if (!eof_ && end_ - begin_ < buffer_.size() / 2) refill();
  }

 private:
  bool finish(std::string_view& line) {
    ++line_number_;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    return true;
  }

  void refill() {
    if (begin_ > 0) {
      std::memmove(buffer_.data(), buffer_.data() + begin_, end_ - begin_);
      buffer_offset_ += static_cast<int64_t>(begin_);
      end_ -= begin_;
      begin_ = 0;
    }
    if (end_ == buffer_.size()) buffer_.resize(buffer_.size() * 2);  // a line longer than a chunk
    const int64_t left = limit_ - buffer_offset_ - static_cast<int64_t>(end_);
    const size_t want =
        std::min(buffer_.size() - end_, static_cast<size_t>(std::max<int64_t>(left, 0)));
    const size_t got = want == 0 ? 0 : std::fread(buffer_.data() + end_, 1, want, file_);
    if (got == 0) {
      if (std::ferror(file_)) throw DataError(path_ + ": read error: " + std::strerror(errno));
      eof_ = true;
    }
    end_ += got;
  }

  std::string path_;
  std::FILE* file_ = nullptr;
  std::vector<char> buffer_;
  int64_t buffer_offset_ = 0;  // file offset of buffer_[0]
  size_t begin_ = 0;
  size_t end_ = 0;
  bool eof_ = false;
  int64_t line_number_ = 0;
  int64_t file_size_ = 0;
  int64_t limit_ = 0;
};

// Splits on a literal separator of one or more characters.
class Splitter {
 public:
  explicit Splitter(std::string sep) : sep_(std::move(sep)) {}
  // First occurrence of the separator in [p, end), or nullptr.
  const char* find(const char* p, const char* end) const {
    if (sep_.size() == 1) {
      return static_cast<const char*>(std::memchr(p, sep_[0], static_cast<size_t>(end - p)));
    }
    const std::string_view rest(p, static_cast<size_t>(end - p));
    const size_t pos = rest.find(sep_);
    return pos == std::string_view::npos ? nullptr : p + pos;
  }
  size_t size() const { return sep_.size(); }
  // Number of separators in [p, end).
  int64_t count(const char* p, const char* end) const {
    int64_t n = 0;
    while ((p = find(p, end)) != nullptr) {
      ++n;
      p += sep_.size();
    }
    return n;
  }

 private:
  std::string sep_;
};

bool is_na_string(std::string_view s) {
  static const char* const kNa[] = {"nan", "NaN",  "NAN",  "-nan", "-NaN", "NA",   "N/A",
                                    "n/a", "null", "NULL", "None", "<NA>", "#N/A", "#NA"};
  for (const char* na : kNa) {
    if (s == na) return true;
  }
  return false;
}

// Parses a float cell as pandas would; false when it is not a number.
bool parse_float(const char* b, const char* e, double& out) {
  while (b < e && (*b == ' ' || *b == '\t')) ++b;
  while (e > b && (e[-1] == ' ' || e[-1] == '\t')) --e;
  if (b == e) {
    out = std::numeric_limits<double>::quiet_NaN();
    return true;
  }
  const char* start = (*b == '+' && e - b > 1 && b[1] != '-' && b[1] != '+') ? b + 1 : b;
  const auto [ptr, ec] = std::from_chars(start, e, out);
  if (ec == std::errc() && ptr == e) return true;
  if (ec == std::errc::result_out_of_range && ptr == e) {
    // Overflow to +-inf, underflow to 0, as Python's float() does.
    const std::string copy(b, e);
    out = std::strtod(copy.c_str(), nullptr);
    return true;
  }
  if (is_na_string(std::string_view(b, static_cast<size_t>(e - b)))) {
    out = std::numeric_limits<double>::quiet_NaN();
    return true;
  }
  return false;
}

struct HeaderEntry {
  std::string name;
  FieldType type;
};

std::vector<HeaderEntry> parse_header(std::string_view line, const std::string& path,
                                      const Splitter& splitter) {
  if (line.size() >= 3 && static_cast<unsigned char>(line[0]) == 0xEF &&
      static_cast<unsigned char>(line[1]) == 0xBB && static_cast<unsigned char>(line[2]) == 0xBF) {
    line.remove_prefix(3);  // UTF-8 byte-order mark
  }
  std::vector<HeaderEntry> entries;
  std::unordered_set<std::string> seen;
  const char* p = line.data();
  const char* end = p + line.size();
  while (true) {
    const char* sep = splitter.find(p, end);
    const char* cell_end = sep != nullptr ? sep : end;
    const std::string_view entry(p, static_cast<size_t>(cell_end - p));
    const size_t colon = entry.rfind(':');
    if (colon == std::string_view::npos || colon == 0) {
      throw DataError(path + ":1: header entry " + quoted(entry) +
                      " is not of the form name:type (type token, token_seq, float or float_seq)");
    }
    const std::string name(entry.substr(0, colon));
    const std::string_view type_name = entry.substr(colon + 1);
    const std::optional<FieldType> type = parse_field_type(type_name);
    if (!type) {
      throw DataError(path + ":1: column " + name + ": unknown type " + quoted(type_name) +
                      " (expected token, token_seq, float or float_seq)");
    }
    if (!seen.insert(name).second) {
      throw DataError(path + ":1: duplicate column " + quoted(name) + " in the header");
    }
    entries.push_back({name, *type});
    if (sep == nullptr) break;
    p = sep + splitter.size();
  }
  return entries;
}

std::string header_names(const std::vector<HeaderEntry>& entries) {
  std::string out;
  for (const HeaderEntry& e : entries) {
    if (!out.empty()) out += ", ";
    out += e.name;
  }
  return out;
}

// What to do with one field of a row.
struct CellPlan {
  Column* column = nullptr;  // nullptr: skip the cell
  Vocabulary* vocab = nullptr;
};

// Parses the rows of `reader`, to its end, into the columns of `plan`; returns the rows read.
int64_t parse_rows(LineReader& reader, const std::string& path,
                   const std::vector<HeaderEntry>& header, std::string_view header_text,
                   const std::vector<CellPlan>& plan, const Splitter& fields,
                   const Splitter& seqs) {
  const size_t n_fields = header.size();
  int64_t n_rows = 0;
  std::string_view line;
  auto column_error = [&](const HeaderEntry& h, std::string_view cell) {
    return DataError(path + ":" + std::to_string(reader.line_number()) + ": column " + h.name +
                     ":" + field_type_name(h.type) + ": cannot parse " + quoted(cell) +
                     " as a float");
  };
  // pandas reads "inf" and 1e400 as infinity; recbole-cpp refuses them (RecBole would carry
  // them into normalisation and the metrics as inf / NaN): a missing value is an empty cell.
  auto infinite_error = [&](const HeaderEntry& h, std::string_view cell) {
    return DataError(path + ":" + std::to_string(reader.line_number()) + ": column " + h.name +
                     ":" + field_type_name(h.type) + ": value " + quoted(cell) +
                     " is not finite; expected a finite number (an empty cell or NaN for a "
                     "missing value)");
  };
  auto count_error = [&](int64_t found) {
    return DataError(path + ":" + std::to_string(reader.line_number()) + ": expected " +
                     std::to_string(n_fields) + " fields (as in the header), found " +
                     std::to_string(found));
  };

  while (reader.next(line)) {
    if (line.empty()) continue;  // blank lines are skipped, as pandas does
    // Two files joined with cat: the second header would become a user "user_id:token".
    if (line == header_text)
      throw DataError(path + ":" + std::to_string(reader.line_number()) +
                      ": the header line again (files joined together?); expected a data row");
    const char* p = line.data();
    const char* end = p + line.size();
    for (size_t k = 0; k < n_fields; ++k) {
      const char* cell_end;
      if (k + 1 < n_fields) {
        cell_end = fields.find(p, end);
        if (cell_end == nullptr) throw count_error(static_cast<int64_t>(k) + 1);
      } else {
        cell_end = end;
        const char* extra = fields.find(p, end);
        if (extra != nullptr) {
          throw count_error(static_cast<int64_t>(n_fields) + fields.count(p, end));
        }
      }
      const CellPlan& cp = plan[k];
      if (cp.column != nullptr) {
        Column& c = *cp.column;
        switch (c.type) {
          case FieldType::kToken:
            c.tokens.push_back(p == cell_end ? -1
                                             : cp.vocab->intern(std::string_view(
                                                   p, static_cast<size_t>(cell_end - p))));
            break;
          case FieldType::kFloat: {
            double v;
            if (!parse_float(p, cell_end, v)) {
              throw column_error(header[k], std::string_view(p, static_cast<size_t>(cell_end - p)));
            }
            if (std::isinf(v))
              throw infinite_error(header[k],
                                   std::string_view(p, static_cast<size_t>(cell_end - p)));
            c.floats.push_back(v);
            break;
          }
          case FieldType::kTokenSeq:
          case FieldType::kFloatSeq: {
            const char* q = p;
            while (q <= cell_end) {
              const char* piece_end = q < cell_end ? seqs.find(q, cell_end) : nullptr;
              if (piece_end == nullptr) piece_end = cell_end;
              if (piece_end > q) {
                if (c.type == FieldType::kTokenSeq) {
                  c.tokens.push_back(
                      cp.vocab->intern(std::string_view(q, static_cast<size_t>(piece_end - q))));
                } else {
                  double v;
                  if (!parse_float(q, piece_end, v)) {
                    throw column_error(header[k],
                                       std::string_view(q, static_cast<size_t>(piece_end - q)));
                  }
                  if (std::isinf(v))
                    throw infinite_error(header[k],
                                         std::string_view(q, static_cast<size_t>(piece_end - q)));
                  c.floats.push_back(v);
                }
              }
              q = piece_end + seqs.size();
            }
            c.offsets.push_back(c.type == FieldType::kTokenSeq
                                    ? static_cast<int64_t>(c.tokens.size())
                                    : static_cast<int64_t>(c.floats.size()));
            // Feature batches pad every row to the longest sequence: one runaway cell (a
            // separator mistake) would make every batch that wide.
            const int64_t len = c.offsets.back() - c.offsets[c.offsets.size() - 2];
            if (len > kMaxSequenceLength)
              throw DataError(path + ":" + std::to_string(reader.line_number()) + ": column " +
                              header[k].name + ":" + field_type_name(header[k].type) + ": " +
                              std::to_string(len) + " elements in one cell; expected at most " +
                              std::to_string(kMaxSequenceLength) +
                              " (check seq_separator and field_separator)");
            break;
          }
        }
      }
      p = cell_end + fields.size();
    }
    ++n_rows;
  }
  return n_rows;
}

// Files from this size on are parsed by two threads.
constexpr int64_t kParallelBytes = int64_t{8} << 20;

// Where the rows of [begin, file_size) are cut for two threads: the start of the first line
// after the middle; -1 to parse them on one thread (small file, one core, no line found).
int64_t split_point(const std::string& path, int64_t begin, int64_t file_size) {
  if (file_size - begin < kParallelBytes || ThreadPool::instance().threads() < 2) return -1;
  LineReader reader(path, begin + (file_size - begin) / 2);
  std::string_view rest_of_line;
  if (!reader.next(rest_of_line)) return -1;
  return reader.offset() < file_size ? reader.offset() : -1;
}

}  // namespace

std::vector<HeaderField> read_atomic_header(const std::string& path,
                                            const std::string& field_separator) {
  LineReader reader(path);
  std::string_view line;
  if (!reader.next(line)) throw DataError(path + ":1: empty file, expected a header line");
  std::vector<HeaderField> out;
  for (const HeaderEntry& e : parse_header(line, path, Splitter(field_separator))) {
    out.push_back({e.name, e.type});
  }
  return out;
}

Table read_atomic_file(const std::string& path, const AtomicFileOptions& options) {
  if (options.field_separator.empty()) throw DataError(path + ": field_separator is empty");
  if (options.seq_separator.empty()) throw DataError(path + ": seq_separator is empty");
  const Splitter fields(options.field_separator);
  const Splitter seqs(options.seq_separator);

  LineReader reader(path);
  std::string_view line;
  if (!reader.next(line)) throw DataError(path + ":1: empty file, expected a header line");
  const std::vector<HeaderEntry> header = parse_header(line, path, fields);
  // Kept as a string (the view dies with the reader's next chunk), without a byte-order mark.
  std::string header_text(line);
  if (header_text.rfind("\xEF\xBB\xBF", 0) == 0) header_text.erase(0, 3);

  // Column selection.
  std::vector<uint8_t> selected(header.size(), 1);
  if (options.load_col) {
    std::fill(selected.begin(), selected.end(), 0);
    for (const std::string& name : *options.load_col) {
      bool found = false;
      for (size_t i = 0; i < header.size(); ++i) {
        if (header[i].name == name) {
          selected[i] = 1;
          found = true;
        }
      }
      if (!found) {
        throw DataError(path + ":1: load_col: column " + quoted(name) +
                        " is not in the header (columns: " + header_names(header) + ")");
      }
    }
  }
  for (const std::string& name : options.unload_col) {
    for (size_t i = 0; i < header.size(); ++i) {
      if (header[i].name == name) selected[i] = 0;
    }
  }

  Table table(path);
  size_t n_selected = 0;
  for (uint8_t s : selected) n_selected += s;
  std::vector<Column> columns;
  columns.reserve(n_selected);
  for (size_t i = 0; i < header.size(); ++i) {
    if (!selected[i]) continue;
    Column c;
    c.name = header[i].name;
    c.type = header[i].type;
    if (c.is_seq()) c.offsets.push_back(0);
    if (c.is_token_like()) {
      std::shared_ptr<Vocabulary> vocab;
      if (options.vocabularies != nullptr) {
        auto it = options.vocabularies->find(c.name);
        if (it != options.vocabularies->end()) vocab = it->second;
      }
      if (!vocab) {
        vocab = std::make_shared<Vocabulary>();
        if (options.vocabularies != nullptr) (*options.vocabularies)[c.name] = vocab;
      }
      c.vocab = std::move(vocab);
    }
    columns.push_back(std::move(c));
  }
  std::vector<CellPlan> plan(header.size());
  for (size_t i = 0, k = 0; i < header.size(); ++i) {
    if (!selected[i]) continue;
    plan[i].column = &columns[k];
    plan[i].vocab = columns[k].vocab.get();
    ++k;
  }

  // Reserve from the line length seen in the first chunk, so that the column arrays are not
  // reallocated (and briefly doubled) over and over on a large file.
  reader.prefetch();
  {
    const std::string_view sample = reader.buffered();
    int64_t lines = 0;
    for (char ch : sample) lines += ch == '\n' ? 1 : 0;
    if (lines > 0 && !sample.empty()) {
      const double bytes_per_line = static_cast<double>(sample.size()) / static_cast<double>(lines);
      const auto estimate =
          static_cast<size_t>(static_cast<double>(reader.file_size()) / bytes_per_line * 1.02) + 16;
      for (Column& c : columns) {
        if (c.is_seq()) {
          c.offsets.reserve(estimate + 1);
        } else if (c.type == FieldType::kToken) {
          c.tokens.reserve(estimate);
        } else {
          c.floats.reserve(estimate);
        }
      }
    }
  }

  int64_t n_rows = 0;
  const int64_t split = split_point(path, reader.offset(), reader.file_size());
  if (split < 0) {
    n_rows = parse_rows(reader, path, header, header_text, plan, fields, seqs);
  } else {
    // The rows from `split` on are parsed on a second thread into columns and vocabularies of
    // their own (one per shared vocabulary: columns may share one), then appended. Their new
    // tokens are interned into the shared vocabularies in order of first appearance after
    // `split`, which is their order of first appearance in the file, as on one thread.
    std::vector<Column> tail_columns(columns.size());
    std::map<Vocabulary*, std::unique_ptr<Vocabulary>> tail_vocabs;
    std::vector<CellPlan> tail_plan(header.size());
    for (size_t i = 0; i < header.size(); ++i) {
      if (plan[i].column == nullptr) continue;
      Column& c = tail_columns[static_cast<size_t>(plan[i].column - columns.data())];
      c.name = plan[i].column->name;
      c.type = plan[i].column->type;
      if (c.is_seq()) c.offsets.push_back(0);
      tail_plan[i].column = &c;
      if (plan[i].vocab != nullptr) {
        std::unique_ptr<Vocabulary>& v = tail_vocabs[plan[i].vocab];
        if (!v) v = std::make_unique<Vocabulary>();
        tail_plan[i].vocab = v.get();
      }
    }
    reader.set_limit(split);
    int64_t tail_rows = 0;
    std::exception_ptr tail_error;
    std::thread tail([&] {
      try {
        LineReader tail_reader(path, split);
        tail_rows = parse_rows(tail_reader, path, header, header_text, tail_plan, fields, seqs);
      } catch (...) {
        tail_error = std::current_exception();
      }
    });
    try {
      n_rows = parse_rows(reader, path, header, header_text, plan, fields, seqs);
    } catch (...) {
      tail.join();
      throw;
    }
    tail.join();
    if (tail_error) {
      // Parse the tail again on this thread, numbering its lines, for the error one thread gives.
      LineReader tail_reader(path, split, reader.line_number());
      n_rows += parse_rows(tail_reader, path, header, header_text, plan, fields, seqs);
    } else {
      std::map<Vocabulary*, std::vector<int32_t>> to_shared;
      for (const auto& [shared, local] : tail_vocabs) {
        std::vector<int32_t>& ids = to_shared[shared];
        ids.resize(static_cast<size_t>(local->size()));
        for (int32_t id = 0; id < local->size(); ++id) {
          ids[static_cast<size_t>(id)] = shared->intern(local->token(id));
        }
      }
      for (size_t i = 0; i < header.size(); ++i) {
        if (plan[i].column == nullptr) continue;
        Column& c = *plan[i].column;
        Column& t = *tail_plan[i].column;
        if (plan[i].vocab != nullptr) {
          const std::vector<int32_t>& ids = to_shared[plan[i].vocab];
          for (int32_t& id : t.tokens) {
            if (id >= 0) id = ids[static_cast<size_t>(id)];  // -1: missing cell
          }
        }
        if (c.is_seq()) {
          const int64_t base = c.type == FieldType::kTokenSeq
                                   ? static_cast<int64_t>(c.tokens.size())
                                   : static_cast<int64_t>(c.floats.size());
          for (size_t j = 1; j < t.offsets.size(); ++j) c.offsets.push_back(base + t.offsets[j]);
        }
        c.tokens.insert(c.tokens.end(), t.tokens.begin(), t.tokens.end());
        c.floats.insert(c.floats.end(), t.floats.begin(), t.floats.end());
        std::vector<int32_t>().swap(t.tokens);
        std::vector<double>().swap(t.floats);
      }
      n_rows += tail_rows;
    }
  }

  for (Column& c : columns) table.add_column(std::move(c));
  table.set_n_rows(n_rows);
  return table;
}

}  // namespace recbole::data
