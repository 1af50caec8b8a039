#include "tasks/knowledge/kg_triple_source.h"

#include <algorithm>
#include <numeric>

#include "models/layers/knowledge.h"
#include "recbole/utils/error.h"
#include "recbole/utils/splitmix.h"

namespace recbole::tasks {
namespace {

// Combines two words into a stream key (SplitMix64's finaliser over a boost-style mix).
uint64_t mix(uint64_t a, uint64_t b) {
  return splitmix64_finalize(a ^ (b + kSplitMixGamma + (a << 6) + (a >> 2)));
}

std::vector<int64_t> entity_counts(const data::KnowledgeGraph& g) {
  std::vector<int64_t> c(static_cast<size_t>(g.n_entities()), 0);
  for (int32_t h : g.heads()) ++c[size_t(h)];
  for (int32_t t : g.tails()) ++c[size_t(t)];
  return c;
}

}  // namespace

KgTripleSource::KgTripleSource(std::unique_ptr<TrainingSource> recommendation,
                               const data::KnowledgeGraph& graph, const SourceSettings& settings,
                               bool beside)
    : rec_(std::move(recommendation)),
      graph_(graph),
      settings_(settings),
      tails_of_head_(graph.n_entities(), graph.n_entities(), graph.heads(), graph.tails()),
      counts_(entity_counts(graph)),
      beside_(beside) {
  if (!settings.negatives.enabled()) return;  // refused when a KG batch is asked for
  try {
    sampler_ = std::make_unique<data::NegativeSampler>(
        tails_of_head_, settings.negatives.distribution, settings.negatives.alpha, counts_);
  } catch (const DataError& e) {
    throw DataError(std::string("the knowledge graph: ") + e.what() +
                    " (a head entity is linked to every entity, so no negative tail exists)");
  }
}

int64_t KgTripleSource::batches_per_epoch() const {
  if (!kg_only_) return rec_->batches_per_epoch();
  return (graph_.n_triples() + settings_.batch_size - 1) / settings_.batch_size;
}

void KgTripleSource::start_epoch(int64_t epoch) {
  if (!kg_only_) rec_->start_epoch(epoch);
  epoch_ = epoch;
  pass_ = 0;
  batch_ = 0;
  start_pass();
}

void KgTripleSource::start_pass() {
  order_.resize(static_cast<size_t>(graph_.n_triples()));
  std::iota(order_.begin(), order_.end(), 0);
  data::Rng rng(mix(mix(settings_.seed, static_cast<uint64_t>(epoch_)), 0x4b47ULL + pass_));
  for (size_t i = order_.size(); i > 1; --i) std::swap(order_[i - 1], order_[rng.below(i)]);
  next_ = 0;
}

bool KgTripleSource::advance(int64_t& begin, int64_t& end) {
  const auto n = static_cast<int64_t>(order_.size());
  if (next_ >= n) {
    if (kg_only_) return false;
    ++pass_;
    start_pass();
  }
  begin = next_;
  end = std::min<int64_t>(next_ + settings_.batch_size, n);
  next_ = end;
  ++batch_;
  return true;
}

bool KgTripleSource::next(data::Batch& batch) {
  int64_t begin = 0, end = 0;
  if (kg_only_) {
    batch = data::Batch{};
    if (!advance(begin, end)) return false;
    fill(batch, begin, end);
    return true;
  }
  if (!rec_->next(batch)) return false;
  if (beside_ && advance(begin, end)) fill(batch, begin, end);
  return true;
}

void KgTripleSource::skip_batches(int64_t n) {
  if (!kg_only_) rec_->skip_batches(n);
  if (!kg_only_ && !beside_) return;
  int64_t begin = 0, end = 0;
  for (int64_t k = 0; k < n && advance(begin, end); ++k) {
  }
}

void KgTripleSource::fill(data::Batch& batch, int64_t begin, int64_t end) {
  if (!sampler_)
    throw ConfigError(
        "train_neg_sample_args: is null, but the KG batches of this knowledge model need "
        "negative tails; expected {distribution: uniform, sample_num: 1, ...}");
  // The batch number (counted from the epoch's start) keys the negatives' stream.
  data::Rng rng(mix(mix(settings_.seed ^ 0x6b67ULL, static_cast<uint64_t>(epoch_)),
                    static_cast<uint64_t>(batch_ - 1)));
  std::vector<int64_t> h, r, t, n;
  for (int64_t p = begin; p < end; ++p) {
    const size_t k = static_cast<size_t>(order_[size_t(p)]);
    // Every row's negative is drawn on every rank, so that a rank's rows do not depend on the
    // world size.
    const int32_t neg = sampler_->sample(graph_.heads()[k], rng);
    if ((p - begin) % settings_.world_size != settings_.rank) continue;
    h.push_back(graph_.heads()[k]);
    r.push_back(graph_.relations()[k]);
    t.push_back(graph_.tails()[k]);
    n.push_back(neg);
  }
  batch.columns[models::layers::kKgHeads] = data::id_tensor(h);
  batch.columns[models::layers::kKgRelations] = data::id_tensor(r);
  batch.columns[models::layers::kKgTails] = data::id_tensor(t);
  batch.columns[models::layers::kKgNegTails] = data::id_tensor(n);
}

}  // namespace recbole::tasks
