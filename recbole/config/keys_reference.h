#pragma once
// The reference documentation of the configuration keys, generated from their declarations and
// the defaults in configs/, so that it never drifts from what the parser accepts.
#include <string>

namespace recbole::config {

// A Markdown reference of every key: per category, a table of name, type, default and the file
// that sets it, bounds or choices, help. Written to docs/config-keys.md by tools/gen_config_docs.
std::string keys_reference_markdown();

// Plain-text list of every key for `--help`.
std::string keys_help_text();

}  // namespace recbole::config
