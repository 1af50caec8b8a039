// Fuzz target: the resume-checkpoint header reader (trainer/resume_checkpoint.h) on arbitrary
// bytes. libtorch's zip and pickle readers are not instrumented (libtorch is a prebuilt library),
// so coverage guides the fuzzer through our code only; crashes and non-recbole exceptions
// anywhere are still findings.
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
