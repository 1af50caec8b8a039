#include "tasks/dynamic_negatives.h"

#include <algorithm>

#include <torch/torch.h>

#include "recbole/data/negative_sampler.h"
#include "recbole/data/train_batcher.h"
#include "recbole/utils/error.h"

namespace recbole::tasks {

void DynamicNegatives::pick(data::PairBatch& pairs, const data::NegativeSampler& sampler,
                            uint64_t batch_key, const CandidateInput& input) const {
  const int64_t n = pairs.size(), c = candidate_num_;
  std::vector<int64_t> owners(static_cast<size_t>(n * c)), items(static_cast<size_t>(n * c));
  // Apart from the batcher's own streams (batch_key + chunk · constant).
  data::Rng rng(batch_key ^ 0xd1b54a32d192ed03ULL);
  for (int64_t k = 0; k < c; ++k)
    for (int64_t j = 0; j < n; ++j) {
      const int64_t u = pairs.users[j];
      owners[k * n + j] = u;
      items[k * n + j] = k == 0 ? pairs.neg_items[j] : sampler.sample(static_cast<int32_t>(u), rng);
    }
  data::Batch candidates;
  if (input) {
    candidates = input(owners, items);
  } else {
    candidates.users = data::id_tensor(owners);
    candidates.items = data::id_tensor(items);
  }
  const std::vector<int64_t> kept = best(items, candidates);
  std::copy(kept.begin(), kept.end(), pairs.neg_items.begin());
}

std::vector<int64_t> DynamicNegatives::best(const std::vector<int64_t>& candidates,
                                            const data::Batch& input) const {
  if (!scorer_)
    throw Error("dynamic negative sampling: the training source has no candidate scorer");
  const int64_t c = candidate_num_, n = static_cast<int64_t>(candidates.size()) / c;
  const torch::Tensor scores = scorer_(input, c);
  if (scores.dim() != 1 || scores.size(0) != n * c)
    throw Error("dynamic negative sampling: the model scored " + c10::str(scores.sizes()) +
                " candidates, expected [" + std::to_string(n * c) + "]");
  const torch::Tensor s = scores.to(torch::kFloat32).contiguous();
  const float* sp = s.data_ptr<float>();
  std::vector<int64_t> kept(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j) {
    int64_t b = 0;
    for (int64_t k = 1; k < c; ++k)
      if (sp[k * n + j] > sp[b * n + j]) b = k;
    kept[static_cast<size_t>(j)] = candidates[static_cast<size_t>(b * n + j)];
  }
  return kept;
}

}  // namespace recbole::tasks
