#pragma once
// The optimizers `learner` names: the one list of their names. The config's choices, the
// trainer's optimizer construction and BPR's fused epoch all switch over Learner, so a new
// learner is a row here and a case where the compiler asks for one.
#include <optional>
#include <string>
#include <vector>

namespace recbole::config {

enum class Learner { kAdam, kAdamW, kSgd, kAdagrad, kRmsprop, kSparseAdam };

struct LearnerName {
  Learner learner;
  const char* name;  // the config spelling
};

inline const std::vector<LearnerName>& learner_names() {
  static const std::vector<LearnerName> names = {
      {Learner::kAdam, "adam"},       {Learner::kAdamW, "adamw"},
      {Learner::kSgd, "sgd"},         {Learner::kAdagrad, "adagrad"},
      {Learner::kRmsprop, "rmsprop"}, {Learner::kSparseAdam, "sparse_adam"}};
  return names;
}

// The learner of a config spelling (exact; the config normalises the case); nullopt if none.
inline std::optional<Learner> parse_learner(const std::string& name) {
  for (const LearnerName& l : learner_names())
    if (name == l.name) return l.learner;
  return std::nullopt;
}

}  // namespace recbole::config
