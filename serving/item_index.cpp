#include "serving/item_index.h"

#include <algorithm>
#include <cmath>

#include "recbole/utils/error.h"

#ifdef RECBOLE_WITH_FAISS
#include <faiss/IndexFlat.h>
#include <faiss/IndexIVFFlat.h>
#endif

namespace recbole::serving {
namespace {

#ifdef RECBOLE_WITH_FAISS
class IvfIndex : public ItemIndex {
 public:
  IvfIndex(const float* factors, int64_t n_items, int64_t dim, int64_t nlist, int64_t nprobe,
           uint64_t seed)
      : quantizer_(static_cast<faiss::Index::idx_t>(dim)),
        index_(&quantizer_, static_cast<size_t>(dim), static_cast<size_t>(nlist),
               faiss::METRIC_INNER_PRODUCT),
        n_items_(n_items) {
    // Items 1 .. n − 1 (faiss ids are row − 1 of this block).
    const float* rows = factors + dim;
    const faiss::Index::idx_t n = static_cast<faiss::Index::idx_t>(n_items - 1);
    index_.cp.seed = static_cast<int>(seed & 0x7fffffff);
    index_.cp.min_points_per_centroid = 1;  // small catalogues: no warning on stderr
    index_.train(n, rows);
    index_.add(n, rows);
    index_.nprobe = static_cast<size_t>(std::min(nprobe, nlist));
  }

  IdList search(const float* q, int64_t k, const int32_t* ex,
                const int32_t* ex_end) const override {
    // Ask for k plus the excluded items: each excluded one may take a place.
    const int64_t want = std::min<int64_t>(k + (ex_end - ex), n_items_ - 1);
    std::vector<float> scores(static_cast<size_t>(want));
    std::vector<faiss::Index::idx_t> ids(static_cast<size_t>(want));
    index_.search(1, q, static_cast<faiss::Index::idx_t>(want), scores.data(), ids.data());
    IdList out;
    for (int64_t j = 0; j < want && static_cast<int64_t>(out.size()) < k; ++j) {
      if (ids[static_cast<size_t>(j)] < 0) break;  // the cells scanned held fewer
      const int32_t item = static_cast<int32_t>(ids[static_cast<size_t>(j)] + 1);
      if (std::binary_search(ex, ex_end, item)) continue;
      out.emplace_back(item, scores[static_cast<size_t>(j)]);
    }
    // The evaluator's order: descending score, ties by the lower id.
    std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
      return a.second > b.second || (a.second == b.second && a.first < b.first);
    });
    return out;
  }

  std::string describe() const override {
    return "ivf (nlist " + std::to_string(index_.nlist) + ", nprobe " +
           std::to_string(index_.nprobe) + ")";
  }

 private:
  faiss::IndexFlatIP quantizer_;
  faiss::IndexIVFFlat index_;
  int64_t n_items_;
};
#endif

}  // namespace

bool ItemIndex::available() {
#ifdef RECBOLE_WITH_FAISS
  return true;
#else
  return false;
#endif
}

std::unique_ptr<ItemIndex> ItemIndex::build(const float* item_factors, int64_t n_items, int64_t dim,
                                            const ItemIndexOptions& options, uint64_t seed) {
  if (options.kind != "ivf")
    throw Error("index: expected exact or ivf, got \"" + options.kind + "\"");
  if (options.nlist < 0 || options.nprobe < 1)
    throw Error("index: expected nlist >= 0 and nprobe >= 1, got nlist " +
                std::to_string(options.nlist) + ", nprobe " + std::to_string(options.nprobe));
  if (n_items < 2 || dim < 1) throw Error("index: no items to index");
  const int64_t items = n_items - 1;
  int64_t nlist = options.nlist > 0
                      ? options.nlist
                      : static_cast<int64_t>(std::lround(4.0 * std::sqrt(double(items))));
  nlist = std::clamp<int64_t>(nlist, 1, items);
#ifdef RECBOLE_WITH_FAISS
  return std::make_unique<IvfIndex>(item_factors, n_items, dim, nlist, options.nprobe, seed);
#else
  (void)item_factors;
  (void)seed;
  throw Error(
      "index: ivf needs faiss, and this recbole-cpp was built without it (install "
      "libfaiss-dev and configure again); serve with the exact index");
#endif
}

}  // namespace recbole::serving
