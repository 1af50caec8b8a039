#include "models/layers/pretrained.h"

#include "recbole/config/config.h"
#include "recbole/runtime/checkpoint_file.h"
#include "recbole/utils/error.h"

namespace recbole::models::layers {
namespace {

std::string shape_text(const torch::Tensor& t) {
  std::string s = "[";
  for (int64_t k = 0; k < t.dim(); ++k) s += (k ? ", " : "") + std::to_string(t.size(k));
  return s + "]";
}

// Reads the tensor `name` of a checkpoint: a dotted name ("embedding.token_table.weight")
// descends through the nested archives of the submodules, as the trainer writes them.
bool read_tensor(torch::serialize::InputArchive& archive, const std::string& name,
                 torch::Tensor& out) {
  const size_t dot = name.find('.');
  if (dot == std::string::npos) return archive.try_read(name, out);
  torch::serialize::InputArchive nested;
  return archive.try_read(name.substr(0, dot), nested) &&
         read_tensor(nested, name.substr(dot + 1), out);
}

}  // namespace

void load_pretrained_tables(const config::Config& config, const std::string& key,
                            const std::string& model, const std::string& source_model,
                            const std::vector<std::pair<std::string, torch::Tensor>>& tables) {
  const std::string path = config.get_string(key);
  torch::serialize::InputArchive archive;
  trainer::load_checkpoint_archive(path, source_model + " checkpoint (" + key + ")", archive,
                                   torch::Device(torch::kCPU));
  const std::string where = config.source(key) + ": " + model + ": " + key + ": " + path;
  torch::NoGradGuard no_grad;
  for (const auto& [name, parameter] : tables) {
    torch::Tensor t;
    if (!read_tensor(archive, name, t))
      throw ConfigError(where + " has no " + name + "; expected a " + source_model + " checkpoint");
    if (t.sizes() != parameter.sizes())
      throw ConfigError(where + ": " + name + " is " + shape_text(t) + "; expected " +
                        shape_text(parameter));
    // copy_ on a parameter's tensor (not a reassignment) keeps the module's handle.
    torch::Tensor target = parameter;
    target.copy_(t);
  }
}

}  // namespace recbole::models::layers
