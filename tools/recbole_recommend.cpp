// recbole_recommend: top-K recommendations from a saved model (a best-model checkpoint written by
// recbole_run), with no dataset files.
//
//   recbole_recommend --checkpoint=PATH --users=196,186 [--topk=10]
//   recbole_recommend --checkpoint=PATH --all_users --output=recs.tsv [--threads=N]
//   recbole_recommend --checkpoint=PATH --history=242,302,377 [--topk=10]
//   recbole_recommend --checkpoint=PATH --index=ivf [--nprobe=32] --recall_users=1000
//
// Output: TSV "user<TAB>rank<TAB>item<TAB>score" (serving/output.h), to stdout or to
// --output (written to a temporary file and renamed). --all_users streams every user's list in
// blocks on the ThreadPool: memory stays bounded whatever the number of users.
#include <charconv>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "recbole/utils/atomic_write.h"
#include "recbole/utils/error.h"
#include "recbole/utils/logging.h"
#include "recbole/utils/progress.h"
#include "recbole/utils/stop_signal.h"
#include "recbole/utils/thread_pool.h"
#include "serving/output.h"
#include "serving/recommender.h"
#include "tool_flags.h"

namespace {

constexpr const char* kUsage =
    "usage: recbole_recommend --checkpoint=PATH (--users=U1,U2,... | --users_file=FILE |\n"
    "                         --all_users | --history=I1,I2,... | --recall_users=N)\n"
    "                         [--topk=10] [--output=FILE] [--exclude_history=true] [--threads=0]\n"
    "                         [--progress=auto] [--index=exact|ivf] [--nlist=0] [--nprobe=32]\n\n"
    "Top-K recommendations from a best-model checkpoint of recbole_run (self-contained: no\n"
    "dataset files are read). Prints TSV lines \"user<TAB>rank<TAB>item<TAB>score\" after a\n"
    "header, best first, to stdout or to --output (written atomically).\n\n"
    "  --checkpoint=PATH       the checkpoint (saved/<Model>-<time>-<pid>.pth)\n"
    "  --users=U1,U2,...       user tokens, as in the dataset's .inter file\n"
    "  --users_file=FILE       user tokens, one a line\n"
    "  --all_users             every user of the checkpoint, streamed in blocks on the thread\n"
    "                          pool with a progress bar (use with --output)\n"
    "  --history=I1,I2,...     a user the model never saw, given by item tokens (EASE, SLIM,\n"
    "                          ItemKNN, the autoencoders; sequential models read them oldest\n"
    "                          first; the user column is \"-\")\n"
    "  --topk=K                items per user (default 10)\n"
    "  --exclude_history=BOOL  leave out the user's training items (default true); with\n"
    "                          --history, the given items\n"
    "  --threads=N             threads for --all_users (default 0: every core)\n"
    "  --index=exact|ivf       top-K of a factor model (BPR, LightGCN, ...) by scoring every\n"
    "                          item (exact, default) or by an approximate IVF index (faiss)\n"
    "  --nlist=N --nprobe=N    the IVF index's cells (0: 4 sqrt(items)) and cells scanned\n"
    "                          per query (default 32)\n"
    "  --recall_users=N        report the index's recall@topk against the exact answer over\n"
    "                          N users spread over the checkpoint's, and the time per user\n"
    "  --progress=auto|true|false  the progress bar of --all_users (auto: on a terminal)\n"
    "  --version               print the version\n\n"
    "Unknown user tokens are reported on stderr and skipped; the others are answered. Exit\n"
    "status: 0, or 1 on an error (and when no requested user is known).\n";

struct Args {
  std::string checkpoint, users, users_file, history, output, progress = "auto";
  bool all_users = false, exclude_history = true;
  int64_t topk = 10, recall_users = 0;
  int threads = 0;
  recbole::serving::ItemIndexOptions index;
};

bool parse_bool(const std::string& key, const std::string& v) {
  if (v == "true" || v == "1" || v == "yes") return true;
  if (v == "false" || v == "0" || v == "no") return false;
  throw recbole::ConfigError("--" + key + ": expected true or false, got \"" + v + "\"");
}

Args parse_args(int argc, char** argv) {
  Args a;
  std::map<std::string, bool> seen;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--", 0) != 0)
      throw recbole::ConfigError("unexpected argument \"" + arg + "\" (expected --key=value)");
    const size_t eq = arg.find('=');
    const std::string key = arg.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
    const bool has_value = eq != std::string::npos;
    const std::string value = has_value ? arg.substr(eq + 1) : "";
    if (seen[key]) throw recbole::ConfigError("--" + key + " is given twice");
    seen[key] = true;
    auto need = [&]() {
      if (!has_value) throw recbole::ConfigError("--" + key + " needs a value (--" + key + "=...)");
      return value;
    };
    if (key == "checkpoint")
      a.checkpoint = need();
    else if (key == "users")
      a.users = need();
    else if (key == "users_file")
      a.users_file = need();
    else if (key == "history")
      a.history = need();
    else if (key == "output")
      a.output = need();
    else if (key == "all_users")
      a.all_users = has_value ? parse_bool(key, value) : true;
    else if (key == "exclude_history")
      a.exclude_history = has_value ? parse_bool(key, value) : true;
    else if (key == "topk")
      a.topk = recbole::tools::int_flag(key, need(), 1, int64_t{1} << 31);
    else if (key == "threads")
      a.threads = static_cast<int>(recbole::tools::int_flag(key, need(), 0, 4096));
    else if (key == "index")
      a.index.kind = need();
    else if (key == "nlist")
      a.index.nlist = recbole::tools::int_flag(key, need(), 0, int64_t{1} << 24);
    else if (key == "nprobe")
      a.index.nprobe = recbole::tools::int_flag(key, need(), 1, int64_t{1} << 24);
    else if (key == "recall_users")
      a.recall_users = recbole::tools::int_flag(key, need(), 1, int64_t{1} << 31);
    else if (key == "progress") {
      a.progress = need();
      if (a.progress != "auto") a.progress = parse_bool(key, a.progress) ? "true" : "false";
    } else
      throw recbole::ConfigError("unknown option --" + key + " (see --help)");
  }
  if (a.checkpoint.empty()) throw recbole::ConfigError("--checkpoint=PATH is required");
  const int modes = !a.users.empty() + !a.users_file.empty() + a.all_users + !a.history.empty() +
                    (a.recall_users > 0);
  if (modes != 1)
    throw recbole::ConfigError(
        "give exactly one of --users, --users_file, --all_users, --history and --recall_users");
  if (a.recall_users > 0 && a.index.kind == "exact")
    throw recbole::ConfigError("--recall_users measures an approximate index: give --index=ivf");
  return a;
}

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  std::istringstream in(s);
  while (std::getline(in, cur, ','))
    if (!cur.empty()) out.push_back(cur);
  return out;
}

