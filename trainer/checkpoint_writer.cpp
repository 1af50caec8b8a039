#include "trainer/checkpoint_writer.h"

#include <chrono>

#include "recbole/utils/error.h"
#include "recbole/utils/logging.h"

namespace recbole::trainer {

CheckpointWriter::CheckpointWriter() : thread_([this] { run(); }) {}

CheckpointWriter::~CheckpointWriter() {
  try {
    wait();
  } catch (const std::exception& e) {
    log::error(e.what());
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

void CheckpointWriter::submit(const std::string& slot, std::string path, std::string what,
                              Bytes bytes, Done done) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    rethrow_failure();
    Job job{slot, std::move(path), std::move(what), std::move(bytes), std::move(done)};
    bool replaced = false;
    for (Job& waiting : queue_)
      if (waiting.slot == slot) {
        waiting = std::move(job);
        replaced = true;
        break;
      }
    if (!replaced) queue_.push_back(std::move(job));
  }
  changed_.notify_all();
}

double CheckpointWriter::last_seconds(const std::string& slot) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = seconds_.find(slot);
  return it == seconds_.end() ? 0.0 : it->second;
}

void CheckpointWriter::wait() {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [&] { return queue_.empty() && !busy_; });
  rethrow_failure();
}

void CheckpointWriter::rethrow_failure() {
  if (!failure_) return;
  std::exception_ptr failure = failure_;
  failure_ = nullptr;
  std::rethrow_exception(failure);
}

void CheckpointWriter::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    changed_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, nothing left
    Job job = std::move(queue_.front());
    queue_.pop_front();
    busy_ = true;
    lock.unlock();
    const auto t0 = std::chrono::steady_clock::now();
    try {
      write_file_atomically(job.path, job.bytes, job.what, /*durable=*/true);
      if (job.done) job.done(job.path);
    } catch (...) {
      lock.lock();
      if (!failure_) failure_ = std::current_exception();
      lock.unlock();
    }
    const double took =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    lock.lock();
    seconds_[job.slot] = took;
    busy_ = false;
    changed_.notify_all();
  }
}

}  // namespace recbole::trainer
