#pragma once
// An exclusive lock on a path, held by one process (or one thread) at a time, so that two
// processes or two ranks never download the same dataset at once.
#include <string>

namespace recbole::data {

// Holds an flock(2) on `path` from construction to destruction. The constructor blocks while
// another holder has it (logging once who holds it). The lock file is created on demand and
// removed when released; a holder that dies releases it with its file descriptors, so a lock is
// never stale. Throws recbole::DataError when the lock file cannot be created.
class DownloadLock {
 public:
  explicit DownloadLock(std::string path);
  ~DownloadLock();
  DownloadLock(const DownloadLock&) = delete;
  DownloadLock& operator=(const DownloadLock&) = delete;

  const std::string& path() const { return path_; }
  // True when the constructor had to wait for another holder.
  bool waited() const { return waited_; }

 private:
  std::string path_;
  int fd_ = -1;
  bool waited_ = false;
};

}  // namespace recbole::data
