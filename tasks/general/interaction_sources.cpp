#include "tasks/general/interaction_sources.h"

#include "recbole/utils/error.h"
#include "tasks/general/pair_source.h"
#include "tasks/general/pointwise_source.h"
#include "tasks/general/user_rows_source.h"

namespace recbole::tasks {

std::unique_ptr<TrainingSource> make_training_source(models::InputType input,
                                                     const std::string& model,
                                                     const InteractionData& data,
                                                     const SourceSettings& settings) {
  switch (input) {
    case models::InputType::kPairwise:
      return std::make_unique<PairSource>(data, settings);
    case models::InputType::kPointwise:
      if (!settings.negatives.enabled())
        throw ConfigError(model +
                          " is a pointwise model: its labels come from sampled negatives, "
                          "so train_neg_sample_args must not be null; expected e.g. "
                          "{distribution: uniform, sample_num: 1}");
      return std::make_unique<PointwiseSource>(data, settings);
    case models::InputType::kUserRows:
      return std::make_unique<UserRowsSource>(data, settings);
    case models::InputType::kFitOnce:
      return nullptr;
    case models::InputType::kNextItem:
      break;
  }
  throw ConfigError(model + ": the general task has no training source for input type \"" +
                    std::string(models::input_type_name(input)) + "\"");
}

}  // namespace recbole::tasks
