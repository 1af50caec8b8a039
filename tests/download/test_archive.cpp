// Safe extraction: what is extracted, and every kind of entry that is refused.
#include <catch2/catch.hpp>

#include <filesystem>

#include "download_fixtures.h"
#include "recbole/download/archive.h"
#include "recbole/utils/error.h"

using namespace recbole::testing;
using recbole::data::extract_archive_safely;
using Kind = ArchiveEntry::Kind;

namespace {

// Writes `entries` as an archive, extracts it into <tmp>/out, and returns the error message
// ("" when it succeeded).
std::string try_extract(const TempDir& tmp, const std::vector<ArchiveEntry>& entries,
                        const std::string& format, int64_t max_bytes = int64_t(1) << 30) {
  write_file(tmp / ("a." + format), make_archive(entries, format));
  std::filesystem::create_directories(tmp / "out");
  try {
    extract_archive_safely(tmp / ("a." + format), tmp / "out", max_bytes);
  } catch (const recbole::DataError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("extract writes files and folders of zip and tar.gz archives", "[download][archive]") {
  for (const char* format : {"zip", "tar.gz"}) {
    TempDir tmp;
    auto entries = ml100k_entries("ml-100k/");
    entries.push_back({"./ml-100k/extra/notes.txt", "hello"});
    entries.push_back({"__MACOSX/._ml-100k.inter", "junk"});
    write_file(tmp / "a", make_archive(entries, format));
    std::filesystem::create_directories(tmp / "out");
    auto stats = extract_archive_safely(tmp / "a", tmp / "out", int64_t(1) << 30);
    CHECK(stats.files == 4);
    CHECK(read_file(tmp / "out/ml-100k/ml-100k.inter") == shared_ml100k_file("inter"));
    CHECK(read_file(tmp / "out/ml-100k/ml-100k.user") == shared_ml100k_file("user"));
    CHECK(read_file(tmp / "out/ml-100k/extra/notes.txt") == "hello");
    CHECK(list_dir(tmp / "out") == std::vector<std::string>{"ml-100k"});  // __MACOSX skipped
  }
}

TEST_CASE("extract refuses entries that would escape the folder", "[download][archive]") {
  SECTION("a ../ component") {
    TempDir tmp;
    std::string msg = try_extract(tmp, {{"ok.inter", "1"}, {"sub/../../evil.txt", "x"}}, "zip");
    CHECK_THAT(msg, Catch::Contains("sub/../../evil.txt") && Catch::Contains("'..'"));
    CHECK_FALSE(std::filesystem::exists(tmp / "evil.txt"));
  }
  SECTION("an absolute path") {
    TempDir tmp;
    std::string target = tmp / "abs.txt";
    std::string msg = try_extract(tmp, {{target, "x"}}, "tar");
    CHECK_THAT(msg, Catch::Contains("absolute path"));
    CHECK_FALSE(std::filesystem::exists(target));
  }
  SECTION("a symbolic link") {
    TempDir tmp;
    std::string msg = try_extract(tmp, {{"link.inter", "", Kind::kSymlink, "/etc/passwd"}}, "zip");
    CHECK_THAT(msg, Catch::Contains("symbolic link") && Catch::Contains("/etc/passwd"));
    CHECK(list_dir(tmp / "out").empty());
  }
  SECTION("a hard link") {
    TempDir tmp;
    std::string msg =
        try_extract(tmp, {{"a.inter", "x"}, {"b.inter", "", Kind::kHardlink, "a.inter"}}, "tar");
    CHECK_THAT(msg, Catch::Contains("hard link"));
  }
  SECTION("a device") {
    TempDir tmp;
    std::string msg = try_extract(tmp, {{"null.inter", "", Kind::kCharDevice, ""}}, "tar");
    CHECK_THAT(msg, Catch::Contains("character device"));
  }
}

TEST_CASE("extract refuses archives that expand beyond the limit", "[download][archive]") {
  TempDir tmp;
  // 4 MB of zeros compress to a few KB: the limit is on the bytes actually written.
  std::string msg = try_extract(tmp, {{"bomb.inter", std::string(4 << 20, '\0')}}, "zip", 1 << 20);
  CHECK_THAT(msg, Catch::Contains("expands beyond the limit of 1048576 bytes"));
  CHECK(try_extract(tmp, {{"small.inter", std::string(1000, 'a')}}, "tar", 1 << 20) == "");
}

TEST_CASE("extract reports files that are not archives", "[download][archive]") {
  TempDir tmp;
  write_file(tmp / "page.zip", "<html>Access denied</html>\n");
  std::filesystem::create_directories(tmp / "out");
  CHECK_THROWS_WITH(extract_archive_safely(tmp / "page.zip", tmp / "out", 1 << 20),
                    Catch::Contains("page.zip") && Catch::Contains("archive"));
}

TEST_CASE("an archive error without a message from libarchive is still a DataError",
          "[download][archive]") {
  // A zip entry with unknown flags fails without an error string; appending the null char*
  // crashed (archive fuzzer, tests/fuzz/regressions/archive/zip-null-error-string).
  TempDir tmp;
  std::filesystem::create_directories(tmp / "out");
  const std::string input =
      std::string(RECBOLE_SOURCE_DIR) + "/tests/fuzz/regressions/archive/zip-null-error-string";
  try {
    extract_archive_safely(input, tmp / "out", int64_t(1) << 20);
    FAIL("no error");
  } catch (const recbole::DataError& e) {
    CHECK(std::string(e.what()).find(input + ": corrupt or unsupported archive: ") == 0);
  }
}
