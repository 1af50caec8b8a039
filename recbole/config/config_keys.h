#pragma once
// The declaration of every configuration key: its type, whether it may be null, its bounds or
// allowed choices, its category and one line of help. Each key is declared once, in
// config_keys.cpp; its default lives in a YAML file under configs/ (never here). From these
// declarations the Config checks values, `--help` lists the keys and docs/config-keys.md is
// generated (tools/gen_config_docs).
//
// The configuration code is cut by concern, one file pair each; this header includes the others,
// so that most callers need only this one:
//   yaml_scalar     reading and writing YAML scalars (null, bool, int, float, one-line text)
//   key_decl        what a key is (KeyDecl, the Key builder), its texts, validate_value
//   value_checks    checks of structured values (eval_args, intervals, load_col, ...)
//   config_keys     the declarations themselves, in the order the dump and the docs show them
//   keys_reference  docs/config-keys.md and the --help text, generated from the declarations
#include <string>
#include <vector>

#include "recbole/config/key_decl.h"
#include "recbole/config/keys_reference.h"
#include "recbole/config/value_checks.h"
#include "recbole/config/yaml_scalar.h"

namespace recbole::config {

// Every declared key, in declaration order (grouped by category).
const std::vector<KeyDecl>& declared_keys();

// The declaration of `name`, or nullptr when it is not declared.
const KeyDecl* find_key(const std::string& name);

// The key nearest to `name` by edit distance (case-insensitive) among the general keys and every
// model's keys, or "" when none is close enough to be a plausible typo.
std::string nearest_key(const std::string& name);

}  // namespace recbole::config
