#pragma once
// Helpers for the download tests: archives built in memory with libarchive, temporary folders,
// the ml-100k atomic files, and options that make timeouts and back-off short.
#include <string>
#include <vector>

#include "recbole/download/download.h"

namespace recbole::testing {

struct ArchiveEntry {
  enum class Kind { kFile, kDir, kSymlink, kHardlink, kCharDevice };
  ArchiveEntry(std::string entry_path, std::string entry_data = "", Kind entry_kind = Kind::kFile,
               std::string link_target = "")
      : path(std::move(entry_path)),
        data(std::move(entry_data)),
        kind(entry_kind),
        link(std::move(link_target)) {}
  std::string path;
  std::string data;  // a file's content
  Kind kind = Kind::kFile;
  std::string link;  // a link's target
};

// The bytes of an archive holding `entries`; format "zip", "tar" or "tar.gz".
std::string make_archive(const std::vector<ArchiveEntry>& entries, const std::string& format);

// ml-100k.inter/.item/.user from the shared datasets, named with `prefix` (e.g. "ml-100k/").
std::vector<ArchiveEntry> ml100k_entries(const std::string& prefix = "");
std::string shared_ml100k_file(const std::string& suffix);  // content of ml-100k.<suffix>

std::string read_file(const std::string& path);
void write_file(const std::string& path, const std::string& content);
// Names of the entries of a folder (hidden ones included), sorted; empty if it does not exist.
std::vector<std::string> list_dir(const std::string& path);

// A fresh folder under the system's temporary folder, removed with everything in it.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// 1 s timeout, no retries, 10 ms back-off, no progress bar.
recbole::data::DownloadOptions quick_options(int retries = 0);

}  // namespace recbole::testing
