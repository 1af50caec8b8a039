#include "recbole/config/config_keys.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "recbole/config/embedded_configs.h"
#include "recbole/utils/text.h"

namespace recbole::config {

InvalidValue::InvalidValue(std::string p, std::string e, YAML::Node n)
    : std::runtime_error(e), path(std::move(p)), expected(std::move(e)), node(std::move(n)) {}

// ---------------------------------------------------------------------------------------------
// Scalars
// ---------------------------------------------------------------------------------------------

namespace {

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t");
  return s.substr(b, e - b + 1);
}

// yaml-cpp tags a quoted scalar "!"; a plain one "?" (or "" when built in code).
bool is_quoted(const YAML::Node& n) { return n.Tag() == "!"; }

std::string format_number(double v) {
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  std::ostringstream os;
  os << v;
  return os.str();
}

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

// ---------------------------------------------------------------------------------------------
// Declarations: type descriptions
// ---------------------------------------------------------------------------------------------

std::string KeyDecl::type_name() const {
  switch (type) {
    case KeyType::kBool:
      return "bool";
    case KeyType::kInt:
      return "int";
    case KeyType::kFloat:
      return "float";
    case KeyType::kString:
      return "string";
    case KeyType::kIntList:
      return "list of int";
    case KeyType::kFloatList:
      return "list of float";
    case KeyType::kStringList:
      return "list of string";
    case KeyType::kMap:
      return "map";
  }
  return "?";
}

std::string KeyDecl::bounds_text() const {
  if (!choices.empty()) {
    std::string s = "one of ";
    for (size_t i = 0; i < choices.size(); ++i) s += (i ? ", " : "") + choices[i];
    return s;
  }
  if (min && max)
    return std::string("in ") + (min_exclusive ? "(" : "[") + format_number(*min) + ", " +
           format_number(*max) + "]";
  if (min) return std::string(min_exclusive ? "> " : ">= ") + format_number(*min);
  if (max) return "<= " + format_number(*max);
  return shape;
}

std::string KeyDecl::expected() const {
  std::string s;
  if (!shape.empty()) {
    s = shape;
  } else if (type == KeyType::kString && !choices.empty()) {
    s = bounds_text();
  } else {
    std::string b = bounds_text();
    s = type_name() + (b.empty() ? "" : " " + b);
  }
  return nullable ? s + " or null" : s;
}

bool KeyDecl::is_model_key() const { return category.rfind(kCategoryModelPrefix, 0) == 0; }

// ---------------------------------------------------------------------------------------------
// Metrics
// ---------------------------------------------------------------------------------------------

const std::vector<std::string>& known_metric_names() {
  static const std::vector<std::string> names = {"Recall",
                                                 "MRR",
                                                 "NDCG",
                                                 "Hit",
                                                 "Precision",
                                                 "MAP",
                                                 "GAUC",
                                                 "ItemCoverage",
                                                 "AveragePopularity",
                                                 "GiniIndex",
                                                 "ShannonEntropy",
                                                 "TailPercentage"};
  return names;
}

std::string canonical_metric_name(const std::string& name) {
  for (const auto& m : known_metric_names())
    if (to_lower(m) == to_lower(name)) return m;
  return "";
}

bool metric_uses_topk(const std::string& name) { return to_lower(name) != "gauc"; }

bool metric_bigger_is_better(const std::string& name) {
  static const std::set<std::string> smaller = {"mae", "rmse", "logloss", "averagepopularity",
                                                "giniindex"};
  return smaller.count(to_lower(name)) == 0;
}

// ---------------------------------------------------------------------------------------------
// Checks of structured values. Each returns the normalised value or throws InvalidValue.
// ---------------------------------------------------------------------------------------------

namespace {

YAML::Node null_node() { return YAML::Node(YAML::NodeType::Null); }

std::string join_keys(const std::vector<std::string>& keys) {
  std::string s;
  for (size_t i = 0; i < keys.size(); ++i) s += (i ? ", " : "") + keys[i];
  return s;
}

// Map entries as (key text, key node, value node); a non-scalar key is an error.
std::vector<std::tuple<std::string, YAML::Node, YAML::Node>> map_items(const YAML::Node& map,
                                                                       const std::string& path) {
  std::vector<std::tuple<std::string, YAML::Node, YAML::Node>> items;
  std::set<std::string> seen;
  for (auto it = map.begin(); it != map.end(); ++it) {
    if (!it->first.IsScalar()) throw InvalidValue(path, "a map with string keys", it->first);
    std::string k = it->first.Scalar();
    if (!seen.insert(k).second) throw InvalidValue(path, "each key once", it->first);
    items.emplace_back(k, it->first, it->second);
  }
  return items;
}

YAML::Node require_map(const YAML::Node& v, const std::string& path, const std::string& expected) {
  if (!v.IsMap()) throw InvalidValue(path, expected, v);
  return v;
}

double require_number(const YAML::Node& v, const std::string& path, const std::string& expected) {
  std::optional<double> d;
  if (v.IsScalar()) d = parse_float(v.Scalar());
  if (!d) throw InvalidValue(path, expected, v);
  return *d;
}

std::string require_scalar(const YAML::Node& v, const std::string& path,
                           const std::string& expected) {
  if (!v.IsScalar() || is_null_node(v)) throw InvalidValue(path, expected, v);
  return v.Scalar();
}

// An evaluation mode: full, labeled, uniN, popN (N >= 1); returned in lower case.
std::string check_mode(const YAML::Node& v, const std::string& path) {
  const std::string expected = "full, labeled, uniN or popN (N >= 1)";
  std::string m = to_lower(require_scalar(v, path, expected));
  if (m == "full" || m == "labeled") return m;
  if (m.size() > 3 && (m.rfind("uni", 0) == 0 || m.rfind("pop", 0) == 0)) {
    auto n = parse_int(m.substr(3));
    if (n && *n >= 1 && std::isdigit(static_cast<unsigned char>(m[3]))) return m;
  }
  throw InvalidValue(path, expected, v);
}

YAML::Node check_eval_args(const YAML::Node& v) {
  const std::string whole = "a map with keys split, order, group_by, mode";
  require_map(v, "", whole);
  std::map<std::string, YAML::Node> given;
  for (auto& [k, key_node, val] : map_items(v, "")) {
    if (k != "split" && k != "order" && k != "group_by" && k != "mode")
      throw InvalidValue("", "only the keys split, order, group_by, mode", key_node);
    given[k] = val;
  }
  YAML::Node out(YAML::NodeType::Map);
  if (given.count("split")) {
    const YAML::Node& s = given["split"];
    const std::string exp_split =
        "a one-key map: RS: [train, valid, test] or LS: valid_and_test|valid_only|test_only";
    if (!s.IsMap() || s.size() != 1) throw InvalidValue("split", exp_split, s);
    auto [kind, kind_node, arg] = map_items(s, "split").front();
    YAML::Node split(YAML::NodeType::Map);
    if (kind == "RS") {
      const std::string exp_rs = "a list of 3 numbers >= 0 with a positive sum";
      if (!arg.IsSequence() || arg.size() != 3) throw InvalidValue("split.RS", exp_rs, arg);
      double sum = 0;
      YAML::Node ratios(YAML::NodeType::Sequence);
      for (const auto& r : arg) {
        double d = require_number(r, "split.RS", exp_rs);
        if (!(d >= 0) || std::isinf(d)) throw InvalidValue("split.RS", exp_rs, r);
        sum += d;
        ratios.push_back(r.Scalar());
      }
      if (!(sum > 0)) throw InvalidValue("split.RS", exp_rs, arg);
      ratios.SetStyle(YAML::EmitterStyle::Flow);
      split["RS"] = ratios;
    } else if (kind == "LS") {
      const std::string exp_ls = "one of valid_and_test, valid_only, test_only";
      std::string m = to_lower(require_scalar(arg, "split.LS", exp_ls));
      if (m != "valid_and_test" && m != "valid_only" && m != "test_only")
        throw InvalidValue("split.LS", exp_ls, arg);
      split["LS"] = m;
    } else {
      throw InvalidValue("split", exp_split, kind_node);
    }
    out["split"] = split;
  }
  if (given.count("order")) {
    const YAML::Node& o = given["order"];
    std::string m = to_lower(require_scalar(o, "order", "one of RO, TO"));
    if (m != "ro" && m != "to") throw InvalidValue("order", "one of RO, TO", o);
    out["order"] = m == "ro" ? "RO" : "TO";
  }
  if (given.count("group_by")) {
    const YAML::Node& g = given["group_by"];
    if (is_null_node(g)) {
      out["group_by"] = "none";
    } else {
      std::string m = to_lower(require_scalar(g, "group_by", "one of user, none"));
      if (m != "user" && m != "none") throw InvalidValue("group_by", "one of user, none", g);
      out["group_by"] = m;
    }
  }
  if (given.count("mode")) {
    const YAML::Node& m = given["mode"];
    YAML::Node mode(YAML::NodeType::Map);
    if (m.IsMap()) {
      std::string valid, test;
      for (auto& [k, key_node, val] : map_items(m, "mode")) {
        if (k == "valid")
          valid = check_mode(val, "mode.valid");
        else if (k == "test")
          test = check_mode(val, "mode.test");
        else
          throw InvalidValue("mode", "a map with keys valid, test", key_node);
      }
      // One phase given: the other copies it (RecBole); none given: full.
      if (valid.empty()) valid = test.empty() ? "full" : test;
      if (test.empty()) test = valid;
      mode["valid"] = valid;
      mode["test"] = test;
    } else {
      std::string one = check_mode(m, "mode");
      mode["valid"] = one;
      mode["test"] = one;
    }
    out["mode"] = mode;
  }
  return out;
}

YAML::Node check_train_neg_sample_args(const YAML::Node& v) {
  const std::string whole =
      "a map with keys distribution, sample_num, alpha, dynamic, candidate_num, or null";
  if (v.IsScalar() && v.Scalar() == "None") return null_node();  // RecBole's string "None"
  require_map(v, "", whole);
  YAML::Node out(YAML::NodeType::Map);
  for (auto& [k, key_node, val] : map_items(v, "")) {
    if (k == "distribution") {
      const std::string exp = "one of uniform, popularity, none";
      if (is_null_node(val)) {
        out[k] = "none";
      } else {
        std::string d = to_lower(require_scalar(val, k, exp));
        if (d != "uniform" && d != "popularity" && d != "none") throw InvalidValue(k, exp, val);
        out[k] = d;
      }
    } else if (k == "sample_num") {
      std::optional<int64_t> n;
      if (val.IsScalar()) n = parse_int(val.Scalar());
      if (!n || *n < 1) throw InvalidValue(k, "int >= 1", val);
      out[k] = std::to_string(*n);
    } else if (k == "alpha") {
      require_number(val, k, "float");
      out[k] = val.Scalar();
    } else if (k == "dynamic") {
      std::optional<bool> b;
      if (val.IsScalar()) b = parse_bool(val.Scalar());
      if (!b) throw InvalidValue(k, "bool", val);
      out[k] = *b ? "true" : "false";
    } else if (k == "candidate_num") {
      std::optional<int64_t> n;
      if (val.IsScalar()) n = parse_int(val.Scalar());
      if (!n || *n < 0) throw InvalidValue(k, "int >= 0", val);
      out[k] = std::to_string(*n);
    } else {
      throw InvalidValue(
          "", "only the keys distribution, sample_num, alpha, dynamic, candidate_num", key_node);
    }
  }
  return out;
}

YAML::Node check_metrics(const YAML::Node& list) {
  const std::string exp = "metric names, each one of " + join_keys(known_metric_names());
  YAML::Node out(YAML::NodeType::Sequence);
  std::set<std::string> seen;
  for (const auto& m : list) {
    std::string c = canonical_metric_name(m.Scalar());
    if (c.empty()) throw InvalidValue("", exp, m);
    if (!seen.insert(c).second) throw InvalidValue("", "each metric once", m);
    out.push_back(c);
  }
  return out;
}

YAML::Node check_valid_metric(const YAML::Node& v) {
  const std::string exp = "<metric>@<k> (k >= 1) or GAUC";
  const std::string& s = v.Scalar();
  size_t at = s.find('@');
  std::string name = canonical_metric_name(at == std::string::npos ? s : s.substr(0, at));
  if (name.empty()) throw InvalidValue("", exp, v);
  if (!metric_uses_topk(name)) {
    if (at != std::string::npos) throw InvalidValue("", exp, v);
    return YAML::Node(name);
  }
  if (at == std::string::npos) throw InvalidValue("", exp, v);
  auto k = parse_int(s.substr(at + 1));
  if (!k || *k < 1 || !std::isdigit(static_cast<unsigned char>(s[at + 1]))) {
    throw InvalidValue("", exp, v);
  }
  return YAML::Node(name + "@" + std::to_string(*k));
}

// load_col / unload_col / unused_col: {suffix: [columns] | "*"}.
YAML::Node check_column_map(const YAML::Node& v) {
  const std::string exp = "a map from file suffix to a list of column names or \"*\"";
  require_map(v, "", exp);
  YAML::Node out(YAML::NodeType::Map);
  for (auto& [suffix, key_node, cols] : map_items(v, "")) {
    if (cols.IsScalar() && !is_null_node(cols) && cols.Scalar() == "*") {
      out[suffix] = "*";
      continue;
    }
    if (!cols.IsSequence()) throw InvalidValue(suffix, "a list of column names or \"*\"", cols);
    YAML::Node list(YAML::NodeType::Sequence);
    for (const auto& c : cols) list.push_back(require_scalar(c, suffix, "a column name"));
    list.SetStyle(YAML::EmitterStyle::Flow);
    out[suffix] = list;
  }
  return out;
}

// "[10,inf)", "(0,5]" and several joined by ';'. Endpoints as Python's float() reads them.
std::optional<double> parse_endpoint(const std::string& text) {
  std::string t = to_lower(trim(text));
  if (t == "inf" || t == "+inf" || t == "infinity" || t == "+infinity") return HUGE_VAL;
  if (t == "-inf" || t == "-infinity") return -HUGE_VAL;
  return parse_float(t);
}

bool valid_intervals(const std::string& text) {
  std::stringstream ss(text);
  std::string piece;
  int n = 0;
  while (std::getline(ss, piece, ';')) {
    std::string p = trim(piece);
    if (p.size() < 5) return false;
    if ((p.front() != '[' && p.front() != '(') || (p.back() != ']' && p.back() != ')'))
      return false;
    std::string inner = p.substr(1, p.size() - 2);
    size_t comma = inner.find(',');
    if (comma == std::string::npos || inner.find(',', comma + 1) != std::string::npos) return false;
    auto lo = parse_endpoint(inner.substr(0, comma));
    auto hi = parse_endpoint(inner.substr(comma + 1));
    if (!lo || !hi || std::isnan(*lo) || std::isnan(*hi) || *lo > *hi) return false;
    ++n;
  }
  return n > 0 && text.back() != ';';
}

const char* kIntervalShape = "intervals like \"[10,inf)\" or \"(0,5]\", joined by ';'";

YAML::Node check_interval(const YAML::Node& v) {
  if (!valid_intervals(v.Scalar())) throw InvalidValue("", kIntervalShape, v);
  return v;
}

// val_interval: {field: "intervals"} for float fields or {field: [values]} for token fields.
YAML::Node check_val_interval(const YAML::Node& v) {
  const std::string exp = "a map from field name to intervals (\"[1,5]\") or a list of values";
  require_map(v, "", exp);
  YAML::Node out(YAML::NodeType::Map);
  for (auto& [field, key_node, val] : map_items(v, "")) {
    if (val.IsSequence()) {
      YAML::Node list(YAML::NodeType::Sequence);
      for (const auto& x : val) list.push_back(require_scalar(x, field, "a list of values"));
      list.SetStyle(YAML::EmitterStyle::Flow);
      out[field] = list;
    } else {
      std::string s = require_scalar(val, field, kIntervalShape);
      if (!valid_intervals(s)) throw InvalidValue(field, kIntervalShape, val);
      out[field] = s;
    }
  }
  return out;
}

YAML::Node check_threshold(const YAML::Node& v) {
  const std::string exp = "a map with exactly one field: value";
  require_map(v, "", exp);
  if (v.size() != 1) throw InvalidValue("", exp, v);
  auto [field, key_node, val] = map_items(v, "").front();
  require_number(val, field, "a number");
  YAML::Node out(YAML::NodeType::Map);
  out[field] = val.Scalar();
  return out;
}

YAML::Node check_seq_len(const YAML::Node& v) {
  require_map(v, "", "a map from field name to maximum length");
  YAML::Node out(YAML::NodeType::Map);
  for (auto& [field, key_node, val] : map_items(v, "")) {
    std::optional<int64_t> n;
    if (val.IsScalar()) n = parse_int(val.Scalar());
    if (!n || *n < 1) throw InvalidValue(field, "int >= 1", val);
    out[field] = std::to_string(*n);
  }
  return out;
}

YAML::Node check_clip_grad_norm(const YAML::Node& v) {
  const std::string exp = "a map {max_norm: float > 0, norm_type: float > 0}";
  require_map(v, "", exp);
  YAML::Node out(YAML::NodeType::Map);
  bool has_max = false;
  for (auto& [k, key_node, val] : map_items(v, "")) {
    if (k != "max_norm" && k != "norm_type")
      throw InvalidValue("", "only the keys max_norm, norm_type", key_node);
    double d = require_number(val, k, "float > 0");
    if (!(d > 0)) throw InvalidValue(k, "float > 0", val);
    out[k] = val.Scalar();
    has_max |= k == "max_norm";
  }
  if (!has_max) throw InvalidValue("", exp, v);
  return out;
}

// One character; the two characters `\t` (as a shell passes "\t") are read as a tab.
YAML::Node check_separator(const YAML::Node& v) {
  std::string s = v.Scalar();
  if (s == "\\t") s = "\t";
  if (s.size() != 1) throw InvalidValue("", "one character (\"\\t\" for a tab)", v);
  return YAML::Node(s);
}

YAML::Node check_device(const YAML::Node& v) {
  std::string s = to_lower(v.Scalar());
  if (s == "auto" || s == "cpu" || s == "cuda") return YAML::Node(s);
  if (s.rfind("cuda:", 0) == 0 && s.size() > 5 &&
      std::all_of(s.begin() + 5, s.end(), [](char c) { return std::isdigit(c); }))
    return YAML::Node(s);
  throw InvalidValue("", "auto, cpu, cuda or cuda:N", v);
}

YAML::Node check_sha256(const YAML::Node& v) {
  std::string s = to_lower(v.Scalar());
  if (s.size() != 64 || !std::all_of(s.begin(), s.end(), [](char c) { return std::isxdigit(c); }))
    throw InvalidValue("", "64 hexadecimal digits", v);
  return YAML::Node(s);
}

YAML::Node check_wandb_off(const YAML::Node& v) {
  if (v.Scalar() == "true") throw InvalidValue("", "false (W&B logging is not supported)", v);
  return v;
}

// Keys RecBole has for features recbole-cpp does not implement: accepted at their "off" value,
// so that RecBole's YAML files load, and an error otherwise (never silently ignored).
std::function<YAML::Node(const YAML::Node&)> off_only(std::string expected) {
  return [expected](const YAML::Node& v) -> YAML::Node {
    const bool off = v.IsSequence() ? v.size() == 0 : v.Scalar() == "false";
    if (!off) throw InvalidValue("", expected, v);
    return v;
  };
}

YAML::Node check_no_path(const YAML::Node& v) {
  throw InvalidValue("", "no path (saving datasets and dataloaders is not supported): ~ or null", v);
}

YAML::Node check_utf8(const YAML::Node& v) {
  const std::string e = to_lower(v.Scalar());
  if (e != "utf-8" && e != "utf8" && e != "ascii")
    throw InvalidValue("", "utf-8 (atomic files are read as UTF-8)", v);
  return v;
}

YAML::Node check_url(const YAML::Node& v) {
  const std::string u = to_lower(v.Scalar());
  for (const char* scheme : {"http://", "https://", "file:///"})
    if (u.rfind(scheme, 0) == 0 && u.size() > std::string(scheme).size()) return v;
  throw InvalidValue("", "a URL: http://, https:// or file:///absolute/path", v);
}

YAML::Node check_nonempty(const YAML::Node& v) {
  if (v.size() == 0) throw InvalidValue("", "a non-empty list of int >= 1", v);
  return v;
}

// ---------------------------------------------------------------------------------------------
// The declarations
// ---------------------------------------------------------------------------------------------

// Fluent helper so that each declaration reads as one line.
struct Key {
  KeyDecl d;
  Key(const char* name, KeyType type, const char* category) {
    d.name = name;
    d.type = type;
    d.category = category;
  }
  Key& null() {
    d.nullable = true;
    return *this;
  }
  Key& min(double v) {
    d.min = v;
    return *this;
  }
  Key& above(double v) {
    d.min = v;
    d.min_exclusive = true;
    return *this;
  }
  Key& max(double v) {
    d.max = v;
    return *this;
  }
  Key& choices(std::vector<std::string> c) {
    d.choices = std::move(c);
    return *this;
  }
  Key& shape(std::string s) {
    d.shape = std::move(s);
    return *this;
  }
  Key& check(std::function<YAML::Node(const YAML::Node&)> f) {
    d.check = std::move(f);
    return *this;
  }
  Key& derived() {
    d.derived = true;
    return *this;
  }
  Key& help(const char* h) {
    d.help = h;
    return *this;
  }
  operator KeyDecl() const { return d; }  // NOLINT: used only in the list below
};

constexpr KeyType kBool = KeyType::kBool;
constexpr KeyType kInt = KeyType::kInt;
constexpr KeyType kFloat = KeyType::kFloat;
constexpr KeyType kStr = KeyType::kString;
constexpr KeyType kIntList = KeyType::kIntList;
constexpr KeyType kStrList = KeyType::kStringList;
constexpr KeyType kMap = KeyType::kMap;
const char* const G = kCategoryGeneral;
const char* const T = kCategoryTraining;
const char* const E = kCategoryEvaluation;
const char* const D = kCategoryDataset;
const char* const X = kCategoryDistributed;

std::vector<KeyDecl> make_declarations() {
  return {
      // ---- General ----
      Key("model", kStr, G)
          .null()
          .help("Model name (BPR, LightGCN, ...); usually given with --model"),
      Key("dataset", kStr, G)
          .null()
          .help("Dataset name; its files are <data_path>/<dataset>/<dataset>.<suffix>"),
      Key("gpu_id", kStr, G)
          .help("CUDA_VISIBLE_DEVICES value, kept for RecBole compatibility; `device` selects the "
                "device"),
      Key("use_gpu", kBool, G)
          .help("Kept for RecBole compatibility; does not select the device (see `device`)"),
      Key("device", kStr, G)
          .shape("auto, cpu, cuda or cuda:N")
          .check(check_device)
          .help("Where tensors live: auto = CUDA when available, else CPU"),
      Key("strict_device", kBool, G)
          .help("A CUDA device asked for but absent is an error instead of a warning and a CPU "
                "fallback"),
      Key("num_threads", kInt, G)
          .min(0)
          .help("CPU threads for recbole's own kernels (fused BPR training, CPU evaluation, "
                "model fits) and for BLAS; 0 = the machine's cores divided among the processes "
                "started on it"),
      Key("torch_num_threads", kInt, G)
          .min(0)
          .help("libtorch intra-op threads (generic autograd path); 0 keeps libtorch's default. "
                "1 by default: more made small ops far slower on small VMs"),
      Key("worker", kInt, G)
          .min(0)
          .help("Data-loading worker count (RecBole's DataLoader num_workers)"),
      Key("seed", kInt, G)
          .min(0)
          .help("Random seed for splitting, sampling and model initialisation"),
      Key("state", kStr, G)
          .choices({"DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"})
          .help("Log level"),
      Key("reproducibility", kBool, G).help("Prefer deterministic algorithms over faster ones"),
      Key("data_path", kStr, G).help("Folder that holds one folder per dataset"),
      Key("checkpoint_dir", kStr, G)
          .help("Folder for model checkpoints (and saved datasets/dataloaders)"),
      Key("log_dir", kStr, G).help("Folder for log files (<log_dir>/<model>/...)"),
      Key("result_file", kStr, G)
          .null()
          .help("When set, the final results are written there as JSON"),
      Key("show_progress", kBool, G).help("Show progress bars for training and evaluation"),
      Key("save_dataset", kBool, G)
          .shape("false")
          .check(off_only("false (saving the filtered dataset is not supported)"))
          .help("RecBole: save the filtered dataset; not supported, so it must stay false"),
      Key("dataset_save_path", kStr, G)
          .null()
          .check(check_no_path)
          .help("RecBole: path of a saved dataset; not supported, so it must stay null"),
      Key("save_dataloaders", kBool, G)
          .shape("false")
          .check(off_only("false (saving the split dataloaders is not supported)"))
          .help("RecBole: save the split dataloaders; not supported, so it must stay false"),
      Key("dataloaders_save_path", kStr, G)
          .null()
          .check(check_no_path)
          .help("RecBole: path of saved dataloaders; not supported, so it must stay null"),
      Key("log_wandb", kBool, G)
          .shape("false")
          .check(check_wandb_off)
          .help("Weights & Biases logging; not supported, so it must stay false"),
      Key("wandb_project", kStr, G)
          .help("Weights & Biases project (accepted for compatibility, unused)"),

      // ---- Training ----
      Key("epochs", kInt, T).min(0).help("Maximum number of training epochs"),
      Key("train_batch_size", kInt, T)
          .min(1)
          .help("Rows per training batch (including sampled negatives)"),
      Key("learner", kStr, T)
          .choices({"adam", "adamw", "sgd", "adagrad", "rmsprop", "sparse_adam"})
          .help("Optimizer. sparse_adam: lazy Adam (torch's SparseAdam: only the rows a batch "
                "uses are updated; weight_decay ignored) on the fused BPR path, Adam without "
                "weight decay on the generic path"),
      Key("learning_rate", kFloat, T).above(0).help("Optimizer learning rate"),
      Key("train_neg_sample_args", kMap, T)
          .null()
          .shape("{distribution: uniform|popularity|none, sample_num: int >= 1, alpha: float, "
                 "dynamic: bool, candidate_num: int >= 0}")
          .check(check_train_neg_sample_args)
          .help("Negative sampling for training; keys left out take their default; null = no "
                "sampling"),
      Key("eval_step", kInt, T).help("Epochs between two validations; <= 0 = never validate"),
      Key("stopping_step", kInt, T)
          .min(0)
          .help("Early stopping after this many validations without improvement (+1)"),
      Key("clip_grad_norm", kMap, T)
          .null()
          .shape("{max_norm: float > 0, norm_type: float > 0}")
          .check(check_clip_grad_norm)
          .help("Clip the gradient norm before each optimizer step"),
      Key("weight_decay", kFloat, T).min(0).help("L2 penalty of the optimizer"),
      Key("loss_decimal_place", kInt, T).min(0).help("Decimals of the logged training loss"),
      Key("require_pow", kBool, T).help("EmbLoss uses squared norms instead of plain norms"),
      Key("enable_amp", kBool, T).help("Mixed precision (autocast) in training"),
      Key("enable_scaler", kBool, T).help("Gradient scaling for mixed precision (CUDA only)"),
      Key("shuffle", kBool, T).help("Shuffle the training interactions every epoch"),
      Key("fast_bpr", kBool, T)
          .help("Use the fused BPR training path (CPU, one process, learner adam, "
                "sparse_adam or sgd, no clip_grad_norm) when the configuration allows it"),

      // ---- Evaluation ----
      Key("eval_args", kMap, E)
          .shape("{split: {RS: [r,r,r]} | {LS: valid_and_test|valid_only|test_only}, order: RO|TO, "
                 "group_by: user|none, mode: full|labeled|uniN|popN or {valid: m, test: m}}")
          .check(check_eval_args)
          .help("Splitting, ordering, grouping and evaluation mode; keys left out take their "
                "default"),
      Key("repeatable", kBool, E)
          .shape("false")
          .check(off_only("false (repeatable recommendation is not supported)"))
          .help("RecBole: evaluate a repeatable-recommendation scenario (sequential models); "
                "not supported, so it must stay false"),
      Key("metrics", kStrList, E)
          .shape("list of metric names (" + join_keys(known_metric_names()) + ")")
          .check(check_metrics)
          .help("Metrics to compute (case-insensitive); a single name is a one-element list"),
      Key("topk", kIntList, E)
          .min(1)
          .check(check_nonempty)
          .help("Cut-offs of the top-k metrics; a single int is a one-element list"),
      Key("valid_metric", kStr, E)
          .shape("<metric>@<k> or GAUC")
          .check(check_valid_metric)
          .help("Metric used for early stopping and model selection"),
      Key("valid_metric_bigger", kBool, E)
          .derived()
          .help("Derived from valid_metric: false for metrics where smaller is better"),
      Key("eval_batch_size", kInt, E)
          .min(1)
          .help(
              "Evaluation batch size (users per batch = eval_batch_size // n_items in full mode)"),
      Key("metric_decimal_place", kInt, E).min(0).help("Decimals metrics are rounded to"),
      Key("tail_ratio", kFloat, E)
          .above(0)
          .help("TailPercentage: share of least popular items (< 1) or a count threshold (>= 1)"),
      Key("eval_memory_budget_mb", kInt, E)
          .min(1)
          .help("Upper bound in MiB of one block of scores during evaluation"),

      // ---- Dataset ----
      Key("field_separator", kStr, D)
          .shape("one character")
          .check(check_separator)
          .help("Column separator of the atomic files"),
      Key("seq_separator", kStr, D)
          .shape("one character")
          .check(check_separator)
          .help("Separator inside token_seq / float_seq cells"),
      Key("USER_ID_FIELD", kStr, D).help("Name of the user id field"),
      Key("ITEM_ID_FIELD", kStr, D).help("Name of the item id field"),
      Key("RATING_FIELD", kStr, D).null().help("Name of the rating field"),
      Key("TIME_FIELD", kStr, D).null().help("Name of the timestamp field (needed by order: TO)"),
      Key("seq_len", kMap, D)
          .null()
          .shape("a map from field name to maximum length")
          .check(check_seq_len)
          .help("Truncate sequence fields to these lengths"),
      Key("LABEL_FIELD", kStr, D).null().help("Name of the label field created by `threshold`"),
      Key("threshold", kMap, D)
          .null()
          .shape("a one-key map {field: value}")
          .check(check_threshold)
          .help("Label = 1 when field >= value, else 0 (the field is then dropped)"),
      Key("NEG_PREFIX", kStr, D).help("Prefix of the negative-sample columns (neg_item_id)"),
      Key("load_col", kMap, D)
          .null()
          .shape("a map from suffix to a list of columns or \"*\"")
          .check(check_column_map)
          .help("Columns to load per file suffix; a suffix left out is not loaded; null = "
                "everything"),
      Key("unload_col", kMap, D)
          .null()
          .shape("a map from suffix to a list of columns or \"*\"")
          .check(check_column_map)
          .help("Columns not to load per file suffix"),
      Key("unused_col", kMap, D)
          .null()
          .shape("a map from suffix to a list of columns or \"*\"")
          .check(check_column_map)
          .help("Columns loaded for preprocessing but dropped before splitting"),
      Key("additional_feat_suffix", kStrList, D)
          .null()
          .check(off_only("[] (extra feature files are not supported)"))
          .help("RecBole: extra feature files <dataset>.<suffix>; not supported, so it must "
                "stay null"),
      Key("rm_dup_inter", kStr, D)
          .null()
          .choices({"first", "last"})
          .help("Remove duplicate user-item interactions, keeping the first or the last"),
      Key("val_interval", kMap, D)
          .null()
          .shape("a map from field to intervals or a list of values")
          .check(check_val_interval)
          .help("Keep rows whose field value lies in the intervals (float) or the list (token)"),
      Key("filter_inter_by_user_or_item", kBool, D)
          .help("Drop interactions whose user / item is missing from a loaded .user / .item file"),
      Key("user_inter_num_interval", kStr, D)
          .null()
          .shape(kIntervalShape)
          .check(check_interval)
          .help(
              "Keep users whose interaction count lies in the interval (k-core); null = no filter"),
      Key("item_inter_num_interval", kStr, D)
          .null()
          .shape(kIntervalShape)
          .check(check_interval)
          .help(
              "Keep items whose interaction count lies in the interval (k-core); null = no filter"),
      Key("normalize_field", kStrList, D).null().help("Float fields to min-max normalise"),
      Key("normalize_all", kBool, D).null().help("Min-max normalise every float field"),
      Key("benchmark_filename", kStrList, D)
          .null()
          .help("Suffixes of pre-split files <dataset>.<suffix>.inter used as train, valid, test"),
      Key("encoding", kStr, D)
          .null()
          .check(check_utf8)
          .help("Text encoding of the atomic files: null or utf-8 (the only one supported)"),
      Key("download_url", kStr, D)
          .null()
          .shape("a URL: http://, https:// or file:///absolute/path")
          .check(check_url)
          .help("URL of the dataset archive, instead of the one in datasets/registry.yaml"),
      Key("download_sha256", kStr, D)
          .null()
          .shape("64 hexadecimal digits")
          .check(check_sha256)
          .help("Expected SHA-256 of the downloaded archive"),
      Key("download_timeout", kFloat, D)
          .above(0)
          .max(86400)  // finite: the HTTP client's timeouts are integers of milliseconds
          .help("Seconds a download may stall before the attempt fails"),
      Key("download_retries", kInt, D).min(0).help("Further attempts after a failed download"),

      // ---- Distributed ----
      Key("nproc", kInt, X).min(1).help("Processes to start on this node"),
      Key("world_size", kInt, X).min(-1).help("Processes over all nodes; -1 (or 0) = nproc"),
      Key("ip", kStr, X).help("Address of the rank-0 node"),
      Key("port", kInt, X).min(1).max(65535).help("Port of the rank-0 node"),
      Key("offset", kInt, X).min(0).help("Global rank of this node's first process"),
      Key("local_rank", kInt, X)
          .null()
          .min(0)
          .help("Rank of this process on its node; set by the launcher, not by hand"),
      Key("dist_backend", kStr, X)
          .choices({"auto", "gloo", "nccl"})
          .help("Collective backend: auto = nccl on CUDA, gloo on CPU"),
      Key("dist_timeout", kFloat, X)
          .above(0)
          .max(604800)  // a week; finite, since c10d and Gloo take integer milliseconds
          .help("Seconds a rendezvous or collective may wait before failing"),
      Key("socket_ifname", kStr, X)
          .null()
          .help("Network interface for Gloo (as GLOO_SOCKET_IFNAME); ~ = the route to ip"),
      Key("gradient_exchange", kStr, X)
          .choices({"auto", "dense", "sparse"})
          .help("Gradient averaging: dense all-reduce, sparse = only non-zero embedding rows, "
                "auto = sparse when it sends under half the bytes"),

      // ---- Models ----
      Key("embedding_size", kInt, "Model: BPR, LightGCN")
          .min(1)
          .help("Dimension of user and item embeddings"),
      Key("n_layers", kInt, "Model: LightGCN").min(0).help("Graph convolution layers"),
      Key("reg_weight", kFloat, "Model: EASE, LightGCN")
          .min(0)
          .help("Regularisation weight (EASE: L2 on the diagonal; LightGCN: embedding L2 loss)"),
      Key("k", kInt, "Model: ItemKNN, ADMMSLIM")
          .min(1)
          .help("ItemKNN: neighbours kept; ADMMSLIM: ADMM iterations"),
      Key("shrink", kFloat, "Model: ItemKNN")
          .min(0)
          .help("Added to the denominator of the cosine similarity"),
      Key("knn_method", kStr, "Model: ItemKNN")
          .choices({"item", "user"})
          .help("Neighbourhood over items or over users"),
      Key("lambda1", kFloat, "Model: ADMMSLIM").min(0).help("L1 regularisation weight"),
      Key("lambda2", kFloat, "Model: ADMMSLIM").min(0).help("L2 regularisation weight"),
      Key("alpha", kFloat, "Model: ADMMSLIM, SLIMElastic")
          .min(0)
          .help("ADMMSLIM: exponent of item popularity in the L2 weights; SLIMElastic: overall "
                "regularisation strength"),
      Key("rho", kFloat, "Model: ADMMSLIM").above(0).help("ADMM penalty parameter"),
      Key("positive_only", kBool, "Model: ADMMSLIM, SLIMElastic")
          .help("Clip negative item weights to zero"),
      Key("center_columns", kBool, "Model: ADMMSLIM")
          .help("Centre the columns of the interaction matrix"),
      Key("l1_ratio", kFloat, "Model: SLIMElastic")
          .min(0)
          .max(1)
          .help("Share of L1 in the elastic-net penalty"),
      Key("hide_item", kBool, "Model: SLIMElastic")
          .help("Exclude the target item from its own regression"),
      Key("max_iter", kInt, "Model: SLIMElastic").min(1).help("Coordinate-descent sweeps per item"),
      Key("tol", kFloat, "Model: SLIMElastic")
          .above(0)
          .help("Coordinate-descent convergence tolerance"),
  };
}

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1])});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

