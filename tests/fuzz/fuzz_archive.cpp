// Fuzz target: the archive extractor (recbole/download/archive.h) on arbitrary bytes (zip,
// tar, gzip, ... whatever libarchive recognises). Each input is extracted into a fresh folder with
// a 1 MiB limit, which is then removed. Refusals must be recbole::Error; any other exception, a
// crash, a sanitizer report, a file written outside the folder, or unbounded memory is a finding.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>

#include "recbole/download/archive.h"
#include "recbole/utils/error.h"
#include "tests/fuzz/fuzz_input.h"

namespace fs = std::filesystem;

// NOLINTNEXTLINE(readability-identifier-naming): the name libFuzzer calls
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string archive = recbole::fuzz::write_scratch_file("input.archive", data, size);
  const fs::path dest = recbole::fuzz::scratch_dir() / "out";
  fs::remove_all(dest);
  fs::create_directories(dest);
  try {
    recbole::data::extract_archive_safely(archive, dest.string(), int64_t{1} << 20);
  } catch (const recbole::Error&) {
  }
  // Nothing may land beside the destination (a path escaping it would).
  for (const auto& entry : fs::directory_iterator(recbole::fuzz::scratch_dir())) {
    const std::string name = entry.path().filename().string();
    if (name != "out" && name != "input.archive") {
      std::abort();
    }
  }
  fs::remove_all(dest);
  return 0;
}
