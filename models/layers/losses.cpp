#include "models/layers/losses.h"

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

torch::Tensor info_nce_sum(const torch::Tensor& anchors, const torch::Tensor& positives,
                           const torch::Tensor& candidates, double tau) {
  namespace F = torch::nn::functional;
  const torch::Tensor a = F::normalize(anchors, F::NormalizeFuncOptions().dim(1));
  const torch::Tensor p = F::normalize(positives, F::NormalizeFuncOptions().dim(1));
  const torch::Tensor c = F::normalize(candidates, F::NormalizeFuncOptions().dim(1));
  const torch::Tensor pos = (a * p).sum(1) / tau;           // [B]
  const torch::Tensor all = torch::matmul(a, c.t()) / tau;  // [B, M]
  return (torch::logsumexp(all, 1) - pos).sum();
}

torch::Tensor multinomial_nll(const torch::Tensor& logits, const torch::Tensor& x) {
  return -(torch::log_softmax(logits, 1) * x).sum(1).mean();
}

}  // namespace recbole::models::layers
