#include "recbole/config/key_decl.h"

#include <cmath>
#include <sstream>

#include "recbole/config/yaml_scalar.h"
#include "recbole/utils/text.h"

namespace recbole::config {

InvalidValue::InvalidValue(std::string p, std::string e, YAML::Node n)
    : std::runtime_error(e), path(std::move(p)), expected(std::move(e)), node(std::move(n)) {}

namespace {

std::string format_number(double v) {
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  std::ostringstream os;
  os << v;
  return os.str();
}

YAML::Node null_node() { return YAML::Node(YAML::NodeType::Null); }

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

}  // namespace recbole::config
