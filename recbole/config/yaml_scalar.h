#pragma once
// YAML scalar helpers: how configuration values are read (YAML 1.1 as RecBole reads it, plus
// `1e-5` as a float) and written back in messages and dumps.
#include <cstdint>
#include <optional>
#include <string>

#include <yaml-cpp/yaml.h>

namespace recbole::config {

// Null: `~`, `null`, an empty value, or a plain (unquoted) `None` as Python writes it.
bool is_null_node(const YAML::Node& node);
// `true`/`false` in any case.
std::optional<bool> parse_bool(const std::string& text);
// Decimal integers with an optional sign.
std::optional<int64_t> parse_int(const std::string& text);
// Decimal numbers with optional fraction and exponent (`1e-5`, `0.1`, `3`), `.inf`, `-.inf`,
// `.nan`.
std::optional<double> parse_float(const std::string& text);
// A value as one line of flow YAML ("[5, 10]", "{RS: [0.8, 0.1, 0.1]}", "~"), for messages and
// dumps.
std::string node_text(const YAML::Node& node);

}  // namespace recbole::config
