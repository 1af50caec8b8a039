#pragma once
// The shared machinery of context models (RecBole's ContextRecommender and its layers):
//  - ContextEmbedding: one embedding table for all token fields (row = id + the field's offset;
//    no padding row: id 0 of a field is an ordinary row), one table per token_seq field pooled
//    by a masked mean (or sum) over the non-zero ids, numerical float fields as value × a learned
//    row (discretised: their bucket id's row), numerical float_seq fields as the masked mean of
//    base × the index's row (value × row 1, or 1 × the bucket's row). Output [B, F, width] in
//    RecBole's field order: token_seq fields, token fields, float_seq fields, float fields
//    (each group in registration order).
//  - FirstOrderLinear: the same tables of width 1 (token_seq summed, float_seq averaged) summed
//    over the fields, plus a bias (0): [B, 1].
//  - ContextMLP: RecBole's MLPLayers with optional BatchNorm: Dropout → Linear → [BN] → act per
//    layer, the activation after the last Linear too.
//  - xavier_init_context(): RecBole's init pass of the context models (xavier_normal on every
//    embedding table and Linear weight, Linear biases 0).
// Tables are created on the CPU from the seeded generator; the model moves itself to its device.
#include <string>
#include <vector>

#include <torch/torch.h>

#include "recbole/data/batch.h"
#include "recbole/data/feature_schema.h"

namespace recbole::models::layers {

// The fields a context model embeds, grouped by type (RecBole's four lists).
struct ContextFields {
  std::vector<data::FeatureSpec> token, token_seq, float_fields, float_seq;
  // towers: only user- and item-side fields (RecBole's double tower; interaction-side
  // features are left out).
  explicit ContextFields(const data::FeatureSchema& schema, bool towers = false);
  // F: the number of embedded fields.
  int64_t size() const {
    return static_cast<int64_t>(token.size() + token_seq.size() + float_fields.size() +
                                float_seq.size());
  }
  // Field names in E's order (token_seq, token, float_seq, float).
  std::vector<std::string> names() const;
  // Field sides in E's order.
  std::vector<data::FeatureSide> sides() const;
};

class ContextEmbeddingImpl : public torch::nn::Module {
 public:
  // seq_sum: token_seq fields summed instead of averaged (the first-order part).
  ContextEmbeddingImpl(const ContextFields& fields, int64_t width, bool seq_sum = false);
  // batch.features on the model's device → [B, F, width].
  torch::Tensor forward(const data::Batch& batch);
  // The weight tables (regularisers that name them).
  std::vector<torch::Tensor> tables() const;
  // The direct path: forward and its backward as plain loops over the batch's ids, without
  // autograd, for the closed-form training step of ContextModel. Batch and tables on the CPU,
  // float32; B = batch.users.size(0); buffers are the caller's (reused: no allocation per
  // batch). Equal to forward up to float rounding (a pooled field adds its scaled rows
  // instead of dividing their sum).
  //   forward_direct: out [B, F, width] = forward(batch).
  //   sum_direct:     out [B, width] = forward(batch).sum(1).
  //   add_gradient:   adds to each table's gradient (zeros when undefined) the gradient of
  //                   Σ grad ⊙ forward(batch); grad [B, F, width], or with shared_by_fields
  //                   [B, width], the same gradient for every field.
  void forward_direct(const data::Batch& batch, float* out) const;
  void sum_direct(const data::Batch& batch, float* out) const;
  void add_gradient(const data::Batch& batch, const float* grad, bool shared_by_fields = false);
  // FM's two walks in one (first: a first-order part's tables, the same fields at width 1):
  // forward_direct(batch, out) with first.sum_direct(batch, first_out), and
  // add_gradient(batch, grad) with first.add_gradient(batch, first_grad, true). Each id is
  // read once for both; every sum gets the same terms in the same order as the separate calls.
  void forward_direct_with(const ContextEmbeddingImpl& first, const data::Batch& batch, float* out,
                           float* first_out) const;
  void add_gradient_with(ContextEmbeddingImpl& first, const data::Batch& batch, const float* grad,
                         const float* first_grad);

 private:
  // Calls term(r, c, t, row, scale, sum_scale) for every term of E[r, c] = Σ scale · T_t[row],
  // the forward's whole arithmetic: t numbers a table in tables()' order; sum_scale is the
  // term's scale with token_seq fields summed (= scale for every other field).
  template <class Term>
  void for_each_term(const data::Batch& batch, Term&& term) const;

  ContextFields fields_;
  int64_t width_;
  bool seq_sum_;
  torch::Tensor token_offsets_;  // [n_token] int64 buffer
  torch::Tensor float_offsets_;  // [n_float] int64 buffer
  torch::nn::Embedding token_table_{nullptr}, float_table_{nullptr};
  std::vector<torch::nn::Embedding> seq_tables_, float_seq_tables_;
};
TORCH_MODULE(ContextEmbedding);

class FirstOrderLinearImpl : public torch::nn::Module {
 public:
  explicit FirstOrderLinearImpl(const ContextFields& fields);
  // → [B, 1]
  torch::Tensor forward(const data::Batch& batch);
  // Its weight tables (not the bias), for xDeepFM's regulariser.
  std::vector<torch::Tensor> tables() const { return embedding_->tables(); }
  // The direct path (see ContextEmbedding): out [B] = forward(batch); add_gradient adds the
  // gradient of Σ_b grad[b] · forward(batch)[b] (grad [B]) to the tables' and the bias's.
  // With `paired` (the model's field embedding, the same fields: FM) the same walk over the
  // ids also does paired->forward_direct(batch, paired_out) or
  // paired->add_gradient(batch, paired_grad) (ContextEmbedding::forward_direct_with).
  void forward_direct(const data::Batch& batch, float* out,
                      const ContextEmbeddingImpl* paired = nullptr,
                      float* paired_out = nullptr) const;
  void add_gradient(const data::Batch& batch, const float* grad,
                    ContextEmbeddingImpl* paired = nullptr, const float* paired_grad = nullptr);

 private:
  ContextEmbedding embedding_{nullptr};
  torch::Tensor bias_;
};
TORCH_MODULE(FirstOrderLinear);

class ContextMLPImpl : public torch::nn::Module {
 public:
  ContextMLPImpl(std::vector<int64_t> sizes, double dropout, std::string activation,
                 bool batch_norm = false);
  // [B, sizes.front()] → [B, sizes.back()]
  torch::Tensor forward(torch::Tensor x);
  const std::vector<torch::nn::Linear>& linears() const { return linears_; }
  double dropout() const { return dropout_; }
  const std::string& activation() const { return activation_; }
  bool batch_norm() const { return !norms_.empty(); }

 private:
  std::vector<torch::nn::Linear> linears_;
  std::vector<torch::nn::BatchNorm1d> norms_;
  double dropout_;
  std::string activation_;
};
TORCH_MODULE(ContextMLP);

// Xavier-normal on every Embedding weight and every Linear weight under `module` (biases 0).
void xavier_init_context(torch::nn::Module& module, bool linears = true);

// The factorisation-machine term of E [B, F, d]: ½ Σ_k ((Σ_f E)² − Σ_f E²) → [B, 1], or the
// per-dimension vector [B, d] when reduce_sum is false.
torch::Tensor fm_interaction(const torch::Tensor& e, bool reduce_sum = true);

}  // namespace recbole::models::layers
