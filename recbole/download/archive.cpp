#include "recbole/download/archive.h"

#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>
#include <vector>

#include "recbole/utils/error.h"

namespace recbole::data {
namespace {

namespace fs = std::filesystem;

constexpr int kMaxEntries = 100000;

struct ArchiveCloser {
  void operator()(archive* a) const { archive_read_free(a); }
};

// libarchive's message for the last error. It may have none (a zip entry with unknown flags
// fails without one, found by the archive fuzzer): appending a null char* crashed.
std::string error_text(archive* a) {
  const char* text = archive_error_string(a);
  return text ? text : "no reason given by libarchive";
}

// The entry's path as components, or a reason to refuse it.
std::vector<std::string> split_entry_path(const std::string& path, std::string* refusal) {
  std::vector<std::string> parts;
  if (path.empty()) {
    *refusal = "empty path";
    return parts;
  }
  if (path[0] == '/') {
    *refusal = "absolute path";
    return parts;
  }
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string::npos) end = path.size();
    std::string part = path.substr(start, end - start);
    start = end + 1;
    if (part.empty() || part == ".") continue;
    if (part == "..") {
      *refusal = "path with a '..' component (it would land outside the dataset folder)";
      return {};
    }
    parts.push_back(part);
  }
  if (parts.empty()) *refusal = "empty path";
  return parts;
}

}  // namespace

ExtractStats extract_archive_safely(const std::string& archive_path, const std::string& dest_dir,
                                    int64_t max_bytes) {
  std::unique_ptr<archive, ArchiveCloser> a(archive_read_new());
  archive_read_support_filter_all(a.get());
  archive_read_support_format_all(a.get());
  if (archive_read_open_filename(a.get(), archive_path.c_str(), 1 << 16) != ARCHIVE_OK)
    throw DataError(archive_path + ": cannot read the archive: " + error_text(a.get()));

  ExtractStats stats;
  int entries = 0;
  std::vector<char> buffer(1 << 16);
  for (;;) {
    archive_entry* entry = nullptr;
    int rc = archive_read_next_header(a.get(), &entry);
    if (rc == ARCHIVE_EOF) break;
    if (rc < ARCHIVE_WARN)
      throw DataError(archive_path + ": corrupt or unsupported archive: " + error_text(a.get()));
    if (++entries > kMaxEntries)
      throw DataError(archive_path + ": more than " + std::to_string(kMaxEntries) +
                      " entries; refusing to extract");
    const char* raw_name = archive_entry_pathname(entry);
    if (!raw_name) raw_name = archive_entry_pathname_utf8(entry);
    const std::string name = raw_name ? raw_name : "";
    auto refuse = [&](const std::string& why) {
      return DataError(archive_path + ": entry \"" + name + "\": refusing to extract: " + why);
    };
    std::string refusal;
    std::vector<std::string> parts = split_entry_path(name, &refusal);
    if (!refusal.empty()) throw refuse(refusal);
    if (parts[0] == "__MACOSX") continue;
    if (const char* target = archive_entry_hardlink(entry))
      throw refuse(std::string("hard link to \"") + target + "\"");
    const auto type = archive_entry_filetype(entry);
    if (type == AE_IFLNK || archive_entry_symlink(entry))
      throw refuse(std::string("symbolic link to \"") +
                   (archive_entry_symlink(entry) ? archive_entry_symlink(entry) : "") + "\"");
    fs::path out = dest_dir;
    for (const auto& p : parts) out /= p;
    std::error_code ec;
    if (type == AE_IFDIR) {
      fs::create_directories(out, ec);
      if (ec) throw refuse("cannot create folder " + out.string() + ": " + ec.message());
      continue;
    }
    if (type != AE_IFREG) {
      const char* kind = type == AE_IFCHR    ? "character device"
                         : type == AE_IFBLK  ? "block device"
                         : type == AE_IFIFO  ? "FIFO"
                         : type == AE_IFSOCK ? "socket"
                                             : "special file";
      throw refuse(kind);
    }
    if (archive_entry_size_is_set(entry) &&
        stats.bytes + int64_t(archive_entry_size(entry)) > max_bytes)
      throw refuse("the archive expands beyond the limit of " + std::to_string(max_bytes) +
                   " bytes");
    fs::create_directories(out.parent_path(), ec);
    if (ec)
      throw refuse("cannot create folder " + out.parent_path().string() + ": " + ec.message());
    int fd = open(out.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0) throw refuse("cannot create " + out.string() + ": " + std::strerror(errno));
    for (;;) {
      la_ssize_t n = archive_read_data(a.get(), buffer.data(), buffer.size());
      if (n == 0) break;
      if (n < 0) {
        const std::string why = error_text(a.get());
        close(fd);
        throw refuse("cannot decompress: " + why);
      }
      stats.bytes += n;
      if (stats.bytes > max_bytes) {
        close(fd);
        throw refuse("the archive expands beyond the limit of " + std::to_string(max_bytes) +
                     " bytes");
      }
      for (la_ssize_t done = 0; done < n;) {
        ssize_t w = write(fd, buffer.data() + done, size_t(n - done));
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) {
          int err = errno;
          close(fd);
          throw refuse("cannot write " + out.string() + ": " + std::strerror(err));
        }
        done += w;
      }
    }
    if (close(fd) != 0) throw refuse("cannot write " + out.string() + ": " + std::strerror(errno));
    ++stats.files;
  }
  return stats;
}

}  // namespace recbole::data
