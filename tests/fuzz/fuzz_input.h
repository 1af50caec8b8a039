#pragma once
// Helpers shared by the fuzz targets (tests/fuzz/fuzz_*.cpp): the readers under test take file
// paths, so each input is written to a file of this process's own scratch folder (several
// libFuzzer jobs may run at once, and a replay may run beside a fuzzer).
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

namespace recbole::fuzz {

// A scratch folder for this process, created on first use and emptied by the caller's use of
// its own names; under $TMPDIR (or /tmp) so that /dev/shm is used when TMPDIR says so.
inline const std::filesystem::path& scratch_dir() {
  static const std::filesystem::path dir = [] {
    std::filesystem::path d =
        std::filesystem::temp_directory_path() / ("recbole-fuzz-" + std::to_string(::getpid()));
    std::filesystem::create_directories(d);
    return d;
  }();
  return dir;
}

// Writes `size` bytes to scratch_dir()/name and returns the path.
inline std::string write_scratch_file(const std::string& name, const uint8_t* data, size_t size) {
  const std::filesystem::path path = scratch_dir() / name;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  return path.string();
}

}  // namespace recbole::fuzz
