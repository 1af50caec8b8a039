#pragma once
// Datasets by name: when <data_path>/<name>/<name>.inter is missing, the dataset's archive is
// downloaded (URL from datasets/registry.yaml or the user's download_url), verified (size,
// SHA-256), extracted safely into a temporary folder, its files renamed to <name>.inter/.user/
// .item, and the folder moved into place in one rename. Failures leave nothing under
// <data_path>/<name>/. See docs/datasets.md.
//
// Files used next to the dataset folder, all inside <data_path>:
//   .<name>.lock      held while one process downloads; others wait, then reuse its result
//   .<name>.download/ staging: the partial download (kept after a network failure so that the
//                     next attempt resumes it) and the extraction folder; removed on success
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace recbole::data {

// Where a dataset's archive comes from and how its files map to the dataset's name.
struct DatasetSource {
  std::string name;    // the dataset's name, as in `dataset: ml-1m`
  std::string url;     // http(s), ftp or file URL of a zip or tar archive
  std::string sha256;  // lower-case hex SHA-256 of the archive; empty when unknown
  int64_t size = -1;   // archive size in bytes; -1 when unknown
  // RecBole's rule: each top-level file whose base name contains `archive_stem` gets that part
  // replaced by `name` (ml-1m.inter -> <name>.inter). Default: the URL's file name without
  // its archive extension.
  std::string archive_stem;
  // Explicit mapping, applied before the rule: suffix ("inter", "user", "item", ...) -> path of
  // the file inside the archive (after stripping a single top-level folder, if any).
  std::map<std::string, std::string> files;
  std::string origin;  // "datasets/registry.yaml" or "download_url", for messages
};

struct DownloadOptions {
  double timeout_s = 30;         // connect timeout, and give up after this long without data
  int retries = 3;               // further attempts after a transient failure
  double retry_backoff_s = 1.0;  // wait before the first retry; doubles each time (max 60 s)
  bool show_progress = true;     // progress on stderr (recbole/utils/progress.h)
  int64_t max_extracted_bytes = int64_t(32) << 30;  // refuse archives expanding beyond this
};

// The names datasets/registry.yaml knows, sorted.
std::vector<std::string> registered_dataset_names();

// The source for a dataset name: the user's download_url (with download_sha256, if any) when
// given, else the entry of datasets/registry.yaml; nullopt when neither knows the name.
// A user_sha256 without user_url overrides the registry's checksum.
// Throws recbole::ConfigError when user_sha256 is not 64 hex digits or the name is not a plain
// folder name.
std::optional<DatasetSource> find_dataset_source(const std::string& name,
                                                 const std::string& user_url = "",
                                                 const std::string& user_sha256 = "");

// Makes sure <data_path>/<name>/<name>.inter exists, downloading, verifying and extracting the
// dataset when it does not, and returns the dataset folder (<data_path>/<name>). Safe against
// concurrent callers, in this process or others: one downloads while the rest wait on a lock
// file and then reuse its result. Knows nothing of distributed ranks: call it on one rank per
// machine, then synchronise.
// Throws recbole::DataError naming the URL, the cause, and where to put the files by hand;
// recbole::ConfigError for a bad name or checksum. After any failure nothing is left under
// <data_path>/<name>/ (a partial download may stay in <data_path>/.<name>.download/ to be
// resumed).
std::string ensure_dataset_files(const std::string& name, const std::string& data_path,
                                 const DownloadOptions& opts, const std::string& user_url = "",
                                 const std::string& user_sha256 = "");

}  // namespace recbole::data