std::vector<std::string> read_lines(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw recbole::Error("--users_file: cannot read " + path);
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!line.empty()) out.push_back(line);
  }
  return out;
}

// Writes the text the producer makes to --output (atomically) or to stdout.
void emit(const Args& a, const std::function<void(const recbole::ByteSink&)>& produce) {
  if (a.output.empty()) {
    produce([](const void* data, size_t n) { std::fwrite(data, 1, n, stdout); });
    std::fflush(stdout);
    return;
  }
  recbole::write_file_atomically(a.output, produce, "the recommendations");
}

// The index's recall@topk against the exact lists (training items excluded as asked) over
// recall_users users spread evenly over the checkpoint's, and each side's time per user (one
// thread, one user per call, as a server answers).
void print_recall(const Args& a, const recbole::Recommender& approx) {
  using Clock = std::chrono::steady_clock;
  recbole::RecommenderOptions exact_options;
  exact_options.num_threads = a.threads;
  const auto exact = recbole::Recommender::load(a.checkpoint, exact_options);
  const int64_t n_users = approx.n_users() - 1;
  const int64_t n = std::min(a.recall_users, n_users);
  std::vector<int32_t> users;
  for (int64_t r = 0; r < n; ++r) users.push_back(static_cast<int32_t>(1 + r * n_users / n));
  double hits = 0, wanted = 0, t_exact = 0, t_index = 0;
  std::vector<recbole::Recommender::IdList> e, x;
  for (int32_t u : users) {
    const auto t0 = Clock::now();
    exact->recommend_ids({u}, a.topk, a.exclude_history, &e);
    const auto t1 = Clock::now();
    approx.recommend_ids({u}, a.topk, a.exclude_history, &x);
    const auto t2 = Clock::now();
    t_exact += std::chrono::duration<double>(t1 - t0).count();
    t_index += std::chrono::duration<double>(t2 - t1).count();
    for (const auto& [item, score] : e[0])
      for (const auto& [got, s] : x[0])
        if (got == item) {
          ++hits;
          break;
        }
    wanted += static_cast<double>(e[0].size());
  }
  std::printf(
      "recall@%lld of %s against exact over %lld users: %.4f (exact %.3f ms/user, index "
      "%.3f ms/user)\n",
      static_cast<long long>(a.topk), approx.info().index.c_str(), static_cast<long long>(n),
      wanted > 0 ? hits / wanted : 0.0, 1e3 * t_exact / double(n), 1e3 * t_index / double(n));
}

}  // namespace

