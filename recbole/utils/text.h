#pragma once
// Small text helpers shared by the config, data, evaluator and trainer code.
#include <cctype>
#include <string>

namespace recbole {

// ASCII lower case (config values, metric and dataset names are matched case-insensitively).
inline std::string to_lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace recbole
