#pragma once
// Source lints: where in the source tree a forbidden pattern appears, for the tests that keep an
// invariant by construction (only the device manager moves tensors; dropout masks come from
// layers::dropout). RECBOLE_SOURCE_DIR is the test target's compile definition.
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace recbole::testing {

// "path:line " for every line of a .cpp or .h file under RECBOLE_SOURCE_DIR/<dir>, for each of
// dirs, that contains one of patterns; files whose name contains one of skipped are not read.
// Empty when no line does.
inline std::string lines_containing(const std::vector<std::string>& dirs,
                                    const std::vector<std::string>& patterns,
                                    const std::vector<std::string>& skipped) {
  namespace fs = std::filesystem;
  std::string found;
  for (const auto& dir : dirs) {
    for (const auto& entry : fs::recursive_directory_iterator(fs::path(RECBOLE_SOURCE_DIR) / dir)) {
      const fs::path& path = entry.path();
      if (!entry.is_regular_file()) continue;
      if (path.extension() != ".cpp" && path.extension() != ".h") continue;
      bool skip = false;
      for (const auto& s : skipped)
        skip = skip || path.filename().string().find(s) != std::string::npos;
      if (skip) continue;
      std::ifstream in(path);
      std::string line;
      for (int n = 1; std::getline(in, line); ++n)
        for (const auto& p : patterns)
          if (line.find(p) != std::string::npos)
            found += path.string() + ":" + std::to_string(n) + " ";
    }
  }
  return found;
}

}  // namespace recbole::testing
