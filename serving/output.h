#pragma once
// The text forms of recommendations shared by recbole_recommend and recbole_serve, so that the
// two print the same item tokens and the same scores for the same checkpoint.
//   score: the shortest text that reads back as the same float32 (std::to_chars), e.g. "4.2106".
//   TSV:   one line per recommendation, "user<TAB>rank<TAB>item<TAB>score", rank from 1, after
//          the header line kTsvHeader.
//   JSON:  [{"item": "<token>", "score": <score>}, ...], best first.
#include <string>
#include <vector>

#include "serving/recommender.h"

namespace recbole::serving {

constexpr const char* kTsvHeader = "user\trank\titem\tscore\n";

// Appends the shortest round-trip decimal of `score` (JSON-safe: non-finite scores as null).
void append_score(std::string& out, float score);

// Appends `s` as a JSON string literal (quotes and escapes; bytes that are not UTF-8 become
// U+FFFD).
void append_json_string(std::string& out, const std::string& s);

// Appends the TSV lines of one user's list.
void append_tsv(std::string& out, const std::string& user,
                const std::vector<Recommendation>& items);

// Appends [{"item": ..., "score": ...}, ...].
void append_json_items(std::string& out, const std::vector<Recommendation>& items);

}  // namespace recbole::serving
