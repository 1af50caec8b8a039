#pragma once
// ContextModel: the base of the context models (RecBole's ContextRecommender). It builds the
// field embeddings E ([B, F, embedding_size], models/layers/context_embedding.h) and the
// first-order part ([B, 1]) from the run's feature schema; a model implements logits() over a
// feature batch. Loss: mean binary cross-entropy with logits on batch.labels plus the model's
// regulariser (added once per batch); predict: σ(logits). full_sort_predict scores every item
// for each user of a batch by predict over the rows (user, item) as RecBole's fallback for
// context models does: the user's features repeated, the item-side columns of every item
// (ModelContext::item_features) attached.
#include <string>
#include <vector>

#include <torch/torch.h>

#include "models/layers/context_embedding.h"
#include "models/layers/direct_mlp.h"
#include "models/model.h"
#include "recbole/config/key_decl.h"

namespace recbole::models {

// The item-side input columns by field name, rows indexed by item id ([n_items, ...] CPU,
// data/feature_schema.h layouts): a part of the model context that the context task gives its
// models (beside data::FeatureSchema), for scoring every item of a user (full_sort_predict).
struct ItemFeatureColumns {
  static constexpr const char* kPart = "the item feature columns that the context task prepares";
  const std::vector<std::pair<std::string, torch::Tensor>>& columns;
};

class ContextModel : public Model {
 public:
  // towers: embed only the user- and item-side fields (DSSM).
  ContextModel(std::string name, const ModelContext& ctx, bool towers = false);

  // [B] float32 logits on the device (a probability for models with probability_output()).
  virtual torch::Tensor logits(const data::Batch& batch) = 0;
  // A scalar added to the loss once per batch (undefined: none).
  virtual torch::Tensor regularizer() { return {}; }
  // True when logits() returns probabilities already (DCNV2): the loss is then BCE on them,
  // each log clamped at -100 as PyTorch's BCELoss.
  virtual bool probability_output() const { return false; }

  // The loss less the regulariser: a mean over the batch's rows of a per-row term (binary
  // cross-entropy with the logits, or on the probabilities with probability_output()).
  virtual torch::Tensor row_loss(const data::Batch& batch);
  // row_loss(batch) + regularizer().
  torch::Tensor calculate_loss(const data::Batch& batch) override;
  torch::Tensor predict(const data::Batch& batch) override;
  // batch: users [B] and every user-side input field ([B, ...], Batch::features) on the
  // device. Returns [B, n_items] float32 on the device, item 0 (the padding) included, from
  // predict over the rows of eval_batch_size / n_items users at a time (at least one), as
  // RecBole's evaluation of a context model. ConfigError when the model reads an
  // interaction-side field, which a (user, item) pair that never met has no value for.
  torch::Tensor full_sort_predict(const data::Batch& batch) override;
  // With a closed form (closed_form_backward applies) the step runs without autograd; when
  // trains_in_parts(), in parts of kPartRows rows on the CPU pool (layers::backward_parts: the
  // batch's loss and gradient, each part's dropout keyed by its index, whatever the thread
  // count); otherwise Model's.
  torch::Tensor train_step(const data::Batch& batch, TrainStep& step) override;
  // Why parts: a context step is some hundred small libtorch ops on [B, 10..400] tensors, and
  // their dispatch and element-wise passes, not the GEMMs, are most of it (DeepFM: sgemm ~40 %
  // in perf); two parts keep both cores busy. 1024 rows: two parts of the default 2048-row
  // batch; 512-row parts were no faster on 2 cores.
  static constexpr int64_t kPartRows = 1024;
  // Whether a step can run in parts: parameters on the CPU, and no BatchNorm (its statistics
  // are the whole batch's). (A context model's only training randomness is its dropout, through
  // layers::dropout, which keys each part; a lint keeps libtorch's dropout and
  // MultiheadAttention out of models/.)
  bool trains_in_parts() const;

