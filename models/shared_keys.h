#pragma once
// Config keys that many models read, each declared once here: its name, type, bounds and a
// default help line. A model lists the ones it reads among its keys (decl(), or decl(help) with
// the key's meaning in that model) and reads them through the same object
// (keys::embedding_size().get(config)), so that a shared key's name is written here and in the
// YAML files only. (Functions, not globals: models register from static initialisers.) A model's
// own keys are declared beside it (models/<family>/<name>.cpp).
#include <string>
#include <vector>

#include "recbole/config/key_decl.h"

namespace recbole::config {
class Config;
}

namespace recbole::models::keys {

template <typename T>
class SharedKey {
 public:
  explicit SharedKey(config::Key key) : decl_(std::move(key.d)) {}
  // The declaration, for a model's key list; with `help`, the key's meaning in that model.
  const config::KeyDecl& decl() const { return decl_; }
  config::KeyDecl decl(const char* help) const {
    config::KeyDecl d = decl_;
    d.help = help;
    return d;
  }
  const std::string& name() const { return decl_.name; }
  // The value of the key in `config` (which has it: the model declared it).
  T get(const config::Config& config) const;

 private:
  config::KeyDecl decl_;
};

// The key types there are (shared_keys.cpp); declared here, before any use, as C++ asks of an
// explicit specialisation.
template <>
int64_t SharedKey<int64_t>::get(const config::Config& config) const;
template <>
double SharedKey<double>::get(const config::Config& config) const;
template <>
std::vector<int64_t> SharedKey<std::vector<int64_t>>::get(const config::Config& config) const;

// int >= 1: the width of a model's embedding tables.
const SharedKey<int64_t>& embedding_size();
// float >= 0: the weight of a model's regulariser.
const SharedKey<double>& reg_weight();
// float in [0, 1): a dropout rate (1 would zero every activation).
const SharedKey<double>& dropout_prob();
// A non-empty list of int >= 1: the hidden layer sizes of a model's MLP.
const SharedKey<std::vector<int64_t>>& mlp_hidden_size();

}  // namespace recbole::models::keys
