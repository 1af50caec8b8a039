#pragma once
// FPMC (Rendle et al. 2010) as RecBole defines it, with baskets of one item: the score of item i
// for user u after last item l is UI[u]·IU[i] + IL[i]·LI[l] (matrix factorisation plus a
// factorised first-order transition), l = item_seq[len − 1]. Four tables xavier_normal; BPR
// with one sampled negative per sample (pairwise input, as RecBole declares it).
#include "models/model.h"

namespace recbole::models {

class FPMC : public Model {
 public:
  explicit FPMC(const ModelContext& ctx);
  // batch: users, item_seq, item_seq_len, items, neg_items → the BPR loss.
  torch::Tensor calculate_loss(const data::Batch& batch) override;
  torch::Tensor full_sort_predict(const data::Batch& batch) override;
  torch::Tensor predict(const data::Batch& batch) override;

 private:
  torch::Tensor last_items(const data::Batch& batch) const;
  torch::Tensor score(const data::Batch& batch, const torch::Tensor& items) const;

  torch::Tensor ui_, iu_, li_, il_;
};

}  // namespace recbole::models
