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
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
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
