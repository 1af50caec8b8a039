#include "download_fixtures.h"

#include <archive.h>
#include <archive_entry.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace recbole::testing {
namespace fs = std::filesystem;

namespace {

la_ssize_t append_to_string(archive*, void* user, const void* data, size_t size) {
  static_cast<std::string*>(user)->append(static_cast<const char*>(data), size);
  return la_ssize_t(size);
}

}  // namespace

std::string make_archive(const std::vector<ArchiveEntry>& entries, const std::string& format) {
  archive* a = archive_write_new();
  if (format == "zip") {
    archive_write_set_format_zip(a);
  } else {
    archive_write_set_format_pax_restricted(a);
    if (format == "tar.gz") archive_write_add_filter_gzip(a);
  }
  archive_write_set_bytes_in_last_block(a, 1);
  std::string out;
  if (archive_write_open(a, &out, nullptr, append_to_string, nullptr) != ARCHIVE_OK)
    throw std::runtime_error(archive_error_string(a));
  for (const auto& e : entries) {
    archive_entry* entry = archive_entry_new();
    archive_entry_set_pathname(entry, e.path.c_str());
    archive_entry_set_mtime(entry, 1700000000, 0);
    switch (e.kind) {
      case ArchiveEntry::Kind::kFile:
        archive_entry_set_filetype(entry, AE_IFREG);
        archive_entry_set_perm(entry, 0644);
        archive_entry_set_size(entry, la_int64_t(e.data.size()));
        break;
      case ArchiveEntry::Kind::kDir:
        archive_entry_set_filetype(entry, AE_IFDIR);
        archive_entry_set_perm(entry, 0755);
        break;
      case ArchiveEntry::Kind::kSymlink:
        archive_entry_set_filetype(entry, AE_IFLNK);
        archive_entry_set_perm(entry, 0777);
        archive_entry_set_symlink(entry, e.link.c_str());
        break;
      case ArchiveEntry::Kind::kHardlink:
        archive_entry_set_filetype(entry, AE_IFREG);
        archive_entry_set_perm(entry, 0644);
        archive_entry_set_hardlink(entry, e.link.c_str());
        archive_entry_set_size(entry, 0);
        break;
      case ArchiveEntry::Kind::kCharDevice:
        archive_entry_set_filetype(entry, AE_IFCHR);
        archive_entry_set_perm(entry, 0666);
        archive_entry_set_rdevmajor(entry, 1);
        archive_entry_set_rdevminor(entry, 3);
        break;
    }
    if (archive_write_header(a, entry) != ARCHIVE_OK)
      throw std::runtime_error(std::string("archive_write_header: ") + archive_error_string(a));
    if (e.kind == ArchiveEntry::Kind::kFile && !e.data.empty())
      archive_write_data(a, e.data.data(), e.data.size());
    archive_entry_free(entry);
  }
  archive_write_close(a);
  archive_write_free(a);
  return out;
}

std::string shared_ml100k_file(const std::string& suffix) {
  return read_file(std::string(RECBOLE_SHARED_DIR) + "/datasets/ml-100k/ml-100k." + suffix);
}

std::vector<ArchiveEntry> ml100k_entries(const std::string& prefix) {
  std::vector<ArchiveEntry> entries;
  if (!prefix.empty()) entries.push_back({prefix, "", ArchiveEntry::Kind::kDir, ""});
  for (const char* suffix : {"inter", "item", "user"})
    entries.push_back({prefix + "ml-100k." + suffix, shared_ml100k_file(suffix)});
  return entries;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_file(const std::string& path, const std::string& content) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << content;
}

std::vector<std::string> list_dir(const std::string& path) {
  std::vector<std::string> names;
  std::error_code ec;
  if (!fs::is_directory(path, ec)) return names;
  for (const auto& e : fs::directory_iterator(path)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

TempDir::TempDir() {
  std::string pattern = (fs::temp_directory_path() / "recbole_download_XXXXXX").string();
  if (!mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed");
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

recbole::data::DownloadOptions quick_options(int retries) {
  recbole::data::DownloadOptions o;
  o.timeout_s = 1;
  o.retries = retries;
  o.retry_backoff_s = 0.01;
  o.show_progress = false;
  return o;
}

}  // namespace recbole::testing
