#include "recbole/utils/atomic_write.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <system_error>

#include "recbole/utils/error.h"

namespace recbole {
namespace {

bool sync_path(const std::filesystem::path& p) {
  const int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = ::fsync(fd) == 0;
  ::close(fd);
  return ok;
}

}  // namespace

void write_file_atomically(const std::string& path, const std::string& bytes,
                           const std::string& what, bool durable) {
  write_file_atomically(
      path, [&](const ByteSink& sink) { sink(bytes.data(), bytes.size()); }, what, durable);
}

void write_file_atomically(const std::string& path,
                           const std::function<void(const ByteSink& sink)>& produce,
                           const std::string& what, bool durable) {
  namespace fs = std::filesystem;
  const std::string tmp = path + ".tmp-" + std::to_string(::getpid());
  auto fail = [&](const std::string& reason) {
    std::error_code ignored;
    fs::remove(tmp, ignored);
    return Error("cannot write " + (what.empty() ? "" : what + " ") + path + ": " + reason);
  };
  std::error_code ec;
  const fs::path parent = fs::path(path).parent_path();
  if (!parent.empty() && !fs::create_directories(parent, ec) && ec) throw fail(ec.message());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw fail(std::strerror(errno));
    // The sink never throws: a producer may call it again while unwinding (libtorch's writer
    // does, from a destructor, where an exception ends the process). A failed write is
    // remembered, the rest is dropped, and the error is raised once the producer returns.
    int write_errno = 0;
    try {
      produce([&](const void* data, size_t n) {
        if (write_errno) return;
        out.write(static_cast<const char*>(data), static_cast<std::streamsize>(n));
        if (!out) write_errno = errno ? errno : EIO;
      });
    } catch (const std::exception& e) {  // the producer's own failure
      throw fail(e.what());
    }
    if (write_errno) throw fail(std::strerror(write_errno));
    out.flush();
    if (!out) throw fail(std::strerror(errno));
  }
  if (durable && !sync_path(tmp)) throw fail(std::strerror(errno));
  fs::rename(tmp, path, ec);
  if (ec) throw fail(ec.message());
  // The folder's entry: without it a power cut may forget the rename (the old file stays,
  // which is still a whole file; so a failure here is not an error).
  if (durable) sync_path(parent.empty() ? fs::path(".") : parent);
}

}  // namespace recbole
