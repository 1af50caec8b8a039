#include "recbole/data/dataset_location.h"

#include <filesystem>
#include <system_error>

#include "recbole/config/config.h"
#include "recbole/download/download.h"
#include "recbole/utils/logging.h"

// Set by CMakeLists.txt on this file only (a change of install prefix rebuilds nothing else).
#ifndef RECBOLE_SOURCE_DATASETS_DIR
#error "RECBOLE_SOURCE_DATASETS_DIR: the source tree's datasets/ folder, set by CMakeLists.txt"
#endif
#ifndef RECBOLE_INSTALL_DATASETS_DIR
#error "RECBOLE_INSTALL_DATASETS_DIR: <prefix>/share/recbole/datasets, set by CMakeLists.txt"
#endif
#ifndef RECBOLE_DATASETS_FROM_BINDIR
#error "RECBOLE_DATASETS_FROM_BINDIR: bin/ to share/recbole/datasets, set by CMakeLists.txt"
#endif

namespace recbole::data {
namespace {

namespace fs = std::filesystem;

bool is_plain_name(const std::string& name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos;
}

bool has_inter(const fs::path& root, const std::string& name) {
  std::error_code ec;
  return fs::exists(root / name / (name + ".inter"), ec);
}

// A folder the user made for the dataset (possibly with misnamed files): a shipped copy must not
// hide it. An empty folder is what a failed download leaves behind, and does not count.
bool user_folder_in_the_way(const fs::path& dir) {
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(dir, ec))) return false;
  return !(fs::is_directory(dir, ec) && fs::is_empty(dir, ec));
}

std::string shown(const fs::path& p) { return fs::absolute(p).lexically_normal().string(); }

}  // namespace

std::string DatasetLocation::describe(const std::string& name) const {
  const fs::path dir = fs::path(data_path.empty() ? "." : data_path) / name;
  switch (copy) {
    case Copy::kDataPath:
      return "the copy in " + shown(dir);
    case Copy::kShipped:
      return "the copy shipped with recbole-cpp in " + shown(dir) +
             " (set data_path to use another copy)";
    case Copy::kMissing:
      break;
  }
  return "no copy in " + shown(dir);
}

std::vector<std::string> shipped_dataset_roots() {
  std::vector<std::string> roots;
  auto add = [&roots](const fs::path& candidate) {
    std::error_code ec;
    const fs::path p = fs::canonical(candidate, ec);
    if (ec || !fs::is_directory(p, ec)) return;
    for (const std::string& r : roots)
      if (r == p.string()) return;  // the configured prefix is often where the tool runs from
    roots.push_back(p.string());
  };
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) add(exe.parent_path() / RECBOLE_DATASETS_FROM_BINDIR);
  add(RECBOLE_SOURCE_DATASETS_DIR);
  add(RECBOLE_INSTALL_DATASETS_DIR);
  return roots;
}

DatasetLocation locate_dataset(const std::string& name, const std::string& data_path,
                               bool user_download_url) {
  DatasetLocation loc;
  loc.data_path = data_path;
  const fs::path root = data_path.empty() ? fs::path(".") : fs::path(data_path);
  if (!is_plain_name(name)) return loc;  // ensure_dataset_files reports the bad name
  if (has_inter(root, name)) {
    loc.copy = DatasetLocation::Copy::kDataPath;
    return loc;
  }
  if (user_download_url || user_folder_in_the_way(root / name)) return loc;
  for (const std::string& shipped : shipped_dataset_roots()) {
    if (has_inter(shipped, name)) {
      loc.copy = DatasetLocation::Copy::kShipped;
      loc.data_path = shipped;
      return loc;
    }
  }
  return loc;
}

DatasetLocation locate_dataset(const config::Config& config) {
  const std::string data_path =
      config.is_null("data_path") ? std::string("dataset/") : config.get_string("data_path");
  if (!config.is_null("benchmark_filename")) {
    // Pre-split files are the user's own: there is nothing to ship or download.
    DatasetLocation loc;
    loc.copy = DatasetLocation::Copy::kDataPath;
    loc.data_path = data_path;
    return loc;
  }
  return locate_dataset(config.dataset(), data_path, !config.is_null("download_url"));
}

DatasetLocation ensure_dataset(const config::Config& config) {
  DatasetLocation loc = locate_dataset(config);
  if (loc.copy == DatasetLocation::Copy::kMissing) {
    DownloadOptions opts;
    opts.timeout_s = config.get_double("download_timeout");
    opts.retries = static_cast<int>(config.get_int("download_retries"));
    opts.show_progress = config.get_bool("show_progress");
    ensure_dataset_files(
        config.dataset(), loc.data_path, opts,
        config.is_null("download_url") ? "" : config.get_string("download_url"),
        config.is_null("download_sha256") ? "" : config.get_string("download_sha256"));
    loc.copy = DatasetLocation::Copy::kDataPath;
  }
  log::info("dataset " + config.dataset() + ": " + loc.describe(config.dataset()));
  return loc;
}

}  // namespace recbole::data
