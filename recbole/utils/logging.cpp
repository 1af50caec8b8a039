#include "recbole/utils/logging.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <mutex>

namespace recbole::log {
namespace {

struct State {
  std::mutex mutex;
  Level level = Level::kInfo;
  std::ofstream file;
};

State& state() {
  static State s;
  return s;
}

const char* level_name(Level l) {
  switch (l) {
    case Level::kDebug:
      return "DEBUG";
    case Level::kInfo:
      return "INFO";
    case Level::kWarning:
      return "WARNING";
    case Level::kError:
      return "ERROR";
    case Level::kCritical:
      return "CRITICAL";
  }
  return "INFO";
}

std::string timestamp(const char* format) {
  std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  localtime_r(&now, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, format, &tm);
  return buf;
}

}  // namespace

Level parse_level(const std::string& name) {
  std::string up = name;
  std::transform(up.begin(), up.end(), up.begin(), [](unsigned char c) { return std::toupper(c); });
  if (up == "DEBUG") return Level::kDebug;
  if (up == "WARNING" || up == "WARN") return Level::kWarning;
  if (up == "ERROR") return Level::kError;
  if (up == "CRITICAL") return Level::kCritical;
  return Level::kInfo;
}

void set_level(Level l) {
  std::lock_guard<std::mutex> lock(state().mutex);
  state().level = l;
}

Level level() {
  std::lock_guard<std::mutex> lock(state().mutex);
  return state().level;
}

void set_file(const std::string& path) {
  std::lock_guard<std::mutex> lock(state().mutex);
  auto& s = state();
  if (s.file.is_open()) s.file.close();
  if (path.empty()) return;
  std::filesystem::path p(path);
  if (p.has_parent_path()) std::filesystem::create_directories(p.parent_path());
  s.file.open(path, std::ios::app);
}

void write(Level l, const std::string& message) {
  std::lock_guard<std::mutex> lock(state().mutex);
  auto& s = state();
  if (static_cast<int>(l) < static_cast<int>(s.level)) return;
  const std::string prefix = l == Level::kInfo ? "" : std::string(level_name(l)) + ": ";
  std::cerr << timestamp("%d %b %H:%M") << " " << prefix << message << std::endl;
  if (s.file.is_open())
    s.file << timestamp("%a %d %b %Y %H:%M:%S") << " " << level_name(l) << "  " << message
           << std::endl;
}

}  // namespace recbole::log
