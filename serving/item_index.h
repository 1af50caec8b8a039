#pragma once
// ItemIndex: an approximate maximum-inner-product index over a factor model's item vectors, for
// serving catalogues of 10⁵–10⁶ items (faiss's IVF-flat: k-means cells under the inner product,
// a query scans the nprobe cells nearest to it). Exact scoring stays the default; the index
// trades recall for speed, and recbole_recommend --recall_users reports its recall@k against the
// exact answer. Built only when recbole-cpp is built with faiss (Debian's libfaiss-dev);
// otherwise build() says so.
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace recbole::serving {

struct ItemIndexOptions {
  std::string kind = "exact";  // "exact" (no index) or "ivf"
  int64_t nlist = 0;           // cells; 0: 4·√(items), at least 1
  int64_t nprobe = 32;         // cells scanned per query (nprobe ≥ nlist scans all: exact)
};

class ItemIndex {
 public:
  using IdList = std::vector<std::pair<int32_t, float>>;
  virtual ~ItemIndex() = default;

  // Whether this build has faiss.
  static bool available();
  // An index over items 1 .. n_items − 1 of `item_factors` ([n_items, dim] float32, row-major;
  // row 0 is the padding item and never returned). Throws recbole::Error for a build without
  // faiss, an unknown kind or bounds out of range. k-means is seeded by `seed`.
  static std::unique_ptr<ItemIndex> build(const float* item_factors, int64_t n_items, int64_t dim,
                                          const ItemIndexOptions& options, uint64_t seed = 2020);

  // The (about) k items of largest q · item, best first (ties by id), skipping the ascending
  // ids [ex, ex_end); fewer than k when the cells scanned hold fewer. Safe from many threads.
  virtual IdList search(const float* q, int64_t k, const int32_t* ex,
                        const int32_t* ex_end) const = 0;
  // "ivf (nlist N, nprobe P)", for /model and logs.
  virtual std::string describe() const = 0;
};

}  // namespace recbole::serving
