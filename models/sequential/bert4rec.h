#pragma once
// BERT4Rec (Sun et al. 2019) as RecBole defines it. The item table has one more row than there
// are items: id M = n_items is the [mask] token. A sequence s [B, l] goes through
//   E[s] + P[0..l) → LayerNorm → dropout → the post-LN transformer with the bidirectional mask
//   (padding keys only) → Linear(d → d) → GELU → LayerNorm        = out [B, l, d],
// and a position's scores are out · E[0..n_items)ᵀ + bias (bias [n_items], zero at init).
// Init as SASRec: every Linear and table N(0, initializer_range²), LayerNorm (1, 0).
//
// Training (RecBole's mask_itemseq transform, always on, drawn here per batch): with probability
// ft_ratio the batch is in last-item mode (each row's last item masked), otherwise each position
// holding an item is masked with probability mask_ratio. Of a row's masked positions the last K =
// ⌊mask_ratio · L⌋ count, and a mask at position 0 never does (RecBole's index 0 doubles as
// padding); the sample's target column is not read. Loss: the mean over counted positions of
// CE over every item (or BPR against an item not in the row). A batch with no counted position
// has a zero loss (RecBole: 0/0 and a NaN error).
//
// Evaluation (RecBole's layout): the row's items shifted one place left, the oldest dropped,
// and the mask written at position len − 1: [s_1 … s_{len−1}, M, 0 …]; the scores are those of
// that position.
#include <vector>

#include "models/layers/sequence.h"
#include "models/sequential/sequential_model.h"

namespace recbole::models {

class BERT4Rec : public SequentialModel {
 public:
  explicit BERT4Rec(const ModelContext& ctx);
  // Evaluation: the state at the mask after each row's items, [B, d].
  torch::Tensor encode(const data::Batch& batch) override;
  // E[0..n_items): the mask token is never scored.
  torch::Tensor output_items() const override { return item_embedding_.narrow(0, 0, n_items_); }
  torch::Tensor calculate_loss(const data::Batch& batch) override;
  torch::Tensor train_step(const data::Batch& batch, TrainStep& step) override;
  torch::Tensor full_sort_predict(const data::Batch& batch) override;

  // A training batch's masks, on the CPU: seq [B, L] int64 with every masked position set to M;
  // for each counted masked position, in row order, its row, position, the item it held and a
  // negative (BPR only: an item in [1, n_items) not in the row); offsets [B + 1]: the counted
  // positions of row r are [offsets[r], offsets[r + 1]). The draws come from one word of
  // libtorch's CPU generator per batch, so a seed repeats them and a resumed run too.
  struct Masked {
    torch::Tensor seq, rows, positions, pos_items, neg_items;
    std::vector<int64_t> offsets;
    int64_t counted() const { return offsets.back(); }
  };
  Masked mask(const data::Batch& batch) const;

  // RecBole's evaluation input (see above): item_seq [B, L], item_seq_len [B] → [B, L] int64.
  static torch::Tensor mask_last(const torch::Tensor& item_seq, const torch::Tensor& item_seq_len,
                                 int64_t mask_id);

 protected:
  // h · e_item + the item's output bias: [B].
  torch::Tensor score_items(const torch::Tensor& h, const torch::Tensor& items) const override;

 private:
  // The embeddings and the encoder: seq [B, l] → [B, l, d].
  torch::Tensor forward_all(const torch::Tensor& seq);
  // The output head (dense, GELU, LayerNorm), row by row: [..., d] → [..., d].
  torch::Tensor output_head(const torch::Tensor& h);
  // The sum of the loss over the counted positions of rows [begin, end) (a zero with a graph
  // when there are none, so that every rank takes the same backward).
  torch::Tensor loss_sum(const Masked& m, int64_t begin, int64_t end);

  int64_t n_items_, mask_k_;
  double mask_ratio_, ft_ratio_, dropout_;
  torch::Tensor position_embedding_, output_bias_;
  layers::TransformerEncoder encoder_{nullptr};
  torch::nn::LayerNorm layer_norm_{nullptr}, output_ln_{nullptr};
  torch::nn::Linear output_ffn_{nullptr};
};

}  // namespace recbole::models
