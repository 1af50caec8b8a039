#pragma once
// What RecBole's sequential models share (SequentialRecommender): an item table [n_items, d]
// whose row 0 is the padding item (initialised like the others, never zeroed: its lookups get no
// gradient, while the full products of the CE logits and full sort reach it, as in RecBole), an
// encoder of each row's item_seq / item_seq_len into h [B, d], and the losses over h:
//   CE:  mean_b cross-entropy(h_b · Eᵀ, target_b) over every item, row 0 included;
//   BPR: mean_b −log(1e−10 + σ(h_b·e_pos − h_b·e_neg)) with the sampled neg_items.
// full_sort_predict = h · Eᵀ ([B, n_items]); predict = score_items(h, items) = h_b · e_{items_b}.
#include <functional>
#include <string>

#include "models/capabilities.h"
#include "models/layers/sequence.h"
#include "models/model.h"

namespace recbole::models {

class SequentialModel : public Model, public HistoryScores, public CandidateScores {
 public:
  SequentialModel(std::string name, const ModelContext& ctx);

  // h: [B, d] float32 on the device, for layers::item_seq(batch) [B, L] and
  // layers::item_seq_len(batch) [B].
  virtual torch::Tensor encode(const data::Batch& batch) = 0;
  // The item vectors the scores are taken against: [n_items, d].
  virtual torch::Tensor output_items() const { return item_embedding_; }

  torch::Tensor calculate_loss(const data::Batch& batch) override;
  // One optimisation step over the batch in micro-batches of at most kMicroBatch rows (cut
  // from longest_first's order), each loss weighted by its share of the rows before its
  // backward: the gradient of the batch's mean loss (the losses above are means over rows),
  // while the activations kept for backward are those of the micro-batches in flight (128-row
  // parts, two at a time on two threads: a SASRec run on ml-100k peaks at 928 MiB). On the CPU the
  // micro-batches run in parallel on the pool (layers::backward_parts), so a model's
  // calculate_loss and encode must not change the model and must draw randomness only through
  // layers::dropout; the results do not depend on the thread count.
  torch::Tensor train_step(const data::Batch& batch, TrainStep& step) override;
  static constexpr int64_t kMicroBatch = 128;
  torch::Tensor full_sort_predict(const data::Batch& batch) override;
  // score_items(encode(batch), batch.items); a model changes how items are scored through
  // score_items, so that predict_candidates stays predict.
  torch::Tensor predict(const data::Batch& batch) final;
  // Encodes each of the n sequences once (the candidate_num blocks of rows share them) and
  // scores the candidates against it: predict's scores up to the rounding of a smaller batch.
  torch::Tensor predict_candidates(const data::Batch& batch, int64_t candidate_num) override;
  // A sequence is all a sequential model reads (the serving side builds item_seq from a
  // caller's history); one that also reads the user (FPMC) says false.
  bool scores_from_history() const override { return true; }
  // With loss_type BPR, pairs (a sampled negative per sample); else the descriptor's.
  InputType input_type() const override;

 protected:
  // The scores of items [B] for the encodings h [B, d]: [B].
  virtual torch::Tensor score_items(const torch::Tensor& h, const torch::Tensor& items) const {
    return (h * output_items().index_select(0, items)).sum(-1);
  }

  // The step of train_step: part_loss(start, n) for each micro-batch [start, start + n)
  // of the batch's `rows` through layers::backward_parts, the gradients' finishing and the
  // optimizer step; returns the sum of the parts' losses (detached).
  torch::Tensor step_in_parts(TrainStep& step, int64_t rows,
                              const std::function<torch::Tensor(int64_t, int64_t)>& part_loss);

  // The batch's rows reordered by item_seq_len, longest first (ties in batch order). The
  // loss is a sum over rows, so the order changes only which part (and dropout key) a row
  // falls in; but a part of short rows runs only to its own longest row (the models narrow
  // to it), which on ml-100k leaves out ~19 % of the position-wise work and ~25 % of the
  // attention's, and the pool takes the costliest parts first.
  static data::Batch longest_first(const data::Batch& batch);

  // Lookups of the item table with RecBole's padding_idx 0 (no gradient to row 0 through them).
  torch::Tensor lookup(const torch::Tensor& ids) const;

  bool bpr_ = false;      // loss_type BPR (else CE)
  int64_t max_len_ = 50;  // MAX_ITEM_LIST_LENGTH
  torch::Tensor item_embedding_;
};

}  // namespace recbole::models
