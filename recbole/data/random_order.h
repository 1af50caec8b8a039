#pragma once
// The random order of eval_args.order = RO, drawn exactly as RecBole draws it: a libtorch CPU
// generator seeded with `seed`, then one randperm over the whole interaction table. (RecBole
// seeds torch's global generator with the same seed just before building the dataset, and the
// shuffle is its first draw.) Kept in its own file so that only it includes libtorch.
#include <cstdint>
#include <vector>

namespace recbole::data {

// torch::randperm(n, generator seeded with `seed`) as int64 values: [n].
std::vector<int64_t> random_permutation(int64_t n, uint64_t seed);

}  // namespace recbole::data
