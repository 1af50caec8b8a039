#pragma once
// Shared by the serving tests: a temporary folder, and a short training run whose best-model
// checkpoint the tests load.
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "recbole/config/config.h"
#include "run/run_recbole.h"

namespace recbole::testing {

// A small dataset written once per test process: 150 users, 120 items, ~3,500 interactions
// with a popularity skew (users "u1".."u150", items "1".."120"), under a temporary data_path;
// a user file (age) and an item file (genre, class) for the context models, a .kg and a .link
// for the knowledge models.
inline const std::string& serving_data_path() {
  static const std::string path = [] {
    const std::filesystem::path root = std::filesystem::temp_directory_path() /
                                       ("recbole_serving_data-" + std::to_string(::getpid()));
    std::filesystem::create_directories(root / "serving_tiny");
    std::ofstream out(root / "serving_tiny" / "serving_tiny.inter");
    out << "user_id:token\titem_id:token\trating:float\ttimestamp:float\n";
    uint64_t state = 12345;
    auto next = [&state] {
      state = state * 6364136223846793005ULL + 1442695040888963407ULL;
      return static_cast<uint32_t>(state >> 33);
    };
    int64_t time = 880000000;
    for (int u = 1; u <= 150; ++u) {
      const int n = 10 + static_cast<int>(next() % 30);
      for (int k = 0; k < n; ++k) {
        // Items skewed towards low ids (the square of a uniform draw).
        const double x = static_cast<double>(next() % 10000) / 10000.0;
        const int item = 1 + static_cast<int>(x * x * 120);
        out << "u" << u << "\t" << item << "\t" << (1 + next() % 5) << "\t" << time++ << "\n";
      }
    }
    // Features for the context models (loaded only when load_col names these files).
    std::ofstream users(root / "serving_tiny" / "serving_tiny.user");
    users << "user_id:token\tage:token\n";
    for (int u = 1; u <= 150; ++u) users << "u" << u << "\t" << (u % 5) * 10 << "\n";
    // "class" as ml-100k's genres: a keyword of libtorch's archive format, not a valid key there.
    std::ofstream items(root / "serving_tiny" / "serving_tiny.item");
    items << "item_id:token\tgenre:token\tclass:token_seq\n";
    for (int i = 1; i <= 120; ++i)
      items << i << "\tg" << i % 7 << "\tt" << i % 5 << (i % 3 ? " s" + std::to_string(i % 3) : "")
            << "\n";
    // A knowledge graph for the knowledge models (loaded only when load_col names it): items
    // 1..110 link to entities e1..e110 (the others' interactions are dropped), each with a
    // genre and a year; the genres form a chain.
    std::ofstream link(root / "serving_tiny" / "serving_tiny.link");
    link << "item_id:token\tentity_id:token\n";
    for (int i = 1; i <= 110; ++i) link << i << "\te" << i << "\n";
    std::ofstream kg(root / "serving_tiny" / "serving_tiny.kg");
    kg << "head_id:token\trelation_id:token\ttail_id:token\n";
    for (int i = 1; i <= 110; ++i)
      kg << "e" << i << "\tgenre\tg" << i % 7 << "\ne" << i << "\tyear\ty" << i % 9 << "\n";
    for (int g = 0; g < 6; ++g) kg << "g" << g << "\tnext\tg" << g + 1 << "\n";
    return root.string();
  }();
  // Removed when the test process ends.
  static const struct Cleanup {
    ~Cleanup() {
      std::error_code ec;
      std::filesystem::remove_all(path, ec);
    }
  } cleanup;
  return path;
}

struct TempDir {
  std::filesystem::path path;
  explicit TempDir(const std::string& name) {
    static std::atomic<int> counter{0};
    path = std::filesystem::temp_directory_path() /
           (name + "-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  std::string operator/(const std::string& name) const { return (path / name).string(); }
};

// Defaults that do not fit 171 users × 200 items (as the model contract test's).
inline std::vector<std::pair<std::string, std::string>> small_data_overrides(
    const std::string& model) {
  static const std::map<std::string, std::vector<std::pair<std::string, std::string>>> table = {
      {"NCL", {{"num_clusters", "8"}}},
      {"NCEPLRec", {{"rank", "20"}}},
  };
  const auto it = table.find(model);
  return it == table.end() ? std::vector<std::pair<std::string, std::string>>{} : it->second;
}

// The config of a one-epoch run of `model` on the "test" dataset writing into `dir`.
inline config::Config serving_run_config(
    const std::string& model, const TempDir& dir,
    std::vector<std::pair<std::string, std::string>> extra = {}) {
  config::ConfigSources s;
  s.model = model;
  s.dataset = "serving_tiny";
  s.api_overrides = {{"data_path", serving_data_path()}, {"epochs", "1"},
                     {"checkpoint_dir", dir / "saved"},  {"log_dir", dir / "log"},
                     {"show_progress", "false"},         {"state", "WARNING"}};
  for (auto& kv : small_data_overrides(model)) s.api_overrides.push_back(kv);
  for (auto& kv : extra) s.api_overrides.push_back(std::move(kv));
  return config::Config::build(s);
}

// Trains `model` for one epoch (fitted models: one fit) and returns its checkpoint.
inline std::string train_checkpoint(const std::string& model, const TempDir& dir,
                                    std::vector<std::pair<std::string, std::string>> extra = {}) {
  const RunResult r = run(serving_run_config(model, dir, std::move(extra)));
  return r.checkpoint;
}

}  // namespace recbole::testing
