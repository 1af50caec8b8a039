#pragma once
// The YAML files of configs/ and datasets/, compiled into the library (see
// cmake/embed_configs.cmake), so defaults never depend on where the binary runs.
#include <optional>
#include <string>
#include <vector>

namespace recbole::config {

struct EmbeddedFile {
  const char* path;     // relative to the source root, e.g. "configs/overall.yaml"
  const char* content;  // the file's text
};

const std::vector<EmbeddedFile>& embedded_files();

// The text of an embedded file, or nullopt when there is none at that path.
inline std::optional<std::string> embedded_file(const std::string& path) {
  for (const auto& f : embedded_files())
    if (path == f.path) return std::string(f.content);
  return std::nullopt;
}

}  // namespace recbole::config
