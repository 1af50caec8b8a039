#include "trainer/best_model.h"

#include "recbole/runtime/checkpoint_file.h"
#include "trainer/resume_checkpoint.h"

namespace recbole::trainer {
namespace {

// Every parameter and buffer of the model, in a fixed order.
std::vector<torch::Tensor> model_state(models::Model& model) {
  std::vector<torch::Tensor> state = model.parameters();
  for (const torch::Tensor& b : model.buffers()) state.push_back(b);
  return state;
}

}  // namespace

BestModel::BestModel(models::Model& model, CheckpointWriter& writer, const CheckpointExtras& extras,
                     std::string path, bool writes)
    : model_(model), writer_(writer), extras_(extras), path_(std::move(path)), writes_(writes) {}

void BestModel::keep() {
  if (!writes_) return;
  torch::NoGradGuard no_grad;
  // New tensors each time, never copies into the old ones: a resume snapshot may still hold
  // the old ones, waiting for the writer.
  tensors_.clear();
  for (const torch::Tensor& t : model_state(model_)) tensors_.push_back(t.detach().clone());
  unwritten_ = true;
  // As the resume checkpoints: at most 1/kWriteShare of the time; the best model stays in
  // memory (and in the resume checkpoints) until written.
  if (seconds_since(last_write_) < kWriteShare * writer_.last_seconds("best")) return;
  auto archive = std::make_shared<torch::serialize::OutputArchive>();
  snapshot_module(model_, *archive);
  if (extras_) extras_(*archive);
  writer_.submit("best", path_, "the checkpoint", checkpoint_bytes(std::move(archive)));
  unwritten_ = false;
  last_write_ = Clock::now();
}

void BestModel::write() {
  if (!writes_ || tensors_.empty() || !unwritten_) return;
  // The snapshot reads the model: put the best values into it for that moment, and the current
  // ones back after.
  torch::NoGradGuard no_grad;
  const std::vector<torch::Tensor> live = model_state(model_);
  std::vector<torch::Tensor> current;
  current.reserve(live.size());
  for (size_t k = 0; k < live.size(); ++k) {
    current.push_back(live[k].clone());
    live[k].copy_(tensors_[k]);
  }
  auto archive = std::make_shared<torch::serialize::OutputArchive>();
  snapshot_module(model_, *archive);
  for (size_t k = 0; k < live.size(); ++k) live[k].copy_(current[k]);
  if (extras_) extras_(*archive);
  writer_.submit("best", path_, "the checkpoint", checkpoint_bytes(std::move(archive)));
  unwritten_ = false;
  last_write_ = Clock::now();
}

void BestModel::restore(std::vector<torch::Tensor> tensors) {
  tensors_ = std::move(tensors);
  unwritten_ = !tensors_.empty();
}

}  // namespace recbole::trainer
