#include "recbole/runtime/dist_agreement.h"

#include <yaml-cpp/yaml.h>

#include <cstring>
#include <map>
#include <set>
#include <sstream>

#include "recbole/config/config.h"
#include "recbole/utils/error.h"
#include "recbole/utils/logging.h"

namespace recbole {
namespace {

// Word-wise 64-bit mixing (splitmix64 finaliser per word): a split of 20M interactions is 240 MB.
struct Hasher {
  uint64_t h = 0x9e3779b97f4a7c15ULL;
  void word(uint64_t w) {
    uint64_t z = (h ^ w) + 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    h = z ^ (z >> 31);
  }
  void bytes(const void* data, size_t n) {
    const auto* p = static_cast<const unsigned char*>(data);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
      uint64_t w;
      std::memcpy(&w, p + i, 8);
      word(w);
    }
    uint64_t tail = 0;
    std::memcpy(&tail, p + i, n - i);
    word(tail ^ (static_cast<uint64_t>(n) << 56));
  }
  template <typename T>
  void vec(const std::vector<T>& v) {
    word(v.size());
    if (!v.empty()) bytes(v.data(), v.size() * sizeof(T));
  }
};

std::map<std::string, std::string> config_lines(const std::string& text) {
  std::map<std::string, std::string> m;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    const size_t colon = line.find(": ");
    if (colon != std::string::npos) m[line.substr(0, colon)] = line.substr(colon + 2);
  }
  return m;
}

std::string rank_list(const std::vector<int>& ranks, const Dist& dist) {
  std::string s;
  for (int r : ranks)
    s += std::string(s.empty() ? "" : ", ") + "rank " + std::to_string(r) + " on host " +
         dist.host_of(r);
  return s;
}

std::string hex(uint64_t h) {
  char buf[20];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

}  // namespace

bool key_may_differ_between_ranks(const std::string& key) {
  static const std::set<std::string> per_rank = {
      "data_path", "checkpoint_dir", "log_dir",      "result_file",       "nproc",
      "offset",    "local_rank",     "num_threads",  "torch_num_threads", "show_progress",
      "state",     "socket_ifname",  "download_url", "download_timeout",  "download_retries",
      "report"};
  return per_rank.count(key) > 0;
}

std::string rank_independent_config_text(const config::Config& config) {
  std::string text = "model: " + config.model() + "\ndataset: " + config.dataset() + "\n";
  for (const std::string& key : config.keys()) {
    if (key_may_differ_between_ranks(key)) continue;
    YAML::Emitter out;
    out << YAML::Flow << config.node(key);
    text += key + ": " + out.c_str() + "\n";
  }
  return text;
}

uint64_t split_hash(const data::SplitDataset& split, int64_t n_users, int64_t n_items) {
  Hasher h;
  h.word(static_cast<uint64_t>(n_users));
  h.word(static_cast<uint64_t>(n_items));
  for (const data::Split* part : {&split.train, &split.valid, &split.test}) {
    h.vec(part->users);
    h.vec(part->items);
  }
  return h.h;
}

void check_ranks_agree(const config::Config& config, const data::SplitDataset& split,
                       int64_t n_users, int64_t n_items, Dist& dist) {
  if (!dist.active()) return;
  const std::string config_text = rank_independent_config_text(config);
  Hasher ch;
  ch.bytes(config_text.data(), config_text.size());
  const uint64_t mine[2] = {ch.h, split_hash(split, n_users, n_items)};
  torch::Tensor t = torch::empty({2}, torch::kInt64);
  std::memcpy(t.data_ptr(), mine, sizeof mine);
  const std::vector<torch::Tensor> all = dist.all_gather(t);
  std::vector<uint64_t> config_h, split_h;
  for (const auto& a : all) {
    const auto* p = static_cast<const uint64_t*>(a.data_ptr());
    config_h.push_back(p[0]);
    split_h.push_back(p[1]);
  }
  std::vector<int> config_differs, split_differs;
  for (int r = 1; r < dist.world_size(); ++r) {
    if (config_h[r] != config_h[0]) config_differs.push_back(r);
    if (split_h[r] != split_h[0]) split_differs.push_back(r);
  }
  std::string problems;
  if (!config_differs.empty()) {
    // Rare path, taken by every rank alike: gather the texts to name the keys that differ.
    torch::Tensor bytes = torch::empty({static_cast<int64_t>(config_text.size())}, torch::kUInt8);
    std::memcpy(bytes.data_ptr(), config_text.data(), config_text.size());
    const torch::Tensor texts = dist.all_gather_cat(bytes);
    const torch::Tensor lengths = dist.all_gather_cat(
        torch::tensor({static_cast<int64_t>(config_text.size())}, torch::kInt64));
    std::vector<std::map<std::string, std::string>> per_rank;
    int64_t at = 0;
    for (int r = 0; r < dist.world_size(); ++r) {
      const int64_t n = lengths[r].item<int64_t>();
      const auto* p = static_cast<const char*>(texts.data_ptr()) + at;
      per_rank.push_back(config_lines(std::string(p, p + n)));
      at += n;
    }
    problems += "the effective configuration differs from rank 0's (on host " + dist.host_of(0) +
                ") on " + rank_list(config_differs, dist) + ":";
    for (int r : config_differs) {
      std::set<std::string> keys;
      for (const auto& kv : per_rank[0]) keys.insert(kv.first);
      for (const auto& kv : per_rank[r]) keys.insert(kv.first);
      for (const auto& k : keys) {
        const auto a = per_rank[0].find(k), b = per_rank[r].find(k);
        const std::string va = a == per_rank[0].end() ? "(absent)" : a->second;
        const std::string vb = b == per_rank[r].end() ? "(absent)" : b->second;
        if (va != vb)
          problems +=
              "\n  " + k + ": rank 0 has " + va + ", rank " + std::to_string(r) + " has " + vb;
      }
    }
    problems += "\nStart every rank with the same model, dataset, config files and options.";
  }
  if (!split_differs.empty()) {
    if (!problems.empty()) problems += "\n";
    problems += "the dataset split differs from rank 0's (on host " + dist.host_of(0) + ", hash " +
                hex(split_h[0]) + ") on " + rank_list(split_differs, dist) + " (hash";
    for (int r : split_differs) problems += " " + hex(split_h[r]);
    problems += "): each host reads its own copy of dataset " + config.dataset() +
                " under its data_path, and these copies differ; give every host the same files "
                "(or remove the differing copy so that it is downloaded again).";
  }
  if (!problems.empty())
    throw DistError("ranks disagree before training (this is rank " + std::to_string(dist.rank()) +
                    " on host " + dist.host() + "): " + problems);
  log::info("all " + std::to_string(dist.world_size()) +
            " ranks agree on the configuration and "
            "on the dataset split (hash " +
            hex(split_h[0]) + ")");
}

}  // namespace recbole
