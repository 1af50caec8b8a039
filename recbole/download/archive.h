#pragma once
// Safe extraction of a downloaded archive (zip, tar, tar.gz, ... anything libarchive reads).
#include <cstdint>
#include <string>

namespace recbole::data {

struct ExtractStats {
  int64_t bytes = 0;  // bytes of file data written
  int files = 0;      // regular files written
};

// Extracts `archive_path` into the existing folder `dest_dir`. Only regular files and folders
// are written, with modes 0644/0755 whatever the archive says; a file is never overwritten.
// Refused (recbole::DataError naming the archive, the entry and the reason): absolute paths,
// ".." components, symbolic links, hard links, devices, FIFOs and sockets, and archives whose
// files add up to more than `max_bytes` (counted on the bytes actually decompressed, so a
// lying header does not help). Entries under "__MACOSX/" (macOS resource forks) are skipped.
// On error, whatever was written stays in dest_dir for the caller to remove.
ExtractStats extract_archive_safely(const std::string& archive_path, const std::string& dest_dir,
                                    int64_t max_bytes);

}  // namespace recbole::data
