// The atomic file reader and vocabulary, and every malformed-input case: each error must name
// the file and the line (or the key / column) so that a user can fix it.
#include <catch2/catch.hpp>

#include <cmath>
#include <set>

#include "data_test_util.h"
#include "recbole/data/atomic_file.h"
#include "recbole/data/dataset.h"
#include "recbole/data/vocabulary.h"
#include "recbole/utils/error.h"

using namespace recbole::data;
using recbole::data::testing::TempDir;

namespace {

DatasetOptions options_in(const TempDir& dir, const std::string& name) {
  DatasetOptions o;
  o.dataset = name;
  o.data_path = dir.path();
  o.load_col.reset();
  return o;
}

// The DataError message of loading dataset `name` from `dir`.
std::string load_error(const DatasetOptions& o) {
  try {
    Dataset::load(o);
  } catch (const recbole::DataError& e) {
    return e.what();
  }
  FAIL("expected a recbole::DataError");
  return "";
}

}  // namespace

TEST_CASE("vocabulary interns tokens once, in order of first appearance", "[atomic]") {
  Vocabulary v;
  CHECK(v.intern("b") == 0);
  CHECK(v.intern("a") == 1);
  CHECK(v.intern("b") == 0);
  CHECK(v.find("a") == 1);
  CHECK(v.find("zz") == -1);
  for (int i = 0; i < 100000; ++i) v.intern("tok" + std::to_string(i));  // forces rehashing
  CHECK(v.size() == 100002);
  bool all = true;
  for (int i = 0; i < 100000; i += 7) all = all && v.find("tok" + std::to_string(i)) == i + 2;
  CHECK(all);
  CHECK(v.token(5) == "tok3");
  // append keeps duplicates; lookups find the first.
  CHECK(v.append("a") == 100002);
  CHECK(v.find("a") == 1);
}

TEST_CASE("vocabulary: decimal tokens are exact strings (\"017\" is not \"17\")", "[atomic]") {
  Vocabulary v;
  const int32_t a = v.intern("17");
  const int32_t b = v.intern("017");
  const int32_t c = v.intern("+17");
  const int32_t d = v.intern("4194304");  // at the direct-array limit: hashed
  const int32_t e = v.intern("4194303");  // just below: direct
  const int32_t f = v.intern("123456789012");
  CHECK(std::set<int32_t>{a, b, c, d, e, f}.size() == 6);
  CHECK(v.intern("17") == a);
  CHECK(v.find("017") == b);
  CHECK(v.find("4194304") == d);
  CHECK(v.find("4194303") == e);
  CHECK(v.find("123456789012") == f);
  CHECK(v.find("18") == -1);
  CHECK(v.find("99999999") == -1);
  CHECK(v.token(b) == "017");
  CHECK(v.append("17") == 6);  // duplicate appended; lookups keep the first
  CHECK(v.find("17") == a);
  for (int i = 0; i < 200000; ++i) v.intern(std::to_string(i * 7));
  bool all = true;
  for (int i = 0; i < 200000; i += 13)
    all = all && v.token(v.find(std::to_string(i * 7))) == std::to_string(i * 7);
  CHECK(all);
}

TEST_CASE("reader: types, missing cells, sequences, CRLF, blank lines, no final newline",
          "[atomic]") {
  TempDir dir;
  const std::string path = dir.write("x.inter",
                                     "\xEF\xBB\xBFu:token\tf:float\tts:token_seq\tfs:float_seq\r\n"
                                     "a\t1.5\tx y  z\t1 2\r\n"
                                     "\r\n"
                                     "\t\t\t\r\n"
                                     "b\tNaN\ty\t+3e2 -4\n"
                                     "a\t 7 \t\t");
  AtomicFileOptions fo;
  const Table t = read_atomic_file(path, fo);
  REQUIRE(t.n_rows() == 4);
  const Column& u = t.column("u");
  CHECK(u.tokens == std::vector<int32_t>{0, -1, 1, 0});
  const Column& f = t.column("f");
  CHECK(f.floats[0] == 1.5);
  CHECK(std::isnan(f.floats[1]));
  CHECK(std::isnan(f.floats[2]));
  CHECK(f.floats[3] == 7.0);
  const Column& ts = t.column("ts");
  CHECK(ts.offsets == std::vector<int64_t>{0, 3, 3, 4, 4});
  CHECK(ts.vocab->token(ts.tokens[2]) == "z");
  const Column& fs = t.column("fs");
  CHECK(fs.offsets == std::vector<int64_t>{0, 2, 2, 4, 4});
  CHECK(fs.floats[2] == 300.0);
  CHECK(fs.floats[3] == -4.0);
}

