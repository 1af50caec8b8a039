#pragma once
// Tables of a pretrained model copied from one of its recbole-cpp checkpoints (the best-model
// file the trainer writes, recbole/runtime/checkpoint_file.h: checked before libtorch reads it), as
// RecBole's NAIS (FISM tables) and ConvNCF (BPR tables) do. Parameters are those of the model
// under construction, on the CPU or the device.
#include <string>
#include <utility>
#include <vector>

#include <torch/torch.h>

namespace recbole::config {
class Config;
}

namespace recbole::models::layers {

// Copies each (name in the checkpoint, parameter) of `tables` from the checkpoint at the path
// held by config key `key`; `model` names the model loading it, `source_model` the model the
// checkpoint should come from; a submodule's parameter is named with dots (its
// named_parameters() key). A missing, cut or damaged file is an Error naming the path; a
// table that is absent or of another shape is a ConfigError naming the key, the model and the
// shapes.
void load_pretrained_tables(const config::Config& config, const std::string& key,
                            const std::string& model, const std::string& source_model,
                            const std::vector<std::pair<std::string, torch::Tensor>>& tables);

}  // namespace recbole::models::layers
