#include "recbole/config/value_checks.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include "recbole/config/eval_mode.h"
#include "recbole/config/metric_registry.h"
#include "recbole/config/yaml_scalar.h"
#include "recbole/utils/text.h"

namespace recbole::config {

namespace {

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t");
  return s.substr(b, e - b + 1);
}

YAML::Node null_node() { return YAML::Node(YAML::NodeType::Null); }

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
  if (!EvalMode::parse(m)) throw InvalidValue(path, expected, v);
  return m;
}

}  // namespace

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
      // 0 only beside distribution none: the canonical form of "no sampling" that a run's
      // config snapshot holds (a checkpoint's config is read back through this check).
      std::optional<int64_t> n;
      if (val.IsScalar()) n = parse_int(val.Scalar());
      const YAML::Node d = v["distribution"];
      const bool none = d && (is_null_node(d) || (d.IsScalar() && to_lower(d.Scalar()) == "none"));
      if (!n || *n < (none ? 0 : 1)) throw InvalidValue(k, "int >= 1", val);
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
  const std::string exp =
      "metric names, each one of " + evaluator::join_names(evaluator::ranking_metric_names());
  YAML::Node out(YAML::NodeType::Sequence);
  std::set<std::string> seen;
  const evaluator::MetricInfo* first = nullptr;
  for (const auto& m : list) {
    const evaluator::MetricInfo* row = evaluator::find_metric(m.Scalar());
    if (row == nullptr) throw InvalidValue("", exp, m);
    if (!seen.insert(row->name).second) throw InvalidValue("", "each metric once", m);
    // A split is evaluated either by ranking or by labelled rows, never both (RecBole). GAUC
    // goes with either: from ranks in the ranking modes, from each user's labelled rows in the
    // labeled mode (where RecBole fails).
    if (row->kind != evaluator::MetricKind::kRank) {
      if (first != nullptr && first->is_ranking() != row->is_ranking()) {
        throw InvalidValue("",
                           "ranking metrics or value metrics (" +
                               evaluator::join_names(evaluator::value_metric_names()) +
                               ", with GAUC beside either), not both",
                           m);
      }
      if (first == nullptr) first = row;
    }
    out.push_back(row->name);
  }
  return out;
}

YAML::Node check_valid_metric(const YAML::Node& v) {
  const std::string exp = "<metric>@<k> (k >= 1) or GAUC";
  const std::string& s = v.Scalar();
  size_t at = s.find('@');
  const evaluator::MetricInfo* row =
      evaluator::find_metric(at == std::string::npos ? s : s.substr(0, at));
  if (row == nullptr) throw InvalidValue("", exp, v);
  const std::string name = row->name;
  if (!row->uses_topk()) {
    if (at != std::string::npos) {
      throw InvalidValue("", row->is_ranking() ? exp : name + " without @k (a value metric)", v);
    }
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

namespace {

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

}  // namespace

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

YAML::Node check_preload_weight(const YAML::Node& v) {
  const std::string exp = "a map {id field: value field}, e.g. {item_id: item_vec}";
  require_map(v, "", exp);
  YAML::Node out(YAML::NodeType::Map);
  for (auto& [id, key_node, val] : map_items(v, "")) {
    const std::string value = require_scalar(val, id, "the name of a float or float_seq field");
    if (id.empty() || value.empty()) throw InvalidValue(id, "two non-empty field names", val);
    if (value == id) throw InvalidValue(id, "a value field other than the id field", val);
    out[id] = value;
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

std::function<YAML::Node(const YAML::Node&)> not_supported_yet(std::string feature) {
  return [feature](const YAML::Node& v) -> YAML::Node {
    throw InvalidValue("", "null (a RecBole key not supported yet: " + feature + ")", v);
  };
}

YAML::Node check_transform(const YAML::Node& v) {
  if (v.Scalar() == "mask_itemseq") return v;
  throw InvalidValue("",
                     "null or mask_itemseq (BERT4Rec's masking; RecBole's other transforms are "
                     "RecBole keys not supported yet)",
                     v);
}

YAML::Node check_no_path(const YAML::Node& v) {
  throw InvalidValue("", "no path (saving datasets and dataloaders is not supported): ~ or null",
                     v);
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

}  // namespace recbole::config
