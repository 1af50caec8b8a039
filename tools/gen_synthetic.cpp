// gen_synthetic: writes a synthetic interaction file for benchmarks.
//
//   gen_synthetic --out=DIR [--name=synthetic] [--users=140000] [--items=27000]
//                 [--inters=20000000] [--seed=2020] [--alpha=1.0]
//
// Writes DIR/NAME/NAME.inter (through a temporary file and a rename) with the header
// user_id:token item_id:token rating:float timestamp:float. Users are uniform; item popularity
// follows a power law (Zipf exponent `alpha` over a random item ranking); ratings are 1..5;
// timestamps increase with the row, with jitter, over about three years. Beside it, features
// for the context models in ml-100k's shape: NAME.user (age, gender, occupation tokens) and
// NAME.item (release_year token, class token_seq of 1-3 of 19 genres), read only when load_col
// names them.
#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "tool_flags.h"

namespace {

struct Args {
  std::string out;
  std::string name = "synthetic";
  int64_t users = 140000;
  int64_t items = 27000;
  int64_t inters = 20000000;
  uint64_t seed = 2020;
  double alpha = 1.0;
};

// The whole of `value` as a number of type T, else an error naming the option.
template <typename T>
T number(const std::string& key, const std::string& value) {
  T v{};
  const char* end = value.data() + value.size();
  const auto [ptr, ec] = std::from_chars(value.data(), end, v);
  if (ec != std::errc() || ptr != end || value.empty())
    throw std::runtime_error("--" + key + ": expected a number, got \"" + value + "\"");
  return v;
}

double real_number(const std::string& key, const std::string& value) {
  char* end = nullptr;
  const double v = std::strtod(value.c_str(), &end);
  if (value.empty() || *end != '\0' || !std::isfinite(v))
    throw std::runtime_error("--" + key + ": expected a finite number, got \"" + value + "\"");
  return v;
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string tok = argv[i];
    const size_t eq = tok.find('=');
    if (tok.rfind("--", 0) != 0 || eq == std::string::npos) {
      throw std::runtime_error("expected --key=value, got \"" + tok + "\"");
    }
    const std::string key = tok.substr(2, eq - 2), value = tok.substr(eq + 1);
    if (key == "out")
      a.out = value;
    else if (key == "name")
      a.name = value;
    else if (key == "users")
      a.users = number<int64_t>(key, value);
    else if (key == "items")
      a.items = number<int64_t>(key, value);
    else if (key == "inters")
      a.inters = number<int64_t>(key, value);
    else if (key == "seed")
      a.seed = number<uint64_t>(key, value);
    else if (key == "alpha")
      a.alpha = real_number(key, value);
    else
      throw std::runtime_error("unknown option --" + key);
  }
  if (a.out.empty()) throw std::runtime_error("--out=DIR is required");
  if (a.users < 1 || a.items < 1 || a.inters < 0) {
    throw std::runtime_error("--users and --items must be >= 1, --inters >= 0");
  }
  // Ids are 32-bit in recbole-cpp, and the item table (two 8-byte arrays) must fit in memory.
  constexpr int64_t kMaxIds = (int64_t{1} << 31) - 2;
  if (a.users > kMaxIds || a.items > kMaxIds)
    throw std::runtime_error("--users and --items must be <= " + std::to_string(kMaxIds) +
                             " (32-bit ids)");
  if (a.alpha < 0) throw std::runtime_error("--alpha must be >= 0");
  // A plain name: it becomes a folder and a file name under --out.
  if (a.name.empty() || a.name == "." || a.name == ".." || a.name.find('/') != std::string::npos)
    throw std::runtime_error(
        "--name: expected a plain name (no '/', not empty, not . or ..), got \"" + a.name + "\"");
  return a;
}

// Writes `path` through a temporary file and a rename; `row(id, rng)` gives the line of id.
template <typename Row>
void write_table(const std::filesystem::path& path, const std::string& header, int64_t n,
                 std::mt19937_64& rng, Row row) {
  const std::string tmp = path.string() + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr) throw std::runtime_error(tmp + ": cannot write: " + std::strerror(errno));
  std::string buf = header;
  for (int64_t id = 1; id <= n; ++id) buf += std::to_string(id) + "\t" + row(rng) + "\n";
  if (std::fwrite(buf.data(), 1, buf.size(), f) != buf.size() || std::fclose(f) != 0)
    throw std::runtime_error(tmp + ": write failed");
  std::filesystem::rename(tmp, path);
}

