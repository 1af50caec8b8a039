#pragma once
// --help and --version, answered alike by every tool in tools/ before it reads its other
// arguments (a tool's own parser would take --version for an unknown config key, and would need
// the registries and files that a plain --help must not).
#include <charconv>
#include <cstdint>
#include <cstring>
#include <iostream>
#include <string>

#include "recbole/utils/error.h"
#include "recbole/version.h"

namespace recbole::tools {

// When argv holds --help (or -h) or --version, prints the usage (print_usage()) or
// "<name> <version>" to stdout and returns true: the tool then exits with status 0.
template <class PrintUsage>
bool answer_help_or_version(int argc, char** argv, const char* name, PrintUsage&& print_usage) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--version") == 0) {
      std::cout << name << " " << kVersion << "\n";
      return true;
    }
    if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
      print_usage();
      return true;
    }
  }
  return false;
}

// The same, with a fixed usage text.
inline bool answer_help_or_version(int argc, char** argv, const char* name, const char* usage) {
  return answer_help_or_version(argc, argv, name, [usage] { std::cout << usage; });
}

// The whole of `v` as an integer in [lo, hi], else a ConfigError naming --key and the range.
inline int64_t int_flag(const std::string& key, const std::string& v, int64_t lo, int64_t hi) {
  int64_t x = 0;
  const auto res = std::from_chars(v.data(), v.data() + v.size(), x);
  if (res.ec != std::errc() || res.ptr != v.data() + v.size() || x < lo || x > hi)
    throw ConfigError("--" + key + ": expected an integer in [" + std::to_string(lo) + ", " +
                      std::to_string(hi) + "], got \"" + v + "\"");
  return x;
}

}  // namespace recbole::tools
