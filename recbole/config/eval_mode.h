#pragma once
// An evaluation mode of eval_args.mode — full, labeled, uniN or popN (N >= 1) — parsed in one
// place for the config check and the evaluator.
#include <cstdint>
#include <optional>
#include <string>

namespace recbole::config {

struct EvalMode {
  enum class Kind { kFull, kLabeled, kUniform, kPopularity };
  Kind kind = Kind::kFull;
  int64_t negatives = 0;  // N of uniN / popN

  bool sampled() const { return kind == Kind::kUniform || kind == Kind::kPopularity; }
  bool ranking() const { return kind != Kind::kLabeled; }
  // The negative sampler's distribution name of a sampled mode: "uniform" or "popularity".
  const char* distribution() const { return kind == Kind::kPopularity ? "popularity" : "uniform"; }

  // `text` in any case; nullopt when it is none of the four forms (or N is not an int >= 1).
  static std::optional<EvalMode> parse(const std::string& text) {
    std::string m;
    for (char c : text) m += static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
    if (m == "full") return EvalMode{Kind::kFull, 0};
    if (m == "labeled") return EvalMode{Kind::kLabeled, 0};
    const std::string kind = m.substr(0, 3);
    if ((kind != "uni" && kind != "pop") || m.size() <= 3 || m.size() > 21)
      return std::nullopt;  // N below 10^18
    int64_t n = 0;
    for (size_t i = 3; i < m.size(); ++i) {
      if (m[i] < '0' || m[i] > '9') return std::nullopt;
      n = n * 10 + (m[i] - '0');
    }
    if (n < 1) return std::nullopt;
    return EvalMode{kind == "uni" ? Kind::kUniform : Kind::kPopularity, n};
  }
};

}  // namespace recbole::config
