// Fuzz target: the resume-checkpoint header reader (trainer/resume_checkpoint.h) on arbitrary
// bytes: the checksum trailer (recbole/runtime/checkpoint_file.h) first, then libtorch's archive
// and the header's JSON. libtorch is prebuilt and not instrumented; a mutated file fails the
// checksum before it reaches libtorch, whose reader crashed on such files (docs/testing.md).
#include <cstddef>
#include <cstdint>

#include "recbole/utils/error.h"
#include "tests/fuzz/fuzz_input.h"
#include "trainer/resume_checkpoint.h"

// NOLINTNEXTLINE(readability-identifier-naming): the name libFuzzer calls
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = recbole::fuzz::write_scratch_file("resume.pth", data, size);
  try {
    recbole::trainer::read_resume_header(path);
  } catch (const recbole::Error&) {
  }
  return 0;
}
