#include "models/shared_keys.h"

#include "models/layers/key_checks.h"
#include "recbole/config/config.h"

namespace recbole::models::keys {

template <>
int64_t SharedKey<int64_t>::get(const config::Config& config) const {
  return config.get_int(decl_.name);
}

template <>
double SharedKey<double>::get(const config::Config& config) const {
  return config.get_double(decl_.name);
}

template <>
std::vector<int64_t> SharedKey<std::vector<int64_t>>::get(const config::Config& config) const {
  return config.get_int_list(decl_.name);
}

using config::Key;
using config::KeyType;

const SharedKey<int64_t>& embedding_size() {
  static const SharedKey<int64_t> key(
      Key("embedding_size", KeyType::kInt).min(1).help("Dimension of the embeddings"));
  return key;
}

const SharedKey<double>& reg_weight() {
  static const SharedKey<double> key(
      Key("reg_weight", KeyType::kFloat).min(0).help("Weight of the regulariser"));
  return key;
}

const SharedKey<double>& dropout_prob() {
  static const SharedKey<double> key(
      layers::probability_key("dropout_prob").help("Dropout rate, in [0, 1)"));
  return key;
}

const SharedKey<std::vector<int64_t>>& mlp_hidden_size() {
  static const SharedKey<std::vector<int64_t>> key(
      layers::sizes_key("mlp_hidden_size").help("Sizes of the MLP's hidden layers"));
  return key;
}

}  // namespace recbole::models::keys