// NAME.user and NAME.item: features of every user and item id, from their own stream of `seed`.
void write_features(const std::filesystem::path& dir, const Args& a) {
  std::mt19937_64 rng(a.seed ^ 0x5eed5eedULL);
  std::uniform_int_distribution<int> age(7, 73), sex(0, 1), job(0, 20), year(1922, 1998),
      genre(0, 18), genres(1, 3);
  write_table(dir / (a.name + ".user"),
              "user_id:token\tage:token\tgender:token\toccupation:token\n", a.users, rng,
              [&](std::mt19937_64& r) {
                return std::to_string(age(r)) + (sex(r) ? "\tM\t" : "\tF\t") + "job" +
                       std::to_string(job(r));
              });
  write_table(dir / (a.name + ".item"), "item_id:token\trelease_year:token\tclass:token_seq\n",
              a.items, rng, [&](std::mt19937_64& r) {
                std::string line = std::to_string(year(r)) + "\t";
                const int n = genres(r);
                for (int k = 0; k < n; ++k) line += (k ? " g" : "g") + std::to_string(genre(r));
                return line;
              });
}

}  // namespace

constexpr const char* kUsage =
    "usage: gen_synthetic --out=DIR [--name=synthetic] [--users=140000] [--items=27000]\n"
    "                     [--inters=20000000] [--seed=2020] [--alpha=1.0]\n\n"
    "Writes DIR/NAME/NAME.inter (user_id:token item_id:token rating:float timestamp:float):\n"
    "uniform users, power-law item popularity (Zipf exponent alpha), ratings 1..5, timestamps\n"
    "increasing over about three years; and features for the context models: NAME.user (age,\n"
    "gender, occupation) and NAME.item (release_year, class: 1-3 genres), as ml-100k's.\n"
    "  --version  print the version\n";

int main(int argc, char** argv) {
  if (recbole::tools::answer_help_or_version(argc, argv, "gen_synthetic", kUsage)) return 0;
  try {
    const Args a = parse(argc, argv);
    const auto start = std::chrono::steady_clock::now();
    std::mt19937_64 rng(a.seed);

    // Power-law popularity: the item of rank k (random ranking) has weight 1 / (k + 1)^alpha.
    std::vector<int64_t> item_of_rank(static_cast<size_t>(a.items));
    std::iota(item_of_rank.begin(), item_of_rank.end(), 1);
    std::shuffle(item_of_rank.begin(), item_of_rank.end(), rng);
    std::vector<double> cdf(static_cast<size_t>(a.items));
    double total = 0;
    for (int64_t k = 0; k < a.items; ++k) {
      total += 1.0 / std::pow(static_cast<double>(k + 1), a.alpha);
      cdf[static_cast<size_t>(k)] = total;
    }
    std::uniform_real_distribution<double> unit(0.0, total);
    std::uniform_int_distribution<int64_t> user_dist(1, a.users);
    std::uniform_int_distribution<int> rating_dist(1, 5);
    std::uniform_int_distribution<int64_t> jitter(0, 600);

    const std::filesystem::path dir = std::filesystem::path(a.out) / a.name;
    std::filesystem::create_directories(dir);
    const std::filesystem::path path = dir / (a.name + ".inter");
    const std::string tmp = path.string() + ".tmp";
    std::FILE* f = std::fopen(tmp.c_str(), "wb");
    if (f == nullptr) throw std::runtime_error(tmp + ": cannot write: " + std::strerror(errno));
    std::string buf = "user_id:token\titem_id:token\trating:float\ttimestamp:float\n";
    buf.reserve((size_t{1} << 22) + 256);
    const int64_t t0 = 1000000000;
    const double span = 3.0 * 365 * 24 * 3600;
    char num[32];
    auto put = [&](int64_t v) {
      const auto r = std::to_chars(num, num + sizeof(num), v);
      buf.append(num, r.ptr);
    };
    for (int64_t i = 0; i < a.inters; ++i) {
      const int64_t user = user_dist(rng);
      const size_t rank =
          static_cast<size_t>(std::lower_bound(cdf.begin(), cdf.end(), unit(rng)) - cdf.begin());
      const int64_t item = item_of_rank[std::min(rank, cdf.size() - 1)];
      const int64_t ts =
          t0 + static_cast<int64_t>(span * static_cast<double>(i) / static_cast<double>(a.inters)) +
          jitter(rng);
      put(user);
      buf += '\t';
      put(item);
      buf += '\t';
      put(rating_dist(rng));
      buf += '\t';
      put(ts);
      buf += '\n';
      if (buf.size() >= (size_t{1} << 22)) {
        if (std::fwrite(buf.data(), 1, buf.size(), f) != buf.size()) {
          throw std::runtime_error(tmp + ": write failed");
        }
        buf.clear();
      }
    }
    if (std::fwrite(buf.data(), 1, buf.size(), f) != buf.size() || std::fclose(f) != 0) {
      throw std::runtime_error(tmp + ": write failed");
    }
    std::filesystem::rename(tmp, path);
    write_features(dir, a);
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::cout << "Wrote " << path.string() << ": " << a.inters << " interactions, "
              << std::filesystem::file_size(path) / 1e6 << " MB in " << secs << " s (and " << a.name
              << ".user, " << a.name << ".item)\n";
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "gen_synthetic: error: " << e.what() << "\n";
    return 1;
  }
}