TEST_CASE("reader: bytes that would garble an error message are written as hex escapes",
          "[atomic]") {
  TempDir dir;
  AtomicFileOptions fo;
  // A NUL inside a cell (it used to cut the message off), and a binary header.
  static const char kNul[] = "u:token\tt:float\na\t4\0garbage\n";
  const std::string nul = dir.write("nul.inter", std::string(kNul, sizeof kNul - 1));
  REQUIRE_THROWS_WITH(
      read_atomic_file(nul, fo),
      Catch::Contains(":2: column t:float: cannot parse \"4\\x00garbage\" as a float"));
  static const char kElf[] =
      "\x7f"
      "ELF\x02\x01\xff\tx:token\n";
  const std::string elf = dir.write("elf.inter", std::string(kElf, sizeof kElf - 1));
  REQUIRE_THROWS_WITH(read_atomic_file(elf, fo),
                      Catch::Contains("header entry \"\\x7fELF\\x02\\x01\\xff\" is not"));
  // Well-formed UTF-8 stays as it is.
  const std::string utf8 = dir.write("u8.inter", "u:token\tt:float\na\t\xc3\xa9t\xc3\xa9\n");
  REQUIRE_THROWS_WITH(read_atomic_file(utf8, fo),
                      Catch::Contains("cannot parse \"\xc3\xa9t\xc3\xa9\" as a float"));
}

TEST_CASE("reader: the header line repeated among the rows is an error at its line", "[atomic]") {
  TempDir dir;
  AtomicFileOptions fo;
  const std::string h = "u:token\tr:float\n";
  const std::string path = dir.write("cat.inter", "\xEF\xBB\xBF" + h + "a\t1\n" + h + "b\t2\n");
  REQUIRE_THROWS_WITH(read_atomic_file(path, fo),
                      Catch::Contains(path + ":3: the header line again"));
}

TEST_CASE("reader: an infinite float is an error naming the file, line and column", "[atomic]") {
  TempDir dir;
  AtomicFileOptions fo;
  for (const std::string bad : {"inf", "-Infinity", "1e400"}) {
    const std::string path = dir.write("inf.inter",
                                       "u:token\tr:float\n"
                                       "a\t1\n"
                                       "b\t" +
                                           bad + "\n");
    REQUIRE_THROWS_WITH(
        read_atomic_file(path, fo),
        Catch::Contains(path + ":3: column r:float: value \"" + bad + "\" is not finite"));
  }
  const std::string seq = dir.write("seq.inter",
                                    "u:token\tv:float_seq\n"
                                    "a\t1 inf 2\n");
  REQUIRE_THROWS_WITH(read_atomic_file(seq, fo),
                      Catch::Contains(seq + ":2: column v:float_seq: value \"inf\" is not finite"));
}

TEST_CASE("reader: load_col / unload_col select columns, separators are configurable", "[atomic]") {
  TempDir dir;
  const std::string path = dir.write("y.inter", "a:token::b:float::c:token_seq\nx::2::p,q\n");
  AtomicFileOptions fo;
  fo.field_separator = "::";
  fo.seq_separator = ",";
  fo.load_col = std::vector<std::string>{"c", "a"};
  Table t = read_atomic_file(path, fo);
  REQUIRE(t.columns().size() == 2);
  CHECK(t.columns()[0].name == "a");  // header order
  CHECK(t.column("c").tokens.size() == 2);
  fo.load_col.reset();
  fo.unload_col = {"a"};
  t = read_atomic_file(path, fo);
  CHECK(t.columns().size() == 2);
  CHECK_FALSE(t.has("a"));
  CHECK(t.column("b").floats == std::vector<double>{2.0});
}

