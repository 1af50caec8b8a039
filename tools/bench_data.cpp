// bench_data: times the data pipeline on one dataset and reports peak memory.
//
//   bench_data --dataset=NAME [--data_path=DIR] [--config_files=...] [--key=value ...]
//
// Prints read (parse), preprocess (filters, remap, fill, normalize) and split times, the parse
// rate, the size of the final interaction arrays and the process's peak resident memory.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <iostream>
#include <map>

#include "recbole/config/config.h"
#include "recbole/data/dataset.h"
#include "recbole/data/dataset_location.h"
#include "recbole/data/dataset_options.h"
#include "recbole/data/split.h"
#include "recbole/utils/logging.h"
#include "recbole/utils/memory.h"
#include "recbole/utils/thread_pool.h"
#include "tool_flags.h"

namespace {

int64_t table_bytes(const recbole::data::Table& t) {
  int64_t bytes = 0;
  for (const recbole::data::Column& c : t.columns()) {
    bytes +=
        static_cast<int64_t>(c.tokens.size() * sizeof(int32_t) + c.floats.size() * sizeof(double) +
                             c.offsets.size() * sizeof(int64_t));
  }
  return bytes;
}

}  // namespace

namespace {

constexpr const char* kUsage =
    "usage: bench_data --dataset=NAME [--data_path=DIR] [--config_files=...] [--key=value ...]\n\n"
    "Times the data pipeline (read, preprocess, split) on one dataset and reports the parse\n"
    "rate, the size of the interaction arrays and the peak resident memory.\n"
    "  --version  print the version\n";

}  // namespace

int main(int argc, char** argv) {
  using namespace recbole;
  if (tools::answer_help_or_version(argc, argv, "bench_data", kUsage)) return 0;
  try {
    const config::ConfigSources sources = config::parse_command_line(argc, argv);
    const config::Config config = config::Config::build(sources);
    // The data pipeline's parallel passes run on the ThreadPool (key num_threads), which the
    // device manager sizes in a full run; these tools build no device manager.
    ThreadPool::instance().set_threads(resolve_num_threads(config.get_int("num_threads")));
    if (config.has("state") && !config.is_null("state")) {
      log::set_level(log::parse_level(config.get_string("state")));
    }
    data::ensure_dataset(config);  // as recbole_run: data_path, a shipped copy, or a download
    const data::DatasetOptions options = data::DatasetOptions::from_config(config);
    const int64_t rss_before = memory::current_rss_bytes();

    const data::Dataset ds = data::Dataset::load(options);
    const int64_t peak_after_load = memory::peak_rss_bytes();
    const auto t0 = std::chrono::steady_clock::now();
    const std::clock_t c0 = std::clock();
    const data::SplitDataset split = data::split_dataset(ds, options);
    const double split_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double split_cpu = static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC;

    const data::LoadStats& st = ds.load_stats();
    const int64_t arrays = table_bytes(ds.inter_table());
    const int64_t split_bytes = (split.train.size() + split.valid.size() + split.test.size()) *
                                static_cast<int64_t>(sizeof(int64_t) + 2 * sizeof(int32_t));
    const double mb = 1024.0 * 1024.0;
    std::printf("dataset            %s (%lld interactions, %lld users, %lld items incl. pad)\n",
                ds.name().c_str(), static_cast<long long>(ds.n_inters()),
                static_cast<long long>(ds.n_users()), static_cast<long long>(ds.n_items()));
    std::printf("                   wall      cpu\n");
    std::printf("read               %7.3f s %7.3f s  (%.1f MB, %.1f MB/s of CPU time, %lld rows)\n",
                st.read_seconds, st.read_cpu_seconds, st.bytes_read / 1e6,
                st.bytes_read / 1e6 / std::max(st.read_cpu_seconds, 1e-9),
                static_cast<long long>(st.rows_read));
    std::printf("preprocess         %7.3f s %7.3f s\n", st.preprocess_seconds,
                st.preprocess_cpu_seconds);
    std::printf("split              %7.3f s %7.3f s  (%s %s: %lld / %lld / %lld)\n", split_s,
                split_cpu, options.eval_args.order.c_str(),
                options.eval_args.split == data::EvalArgs::SplitKind::kRatio ? "RS" : "LS",
                static_cast<long long>(split.train.size()),
                static_cast<long long>(split.valid.size()),
                static_cast<long long>(split.test.size()));
    std::printf("total              %7.3f s %7.3f s\n",
                st.read_seconds + st.preprocess_seconds + split_s,
                st.read_cpu_seconds + st.preprocess_cpu_seconds + split_cpu);
    std::printf("inter arrays       %.1f MiB (+ split index %.1f MiB)\n", arrays / mb,
                split_bytes / mb);
    std::printf("rss before load    %.1f MiB\n", rss_before / mb);
    std::printf("peak rss (load)    %.1f MiB\n", peak_after_load / mb);
    std::printf("peak rss (total)   %.1f MiB\n", memory::peak_rss_bytes() / mb);
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "bench_data: error: " << e.what() << "\n";
    return 1;
  }
}