// Checks one scalar against a scalar type and the key's bounds/choices; returns it normalised.
YAML::Node check_scalar(const KeyDecl& k, KeyType type, const YAML::Node& v,
                        const std::string& expected) {
  if (!v.IsScalar() || is_null_node(v)) throw InvalidValue("", expected, v);
  const std::string& s = v.Scalar();
  auto in_bounds = [&](double d) {
    if (k.min && (k.min_exclusive ? !(d > *k.min) : !(d >= *k.min))) return false;
    if (k.max && !(d <= *k.max)) return false;
    return true;
  };
  switch (type) {
    case KeyType::kBool: {
      auto b = parse_bool(s);
      if (!b) throw InvalidValue("", expected, v);
      return YAML::Node(*b ? "true" : "false");
    }
    case KeyType::kInt: {
      auto i = parse_int(s);
      if (!i || !in_bounds(static_cast<double>(*i))) throw InvalidValue("", expected, v);
      return YAML::Node(std::to_string(*i));
    }
    case KeyType::kFloat: {
      auto d = parse_float(s);
      if (!d || std::isnan(*d) || !in_bounds(*d)) throw InvalidValue("", expected, v);
      return v;
    }
    default: {                          // string: any scalar, as its text
      if (k.choices.empty()) return v;  // kept as is, so its line stays known
      for (const auto& c : k.choices)
        if (to_lower(c) == to_lower(s)) return YAML::Node(c);
      throw InvalidValue("", expected, v);
    }
  }
}

}  // namespace

