#pragma once
// What the benchmarks print about the machine they ran on: a field of /proc/cpuinfo.
#include <fstream>
#include <string>

namespace recbole::tools {

// The first value of `key` in /proc/cpuinfo ("model name", "cpu family", ...), "" when the file
// or the key is missing (another OS, an emulator).
inline std::string cpu_info_field(const std::string& key) {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    const auto colon = line.find(':');
    if (line.rfind(key, 0) == 0 && colon != std::string::npos && colon + 2 <= line.size())
      return line.substr(colon + 2);
  }
  return "";
}

}  // namespace recbole::tools
