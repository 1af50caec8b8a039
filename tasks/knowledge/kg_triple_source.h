#pragma once
// KgTripleSource: the training source of the knowledge task, RecBole's KnowledgeBasedDataLoader.
// It wraps the recommendation source of a knowledge model and has RecBole's three states:
//   RS    the recommendation batches alone (models that ignore the KG, and KGAT's RS pass);
//   RSKG  each recommendation batch with the next batch of KG triples beside it (kg_heads,
//         kg_relations, kg_tails, kg_neg_tails): when the KG pass runs out inside an epoch the
//         next one starts, so an epoch sees as many KG batches as recommendation batches;
//   KG    the KG triples alone, one pass (use_batches(kAuxiliary): KGAT's KG pass).
// The main state (RS or RSKG) is the model's (ModelDescriptor::auxiliary_batches). Triples are
// walked in a new order every pass, batch_size per batch.
//
// Negative tails are drawn as RecBole's KGSampler: an entity id in [1, n_entities) that is not
// a tail of the head under any relation, uniformly or by popularity^alpha (occurrences as head
// plus as tail), per train_neg_sample_args.
//
// Deterministic from (seed, epoch): the KG order of each pass and each batch's negatives come
// from streams keyed by (seed, epoch, pass) and (seed, epoch, batch). Row p of a KG batch goes
// to rank p % world_size, as the recommendation rows.
#include <memory>
#include <vector>

#include "recbole/data/interaction_matrix.h"
#include "recbole/data/knowledge_graph.h"
#include "recbole/data/negative_sampler.h"
#include "tasks/training_source.h"

namespace recbole::tasks {

class KgTripleSource : public TrainingSource {
 public:
  // `graph` must outlive the source. `beside`: the main state is RSKG (else RS). KG batches
  // need settings.negatives enabled (a ConfigError naming train_neg_sample_args otherwise, when
  // the first one is asked for).
  KgTripleSource(std::unique_ptr<TrainingSource> recommendation, const data::KnowledgeGraph& graph,
                 const SourceSettings& settings, bool beside = true);

  void start_epoch(int64_t epoch) override;
  bool next(data::Batch& batch) override;
  int64_t batches_per_epoch() const override;
  void skip_batches(int64_t n) override;
  void use_batches(models::PassBatches batches) override {
    kg_only_ = batches != models::PassBatches::kMain;
  }
  data::TrainBatcher* sampled_pair_batcher() override {
    return beside_ || kg_only_ ? nullptr : rec_->sampled_pair_batcher();
  }
  // Dynamic negatives are the recommendation batches' (RecBole samples the KG's tails
  // statically).
  bool set_candidate_scorer(CandidateScorer scorer) override {
    return rec_->set_candidate_scorer(std::move(scorer));
  }

 private:
  void start_pass();
  // Moves to the next KG batch (a new pass when this one is over, unless `kg_only`): its rows
  // [begin, end) of order_; false when a KG-only pass is over.
  bool advance(int64_t& begin, int64_t& end);
  void fill(data::Batch& batch, int64_t begin, int64_t end);

  std::unique_ptr<TrainingSource> rec_;
  const data::KnowledgeGraph& graph_;
  SourceSettings settings_;
  data::InteractionMatrix tails_of_head_;  // head → its tails (any relation): the exclusions
  std::vector<int64_t> counts_;            // occurrences per entity (the popularity sampler)
  std::unique_ptr<data::NegativeSampler> sampler_;
  std::vector<int64_t> order_;  // the current pass's triple order
  bool beside_, kg_only_ = false;
  int64_t epoch_ = 0, pass_ = 0, next_ = 0, batch_ = 0;
};

}  // namespace recbole::tasks
