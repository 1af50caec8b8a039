#pragma once
// Small text helpers shared by every floor (config, download, data, evaluator, trainer, the run
// layer and the tools).
#include <cctype>
#include <string>
#include <vector>

namespace recbole {

// ASCII lower case (config values, metric and dataset names are matched case-insensitively).
inline std::string to_lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// `parts` joined with `sep` (join({"a", "b"}, ", ") is "a, b").
inline std::string join(const std::vector<std::string>& parts, const std::string& sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) out += (i ? sep : "") + parts[i];
  return out;
}

}  // namespace recbole