TEST_CASE("user_id of .inter and .user share one vocabulary", "[atomic]") {
  TempDir dir;
  dir.write("s/s.inter", "user_id:token\titem_id:token\nu2\ti1\nu1\ti1\n");
  dir.write("s/s.user", "user_id:token\tage:float\nu1\t3\nu9\t4\n");
  DatasetOptions o = options_in(dir, "s");
  o.filter_inter_by_user_or_item = false;
  const Dataset ds = Dataset::load(o);
  CHECK(ds.n_users() == 4);  // pad, u2, u1 (inter order), u9 (only in .user)
  CHECK(ds.user_id("u9") == 3);
  CHECK(ds.user_table()->column("age").floats[2] == 3.0);  // row i = id i
}

TEST_CASE("malformed: a row with too few or too many fields names file and line",
          "[atomic][errors]") {
  TempDir dir;
  dir.write("m/m.inter", "user_id:token\titem_id:token\trating:float\n1\t2\t3\n1\t2\n");
  std::string msg = load_error(options_in(dir, "m"));
  CHECK_THAT(msg, Catch::Contains("m.inter:3:") && Catch::Contains("expected 3 fields") &&
                      Catch::Contains("found 2"));
  dir.write("m/m.inter", "user_id:token\titem_id:token\n1\t2\n\n4\t5\t6\t7\n");
  msg = load_error(options_in(dir, "m"));
  CHECK_THAT(msg, Catch::Contains("m.inter:4:") && Catch::Contains("found 4"));
}

TEST_CASE("malformed: an unparsable float names file, line and column", "[atomic][errors]") {
  TempDir dir;
  dir.write("m/m.inter", "user_id:token\titem_id:token\trating:float\n1\t2\t3\n1\t3\tabc\n");
  const std::string msg = load_error(options_in(dir, "m"));
  CHECK_THAT(msg, Catch::Contains("m.inter:3: column rating:float: cannot parse \"abc\""));
  dir.write("m/m.inter", "user_id:token\titem_id:token\tr:float_seq\n1\t2\t1 x\n");
  CHECK_THAT(load_error(options_in(dir, "m")),
             Catch::Contains("m.inter:2: column r:float_seq: cannot parse \"x\""));
}

TEST_CASE("malformed header: unknown type, duplicate column, entry without type",
          "[atomic][errors]") {
  TempDir dir;
  dir.write("m/m.inter", "user_id:token\titem_id:int\n1\t2\n");
  CHECK_THAT(load_error(options_in(dir, "m")),
             Catch::Contains("m.inter:1: column item_id: unknown type \"int\""));
  dir.write("m/m.inter", "user_id:token\titem_id:token\tuser_id:float\n1\t2\t3\n");
  CHECK_THAT(load_error(options_in(dir, "m")),
             Catch::Contains("m.inter:1: duplicate column \"user_id\""));
  dir.write("m/m.inter", "user_id:token\titem_id\n1\t2\n");
  CHECK_THAT(load_error(options_in(dir, "m")),
             Catch::Contains("m.inter:1: header entry \"item_id\" is not of the form name:type"));
  dir.write("m/m.inter", "");
  CHECK_THAT(load_error(options_in(dir, "m")), Catch::Contains("m.inter:1: empty file"));
  dir.write("m/m.user", "user_id:token\tage:number\n1\t2\n");
  dir.write("m/m.inter", "user_id:token\titem_id:token\n1\t2\n");
  CHECK_THAT(load_error(options_in(dir, "m")),
             Catch::Contains("m.user:1: column age: unknown type \"number\""));
}

TEST_CASE("malformed: missing .inter shows the path", "[atomic][errors]") {
  TempDir dir;
  dir.write("m/m.user", "user_id:token\n1\n");
  const std::string msg = load_error(options_in(dir, "m"));
  CHECK_THAT(msg, Catch::Contains(dir.path() + "/m/m.inter: file not found"));
  DatasetOptions o = options_in(dir, "m");
  o.benchmark_filename = {"train", "valid", "test"};
  CHECK_THAT(load_error(o), Catch::Contains("m.train.inter: file not found"));
}

TEST_CASE("malformed: a load_col column missing from the header", "[atomic][errors]") {
  TempDir dir;
  dir.write("m/m.inter", "user_id:token\titem_id:token\n1\t2\n");
  DatasetOptions o = options_in(dir, "m");
  o.load_col =
      std::map<std::string, std::vector<std::string>>{{"inter", {"user_id", "item_id", "rating"}}};
  CHECK_THAT(load_error(o), Catch::Contains("m.inter:1: load_col: column \"rating\" is not in "
                                            "the header (columns: user_id, item_id)"));
}

