#pragma once
// Model keys: each model declares its own keys (models/<task>/<name>.cpp, with its
// registration), so that a key means one thing with one set of bounds per model (ItemKNN's `k`
// counts neighbours, ADMMSLIM's counts iterations) and a key the chosen model does not have is
// an error naming the model and its keys. The general keys stay declared in config_keys.cpp.
//
// This registry lives in the config (core area); the model registry (models/model.h) fills it
// when a model registers, and sets the loader that registers the shipped models, so that the
// config can ask for a model's keys before anything else has touched the models.
#include <string>
#include <utility>
#include <vector>

#include "recbole/config/key_decl.h"

namespace recbole::config {

// Declares `model`'s keys (replacing an earlier declaration); their category is set to
// "Model: <model>". Called by models::register_model.
void register_model_keys(const std::string& model, std::vector<KeyDecl> keys);

// Whether `model` (exact name, else case-insensitive) has declared its keys (possibly none).
bool model_declares_keys(const std::string& model);
// `model`'s declaration of `key`, or nullptr.
const KeyDecl* find_model_key(const std::string& model, const std::string& key);
// `model`'s keys in declaration order (empty for an unknown model).
std::vector<KeyDecl> model_keys(const std::string& model);
// True when some model declares `key`.
bool is_any_model_key(const std::string& key);
// Every model with its keys, sorted by model name.
std::vector<std::pair<std::string, std::vector<KeyDecl>>> all_model_keys();

// The task family of `model` ("general", "sequential", "context", ...), set by
// models::register_model, so that the config loads the task's preset (configs/preset/<task>.yaml
// and configs/preset/<task>_<dataset>.yaml, when there are) above the model and dataset files and
// below every user source, as RecBole's quick-start presets.
void register_model_task(const std::string& model, const std::string& task);
// `model`'s task (exact name, else case-insensitive); empty for an unknown model.
std::string model_task(const std::string& model);

// The loader that registers the shipped models (set by models/model.cpp); called once before
// the first lookup above.
void set_model_key_loader(void (*loader)());

}  // namespace recbole::config
