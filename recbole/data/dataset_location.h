#pragma once
// Where a dataset's atomic files are read from. A dataset NAME is looked for, in this order:
//   1. the user's copy, <data_path>/NAME/NAME.inter: it always wins;
//   2. a copy shipped with recbole-cpp (today ml-100k; datasets/ml-100k/README.md names its source
//      and terms of use), so that the README's first command trains with no network:
//        a. installed beside the running program: <exe>/../share/recbole/datasets/NAME/ (the copy
//           that belongs to an installed tool, whatever became of the source tree it came from);
//        b. in the source tree this library was built from: <source>/datasets/NAME/;
//        c. under the install prefix configured at build time: <prefix>/share/recbole/datasets/
//           (for programs of an outside project that link the installed library);
//      not when the user set download_url (they asked for their own archive), nor when
//      <data_path>/NAME/ exists with other files in it (the download's error then says what is
//      wrong with that folder, instead of a shipped copy hiding it);
//   3. else it is downloaded into <data_path>/NAME/ (data::ensure_dataset_files, download.h).
// With benchmark_filename (pre-split NAME.train.inter, ...) only the user's copy is used.
// A shipped copy is read where it lies; nothing is copied into data_path.
#include <string>
#include <vector>

namespace recbole::config {
class Config;
}

namespace recbole::data {

struct DatasetLocation {
  enum class Copy { kDataPath, kShipped, kMissing };
  Copy copy = Copy::kMissing;
  // The folder to use as data_path: it holds NAME/NAME.inter (kMissing: the user's data_path).
  std::string data_path;

  // For the log: "the copy in dataset/ml-100k" or "the copy shipped with recbole-cpp, ...".
  std::string describe(const std::string& name) const;
};

// The folders holding shipped datasets (each as <root>/NAME/NAME.inter), in the order they are
// searched (2a, 2b, 2c above); those that do not exist are left out.
std::vector<std::string> shipped_dataset_roots();

// Finds a local copy of dataset `name` (1 and 2 above); downloads nothing. `user_download_url`:
// whether the user set download_url, which rules out the shipped copies.
DatasetLocation locate_dataset(const std::string& name, const std::string& data_path,
                               bool user_download_url);

// locate_dataset with the config's dataset, data_path, download_url and benchmark_filename.
DatasetLocation locate_dataset(const config::Config& config);

// Makes sure the config's dataset can be read: finds a local copy, else downloads it (with the
// config's download_url, download_sha256, download_timeout, download_retries, show_progress);
// logs which copy is used. recbole_run calls it on one process per machine, then synchronises.
// Throws recbole::DataError / ConfigError as data::ensure_dataset_files does.
DatasetLocation ensure_dataset(const config::Config& config);

}  // namespace recbole::data
