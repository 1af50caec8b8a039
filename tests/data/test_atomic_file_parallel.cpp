// The reader on files large enough to be parsed by two threads: the table, the interning order
// (first appearance in the file, also across columns sharing a vocabulary and after tokens
// already interned) and the file:line of errors must be what one thread gives.
#include <catch2/catch.hpp>

#include <cmath>
#include <map>
#include <memory>
#include <random>
#include <sstream>

#include "data_test_util.h"
#include "recbole/data/atomic_file.h"
#include "recbole/data/vocabulary.h"
#include "recbole/utils/error.h"
#include "recbole/utils/thread_pool.h"

using namespace recbole::data;
using recbole::data::testing::TempDir;

namespace {

// What the generator wrote, row by row.
struct Expected {
  std::vector<std::string> users, items;  // "" = missing cell
  std::vector<std::string> ratings;       // cell text
  std::vector<std::vector<std::string>> tags;
  int64_t lines = 1;  // header
};

// A file of about 12 MB: tokens, floats, token sequences sharing the items' vocabulary, missing
// cells, blank lines and CRLF line ends scattered through it.
std::string big_file(Expected& e, uint32_t seed) {
  std::mt19937 gen(seed);
  std::ostringstream out;
  out << "user_id:token\titem_id:token\trating:float\ttags:token_seq\n";
  for (int r = 0; r < 400000; ++r) {
    const std::string user = gen() % 97 == 0 ? "" : "u" + std::to_string(gen() % 30000);
    const std::string item = "i" + std::to_string(gen() % 5000);
    const std::string rating = gen() % 89 == 0 ? "" : std::to_string(gen() % 5) + ".5";
    std::vector<std::string> tags;
    for (unsigned k = gen() % 3; k > 0; --k) tags.push_back("i" + std::to_string(gen() % 6000));
    out << user << '\t' << item << '\t' << rating << '\t';
    for (size_t k = 0; k < tags.size(); ++k) out << (k ? " " : "") << tags[k];
    out << (r % 7 == 0 ? "\r\n" : "\n");
    ++e.lines;
    if (gen() % 1000 == 0) {
      out << '\n';
      ++e.lines;
    }
    e.users.push_back(user);
    e.items.push_back(item);
    e.ratings.push_back(rating);
    e.tags.push_back(tags);
  }
  return out.str();
}

std::string read_error(const std::string& path, const AtomicFileOptions& o) {
  try {
    read_atomic_file(path, o);
  } catch (const recbole::DataError& e) {
    return e.what();
  }
  FAIL("expected a recbole::DataError");
  return "";
}

}  // namespace

