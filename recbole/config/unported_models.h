#pragma once
// RecBole 1.2.1's models that this version does not implement yet, with the top-level keys of
// their model files (recbole/properties/model/<Model>.yaml), so that a RecBole user's YAML file
// holding one of them is refused as "a RecBole key not supported yet" (or the model as a RecBole
// model not supported yet), never as an unknown name. A key that an implemented model declares
// is that model's key and never looked up here.
#include <string>
#include <utility>
#include <vector>

namespace recbole::config {

// (model, its file's keys separated by spaces, in file order), sorted by model name.
const std::vector<std::pair<std::string, std::string>>& unported_model_files();

// The unported models whose model file has `key`, sorted; empty when none.
std::vector<std::string> unported_models_with_key(const std::string& key);

// Whether `model` is one of RecBole 1.2.1's models not implemented here (exact name).
bool is_unported_model(const std::string& model);

}  // namespace recbole::config
