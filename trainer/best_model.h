#pragma once
// BestModel: the best model of a run so far, for the Trainer. At each improvement (keep()) the
// model's parameters and buffers are copied in memory — resume checkpoints carry the copy — and
// its checkpoint is handed to the background writer, as RecBole writes it at every improvement
// but without waiting for the disk; unless writes would take over 1/kWriteShare of the time:
// then the copy is written at a later improvement, or by write() at the end, on a stop or an
// error. Only the rank that writes checkpoints (rank 0) keeps a copy; on the others keep() and
// write() do nothing.
#include <functional>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "models/model.h"
#include "recbole/utils/clock.h"
#include "trainer/checkpoint_writer.h"

namespace recbole::trainer {

// Entries written into every best-model checkpoint beside the model's tensors
// (Trainer::set_checkpoint_extras).
using CheckpointExtras = std::function<void(torch::serialize::OutputArchive&)>;

class BestModel {
 public:
  // path: the checkpoint file. model, writer and extras must outlive this object; extras is
  // called at each write, so a later set_checkpoint_extras takes effect. writes: rank 0.
  BestModel(models::Model& model, CheckpointWriter& writer, const CheckpointExtras& extras,
            std::string path, bool writes);

  const std::string& path() const { return path_; }
  // A resumed run writes under its first process's name.
  void set_path(std::string path) { path_ = std::move(path); }

  // The model as it is now is the best: copied, and written unless writes take too long.
  void keep();
  // Writes the copy (not the live model) to path() when it has not been written yet.
  void write();

  // The copy: the model's parameters, then its buffers, in their order (CPU or the model's
  // device, as they are); empty before the first keep().
  const std::vector<torch::Tensor>& tensors() const { return tensors_; }
  // A copy from a resume checkpoint, not written yet: the file on disk may be older or newer
  // than the checkpoint (the background writer was ahead or behind when the run stopped).
  void restore(std::vector<torch::Tensor> tensors);

 private:
  models::Model& model_;
  CheckpointWriter& writer_;
  const CheckpointExtras& extras_;
  std::string path_;
  bool writes_;
  std::vector<torch::Tensor> tensors_;
  bool unwritten_ = false;
  Clock::time_point last_write_{};
};

}  // namespace recbole::trainer
