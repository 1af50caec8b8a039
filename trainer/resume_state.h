#pragma once
// The trainer's side of a resume checkpoint (trainer/resume_checkpoint.h reads its header and
// names its files): everything a run holds, written into one archive and read back.
//
// The archive: "resume_meta", a JSON text — the header's fields (read_resume_header reads them),
// the loop's state, the FitResult so far and the number of optimizers and of best-model tensors —
// then the archives "model" (parameters and buffers), "model_training_state", "optimizer_<k>"
// and "fast_epoch", and the tensors "generator_<k>" and "best_<k>". Metric values are written as
// in the result file (recbole/evaluator/metric_values.h); format 1 wrote best_valid_result as
// [[name, value], ...], and is still read.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include "models/capabilities.h"
#include "models/model.h"
#include "recbole/runtime/device_manager.h"
#include "trainer/resume_checkpoint.h"

namespace recbole::trainer {

struct FitResult;  // trainer/trainer.h
class BestModel;   // trainer/best_model.h

// What the training loop carries from batch to batch, besides where it stands (the header's
// ResumePoint) and what it has found (FitResult).
struct LoopState {
  double epoch_loss = 0;             // loss summed over the batches done of the current epoch
  double epoch_seconds = 0;          // training time spent in the current epoch
  std::optional<double> best_score;  // early stopping's best validation score
  int64_t cur_step = 0;              // validations without improvement since
};

// The objects whose state a resume checkpoint holds, as the trainer has them: read by
// resume_archive, loaded by read_resume_state.
struct ResumeParts {
  models::Model& model;
  // The batch loop's optimizers, one per parameter group; none when the model's own epoch runs.
  std::vector<torch::optim::Optimizer*> optimizers;
  models::FastEpoch* fast_epoch;  // the model's own epoch, or nullptr
  const DeviceManager& device;    // libtorch's generators
  BestModel& best;
};

// A resume checkpoint of the run `header` names, at header.point (written as format
// kResumeFormat, whatever header.format says), for the background writer: the model's tensors
// and the optimizers' states are copies (snapshot_module, detach_optimizer_state), so training
// may go on while the writer serialises them.
std::shared_ptr<torch::serialize::OutputArchive> resume_archive(const ResumeHeader& header,
                                                                const LoopState& loop,
                                                                const FitResult& result,
                                                                const ResumeParts& parts);

// Loads the resume checkpoint `path` (read_resume_header has checked it) into `parts` — the
// model and its training state, the optimizers, the fast epoch, the generators, the best model's
// copy (BestModel::restore) — and `result` (the FitResult so far); returns the loop's state.
// Error when the file does not fit `parts` (another optimizer count, model size or dataset).
LoopState read_resume_state(const std::string& path, const ResumeParts& parts, FitResult& result);

// The "resume_meta" JSON of resume_archive: the header's fields (format kResumeFormat), `loop`,
// `result`, and the counts of optimizers and of best-model tensors.
nlohmann::ordered_json resume_meta_json(const ResumeHeader& header, const LoopState& loop,
                                        const FitResult& result, size_t optimizers,
                                        size_t best_tensors);
// `loop` and `result` (returned, and filled) of a "resume_meta" of any format this version
// reads. nlohmann's exceptions for a missing or mistyped field.
LoopState read_resume_meta(const nlohmann::ordered_json& meta, FitResult& result);

}  // namespace recbole::trainer
