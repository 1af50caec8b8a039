// bench_peak [--seconds=S]
// This machine's float32 arithmetic ceiling, the figure a model's epoch is compared with ("how
// close to this machine's matrix throughput"). Prints one Markdown table:
//  - fused multiply-adds from twelve independent register chains, AVX-512 and AVX2, on one
//    thread and on one thread per core at once: the peak the vector units allow, and whether
//    the cores share them (the project's VMs differ here from day to day);
//  - float32 products through libtorch's CPU matmul, i.e. the BLAS the models call (its kernels
//    named, e.g. OpenBLAS "Haswell" when OPENBLAS_CORETYPE forces them), on one BLAS thread and
//    on one per core, at a square shape and at shapes the models use.
// Why a tool: an earlier stop took a whole epoch's average for the peak and called a goal out of
// reach that the vector units allow; the VM changes, so the ceiling is measured, not assumed.
#include <torch/torch.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define RECBOLE_BENCH_X86 1
#endif

#include "cpu_info.h"
#include "recbole/utils/clock.h"
#include "recbole/utils/error.h"
#include "recbole/utils/thread_pool.h"
#include "tool_flags.h"

namespace {

using recbole::Clock;
using recbole::seconds_since;

#ifdef RECBOLE_BENCH_X86
// Twelve chains, each a fused multiply-add per step: enough independent work to fill two FMA
// pipes of four-cycle latency, and with the two constants 14 registers, so that AVX2's sixteen
// hold them all (sixteen chains spilled to the stack and measured the spills). The chains' sum
// is returned so the loop cannot be dropped.
#define RECBOLE_PEAK_CHAINS(V, SET1, FMADD)                               \
  V a0 = SET1(0.f), a1 = SET1(1.f), a2 = SET1(2.f), a3 = SET1(3.f);       \
  V a4 = SET1(4.f), a5 = SET1(5.f), a6 = SET1(6.f), a7 = SET1(7.f);       \
  V a8 = SET1(8.f), a9 = SET1(9.f), a10 = SET1(10.f), a11 = SET1(11.f);   \
  const V b = SET1(0.9999999f), c = SET1(1e-7f);                          \
  for (int64_t k = 0; k < steps; ++k) {                                   \
    a0 = FMADD(a0, b, c), a1 = FMADD(a1, b, c), a2 = FMADD(a2, b, c);     \
    a3 = FMADD(a3, b, c), a4 = FMADD(a4, b, c), a5 = FMADD(a5, b, c);     \
    a6 = FMADD(a6, b, c), a7 = FMADD(a7, b, c), a8 = FMADD(a8, b, c);     \
    a9 = FMADD(a9, b, c), a10 = FMADD(a10, b, c), a11 = FMADD(a11, b, c); \
  }                                                                       \
  V sum = ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7));              \
  sum = sum + ((a8 + a9) + (a10 + a11));                                  \
  float lanes[sizeof(V) / sizeof(float)];                                 \
  std::memcpy(lanes, &sum, sizeof(lanes));                                \
  float total = 0;                                                        \
  for (float x : lanes) total += x;                                       \
  return total;
constexpr double kChains = 12;

__attribute__((target("avx512f"))) float fma_chains_avx512(int64_t steps) {
  RECBOLE_PEAK_CHAINS(__m512, _mm512_set1_ps, _mm512_fmadd_ps)
}

__attribute__((target("avx2,fma"))) float fma_chains_avx2(int64_t steps) {
  RECBOLE_PEAK_CHAINS(__m256, _mm256_set1_ps, _mm256_fmadd_ps)
}
#undef RECBOLE_PEAK_CHAINS
#endif

struct Isa {
  const char* name;
  int lanes;                       // floats per vector
  float (*chains)(int64_t steps);  // nullptr: not on this CPU
};

std::vector<Isa> supported_isas() {
  std::vector<Isa> out;
#ifdef RECBOLE_BENCH_X86
  if (__builtin_cpu_supports("avx512f")) out.push_back({"AVX-512", 16, fma_chains_avx512});
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    out.push_back({"AVX2", 8, fma_chains_avx2});
#endif
  return out;
}

