#pragma once
// The feature fields of a context task run, as the models see them: each field's name, type,
// side (interaction, user or item), size and sequence length. Built by the context pipeline from
// the loaded tables; models pick their inputs from it (RecBole's ContextRecommender field lists).
// Plain data, no libtorch.
#include <cstdint>
#include <string>
#include <vector>

#include "recbole/data/table.h"

namespace recbole::data {

enum class FeatureSide { kInter, kUser, kItem };

struct FeatureSpec {
  std::string name;
  FieldType type = FieldType::kToken;
  FeatureSide side = FeatureSide::kInter;
  // Token-like fields: distinct tokens + 1 (id 0 is "[PAD]"), RecBole's num(field). Float-like
  // fields: 2 (RecBole's bucket count of a field that is not discretised), or the rows its
  // bucket ids need when discretised.
  int64_t num = 0;
  // Sequence fields: the width of their batch columns (the longest sequence); 0 otherwise.
  int64_t seq_len = 0;
  // Float-like fields: listed in numerical_features, so the models embed them; token-like
  // fields are always model inputs.
  bool numerical = false;
  // Numerical fields bucketed by the `discretization` key: embedded per bucket id, not as
  // value × one row.
  bool discretised = false;
  // Whether models embed this field (token, token_seq, or a numerical float field).
  bool is_input() const {
    return type == FieldType::kToken || type == FieldType::kTokenSeq || numerical;
  }
};

// Batch columns of the fields (Batch::features, by name), on the batch's device:
//   token      [B] int64 ids (0 = missing)
//   token_seq  [B, seq_len] int64 ids, right-padded with 0
//   float      [B] float32 value (after filling and normalisation); discretised: [B] int64
//              bucket id (0 ≤ id < num)
//   float_seq  [B, seq_len, 2] float32: (value, 1) per element, or (1, bucket id ≥ 1) when
//              discretised; (0, 0) padding
struct FeatureSchema {
  // What a model that needs it is told it lacks (models::ModelContext::need).
  static constexpr const char* kPart = "the feature fields that the context task prepares";
  // In RecBole's registration order: interaction fields in header order, then user fields, then
  // item fields; user_id and item_id are token fields of the user and item side; the label is
  // not a field.
  std::vector<FeatureSpec> fields;
  std::string uid_field = "user_id";
  std::string iid_field = "item_id";

  const FeatureSpec* find(const std::string& name) const {
    for (const FeatureSpec& f : fields)
      if (f.name == name) return &f;
    return nullptr;
  }
};

}  // namespace recbole::data
