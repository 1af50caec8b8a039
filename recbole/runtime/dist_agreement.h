#pragma once
// Before training, the ranks of a distributed run check that they are about to train the same
// thing: hosts that do not share a file system may hold different copies of a dataset, and a
// rank may have been started with other options. A silent difference would average gradients
// of different problems; here it is an error on every rank naming the ranks and hosts.
#include <cstdint>
#include <string>

#include "recbole/data/split.h"
#include "recbole/runtime/dist.h"

namespace recbole::config {
class Config;
}

namespace recbole {

// Keys that may differ between ranks: where each machine keeps its files, which of its
// processes this is, how it logs and how many threads it has.
bool key_may_differ_between_ranks(const std::string& key);

// The effective configuration without the keys above, one "key: value" line per key, sorted.
std::string rank_independent_config_text(const config::Config& config);

// A 64-bit hash of the split: n_users, n_items and the user and item ids of train, valid and
// test in split order.
uint64_t split_hash(const data::SplitDataset& split, int64_t n_users, int64_t n_items);

// Compares the hash of the split and of rank_independent_config_text over all ranks (a no-op at
// world size 1). On a difference every rank throws DistError naming the ranks and hosts that
// differ from rank 0 (and, for the config, the keys). Every rank must call it.
void check_ranks_agree(const config::Config& config, const data::SplitDataset& split,
                       int64_t n_users, int64_t n_items, Dist& dist);

}  // namespace recbole