const std::vector<KeyDecl>& declared_keys() {
  static const std::vector<KeyDecl> keys = make_declarations();
  return keys;
}

const KeyDecl* find_key(const std::string& name) {
  static const std::map<std::string, const KeyDecl*> index = [] {
    std::map<std::string, const KeyDecl*> m;
    for (const auto& k : declared_keys()) m.emplace(k.name, &k);
    return m;
  }();
  auto it = index.find(name);
  return it == index.end() ? nullptr : it->second;
}

std::string nearest_key(const std::string& name) {
  std::string best;
  size_t best_d = std::string::npos;
  for (const auto& k : declared_keys()) {
    size_t d = edit_distance(to_lower(name), to_lower(k.name));
    if (d < best_d) {
      best_d = d;
      best = k.name;
    }
  }
  size_t limit = std::max<size_t>(2, name.size() / 3);
  return best_d <= limit ? best : "";
}

YAML::Node validate_value(const KeyDecl& k, const YAML::Node& v) {
  if (is_null_node(v)) {
    if (k.nullable) return null_node();
    throw InvalidValue("", k.expected(), v);
  }
  YAML::Node out;
  switch (k.type) {
    case KeyType::kBool:
    case KeyType::kInt:
    case KeyType::kFloat:
    case KeyType::kString:
      out = check_scalar(k, k.type, v, k.expected());
      break;
    case KeyType::kIntList:
    case KeyType::kFloatList:
    case KeyType::kStringList: {
      KeyType elem = k.type == KeyType::kIntList     ? KeyType::kInt
                     : k.type == KeyType::kFloatList ? KeyType::kFloat
                                                     : KeyType::kString;
      std::string expected = k.expected();
      out = YAML::Node(YAML::NodeType::Sequence);
      if (v.IsSequence()) {
        for (const auto& e : v) out.push_back(check_scalar(k, elem, e, expected));
      } else if (v.IsScalar()) {
        out.push_back(check_scalar(k, elem, v, expected));  // a single value is a list of one
      } else {
        throw InvalidValue("", expected, v);
      }
      out.SetStyle(YAML::EmitterStyle::Flow);
      break;
    }
    case KeyType::kMap:
      // Maps always have a check of their structure; without one any map is accepted.
      if (k.check) return k.check(v);
      if (!v.IsMap()) throw InvalidValue("", k.expected(), v);
      return YAML::Clone(v);
  }
  return k.check ? k.check(out) : out;
}

