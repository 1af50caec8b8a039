#include "recbole/config/yaml_scalar.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <functional>
#include <regex>

#include "recbole/utils/text.h"

namespace recbole::config {

namespace {

// yaml-cpp tags a quoted scalar "!"; a plain one "?" (or "" when built in code).
bool is_quoted(const YAML::Node& n) { return n.Tag() == "!"; }

}  // namespace

bool is_null_node(const YAML::Node& node) {
  if (!node.IsDefined() || node.IsNull()) return true;
  return node.IsScalar() && !is_quoted(node) && node.Scalar() == "None";
}

std::optional<bool> parse_bool(const std::string& text) {
  std::string t = to_lower(text);
  if (t == "true") return true;
  if (t == "false") return false;
  return std::nullopt;
}

std::optional<int64_t> parse_int(const std::string& text) {
  static const std::regex kInt("[-+]?[0-9]+");
  if (!std::regex_match(text, kInt)) return std::nullopt;
  const char* b = text.data();
  const char* e = b + text.size();
  if (*b == '+') ++b;
  int64_t v = 0;
  auto r = std::from_chars(b, e, v);
  if (r.ec != std::errc() || r.ptr != e) return std::nullopt;  // out of range
  return v;
}

std::optional<double> parse_float(const std::string& text) {
  static const std::regex kFloat("[-+]?([0-9]+(\\.[0-9]*)?|\\.[0-9]+)([eE][-+]?[0-9]+)?");
  std::string t = to_lower(text);
  if (t == ".inf" || t == "+.inf") return HUGE_VAL;
  if (t == "-.inf") return -HUGE_VAL;
  if (t == ".nan") return std::nan("");
  if (!std::regex_match(text, kFloat)) return std::nullopt;
  const char* b = text.data();
  const char* e = b + text.size();
  if (*b == '+') ++b;
  double v = 0;
  auto r = std::from_chars(b, e, v);
  if (r.ec != std::errc() || r.ptr != e) return std::nullopt;
  return v;
}

std::string node_text(const YAML::Node& node) {
  if (is_null_node(node)) return "~";
  if (node.IsScalar()) {
    const std::string& s = node.Scalar();
    bool plain = !s.empty() && s.front() != ' ' && s.back() != ' ' &&
                 std::none_of(s.begin(), s.end(),
                              [](char c) { return static_cast<unsigned char>(c) < 0x20; });
    if (plain) return s;
  }
  // Parsed nodes keep their block style, which outranks the emitter's; force flow everywhere.
  std::function<void(YAML::Node)> flow = [&](YAML::Node n) {
    if (n.IsSequence() || n.IsMap()) n.SetStyle(YAML::EmitterStyle::Flow);
    if (n.IsSequence())
      for (auto e : n) flow(e);
    if (n.IsMap())
      for (auto e : n) flow(e.second);
  };
  YAML::Node copy = YAML::Clone(node);
  flow(copy);
  YAML::Emitter em;
  em << YAML::Flow << copy;
  return em.c_str();
}

}  // namespace recbole::config
