#include "models/layers/losses.h"

#include "models/layers/item_cross_entropy.h"
#include "recbole/utils/error.h"

namespace recbole::models::layers {

torch::Tensor bpr_loss(const torch::Tensor& pos, const torch::Tensor& neg) {
  return -torch::log(1e-10 + torch::sigmoid(pos - neg)).mean();
}

torch::Tensor emb_loss(const std::vector<torch::Tensor>& embeddings, bool require_pow) {
  if (embeddings.empty()) throw Error("emb_loss: no tensors");
  torch::Tensor sum = torch::zeros({}, embeddings.front().options());
  for (const torch::Tensor& e : embeddings) sum = sum + (require_pow ? e.pow(2).sum() : e.norm());
  const double rows = static_cast<double>(embeddings.back().size(0));
  return require_pow ? sum / rows / 2.0 : sum / rows;
}

torch::Tensor info_nce_sum(const torch::Tensor& anchor_table, const torch::Tensor& ids,
                           const torch::Tensor& candidates, const torch::Tensor& targets,
                           double tau) {
  namespace F = torch::nn::functional;
  if (ids.dim() != 1 || targets.sizes() != ids.sizes())
    throw Error("info_nce_sum: expected ids [B] and targets [B]");
  // The distinct ids (ascending), each one's count and target.
  const int64_t rows = anchor_table.size(0);
  const torch::Tensor counts = torch::bincount(ids, {}, rows);
  const torch::Tensor distinct = counts.nonzero().view(-1);
  torch::Tensor target_of = torch::full({rows}, int64_t{-1}, ids.options());
  target_of.index_put_({ids}, targets);
  if (!torch::equal(target_of.index_select(0, ids), targets))
    throw Error("info_nce_sum: two rows with the same id have different targets");
  const torch::Tensor anchors =
      F::normalize(anchor_table.index_select(0, distinct), F::NormalizeFuncOptions().dim(1));
  const torch::Tensor c = F::normalize(candidates, F::NormalizeFuncOptions().dim(1));
  return item_cross_entropy(anchors, c, {}, target_of.index_select(0, distinct), 1.0 / tau,
                            counts.index_select(0, distinct).to(torch::kFloat32));
}

torch::Tensor multinomial_nll(const torch::Tensor& logits, const torch::Tensor& x) {
  return -(torch::log_softmax(logits, 1) * x).sum(1).mean();
}

}  // namespace recbole::models::layers
