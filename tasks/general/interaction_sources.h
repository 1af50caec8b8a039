#pragma once
// The general task's training sources over the training interactions: pairs with sampled
// negatives (pair_source.h), pointwise samples with labels (pointwise_source.h) and user rows
// (user_rows_source.h), chosen by the model's input type. The knowledge task trains on them too.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "recbole/data/interaction_matrix.h"
#include "tasks/training_source.h"

namespace recbole::tasks {

// What the general task's sources are built from (CPU; must outlive the source).
struct InteractionData {
  const std::vector<int32_t>& users;       // [n_train] training interactions
  const std::vector<int32_t>& items;       // [n_train]
  const data::InteractionMatrix& train;    // user → items of the training split
  const std::vector<int64_t>& item_count;  // [n_items] training interactions per item
};

// The source for `input` (pairwise, pointwise or user rows; nullptr for fitted-once models).
// A pointwise model without negative sampling is a ConfigError naming the model and the key.
std::unique_ptr<TrainingSource> make_training_source(models::InputType input,
                                                     const std::string& model,
                                                     const InteractionData& data,
                                                     const SourceSettings& settings);

}  // namespace recbole::tasks
