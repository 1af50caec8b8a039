#pragma once
// Resume checkpoints: what a stopped run needs to continue exactly where it was.
//
// The Trainer writes one at the end of every epoch (the file's bytes serialised on the training
// thread, written to disk by its CheckpointWriter in the background) and when a stop request
// ends the run part-way through an epoch. It holds: the model's parameters and buffers and its
// training state (Model::save_training_state), every optimizer's state, the fast epoch's own
// state, libtorch's generator states, the best model so far (its tensors), the early-stopping
// state and history, where the run stands (epoch, pass, batches done, loss so far), and the
// effective config. The data order and the sampled negatives need no state: every source is
// keyed by (seed, epoch, batch).
//
// Files: <checkpoint_dir>/<run>-resume-e<E>[-p<P>]-b<B>.pth beside the run's best checkpoint
// <run>.pth; a resumed run goes on writing under the same <run> name, and checkpoint_keep bounds
// how many of a run's resume checkpoints stay.
#include <cstdint>
#include <string>
#include <vector>

#include <torch/torch.h>

namespace recbole {
namespace config {
class Config;
}
}  // namespace recbole

namespace recbole::trainer {

// Bumped when the layout changes; a checkpoint of a format outside kOldestResumeFormat ..
// kResumeFormat is refused by name. Format 2 writes the metric values of best_valid_result as the
// result file does ({"name": value}; format 1: [[name, value], ...], trainer/resume_state.h).
constexpr int64_t kResumeFormat = 2;
constexpr int64_t kOldestResumeFormat = 1;

// Where a run stands: it continues with epoch `epoch`, pass `pass`, after `batch` batches of that
// pass (0, 0, 0: a fresh run).
struct ResumePoint {
  int64_t epoch = 0;
  int64_t pass = 0;
  int64_t batch = 0;
};

// What a resume checkpoint says about itself (read without building anything).
struct ResumeHeader {
  int64_t format = 0;
  std::string model, dataset;
  std::string config_yaml;  // config::config_snapshot() of the run
  int world_size = 1;
  ResumePoint point;
  std::string run;  // checkpoint_dir/<Model>-<time>-<pid>: the run's file names start with it
};

// Reads the header of a resume checkpoint; a missing, truncated or corrupt file, or one of
// another format, is an Error naming the file and what to do.
ResumeHeader read_resume_header(const std::string& path);

// The keys that may differ between a run and its resumption; any other difference is an error.
const std::vector<std::string>& keys_free_on_resume();

// Throws ConfigError naming the first key whose value differs from the checkpoint's and may not
// (with both values and the list of keys that may change), or a world size that differs.
void check_resume_compatible(const ResumeHeader& header, const config::Config& config,
                             int world_size, const std::string& path);

// ---- Snapshots: what the background writer serialises while training goes on ----
// Serialising on the training thread cost 4.4 ms of a 9 ms BPR epoch on ml-100k (the zip
// writer's CRC and copies); a snapshot costs a memcpy of the tensors, and the serialisation runs
// on the writer's thread.

// Writes `module`'s parameters and buffers, recursively, in torch::nn::Module::save's layout
// (so Module::load reads it), as copies.
void snapshot_module(const torch::nn::Module& module, torch::serialize::OutputArchive& archive);

// After optimizer.save(archive), the archive refers to the optimizer's state tensors: this gives
// the optimizer copies to go on with, so that no later step changes what the archive holds.
// Adam, AdamW, SGD, Adagrad and RMSprop; another optimizer is an Error.
void detach_optimizer_state(torch::optim::Optimizer& optimizer);

// The file name of a resume checkpoint of `run` at `point`.
std::string resume_path(const std::string& run, const ResumePoint& point);

// The resume checkpoints of `run` (existing files), oldest first.
std::vector<std::string> resume_files_of(const std::string& run);

// Removes the temporary files a killed process left beside the checkpoints of `run`
// (write_file_atomically names them <file>.tmp-<pid>; the rename they waited for never came).
void remove_temporary_files(const std::string& run);

// The resume checkpoint the `resume` key asks for: "" when the key is null; the path given; or,
// for `latest`, the newest resume checkpoint in checkpoint_dir of this model and dataset ("" when
// there is none: the run starts afresh, which is what a scheduler's first attempt needs). A
// missing path is a ConfigError.
std::string resolve_resume(const config::Config& config);

}  // namespace recbole::trainer
