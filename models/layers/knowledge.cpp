#include "models/layers/knowledge.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <vector>

#include "recbole/data/negative_sampler.h"
#include "recbole/utils/error.h"
#include "recbole/utils/thread_pool.h"

namespace recbole::models::layers {

NeighborTable sample_neighbors(const data::KnowledgeGraph& graph, int64_t k, uint64_t seed) {
  const int64_t n = graph.n_entities();
  // CSR of the undirected lists, each in triple order.
  std::vector<int64_t> start(static_cast<size_t>(n) + 1, 0);
  const auto& h = graph.heads();
  const auto& r = graph.relations();
  const auto& t = graph.tails();
  for (size_t e = 0; e < h.size(); ++e) {
    ++start[size_t(h[e]) + 1];
    ++start[size_t(t[e]) + 1];
  }
  std::partial_sum(start.begin(), start.end(), start.begin());
  std::vector<int64_t> fill(start.begin(), start.end() - 1);
  std::vector<int32_t> nb(static_cast<size_t>(start.back())), rel(nb.size());
  for (size_t e = 0; e < h.size(); ++e) {
    const size_t a = size_t(fill[size_t(h[e])]++), b = size_t(fill[size_t(t[e])]++);
    nb[a] = t[e];
    rel[a] = r[e];
    nb[b] = h[e];
    rel[b] = r[e];
  }
  torch::Tensor ents = torch::empty({n, k}, torch::kInt64);
  torch::Tensor rels = torch::empty({n, k}, torch::kInt64);
  int64_t* pe = ents.data_ptr<int64_t>();
  int64_t* pr = rels.data_ptr<int64_t>();
  data::Rng rng(seed ^ 0x6e65696768626f72ULL);
  std::vector<int64_t> positions;
  for (int64_t e = 0; e < n; ++e) {
    const int64_t begin = start[size_t(e)], size = start[size_t(e) + 1] - begin;
    for (int64_t j = 0; j < k; ++j) {
      int64_t p = -1;
      if (size >= k) {
        // k distinct positions: a partial Fisher-Yates over the list's positions.
        if (j == 0) {
          positions.resize(size_t(size));
          std::iota(positions.begin(), positions.end(), begin);
        }
        std::swap(positions[size_t(j)],
                  positions[size_t(j) + size_t(rng.below(uint64_t(size - j)))]);
        p = positions[size_t(j)];
      } else if (size > 0) {
        p = begin + static_cast<int64_t>(rng.below(uint64_t(size)));
      }
      pe[e * k + j] = p < 0 ? e : nb[size_t(p)];
      pr[e * k + j] = p < 0 ? 0 : rel[size_t(p)];
    }
  }
  return {ents, rels};
}

torch::Tensor transr_project(const torch::Tensor& x, const torch::Tensor& trans_w,
                             const torch::Tensor& rels, int64_t k) {
  const int64_t d = x.size(1);
  const torch::Tensor rels_host = DeviceManager::to_host(rels).contiguous();
  const int64_t n = rels_host.numel();
  const int64_t* r = rels_host.data_ptr<int64_t>();
  // Rows of each relation, in row order (a counting sort on the host).
  std::vector<int64_t> count(static_cast<size_t>(trans_w.size(0)) + 1, 0);
  for (int64_t i = 0; i < n; ++i) ++count[size_t(r[i]) + 1];
  std::partial_sum(count.begin(), count.end(), count.begin());
  std::vector<int64_t> order(static_cast<size_t>(n)), fill(count.begin(), count.end() - 1);
  for (int64_t i = 0; i < n; ++i) order[size_t(fill[size_t(r[i])]++)] = i;
  const torch::Tensor perm =
      torch::from_blob(order.data(), {n}, torch::kInt64).clone().to(x.device());
  // Split and unbind (not narrow and select): their backward is one concatenation, where a
  // slice's would zero a whole-size gradient per relation.
  std::vector<int64_t> sizes(count.size() - 1);
  for (size_t rel = 0; rel + 1 < count.size(); ++rel) sizes[rel] = count[rel + 1] - count[rel];
  const std::vector<torch::Tensor> groups = x.index_select(0, perm).split_with_sizes(sizes);
  const std::vector<torch::Tensor> matrices = trans_w.view({-1, d, k}).unbind(0);
  std::vector<torch::Tensor> parts;
  for (size_t rel = 0; rel < sizes.size(); ++rel)
    if (sizes[rel] > 0) parts.push_back(torch::matmul(groups[rel], matrices[rel]));
  // Back to row order: row order[j] of the result is grouped row j.
  return torch::zeros({n, k}, x.options()).index_copy(0, perm, torch::cat(parts));
}

void run_chunks(int64_t n_tasks, bool on_cuda, const std::function<void(int64_t)>& task) {
  auto run = [&](int64_t t, int) {
    torch::NoGradGuard no_grad;  // grad mode is per thread
    task(t);
  };
  if (on_cuda) {
    for (int64_t t = 0; t < n_tasks; ++t) run(t, 0);
    return;
  }
  BlasThreadsScope one_blas_thread(1);  // each task runs its own small products
  parallel_for(n_tasks, run);
}

namespace {

// Each row's values divided by its number of stored values (a binary matrix row-normalised).
void divide_rows_by_count(SparseMatrix& m) {
  for (int64_t r = 0; r < m.rows; ++r) {
    const int64_t b = m.indptr[size_t(r)], e = m.indptr[size_t(r) + 1];
    for (int64_t k = b; k < e; ++k) m.values[size_t(k)] = 1.0f / static_cast<float>(e - b);
  }
}

}  // namespace

SparseMatrix user_item_mean_matrix(const data::InteractionMatrix& train, int64_t n_entities) {
  std::vector<int64_t> r, c;
  for (int32_t u = 0; u < train.n_users(); ++u)
    for (const int32_t* it = train.row_begin(u); it != train.row_end(u); ++it)
      r.push_back(u), c.push_back(*it);
  SparseMatrix m = SparseMatrix::from_triplets(train.n_users(), n_entities, r, c,
                                               std::vector<float>(r.size(), 1.0f));
  divide_rows_by_count(m);  // duplicates were summed into one entry: distinct items count
  return m;
}

SparseMatrix row_normalized_interaction_graph(const data::InteractionMatrix& train,
                                              int64_t n_entities) {
  std::vector<int32_t> users, items;
  for (int32_t u = 0; u < train.n_users(); ++u)
    for (const int32_t* it = train.row_begin(u); it != train.row_end(u); ++it)
      users.push_back(u), items.push_back(*it);
  SparseMatrix a = bipartite_adjacency(train.n_users(), n_entities, users, items, false);
  divide_rows_by_count(a);
  return a;
}

KgEdges KgEdges::index_select(const torch::Tensor& kept) const {
  return {heads.index_select(0, kept), tails.index_select(0, kept),
          relations.index_select(0, kept)};
}

KgEdges kg_edge_list(const data::KnowledgeGraph& graph, const DeviceManager& device) {
  const auto column = [&](const std::vector<int32_t>& v) {
    return device.place(torch::from_blob(const_cast<int32_t*>(v.data()),
                                         {static_cast<int64_t>(v.size())}, torch::kInt32)
                            .to(torch::kInt64));
  };
  return {column(graph.heads()), column(graph.tails()), column(graph.relations())};
}

torch::Tensor sample_edges(int64_t n_edges, double rate, uint64_t seed) {
  if (rate <= 0.0 || rate >= 1.0) return torch::arange(n_edges, torch::kInt64);
  const auto k = static_cast<int64_t>(std::floor(static_cast<double>(n_edges) * rate));
  std::vector<int64_t> positions(static_cast<size_t>(n_edges));
  std::iota(positions.begin(), positions.end(), int64_t{0});
  data::Rng rng(seed ^ 0x6564676573616d70ULL);
  // A partial Fisher-Yates: the first k positions are a uniform k-subset.
  for (int64_t j = 0; j < k; ++j)
    std::swap(positions[size_t(j)],
              positions[size_t(j) + size_t(rng.below(uint64_t(n_edges - j)))]);
  positions.resize(static_cast<size_t>(k));
  std::sort(positions.begin(), positions.end());
  return torch::from_blob(positions.data(), {k}, torch::kInt64).clone();
}

torch::Tensor scatter_mean(const torch::Tensor& src, const torch::Tensor& index, int64_t n) {
  const torch::Tensor sum = torch::zeros({n, src.size(1)}, src.options()).index_add(0, index, src);
  torch::Tensor count;
  {
    torch::NoGradGuard no_grad;
    count = torch::zeros({n}, src.options())
                .index_add(0, index, torch::ones({index.size(0)}, src.options()))
                .clamp_min(1.0)
                .unsqueeze(1);
  }
  return sum / count;
}

torch::Tensor segment_softmax(const torch::Tensor& src, const torch::Tensor& index, int64_t n) {
  std::vector<int64_t> shape = src.sizes().vec();
  shape[0] = n;
  torch::Tensor top;
  {
    // The shift only keeps exp() finite: softmax does not depend on it, so no gradient.
    torch::NoGradGuard no_grad;
    top = torch::full(shape, -std::numeric_limits<float>::infinity(), src.options());
    if (src.is_cuda()) {
      const torch::Tensor idx = src.dim() == 1 ? index : index.unsqueeze(1).expand_as(src);
      top = top.scatter_reduce(0, idx, src.detach(), "amax", /*include_self=*/false);
    } else {
      // A host loop: scatter_reduce is beta in libtorch 1.13 and warns on first use.
      const torch::Tensor s = src.detach().to(torch::kFloat32).contiguous();
      const torch::Tensor ix = index.contiguous();
      const int64_t cols = s.numel() / std::max<int64_t>(s.size(0), 1);
      torch::Tensor t =
          torch::full(shape, -std::numeric_limits<float>::infinity(), torch::kFloat32);
      const float* sp = s.data_ptr<float>();
      const int64_t* ip = ix.data_ptr<int64_t>();
      float* tp = t.data_ptr<float>();
      for (int64_t e = 0; e < s.size(0); ++e)
        for (int64_t c = 0; c < cols; ++c)
          tp[ip[e] * cols + c] = std::max(tp[ip[e] * cols + c], sp[e * cols + c]);
      top = t.to(src.scalar_type());
    }
  }
  const torch::Tensor ex = (src - top.index_select(0, index)).exp();
  const torch::Tensor den = torch::zeros(shape, src.options()).index_add(0, index, ex);
  return ex / den.index_select(0, index);
}

SparseMatrix sparse_dropout(const SparseMatrix& m, double p) {
  if (p <= 0.0) return m;
  const torch::Tensor keep = torch::bernoulli(torch::full({m.nnz()}, 1.0 - p, torch::kFloat64));
  const double* kp = keep.data_ptr<double>();
  const auto scale = static_cast<float>(1.0 / (1.0 - p));
  SparseMatrix out;
  out.rows = m.rows;
  out.cols = m.cols;
  out.indptr.assign(static_cast<size_t>(m.rows) + 1, 0);
  for (int64_t r = 0; r < m.rows; ++r) {
    for (int64_t e = m.indptr[size_t(r)]; e < m.indptr[size_t(r) + 1]; ++e)
      if (kp[e] != 0.0) {
        out.indices.push_back(m.indices[size_t(e)]);
        out.values.push_back(m.values[size_t(e)] * scale);
      }
    out.indptr[size_t(r) + 1] = out.nnz();
  }
  return out;
}

namespace {

constexpr int64_t kTopKRowBlock = 256;  // rows per task
constexpr int64_t kTopKColTile = 2048;  // columns per product: a 2 MiB tile per task

// Inserts v (column col) into a row's running top-k; returns the new k-th value.
inline float insert_top(float v, int64_t col, int64_t k, float* best, int64_t* idx) {
  int64_t pos = k - 1;
  for (; pos > 0 && best[pos - 1] < v; --pos) best[pos] = best[pos - 1], idx[pos] = idx[pos - 1];
  best[pos] = v;
  idx[pos] = col;
  return best[k - 1];
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define RECBOLE_TOPK_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define RECBOLE_TOPK_CLONES
#endif

typedef float TopKFloats __attribute__((vector_size(64)));  // 16 floats
typedef int32_t TopKMask __attribute__((vector_size(64)));

// Merges the columns [c0, c0 + n) of one row's similarities into its running top-k (values
// descending; a value equal to a kept one ranks after it, so the lower column wins a tie).
// Almost every block of 64 columns holds nothing above the k-th value: one vector max and
// compare skips it.
RECBOLE_TOPK_CLONES
void merge_row(const float* sims, int64_t n, int64_t c0, int64_t k, float* best, int64_t* idx) {
  float threshold = best[k - 1];
  constexpr int64_t kBlock = 64;
  int64_t j = 0;
  for (; j + kBlock <= n; j += kBlock) {
    TopKFloats v[4];
    std::memcpy(v, sims + j, sizeof(v));
    const TopKFloats m01 = v[0] > v[1] ? v[0] : v[1];
    const TopKFloats m23 = v[2] > v[3] ? v[2] : v[3];
    const TopKFloats m = m01 > m23 ? m01 : m23;
    TopKFloats t;
    for (int l = 0; l < 16; ++l) t[l] = threshold;
    const TopKMask above = m > t;
    int32_t any = 0;
    for (int l = 0; l < 16; ++l) any |= above[l];
    if (!any) continue;
    for (int64_t l = 0; l < kBlock; ++l)
      if (sims[j + l] > threshold) threshold = insert_top(sims[j + l], c0 + j + l, k, best, idx);
  }
  for (; j < n; ++j)
    if (sims[j] > threshold) threshold = insert_top(sims[j], c0 + j, k, best, idx);
}

}  // namespace

namespace {

// The top-k of x's rows `rows` (nullptr: all rows, in order), see cosine_topk.
TopK topk_of_rows(const torch::Tensor& x, int64_t k, const std::vector<int64_t>* rows) {
  const int64_t n = x.size(0);
  if (k < 1 || k > n)
    throw Error("cosine_topk: k = " + std::to_string(k) + " must be in [1, " + std::to_string(n) +
                "] (the number of rows)");
  torch::NoGradGuard no_grad;
  namespace F = torch::nn::functional;
  const torch::Tensor xn =
      F::normalize(x.detach().to(torch::kFloat32), F::NormalizeFuncOptions().dim(1)).contiguous();
  // The scanned rows: all of xn, or a copy of the chosen ones (on xn's device).
  const torch::Tensor scanned =
      rows != nullptr ? xn.index_select(0, torch::tensor(*rows, xn.options().dtype(torch::kInt64)))
                      : xn;
  const int64_t m = scanned.size(0);
  TopK out{torch::empty({m, k}, torch::kFloat32), torch::empty({m, k}, torch::kInt64)};
  const int64_t n_blocks = (m + kTopKRowBlock - 1) / kTopKRowBlock;
  if (xn.is_cuda()) {
    for (int64_t b = 0; b < n_blocks; ++b) {
      const int64_t r0 = b * kTopKRowBlock, rb = std::min(kTopKRowBlock, m - r0);
      const auto [v, i] = torch::mm(scanned.narrow(0, r0, rb), xn.t()).topk(k, 1);
      out.values.narrow(0, r0, rb).copy_(v);
      out.indices.narrow(0, r0, rb).copy_(i);
    }
    return out;
  }
  float* values = out.values.data_ptr<float>();
  int64_t* indices = out.indices.data_ptr<int64_t>();
  std::fill(values, values + m * k, -std::numeric_limits<float>::infinity());
  std::fill(indices, indices + m * k, int64_t{0});
  run_chunks(n_blocks, false, [&](int64_t b) {
    const int64_t r0 = b * kTopKRowBlock, rb = std::min(kTopKRowBlock, m - r0);
    const torch::Tensor block = scanned.narrow(0, r0, rb);
    torch::Tensor tile = torch::empty({rb, kTopKColTile}, torch::kFloat32);
    for (int64_t c0 = 0; c0 < n; c0 += kTopKColTile) {
      const int64_t ct = std::min(kTopKColTile, n - c0);
      torch::Tensor sims = tile.narrow(1, 0, ct);
      if (ct < kTopKColTile) sims = torch::empty({rb, ct}, torch::kFloat32);
      torch::mm_out(sims, block, xn.narrow(0, c0, ct).t());
      const float* s = sims.data_ptr<float>();
      const int64_t stride = sims.stride(0);
      for (int64_t r = 0; r < rb; ++r)
        merge_row(s + r * stride, ct, c0, k, values + (r0 + r) * k, indices + (r0 + r) * k);
    }
  });
  return out;
}

// 1 / sqrt(the sum of a row's top-k values); RecBole zeroes the inf of an empty row, and a
// negative sum (no real kNN graph) is zeroed too.
float inverse_sqrt_degree(const float* values, int64_t k) {
  double sum = 0;
  for (int64_t j = 0; j < k; ++j) sum += values[j];
  return sum > 0 ? static_cast<float>(1.0 / std::sqrt(sum)) : 0.0f;
}

// D^{-1/2} S D^{-1/2} over the rows [0, m) of `top` (those of x's first m rows), scale[c] the
// inverse square root of row c's degree for every column c they name; n × n.
SparseMatrix normalised_knn(const TopK& top, int64_t m, int64_t n,
                            const std::vector<float>& scale) {
  const int64_t k = top.values.size(1);
  const float* v = top.values.data_ptr<float>();
  const int64_t* c = top.indices.data_ptr<int64_t>();
  std::vector<int64_t> rows(static_cast<size_t>(m * k)), cols(rows.size());
  std::vector<float> vals(rows.size());
  for (int64_t r = 0; r < m; ++r)
    for (int64_t j = 0; j < k; ++j) {
      const size_t e = size_t(r * k + j);
      rows[e] = r;
      cols[e] = c[e];
      vals[e] = v[e] * scale[size_t(r)] * scale[size_t(c[e])];
    }
  return SparseMatrix::from_triplets(n, n, rows, cols, vals);
}

}  // namespace

TopK cosine_topk(const torch::Tensor& x, int64_t k) { return topk_of_rows(x, k, nullptr); }

TopK cosine_topk(const torch::Tensor& x, int64_t k, const std::vector<int64_t>& rows) {
  for (const int64_t r : rows)
    if (r < 0 || r >= x.size(0))
      throw Error("cosine_topk: row " + std::to_string(r) + " is not in [0, " +
                  std::to_string(x.size(0)) + ")");
  return topk_of_rows(x, k, &rows);
}

SparseMatrix knn_graph(const torch::Tensor& x, int64_t k) { return knn_graph(x, k, x.size(0)); }

SparseMatrix knn_graph(const torch::Tensor& x, int64_t k, int64_t first_rows) {
  const int64_t n = x.size(0);
  if (first_rows < 0 || first_rows > n)
    throw Error("knn_graph: first_rows = " + std::to_string(first_rows) + " must be in [0, " +
                std::to_string(n) + "]");
  std::vector<int64_t> first(static_cast<size_t>(first_rows));
  std::iota(first.begin(), first.end(), int64_t{0});
  const TopK top = topk_of_rows(x, k, &first);
  std::vector<float> scale(static_cast<size_t>(n), 0.0f);
  for (int64_t r = 0; r < first_rows; ++r)
    scale[size_t(r)] = inverse_sqrt_degree(top.values.data_ptr<float>() + r * k, k);
  // The neighbours outside [0, first_rows) need their own rows' sums.
  std::vector<char> wanted(static_cast<size_t>(n), 0);
  const int64_t* c = top.indices.data_ptr<int64_t>();
  for (int64_t e = 0; e < first_rows * k; ++e)
    if (c[e] >= first_rows) wanted[size_t(c[e])] = 1;
  std::vector<int64_t> outside;
  for (int64_t r = first_rows; r < n; ++r)
    if (wanted[size_t(r)]) outside.push_back(r);
  if (!outside.empty()) {
    const TopK more = topk_of_rows(x, k, &outside);
    for (size_t i = 0; i < outside.size(); ++i)
      scale[size_t(outside[i])] =
          inverse_sqrt_degree(more.values.data_ptr<float>() + int64_t(i) * k, k);
  }
  return normalised_knn(top, first_rows, n, scale);
}

}  // namespace recbole::models::layers