  // The logit's closed form, when a model's logits() is the first-order part plus any of these
  // terms, each with its gradient written out: LR is the first-order part alone, FM adds the
  // FM term, WideDeep the deep part, DeepFM both.
  struct ClosedForm {
    bool first_order = false;  // the first-order part (false: no closed form)
    bool fm = false;           // + fm_interaction(E)
    bool deep = false;         // + deep_part()'s logit over E flattened to [B, F·d]
  };
  virtual ClosedForm closed_form() const { return {}; }
  // The deep part of a closed form with one (owned by the model).
  virtual layers::DirectMLP* deep_part() const { return nullptr; }
  // Whether closed_form_backward runs for this model: a closed form, parameters float32 on
  // the CPU.
  bool closed_form_applies() const;
  // calculate_loss(batch) with its gradient added to the parameters' gradients by hand: the
  // same numbers as loss.backward() up to float rounding order (tested), in a few passes over
  // the batch instead of an autograd graph of some forty operations — the whole of an LR or FM
  // step on ml-100k. Returns the loss (a detached scalar). Parameters the logit does not use
  // (LR's second-order table) keep their gradient as it is, as with autograd. The forms with a
  // deep part run in parts of kPartRows rows on the CPU pool, each part's dropout keyed as
  // backward_parts keys it, so that its masks are those of the autograd step in parts.
  torch::Tensor closed_form_backward(const data::Batch& batch);
  // The closed form's logits into closed_form_buffers_.z ([B]; every form but kFirstOrder also
  // fills e with E, and those with the FM term sum with Σ_f E). predict() uses it when
  // gradients are off.
  void closed_form_logits(const data::Batch& batch);

 protected:
  // E: [B, F, d].
  torch::Tensor embed(const data::Batch& batch) { return embedding_->forward(batch); }
  // The first-order part: [B, 1].
  torch::Tensor first_order(const data::Batch& batch) { return first_order_->forward(batch); }
  // Ends a model's constructor: RecBole's xavier-normal pass (every Embedding; every Linear
  // unless linears is false, biases 0), then the move to the device.
  void finish(bool init_linears = true);
  // The widths of a deep part: input_width, then mlp_hidden_size.
  static std::vector<int64_t> mlp_sizes(const ModelContext& ctx, int64_t input_width);
  // FFM's and FwFM's `fields` map {id: [feature names]}: the field id of each of `names`. Null
  // → every feature its own field (position k → k). Otherwise features are mapped by name (see
  // docs/models.md for FwFM's difference from RecBole); a name that is not a feature of the run
  // is skipped with a warning, as RecBole skips it. ConfigError when a feature is in no field or
  // in two, when an id is not an integer, or when the ids that hold features are not 0..K−1.
  std::vector<int64_t> field_map(const ModelContext& ctx,
                                 const std::vector<std::string>& names) const;

  layers::ContextFields fields_;
  int64_t embedding_size_;
  int64_t num_fields_;
  layers::ContextEmbedding embedding_{nullptr};
  layers::FirstOrderLinear first_order_{nullptr};

 private:
  // closed_form_backward's working rows, kept between batches (one set per part for the forms
  // with a deep part).
  struct ClosedFormBuffers {
    std::vector<float> z, dz;      // [B] logits, dloss/dz
    std::vector<float> e;          // [B, F, d]: E, then dloss/dE
    std::vector<float> sum;        // [B, d]: Σ_f E
    std::vector<float> squares;    // [d]: Σ_f E² of one row
    layers::DirectMLP::Work deep;  // the deep part's activations and gradients
  };
  ClosedFormBuffers closed_form_buffers_;
  std::vector<ClosedFormBuffers> part_buffers_;
  // The closed form's logits of `batch` into buf (dropout in the deep part when training).
  void closed_form_logits(const data::Batch& batch, ClosedFormBuffers& buf) const;
  // Σ over the batch's rows of the binary cross-entropy of buf.z against its labels, and
  // buf.dz = its gradient divided by `rows` (the whole batch's, for a part's share of the mean):
  // kernels::bce_with_logits on the batch's labels.
  static double bce_with_logits(const data::Batch& batch, int64_t rows, ClosedFormBuffers& buf);
  // The step of the forms with a deep part: closed_form_backward in parts.
  torch::Tensor deep_closed_form_backward(const data::Batch& batch);

  // full_sort_predict's inputs: the id fields, the other user-side input fields, the
  // item-side input columns by item id (on the device) and the interaction-side input fields.
  std::string uid_field_, iid_field_;
  int64_t eval_rows_;  // eval_batch_size
  std::vector<std::string> user_fields_, inter_fields_;
  std::vector<std::pair<std::string, torch::Tensor>> item_columns_;
  bool item_columns_given_ = false;
};

// The `fields` key of FFM and FwFM: a field map {id: [features]}, or null.
config::Key field_map_key();

}  // namespace recbole::models