// GFLOP/s of `isa`'s chains on `threads` threads at once (each its own chains), summed, and the
// slowest thread's share; each thread runs at least `seconds`.
std::pair<double, double> fma_rate(const Isa& isa, int threads, double seconds) {
  // Calibrate the step count on one thread, then run every thread with it.
  int64_t steps = 1 << 20;
  for (;;) {
    const auto t0 = Clock::now();
    volatile float sink = isa.chains(steps);
    (void)sink;
    if (seconds_since(t0) >= seconds / 4) break;
    steps *= 2;
  }
  steps *= 4;
  std::vector<double> rates(static_cast<size_t>(threads));
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      const auto t0 = Clock::now();
      volatile float sink = isa.chains(steps);
      (void)sink;
      const double flop = kChains * isa.lanes * 2.0 * static_cast<double>(steps);
      rates[static_cast<size_t>(t)] = flop / seconds_since(t0) / 1e9;
    });
  for (auto& th : pool) th.join();
  double total = 0;
  for (double r : rates) total += r;
  return {total, *std::min_element(rates.begin(), rates.end())};
}

// GFLOP/s of C = A·B through libtorch (float32, CPU) with `blas_threads` BLAS threads, repeated
// for at least `seconds` after a warm-up.
double gemm_rate(int64_t m, int64_t k, int64_t n, int blas_threads, double seconds) {
  recbole::BlasThreadsScope scope(blas_threads);
  const torch::Tensor a = torch::rand({m, k});
  const torch::Tensor b = torch::rand({k, n});
  torch::Tensor c = torch::mm(a, b);
  int64_t reps = 0;
  const auto t0 = Clock::now();
  double elapsed = 0;
  do {
    torch::mm_out(c, a, b);
    ++reps;
    elapsed = seconds_since(t0);
  } while (elapsed < seconds);
  return 2.0 * static_cast<double>(m * k * n) * static_cast<double>(reps) / elapsed / 1e9;
}

std::string cpu_model() {
  const std::string model_name = recbole::tools::cpu_info_field("model name");
  const std::string family = recbole::tools::cpu_info_field("cpu family");
  if (model_name.empty()) return "unknown CPU";
  return family.empty() ? model_name : model_name + " (family " + family + ")";
}

constexpr const char* kUsage =
    "usage: bench_peak [--seconds=S]\n\n"
    "This machine's float32 ceiling, as one Markdown table: fused multiply-add peak (AVX-512,\n"
    "AVX2) on one thread and on one thread per core at once, and float32 products through\n"
    "libtorch's CPU matmul (the BLAS the models use) on one BLAS thread and one per core, at\n"
    "1024^3 and at shapes the models use. Each figure runs for at least S seconds (default 1).\n"
    "  --version  print the version\n";

}  // namespace

int main(int argc, char** argv) {
  if (recbole::tools::answer_help_or_version(argc, argv, "bench_peak", kUsage)) return 0;
  try {
    double seconds = 1.0;
    for (int i = 1; i < argc; ++i) {
      const std::string arg = argv[i];
      if (arg.rfind("--seconds=", 0) == 0)
        seconds = static_cast<double>(recbole::tools::int_flag("seconds", arg.substr(10), 1, 60));
      else
        throw recbole::ConfigError("bench_peak: unknown argument \"" + arg +
                                   "\" (expected --seconds=S)");
    }
    torch::set_num_threads(1);  // the products' threads are the BLAS's, as in a training run
    const int cores = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
    const std::string kernels = recbole::blas_kernels();
    std::printf("CPU: %s, %d logical cores; BLAS kernels: %s\n\n", cpu_model().c_str(), cores,
                kernels.empty() ? "not OpenBLAS" : kernels.c_str());
    std::printf(
        "| what | 1 thread, GFLOP/s | %d threads at once, GFLOP/s (FMA: the slowest one's) |\n",
        cores);
    std::printf("|---|---|---|\n");
    for (const Isa& isa : supported_isas()) {
      const auto one = fma_rate(isa, 1, seconds);
      const auto all = fma_rate(isa, cores, seconds);
      std::printf("| FMA peak, %s | %.1f | %.1f (%.1f) |\n", isa.name, one.first, all.first,
                  all.second);
    }
    struct Shape {
      int64_t m, k, n;
      const char* use;
    };
    const Shape shapes[] = {{1024, 1024, 1024, "square"},
                            {1024, 128, 128, "DeepFM's MLP, a 1,024-row part"},
                            {6400, 192, 64, "a GRU's input gates"},
                            {2048, 64, 1683, "scores against every ml-100k item"}};
    for (const Shape& s : shapes) {
      const double one = gemm_rate(s.m, s.k, s.n, 1, seconds);
      const double all = gemm_rate(s.m, s.k, s.n, cores, seconds);
      std::printf("| matmul %lld x %lld x %lld (%s) | %.1f | %.1f |\n", static_cast<long long>(s.m),
                  static_cast<long long>(s.k), static_cast<long long>(s.n), s.use, one, all);
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
}
