#pragma once
// CheckpointWriter: writes checkpoint files on one background thread, so that an epoch does not
// wait for serialisation and the disk (at 20M interactions a resume checkpoint is ~170 MB).
//
// Each write is atomic and durable: a temporary file beside the target, fsync, rename, fsync of
// the folder — a reader, a SIGKILL or a power cut finds the old file or the new one, never half
// of one. Writes run in submission order. A write submitted under a `slot` that still has a
// write waiting (not started) replaces that one: when epochs are shorter than the disk is slow,
// only the newest resume checkpoint is worth writing.
//
// The job produces the file's bytes; it runs on the writer's thread, so it must only read data
// that the caller no longer changes (a snapshot). A failed write is reported by the next
// submit() or wait() as the Error of write_file_atomically.
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "recbole/utils/atomic_write.h"

namespace recbole::trainer {

// The writes the trainer may skip (resume checkpoints at epoch ends, the best model at an
// improvement) take at most 1/kWriteShare of the time: one is skipped while the time since the
// last write of its slot is under kWriteShare times that write's duration.
constexpr double kWriteShare = 20;

class CheckpointWriter {
 public:
  // Produces the file's bytes into the sink (recbole/utils/atomic_write.h).
  using Bytes = std::function<void(const ByteSink& sink)>;
  // Runs on the writer's thread after a successful rename (e.g. removing older files).
  using Done = std::function<void(const std::string& path)>;

  CheckpointWriter();
  ~CheckpointWriter();  // waits for every submitted write (errors are logged, not thrown)
  CheckpointWriter(const CheckpointWriter&) = delete;
  CheckpointWriter& operator=(const CheckpointWriter&) = delete;

  void submit(const std::string& slot, std::string path, std::string what, Bytes bytes,
              Done done = {});
  // Until every submitted write has finished; rethrows the first failure since the last call.
  void wait();
  // How long the last finished write of `slot` took (serialisation included); 0 before one.
  double last_seconds(const std::string& slot);

 private:
  struct Job {
    std::string slot, path, what;
    Bytes bytes;
    Done done;
  };
  void run();
  void rethrow_failure();  // with mutex_ held

  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Job> queue_;
  bool busy_ = false;
  bool stopping_ = false;
  std::exception_ptr failure_;
  std::map<std::string, double> seconds_;  // per slot: the last write's duration
  std::thread thread_;
};

}  // namespace recbole::trainer
