#pragma once
// Helpers shared by the data tests: RecBole's test datasets, temporary folders and files.
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "recbole/config/config.h"
#include "recbole/data/dataset_options.h"

namespace recbole::data::testing {

// A config of `dataset` with `overrides` (as the API builds one).
inline config::Config config_of(const std::string& dataset,
                                std::vector<std::pair<std::string, std::string>> overrides) {
  config::ConfigSources s;
  s.dataset = dataset;
  s.api_overrides = std::move(overrides);
  return config::Config::build(s);
}

struct ToolRun {
  int status = -1;
  std::string output;  // stdout and stderr
};

// The built recbole_data with `args` (a shell command line).
inline ToolRun run_recbole_data(const std::string& args) {
  const std::string cmd = std::string(RECBOLE_TOOLS_DIR) + "/recbole_data " + args + " 2>&1";
  ToolRun r;
  std::FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) r.output.append(buf.data(), n);
  const int status = pclose(p);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

inline std::string recbole_tests_path() {
  return std::string(RECBOLE_SHARED_DIR) + "/datasets/recbole-tests/data";
}

inline std::string shared_datasets_path() { return std::string(RECBOLE_SHARED_DIR) + "/datasets"; }

// Options as RecBole's tests build them: BPR defaults, sample.yaml, `load_col: None`.
inline DatasetOptions recbole_test_options(const std::string& dataset) {
  DatasetOptions o;
  o.dataset = dataset;
  o.data_path = recbole_tests_path();
  o.load_col.reset();
  return o;
}

// ml-100k's own defaults (configs/dataset/ml-100k.yaml).
inline DatasetOptions ml100k_options() {
  DatasetOptions o;
  o.dataset = "ml-100k";
  o.data_path = shared_datasets_path();
  o.load_col = std::map<std::string, std::vector<std::string>>{
      {"inter", {"user_id", "item_id", "rating", "timestamp"}}};
  o.user_inter_num_interval.clear();
  o.item_inter_num_interval.clear();
  o.normalize_all = true;
  return o;
}

// A fresh folder under the system temp dir, removed with the object.
class TempDir {
 public:
  TempDir() {
    std::random_device rd;
    path_ = std::filesystem::temp_directory_path() /
            ("recbole_data_test_" + std::to_string(rd()) + std::to_string(rd()));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string path() const { return path_.string(); }
  // Writes <dir>/<relative> (folders created) and returns its path.
  std::string write(const std::string& relative, const std::string& content) const {
    const std::filesystem::path p = path_ / relative;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << content;
    return p.string();
  }

 private:
  std::filesystem::path path_;
};

}  // namespace recbole::data::testing
