#include "models/layers/knowledge.h"

#include <numeric>
#include <vector>

#include "recbole/data/negative_sampler.h"
#include "recbole/utils/error.h"
#include "recbole/utils/thread_pool.h"

namespace recbole::models::layers {

const data::KnowledgeGraph& knowledge_graph_of(const ModelContext& ctx, const std::string& model) {
  if (ctx.knowledge == nullptr)
    throw ConfigError(model +
                      " is a knowledge model: it needs the knowledge graph that the knowledge "
                      "task loads (<dataset>.kg and .link)");
  return *ctx.knowledge;
}

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

}  // namespace recbole::models::layers
