#pragma once
// FFM (RecBole's FieldAwareFactorizationMachine): one embedding view per field (own tables);
// the pair (i, j) of features contributes ⟨V_field(j)[i], V_field(i)[j]⟩; plus the shared
// first-order part. Features are ordered token, float, token_seq, float_seq (FFM's own order);
// their fields come from the `fields` map (null: every feature its own field), one view per
// field. As in RecBole, sequence features read view 0's tables in every view (not field-aware).
#include <vector>

#include "models/context/context_model.h"

namespace recbole::models {

class FFM : public ContextModel {
 public:
  explicit FFM(const ModelContext& ctx);
  torch::Tensor logits(const data::Batch& batch) override;

 private:
  std::vector<layers::ContextEmbedding> views_;
  torch::Tensor order_;     // [n] int64: E position of FFM feature k
  torch::Tensor seq_mask_;  // [1, n, 1] bool: sequence features (FFM order)
  torch::Tensor left_view_, left_pos_, right_view_, right_pos_;  // [P] int64
};

}  // namespace recbole::models
