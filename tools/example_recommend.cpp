// The serving API in one program: train a model through the C++ API, then load its checkpoint
// in a fresh recbole::Recommender (no dataset files needed) and ask for recommendations.
//   example_recommend [DATA_PATH [CHECKPOINT]]   (default: ../shared/datasets; a CHECKPOINT
//                                                 skips the training)
#include <iostream>
#include <string>
#include <vector>

#include "recbole/utils/error.h"
#include "run/run_recbole.h"
#include "serving/recommender.h"
#include "tool_flags.h"

int main(int argc, char** argv) {
  if (recbole::tools::answer_help_or_version(
          argc, argv, "example_recommend",
          "usage: example_recommend [DATA_PATH [CHECKPOINT]]   (default: ../shared/datasets)\n\n"
          "Fits EASE on ml-100k through the C++ API (recbole::run_recbole), loads the best\n"
          "checkpoint in a recbole::Recommender and prints recommendations for known users, for\n"
          "several users at once and for a new user given by an item history.\n"
          "  --version  print the version\n"))
    return 0;
  const std::string data_path = argc > 1 ? argv[1] : "../shared/datasets";
  try {
    std::string checkpoint = argc > 2 ? argv[2] : "";
    if (checkpoint.empty()) {
      const recbole::RunResult r = recbole::run_recbole(
          "EASE", "ml-100k", /*config_files=*/{},
          /*overrides=*/
          {{"data_path", data_path}, {"show_progress", "false"}, {"state", "WARNING"}});
      checkpoint = r.checkpoint;  // self-contained: vocabularies, history, config, weights
    }

    // Thread-safe and immutable once loaded: share it between threads.
    const std::shared_ptr<const recbole::Recommender> rec = recbole::Recommender::load(checkpoint);
    std::cout << rec->info().model << " on " << rec->info().dataset << ", " << rec->n_users() - 1
              << " users, " << rec->n_items() - 1 << " items\n";

    // One known user (its training items are excluded by default).
    std::cout << "user 196:";
    for (const recbole::Recommendation& r : rec->recommend("196", 5))
      std::cout << " " << r.item << " (" << r.score << ")";
    std::cout << "\n";

    // Several users at once; unknown tokens are reported, not thrown.
    for (const recbole::UserRecommendations& u :
         rec->recommend_batch({"186", "no-such-user", "22"}, 3)) {
      std::cout << "user " << u.user << ":";
      if (!u.known) std::cout << " (unknown)";
      for (const recbole::Recommendation& r : u.items) std::cout << " " << r.item;
      std::cout << "\n";
    }

    // A user the model never saw, given by the items they liked (EASE, SLIM, ItemKNN and the
    // autoencoders can; a factor model such as BPR throws NotSupportedError).
    if (rec->can_recommend_from_history()) {
      std::cout << "history {242, 302, 377}:";
      for (const recbole::Recommendation& r : rec->recommend_from_history({"242", "302", "377"}, 5))
        std::cout << " " << r.item;
      std::cout << "\n";
    }
    return 0;
  } catch (const recbole::Error& e) {
    std::cerr << "example_recommend: error: " << e.what() << "\n";
    return 1;
  }
}
