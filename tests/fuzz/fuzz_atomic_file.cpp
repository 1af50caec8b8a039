// Fuzz target: the atomic-file reader (recbole/data/atomic_file.h) on arbitrary bytes.
// The first input byte picks the separators and the column selection, so that the comma, space
// and multi-character separators and the load_col / unload_col paths are reached too; the rest is
// the file. Bad input must be a recbole::Error; anything else (another exception, a crash, a
// sanitizer report) is a finding.
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>

#include "recbole/data/atomic_file.h"
#include "recbole/utils/error.h"
#include "tests/fuzz/fuzz_input.h"

// NOLINTNEXTLINE(readability-identifier-naming): the name libFuzzer calls
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t mode = data[0];
  static const char* const kFieldSeparators[] = {"\t", ",", " ", "::"};
  static const char* const kSeqSeparators[] = {" ", ",", "|", "\t"};
  recbole::data::AtomicFileOptions options;
  options.field_separator = kFieldSeparators[mode & 3];
  options.seq_separator = kSeqSeparators[(mode >> 2) & 3];
  if (mode & 0x10) options.load_col = std::vector<std::string>{"user_id", "item_id"};
  if (mode & 0x20) options.unload_col = {"timestamp", "rating"};
  std::map<std::string, std::shared_ptr<recbole::data::Vocabulary>> vocabularies;
  if (mode & 0x40) options.vocabularies = &vocabularies;
  const std::string path = recbole::fuzz::write_scratch_file("input.inter", data + 1, size - 1);
  try {
    recbole::data::read_atomic_header(path, options.field_separator);
  } catch (const recbole::Error&) {
  }
  try {
    recbole::data::read_atomic_file(path, options);
  } catch (const recbole::Error&) {
  }
  return 0;
}