TEST_CASE("reader on two threads: same table and interning order as one thread", "[atomic]") {
  recbole::ThreadPool::instance().set_threads(2);  // the reader splits only with 2+ threads
  TempDir dir;
  Expected e;
  const std::string path = dir.write("big.inter", big_file(e, 7));
  // Items and tags share one vocabulary, which already holds two tokens.
  auto items = std::make_shared<Vocabulary>();
  items->intern("i17");
  items->intern("pre");
  std::map<std::string, std::shared_ptr<Vocabulary>> vocabularies{{"item_id", items},
                                                                  {"tags", items}};
  AtomicFileOptions o;
  o.vocabularies = &vocabularies;
  const Table t = read_atomic_file(path, o);
  const size_t n = e.users.size();
  REQUIRE(t.n_rows() == static_cast<int64_t>(n));

  const Column& user = t.column("user_id");
  const Column& item = t.column("item_id");
  const Column& rating = t.column("rating");
  const Column& tags = t.column("tags");
  // Interning order: first appearance in the file, row by row, columns left to right.
  std::vector<std::string> want_users, want_items{"i17", "pre"};
  std::map<std::string, int> seen_users, seen_items{{"i17", 0}, {"pre", 1}};
  auto first = [](std::map<std::string, int>& seen, std::vector<std::string>& order,
                  const std::string& token) {
    if (seen.emplace(token, static_cast<int>(order.size())).second) order.push_back(token);
  };
  bool same = true;
  size_t r = 0;
  for (; r < n && same; ++r) {
    if (!e.users[r].empty()) first(seen_users, want_users, e.users[r]);
    first(seen_items, want_items, e.items[r]);
    for (const std::string& tag : e.tags[r]) first(seen_items, want_items, tag);
    same = same && (e.users[r].empty() ? user.tokens[r] == -1
                                       : user.vocab->token(user.tokens[r]) == e.users[r]);
    same = same && item.vocab->token(item.tokens[r]) == e.items[r];
    same = same && (e.ratings[r].empty() ? std::isnan(rating.floats[r])
                                         : rating.floats[r] == std::stod(e.ratings[r]));
    same = same && tags.offsets[r + 1] - tags.offsets[r] == static_cast<int64_t>(e.tags[r].size());
    for (size_t k = 0; same && k < e.tags[r].size(); ++k) {
      same =
          tags.vocab->token(tags.tokens[static_cast<size_t>(tags.offsets[r]) + k]) == e.tags[r][k];
    }
  }
  INFO("first difference at row " << r - 1);
  CHECK(same);
  CHECK(tags.offsets.front() == 0);
  CHECK(tags.offsets.back() == static_cast<int64_t>(tags.tokens.size()));
  REQUIRE(user.vocab->size() == static_cast<int32_t>(want_users.size()));
  REQUIRE(items->size() == static_cast<int32_t>(want_items.size()));
  for (size_t id = 0; id < want_users.size(); ++id) {
    if (user.vocab->token(static_cast<int32_t>(id)) != want_users[id]) {
      FAIL("user id " << id << " is " << user.vocab->token(static_cast<int32_t>(id)));
    }
  }
  for (size_t id = 0; id < want_items.size(); ++id) {
    if (items->token(static_cast<int32_t>(id)) != want_items[id]) {
      FAIL("item id " << id << " is " << items->token(static_cast<int32_t>(id)));
    }
  }
}

TEST_CASE("reader on two threads: errors name the line one thread would name", "[atomic][errors]") {
  recbole::ThreadPool::instance().set_threads(2);  // the reader splits only with 2+ threads
  TempDir dir;
  Expected e;
  const std::string text = big_file(e, 11);
  // Line numbers of a line near the start and one near the end (both past the header).
  auto line_start = [&](int64_t line) {
    size_t at = 0;
    for (int64_t l = 1; l < line; ++l) at = text.find('\n', at) + 1;
    return at;
  };
  const int64_t early = 1000, late = e.lines - 1000;
  auto with_bad_rating = [&](const std::vector<int64_t>& lines) {
    std::string s = text;
    // From the last line back, so that earlier offsets stay valid.
    for (auto it = lines.rbegin(); it != lines.rend(); ++it) {
      const size_t at = line_start(*it);
      const size_t end = s.find('\n', at);
      s.replace(at, end - at, "u1\ti1\tabc\t");
    }
    return s;
  };
  const std::string late_path = dir.write("late.inter", with_bad_rating({late}));
  CHECK(read_error(late_path, {}) == late_path + ":" + std::to_string(late) +
                                         ": column rating:float: cannot parse \"abc\" as a float");
  const std::string both_path = dir.write("both.inter", with_bad_rating({early, late}));
  CHECK(read_error(both_path, {}) == both_path + ":" + std::to_string(early) +
                                         ": column rating:float: cannot parse \"abc\" as a float");
  std::string short_row = text;
  const size_t at = line_start(late);
  short_row.replace(at, short_row.find('\n', at) - at, "u1\ti1");
  const std::string short_path = dir.write("short.inter", short_row);
  CHECK(read_error(short_path, {}) == short_path + ":" + std::to_string(late) +
                                          ": expected 4 fields (as in the header), found 2");
}
