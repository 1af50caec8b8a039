#include "recbole/download/lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "recbole/utils/error.h"
#include "recbole/utils/logging.h"

namespace recbole::data {
namespace {

std::string read_holder(int fd) {
  char buf[64] = {0};
  ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
  std::string text(buf, n > 0 ? size_t(n) : 0);
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

}  // namespace

DownloadLock::DownloadLock(std::string path) : path_(std::move(path)) {
  // The holder unlinks the file before releasing it, so after getting the lock we check that
  // the path still names the file we locked; otherwise a later process may have created a new
  // lock file at that path and we would both believe we hold the lock.
  for (;;) {
    fd_ = open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0)
      throw DataError(path_ + ": cannot create the download lock file: " + std::strerror(errno));
    if (flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      if (errno != EWOULDBLOCK) {
        int err = errno;
        close(fd_);
        throw DataError(path_ + ": cannot lock: " + std::strerror(err));
      }
      if (!waited_) {
        std::string holder = read_holder(fd_);
        log::info("Waiting for another process" + (holder.empty() ? "" : " (pid " + holder + ")") +
                  " that is downloading into the same folder (lock " + path_ + ")");
      }
      waited_ = true;
      while (flock(fd_, LOCK_EX) != 0) {
        if (errno != EINTR) {
          int err = errno;
          close(fd_);
          throw DataError(path_ + ": cannot lock: " + std::strerror(err));
        }
      }
    }
    struct stat held {
    }, named{};
    if (fstat(fd_, &held) == 0 && stat(path_.c_str(), &named) == 0 && held.st_dev == named.st_dev &&
        held.st_ino == named.st_ino)
      break;
    close(fd_);
    fd_ = -1;
  }
  std::string pid = std::to_string(getpid()) + "\n";
  if (ftruncate(fd_, 0) == 0 && pwrite(fd_, pid.data(), pid.size(), 0) < 0) {
    // Only informative for a waiting process; failing to write it is harmless.
  }
}

DownloadLock::~DownloadLock() {
  if (fd_ < 0) return;
  unlink(path_.c_str());
  close(fd_);  // releases the flock
}

}  // namespace recbole::data