int main(int argc, char** argv) {
  using namespace recbole;
  if (tools::answer_help_or_version(argc, argv, "recbole_recommend", kUsage)) return 0;
  try {
    const Args a = parse_args(argc, argv);
    install_stop_handlers();
    RecommenderOptions options;
    options.num_threads = a.threads;
    options.index = a.index;
    const std::shared_ptr<const Recommender> rec = Recommender::load(a.checkpoint, options);
    std::fprintf(stderr, "recbole_recommend: %s\n", rec->info().summary().c_str());

    if (a.recall_users > 0) {
      print_recall(a, *rec);
      return 0;
    }

    if (!a.history.empty()) {
      std::vector<std::string> unknown;
      const auto items =
          rec->recommend_from_history(split_list(a.history), a.topk, a.exclude_history, &unknown);
      for (const std::string& t : unknown)
        std::fprintf(stderr, "recbole_recommend: unknown item \"%s\" (left out of the history)\n",
                     t.c_str());
      emit(a, [&](const ByteSink& sink) {
        std::string out = serving::kTsvHeader;
        serving::append_tsv(out, "-", items);
        sink(out.data(), out.size());
      });
      return 0;
    }

    if (a.all_users) {
      const int64_t n = rec->n_users() - 1;
      const bool draw = a.progress == "auto" ? true : a.progress == "true";
      ProgressOptions po;
      po.label = "Recommend";
      po.total = n;
      po.enabled = draw;
      // Blocks of users per round: enough for every worker, few enough to keep memory bounded
      // (one round's lists and text; the text goes to the file before the next round).
      const int64_t round =
          std::max<int64_t>(256, int64_t{64} * ThreadPool::instance().threads() * 4);
      int stopped = 0;
      emit(a, [&](const ByteSink& sink) {
        Progress progress(po);
        std::string out = serving::kTsvHeader;
        std::vector<int32_t> ids;
        std::vector<Recommender::IdList> lists;
        for (int64_t lo = 1; lo <= n; lo += round) {
          if ((stopped = stop_requested()) != 0) break;
          const int64_t hi = std::min(n + 1, lo + round);
          ids.clear();
          for (int64_t u = lo; u < hi; ++u) ids.push_back(static_cast<int32_t>(u));
          rec->recommend_ids(ids, a.topk, a.exclude_history, &lists, /*parallel=*/true);
          for (size_t r = 0; r < ids.size(); ++r) {
            const std::string& user = rec->user_token(ids[r]);
            for (size_t j = 0; j < lists[r].size(); ++j) {
              out += user;
              out += '\t';
              out += std::to_string(j + 1);
              out += '\t';
              out += rec->item_token(lists[r][j].first);
              out += '\t';
              serving::append_score(out, lists[r][j].second);
              out += '\n';
            }
          }
          sink(out.data(), out.size());
          out.clear();
          progress.advance(hi - lo);
        }
        if (stopped) throw Error(std::string("stopped by ") + signal_name(stopped));
      });
      std::fprintf(stderr, "recbole_recommend: %lld users%s%s\n", static_cast<long long>(n),
                   a.output.empty() ? "" : " written to ", a.output.c_str());
      return 0;
    }

    const std::vector<std::string> users =
        a.users.empty() ? read_lines(a.users_file) : split_list(a.users);
    int64_t known = 0;
    // Blocks of users, so that a long --users_file streams as --all_users does.
    constexpr size_t kBlock = 4096;
    emit(a, [&](const ByteSink& sink) {
      std::string out = serving::kTsvHeader;
      for (size_t lo = 0; lo < users.size(); lo += kBlock) {
        const std::vector<std::string> block(
            users.begin() + static_cast<std::ptrdiff_t>(lo),
            users.begin() + static_cast<std::ptrdiff_t>(std::min(users.size(), lo + kBlock)));
        for (const UserRecommendations& u :
             rec->recommend_batch(block, a.topk, a.exclude_history)) {
          if (!u.known) {
            std::fprintf(stderr, "recbole_recommend: unknown user \"%s\" (skipped)\n",
                         u.user.c_str());
            continue;
          }
          ++known;
          serving::append_tsv(out, u.user, u.items);
        }
        sink(out.data(), out.size());
        out.clear();
      }
    });
    if (known == 0) {
      std::fprintf(stderr, "recbole_recommend: error: none of the %zu users is known\n",
                   users.size());
      return 1;
    }
    if (known < static_cast<int64_t>(users.size()))
      std::fprintf(stderr, "recbole_recommend: %zu of %zu users unknown\n",
                   users.size() - static_cast<size_t>(known), users.size());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "recbole_recommend: error: %s\n", e.what());
    return 1;
  }
}