// ---------------------------------------------------------------------------------------------
// Reference documentation
// ---------------------------------------------------------------------------------------------

namespace {

struct DefaultSite {
  std::string file;  // e.g. "configs/model/BPR.yaml"
  YAML::Node value;
};

// Where each key gets a default among the shipped configs/*.yaml files (overall first, then
// dataset/default, then other dataset files, then model files).
std::map<std::string, std::vector<DefaultSite>> default_sites() {
  std::vector<std::string> files;
  for (const auto& f : embedded_files()) {
    std::string p = f.path;
    if (p.rfind("configs/", 0) == 0) files.push_back(p);
  }
  auto rank = [](const std::string& p) {
    if (p == "configs/overall.yaml") return 0;
    if (p == "configs/dataset/default.yaml") return 1;
    if (p.rfind("configs/dataset/", 0) == 0) return 2;
    return 3;
  };
  std::stable_sort(files.begin(), files.end(), [&](const std::string& a, const std::string& b) {
    return rank(a) != rank(b) ? rank(a) < rank(b) : a < b;
  });
  std::map<std::string, std::vector<DefaultSite>> sites;
  for (const auto& p : files) {
    YAML::Node doc = YAML::Load(*embedded_file(p));
    if (!doc.IsMap()) continue;
    for (auto it = doc.begin(); it != doc.end(); ++it)
      sites[it->first.Scalar()].push_back({p, it->second});
  }
  return sites;
}

std::string short_file(const std::string& p) {
  return p.rfind("configs/", 0) == 0 ? p.substr(8) : p;
}

std::string md_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '|')
      out += "\\|";
    else if (c == '<')
      out += "&lt;";  // not an HTML tag
    else
      out += c;
  }
  return out;
}

