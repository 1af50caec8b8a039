#pragma once
// Evaluation sources: what the evaluator evaluates, built by the task pipeline for each split.
//  - RankingSource: queries, each a row with its positives and an optional mask; the model
//    scores every item for a row from batch(rows) (full_sort_predict) and the evaluator ranks
//    them (full or sampled ranking). General task: a row is a user.
//  - LabeledSource: batches of (query, item, label) rows; the model scores each pair
//    (predict) and the evaluator computes value metrics (AUC, LogLoss, ...) from the
//    (score, label) records (the labelled mode).
#include <cstdint>
#include <vector>

#include "recbole/data/batch.h"
#include "recbole/data/interaction_matrix.h"

namespace recbole::tasks {

class EvaluationSource {
 public:
  enum class Kind { kRanking, kLabeled };
  virtual ~EvaluationSource() = default;
  virtual Kind kind() const = 0;
  // Nothing to evaluate (an empty split).
  virtual bool empty() const = 0;
};

class RankingSource : public EvaluationSource {
 public:
  Kind kind() const override { return Kind::kRanking; }
  bool empty() const override { return rows().empty(); }
  // The evaluated rows, ascending: every row with at least one positive.
  virtual const std::vector<int32_t>& rows() const = 0;
  // Row → its positive items (ascending, distinct).
  virtual const data::InteractionMatrix& positives() const = 0;
  // Row → items never ranked (the history); nullptr when nothing is masked. A row's own
  // positives are never masked.
  virtual const data::InteractionMatrix* mask() const = 0;
  // The model's input for `rows` (CPU tensors).
  virtual data::Batch batch(const std::vector<int64_t>& rows) const = 0;
  // True when a row id is a user id, so that user score factors can be indexed by it.
  virtual bool rows_are_users() const = 0;
};

// The general task's queries: a row is a user; the batch holds `users`.
class UserRankingSource : public RankingSource {
 public:
  // positives, mask: user → items (must outlive this); mask may be null.
  UserRankingSource(const data::InteractionMatrix& positives, const data::InteractionMatrix* mask)
      : positives_(positives), mask_(mask), rows_(positives.nonempty_users()) {}
  const std::vector<int32_t>& rows() const override { return rows_; }
  const data::InteractionMatrix& positives() const override { return positives_; }
  const data::InteractionMatrix* mask() const override { return mask_; }
  data::Batch batch(const std::vector<int64_t>& rows) const override {
    data::Batch b;
    b.users = data::id_tensor(rows);
    return b;
  }
  bool rows_are_users() const override { return true; }

 private:
  const data::InteractionMatrix& positives_;
  const data::InteractionMatrix* mask_;
  std::vector<int32_t> rows_;
};

class LabeledSource : public EvaluationSource {
 public:
  Kind kind() const override { return Kind::kLabeled; }
  bool empty() const override { return batches() == 0; }
  virtual int64_t batches() const = 0;
  // Batch k (CPU tensors): the model's input for predict (users, items, feature fields) and
  // `labels` [B] float32.
  virtual data::Batch batch(int64_t k) const = 0;
};

}  // namespace recbole::tasks
