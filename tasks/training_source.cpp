#include "tasks/training_source.h"

#include "recbole/config/config.h"
#include "recbole/utils/error.h"

namespace recbole::tasks {

void TrainingSource::use_batches(models::PassBatches batches) {
  if (batches != models::PassBatches::kMain)
    throw ConfigError(
        "a pass over auxiliary batches (the knowledge graph's triples) needs a task family "
        "whose source has them (a knowledge model on a dataset with .kg and .link files)");
}

void TrainingSource::skip_batches(int64_t n) {
  data::Batch dropped;
  for (int64_t k = 0; k < n && next(dropped); ++k) {
  }
}

NegativeSampling negative_sampling_from_config(const config::Config& config) {
  NegativeSampling n;
  const YAML::Node neg = config.node("train_neg_sample_args");
  n.distribution = neg["distribution"] ? neg["distribution"].as<std::string>() : "none";
  if (!n.enabled()) return n;
  // The config check has made candidate_num an int >= 1 when dynamic is true.
  if (neg["dynamic"] && neg["dynamic"].as<std::string>() == "true")
    n.candidate_num = neg["candidate_num"].as<int64_t>();
  // A batch holds train_batch_size // sample_num positives, each with sample_num negatives
  // (RecBole's rule). With sample_num above the batch size that would be one positive and
  // sample_num rows per batch: an allocation the user did not mean (24 GB at 10⁹).
  const int64_t wanted = neg["sample_num"].as<int64_t>();
  const int64_t batch = config.get_int("train_batch_size");
  if (wanted > batch)
    throw ConfigError("train_neg_sample_args: sample_num " + std::to_string(wanted) +
                      " is larger than train_batch_size " + std::to_string(batch) +
                      "; expected sample_num <= train_batch_size (a batch holds "
                      "train_batch_size // sample_num positives, each with sample_num "
                      "negatives)");
  n.sample_num = static_cast<int>(wanted);
  if (neg["alpha"]) n.alpha = neg["alpha"].as<double>();
  return n;
}

SourceSettings source_settings_from_config(const config::Config& config, int rank, int world_size) {
  SourceSettings s;
  s.batch_size = config.get_int("train_batch_size");
  s.shuffle = config.get_bool("shuffle");
  s.seed = static_cast<uint64_t>(config.get_int("seed"));
  s.rank = rank;
  s.world_size = world_size;
  s.negatives = negative_sampling_from_config(config);
  return s;
}

}  // namespace recbole::tasks