std::string default_summary(const KeyDecl& k,
                            const std::map<std::string, std::vector<DefaultSite>>& sites,
                            bool markdown) {
  if (k.derived) return "derived";
  auto it = sites.find(k.name);
  if (it == sites.end()) return "none";
  std::string s;
  for (const auto& site : it->second) {
    if (!s.empty()) s += "; ";
    std::string v = node_text(site.value);
    s += markdown ? "`" + md_escape(v) + "` (" + short_file(site.file) + ")"
                  : v + " (" + short_file(site.file) + ")";
  }
  return s;
}

// Sections of the docs and the help: the five plain categories, then every model key under
// "Model".
const std::vector<std::string>& section_order() {
  static const std::vector<std::string> sections = {kCategoryGeneral,     kCategoryTraining,
                                                    kCategoryEvaluation,  kCategoryDataset,
                                                    kCategoryDistributed, "Model"};
  return sections;
}

bool in_section(const KeyDecl& k, const std::string& section) {
  return section == "Model" ? k.is_model_key() : k.category == section;
}

// "BPR, LightGCN" for a model key, "" otherwise.
std::string models_of(const KeyDecl& k) {
  return k.is_model_key() ? k.category.substr(std::string(kCategoryModelPrefix).size()) : "";
}

}  // namespace

