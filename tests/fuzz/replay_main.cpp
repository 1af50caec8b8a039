// main() of the replay builds of the fuzz targets (tests/fuzz/CMakeLists.txt): runs each file
// given, or each file of each folder given, through LLVMFuzzerTestOneInput once. The normal and
// sanitizer builds use it to run the seed corpora and every crash found so far as regression
// tests, without clang's libFuzzer.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

// NOLINTNEXTLINE(readability-identifier-naming): the name libFuzzer calls
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace fs = std::filesystem;

namespace {

void run_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  const std::vector<char> bytes((std::istreambuf_iterator<char>(in)),
                                std::istreambuf_iterator<char>());
  LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
}

}  // namespace

int main(int argc, char** argv) {
  int files = 0;
  for (int i = 1; i < argc; ++i) {
    const fs::path arg = argv[i];
    if (fs::is_directory(arg)) {
      for (const auto& entry : fs::recursive_directory_iterator(arg)) {
        if (!entry.is_regular_file()) continue;
        run_file(entry.path());
        ++files;
      }
    } else {
      run_file(arg);
      ++files;
    }
  }
  std::printf("replayed %d inputs\n", files);
  // A folder that lost its files would pass silently otherwise.
  return files > 0 ? 0 : 1;
}
