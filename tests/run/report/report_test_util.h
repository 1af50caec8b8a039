#pragma once
// Helpers of the report tests: fixtures, and counting elements in SVG / HTML text.
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace recbole::report::test {

inline nlohmann::json fixture(const std::string& name) {
  std::ifstream in(std::string(RECBOLE_SOURCE_DIR) + "/tests/run/report/fixtures/" + name);
  if (!in) throw std::runtime_error("missing fixture " + name);
  return nlohmann::json::parse(in);
}

// Occurrences of `needle` in `text`.
inline size_t count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t p = text.find(needle); p != std::string::npos; p = text.find(needle, p + 1)) ++n;
  return n;
}

// The number of x,y pairs in the points attribute of each <polyline class="series">.
inline std::vector<size_t> polyline_sizes(const std::string& svg) {
  std::vector<size_t> sizes;
  const std::regex polyline(R"re(<polyline class="series"[^>]*points="([^"]*)")re");
  for (std::sregex_iterator it(svg.begin(), svg.end(), polyline), end; it != end; ++it) {
    const std::string points = (*it)[1];
    std::istringstream in(points);
    std::string pair;
    size_t n = 0;
    while (in >> pair) n += pair.find(',') != std::string::npos;
    sizes.push_back(n);
  }
  return sizes;
}

}  // namespace recbole::report::test