std::string keys_reference_markdown() {
  auto sites = default_sites();
  std::ostringstream os;
  os << "# Configuration keys\n\n"
     << "Generated by `tools/gen_config_docs` from the declarations in "
        "`recbole/config/config_keys.cpp` and the defaults in `configs/`; do not edit by hand.\n\n"
     << "Sources, lowest to highest precedence: `configs/overall.yaml` < "
        "`configs/model/<Model>.yaml` < `configs/dataset/default.yaml` < "
        "`configs/dataset/<dataset>.yaml` < user files (`--config_files=a.yaml,b.yaml`, in order) "
        "< API overrides < command line (`--key=value`). Values are YAML (`--topk=[5,10]`, "
        "`--learning_rate=1e-3`). Keys are merged at the top level; `eval_args` and "
        "`train_neg_sample_args` given in part are completed key by key from "
        "`configs/overall.yaml`.\n";
  for (const auto& section : section_order()) {
    os << "\n## " << section << "\n\n";
    if (section == "Model")
      os << "Model keys have no global default: each model's file under `configs/model/` sets "
            "those it uses.\n\n";
    os << "| Key | Type | Default (file) | Allowed values | Description |\n"
       << "|---|---|---|---|---|\n";
    for (const auto& k : declared_keys()) {
      if (!in_section(k, section)) continue;
      std::string help = k.is_model_key() ? k.help + " (models: " + models_of(k) + ")" : k.help;
      os << "| `" << k.name << "` | " << k.type_name() << (k.nullable ? ", nullable" : "") << " | "
         << default_summary(k, sites, true) << " | " << md_escape(k.bounds_text()) << " | "
         << md_escape(help) << " |\n";
    }
  }
  return os.str();
}

std::string keys_help_text() {
  auto sites = default_sites();
  std::ostringstream os;
  os << "Configuration keys: set them in YAML files (--config_files=a.yaml,b.yaml) or as "
        "--key=value (values are YAML).\n";
  for (const auto& section : section_order()) {
    os << "\n" << section << ":\n";
    for (const auto& k : declared_keys()) {
      if (!in_section(k, section)) continue;
      std::string help = k.is_model_key() ? k.help + " (models: " + models_of(k) + ")" : k.help;
      os << "  --" << k.name << "=<" << k.expected() << ">\n      " << help
         << " [default: " << default_summary(k, sites, false) << "]\n";
    }
  }
  return os.str();
}

}  // namespace recbole::config
