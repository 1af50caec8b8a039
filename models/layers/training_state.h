#pragma once
// Small values of a model's training state in a resume checkpoint (Model::save_training_state):
// counters and flags, stored as one-element int64 tensors.
#include <cstdint>
#include <string>

#include <torch/torch.h>

namespace recbole::models::layers {

inline void write_int(torch::serialize::OutputArchive& archive, const std::string& key,
                      int64_t value) {
  archive.write(key, torch::tensor({value}, torch::kInt64));
}

inline int64_t read_int(torch::serialize::InputArchive& archive, const std::string& key) {
  torch::Tensor t;
  archive.read(key, t);
  return t.item<int64_t>();
}

}  // namespace recbole::models::layers