TEST_CASE("malformed: user or item id column absent", "[atomic][errors]") {
  TempDir dir;
  dir.write("m/m.inter", "uid:token\titem_id:token\n1\t2\n");
  CHECK_THAT(load_error(options_in(dir, "m")),
             Catch::Contains("m.inter: column user_id (USER_ID_FIELD) is not loaded"));
  dir.write("m/m.inter", "user_id:token\titem_id:float\n1\t2\n");
  CHECK_THAT(load_error(options_in(dir, "m")),
             Catch::Contains("m.inter:1: column item_id (ITEM_ID_FIELD) must be of type token"));
}

TEST_CASE("malformed: everything filtered away names the table and the filter",
          "[atomic][errors]") {
  TempDir dir;
  dir.write("m/m.inter", "user_id:token\titem_id:token\trating:float\n1\t2\t1\n2\t2\t2\n");
  DatasetOptions o = options_in(dir, "m");
  o.user_inter_num_interval = "[5,inf)";
  CHECK_THAT(load_error(o), Catch::Contains("m.inter: no rows left after user_inter_num_interval"));
  o = options_in(dir, "m");
  ValueFilter v;
  v.field = "rating";
  v.interval = "[10,inf)";
  o.val_interval = {v};
  CHECK_THAT(load_error(o), Catch::Contains("m.inter: no rows left after val_interval rating"));
  dir.write("m/m.item", "item_id:token\n7\n");
  o = options_in(dir, "m");
  CHECK_THAT(load_error(o),
             Catch::Contains("m.inter: no rows left after filter_inter_by_user_or_item"));
  dir.write("m/m.inter", "user_id:token\titem_id:token\n\t2\n1\t\n");
  o = options_in(dir, "m");
  CHECK_THAT(load_error(o), Catch::Contains("m.inter: no rows left after dropping rows with a "
                                            "missing user or item id"));
  dir.write("m/m.inter", "user_id:token\titem_id:token\n");
  CHECK_THAT(load_error(o), Catch::Contains("m.inter: no interactions"));
}

TEST_CASE("bad filter settings are ConfigErrors naming the key", "[atomic][errors]") {
  TempDir dir;
  dir.write("m/m.inter", "user_id:token\titem_id:token\trating:float\n1\t2\t1\n");
  DatasetOptions o = options_in(dir, "m");
  o.user_inter_num_interval = "[5,inf";
  CHECK_THROWS_AS(Dataset::load(o), recbole::ConfigError);
  CHECK_THROWS_WITH(Dataset::load(o), Catch::Contains("user_inter_num_interval: cannot parse "
                                                      "interval \"[5,inf\""));
  o = options_in(dir, "m");
  ValueFilter v;
  v.field = "rating";
  v.interval = "(a,2]";
  o.val_interval = {v};
  CHECK_THROWS_WITH(Dataset::load(o), Catch::Contains("val_interval.rating: cannot parse"));
  v.field = "nope";
  v.interval = "[1,2]";
  o.val_interval = {v};
  CHECK_THROWS_WITH(Dataset::load(o), Catch::Contains("val_interval.nope: field nope is not a "
                                                      "loaded column"));
  o = options_in(dir, "m");
  o.threshold = std::make_pair(std::string("score"), 1.0);
  CHECK_THROWS_WITH(Dataset::load(o), Catch::Contains("threshold: field score"));
  o = options_in(dir, "m");
  o.normalize_field = {"score"};
  CHECK_THROWS_WITH(Dataset::load(o), Catch::Contains("normalize_field: field score"));
}

TEST_CASE("python_float_repr matches Python's repr", "[atomic]") {
  CHECK(python_float_repr(106.04453870625663) == "106.04453870625663");
  CHECK(python_float_repr(1.0) == "1.0");
  CHECK(python_float_repr(100000.0) == "100000.0");
  CHECK(python_float_repr(0.5) == "0.5");
  CHECK(python_float_repr(1e-05) == "1e-05");
  CHECK(python_float_repr(0.0001) == "0.0001");
  CHECK(python_float_repr(1e16) == "1e+16");
  CHECK(python_float_repr(123456789012345678.0) == "1.2345678901234568e+17");
  CHECK(python_float_repr(-2.5) == "-2.5");
  CHECK(python_float_repr(93.70575143257098) == "93.70575143257098");
}
