#include "recbole/data/interval.h"

#include <cerrno>
#include <cstdlib>

#include "recbole/utils/error.h"

namespace recbole::data {
namespace {

std::string trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  const size_t e = s.find_last_not_of(" \t");
  return s.substr(b, e - b + 1);
}

bool parse_endpoint(const std::string& text, double& out) {
  const std::string t = trim(text);
  if (t.empty()) return false;
  char* end = nullptr;
  errno = 0;
  out = std::strtod(t.c_str(), &end);
  return end == t.c_str() + t.size();
}

}  // namespace

IntervalSet parse_intervals(const std::string& text, const std::string& key) {
  IntervalSet set;
  size_t start = 0;
  while (start <= text.size()) {
    size_t semi = text.find(';', start);
    if (semi == std::string::npos) semi = text.size();
    const std::string piece = trim(text.substr(start, semi - start));
    auto fail = [&](const std::string& why) {
      return ConfigError(key + ": cannot parse interval \"" + piece + "\" in \"" + text +
                         "\": " + why + " (expected e.g. \"[10,inf)\" or \"(-inf,4);(4,inf)\")");
    };
    if (piece.size() < 5) throw fail("too short");
    Interval iv;
    if (piece.front() == '[') {
      iv.left_closed = true;
    } else if (piece.front() == '(') {
      iv.left_closed = false;
    } else {
      throw fail("must start with '[' or '('");
    }
    if (piece.back() == ']') {
      iv.right_closed = true;
    } else if (piece.back() == ')') {
      iv.right_closed = false;
    } else {
      throw fail("must end with ']' or ')'");
    }
    const std::string inner = piece.substr(1, piece.size() - 2);
    const size_t comma = inner.find(',');
    if (comma == std::string::npos || inner.find(',', comma + 1) != std::string::npos) {
      throw fail("expected two endpoints separated by one comma");
    }
    if (!parse_endpoint(inner.substr(0, comma), iv.left) ||
        !parse_endpoint(inner.substr(comma + 1), iv.right)) {
      throw fail("an endpoint is not a number");
    }
    set.intervals.push_back(iv);
    start = semi + 1;
  }
  return set;
}

}  // namespace recbole::data
