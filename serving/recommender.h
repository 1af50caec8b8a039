#pragma once
// Recommender: top-K recommendations from a saved model, with no dataset files.
//
//   auto rec = recbole::Recommender::load("saved/BPR-Jan-01-2025_10-00-00-1234.pth");
//   for (const recbole::Recommendation& r : rec->recommend("196", 10))
//     std::cout << r.item << "\t" << r.score << "\n";
//
// load() reads a best-model checkpoint written by recbole::run (its serving section:
// checkpoint_sections.h), rebuilds the model from the config and the training history it holds,
// loads its parameters and buffers, and picks the fastest exact way to score it:
//   factors       ⟨user factor, item factor⟩ (Model::score_factors: BPR, LightGCN, ...): one
//                 vectorised pass over the item factors per user;
//   item weights  x_u · W (+ bias) (Model::score_item_weights: EASE, SLIM, ItemKNN): the rows of
//                 W the user's history selects, summed;
//   model         the model's full_sort_predict, for every other model.
// Then the user's training items (and always the padding item) are excluded and the K best
// taken: descending score, ties by the lower item id — the order of the evaluator (cpu_topk.h).
//
// Determinism: a user's list and scores never depend on who else is asked in the same call
// (every path scores one user at a time), so the batch calls, recbole_recommend and
// recbole_serve print identical numbers for one checkpoint.
//
// Thread safety: a loaded Recommender is immutable; every const method may be called from any
// number of threads at once. Reloading is replacing the shared_ptr (recbole_serve does so).
// CPU only: the model is loaded onto the CPU whatever device it was trained on.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "recbole/utils/error.h"
#include "serving/item_index.h"

namespace recbole {

struct Recommendation {
  int32_t item_id = 0;  // the internal id (1 .. n_items − 1)
  float score = 0;
  std::string item;  // the item's token in the dataset
};

struct UserRecommendations {
  std::string user;
  bool known = false;  // false: the token is not a user of the checkpoint (items empty)
  std::vector<Recommendation> items;
};

// A user token that the checkpoint does not know (recommend()).
class UnknownUserError : public Error {
 public:
  using Error::Error;
};

struct RecommenderOptions {
  // Threads of the process's ThreadPool for recommend_ids(parallel) and for_each_user; 0: every
  // core. The first Recommender of a process sets the pool; later ones (reloads) leave it.
  int num_threads = 0;
  // Top-K of a factor model by an approximate index (serving/item_index.h) instead of scoring
  // every item: kind "ivf" (needs faiss); "exact" by default. Another scorer with "ivf" is an
  // Error at load.
  serving::ItemIndexOptions index;
};

class Recommender {
 public:
  // What was loaded, for /model and logs.
  struct Info {
    std::string path;
    std::string model, task, dataset;
    int64_t n_users = 0;  // including the padding id 0
    int64_t n_items = 0;
    int64_t interactions = 0;  // training interactions held (the history)
    int64_t written_at = 0;    // unix seconds: when the checkpoint was written
    int64_t loaded_at = 0;     // unix seconds: when it was loaded
    int64_t file_bytes = 0;
    double load_seconds = 0;
    std::string scorer;  // "factors", "item weights" or "model"
    std::string index;   // "exact" or the approximate index, e.g. "ivf (nlist 657, nprobe 32)"
    bool from_history = false;
    std::string config_yaml;  // the run's effective config
    // "BPR on ml-100k: 943 users, 1682 items, scored by factors, index exact (loaded in 0.05 s)"
    std::string summary() const;
  };

  // Loads a checkpoint. Throws recbole::Error naming the file when it is missing, cut short,
  // damaged (checksum), of another format, without a serving section, or of a model this build
  // does not have.
  static std::shared_ptr<const Recommender> load(const std::string& path,
                                                 const RecommenderOptions& options = {});
  ~Recommender();
  Recommender(const Recommender&) = delete;
  Recommender& operator=(const Recommender&) = delete;

  const Info& info() const;

  // Token ↔ id (-1 when unknown). Id 0 is the padding ("[PAD]"), never a user or a result.
  int32_t user_id(std::string_view token) const;
  int32_t item_id(std::string_view token) const;
  const std::string& user_token(int32_t id) const;
  const std::string& item_token(int32_t id) const;
  int64_t n_users() const;
  int64_t n_items() const;
  // The training items of a user (ascending ids).
  std::vector<int32_t> history_of(int32_t user) const;

  // The k best items for a known user, best first (fewer when fewer can be recommended), the
  // user's training items excluded when exclude_history. k ≥ 1 (else Error); k above n_items
  // gives every item. Throws UnknownUserError for a token the checkpoint does not know.
  std::vector<Recommendation> recommend(std::string_view user, int64_t k,
                                        bool exclude_history = true) const;

  // Several users at once. An unknown token gets known = false and no items, the others their
  // lists.
  std::vector<UserRecommendations> recommend_batch(const std::vector<std::string>& users, int64_t k,
                                                   bool exclude_history = true) const;

  // Whether the model can score a user it never saw from an item history (EASE, SLIMElastic,
  // ADMMSLIM, ItemKNN in item mode, MultiVAE, MultiDAE, RecVAE, MacridVAE, Pop, and the
  // sequential models but FPMC, which read the history as a sequence, oldest item first);
  // factor models (BPR, LightGCN, FPMC, ...) cannot: their users are their own parameters.
  bool can_recommend_from_history() const;

  // The k best items for the history `items` (tokens), the given items excluded when
  // exclude_given. Tokens the checkpoint does not know are skipped and listed in
  // *unknown_items. Throws NotSupportedError when can_recommend_from_history() is false.
  std::vector<Recommendation> recommend_from_history(
      const std::vector<std::string>& items, int64_t k, bool exclude_given = true,
      std::vector<std::string>* unknown_items = nullptr) const;

  // Id level, for tools: the top-k (item id, score) of each user id into out[r]. With parallel,
  // blocks of users run on the ThreadPool (the caller should be the only one using it).
  using IdList = std::vector<std::pair<int32_t, float>>;
  void recommend_ids(const std::vector<int32_t>& users, int64_t k, bool exclude_history,
                     std::vector<IdList>* out, bool parallel = false) const;

  // The ids of the history given by tokens (unknown ones to *unknown), in the order given
  // (a sequential model reads it as a sequence, oldest first; the others as a set).
  std::vector<int32_t> item_ids(const std::vector<std::string>& items,
                                std::vector<std::string>* unknown) const;
  // The top-k (item id, score) for a history of item ids (as item_ids gives them).
  IdList recommend_history_ids(const std::vector<int32_t>& history, int64_t k,
                               bool exclude_given) const;

 private:
  Recommender();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace recbole
