#include "models/knowledge/ripplenet.h"

#include <algorithm>
#include <numeric>

#include "models/layers/init.h"
#include "models/layers/knowledge.h"
#include "models/layers/losses.h"
#include "models/layers/row_sums.h"
#include "models/shared_keys.h"
#include "recbole/config/config.h"
#include "recbole/data/negative_sampler.h"
#include "recbole/utils/logging.h"

namespace recbole::models {

RippleNet::RippleNet(const ModelContext& ctx)
    : Model("RippleNet", ctx),
      dim_(keys::embedding_size().get(ctx.config)),
      n_hop_(ctx.config.get_int("n_hop")),
      n_memory_(ctx.config.get_int("n_memory")),
      kg_weight_(ctx.config.get_double("kg_weight")),
      reg_weight_(keys::reg_weight().get(ctx.config)),
      hops_repeat_(ctx.config.get_string("ripple_sets") == "recbole") {
  const data::KnowledgeGraph& g = ctx.need<data::KnowledgeGraph>();
  entity_embedding_ = register_parameter(
      "entity_embedding", layers::new_table(g.n_entities(), dim_, layers::Init::kXavierNormal));
  relation_embedding_ = register_parameter(
      "relation_embedding",
      layers::new_table(g.n_relations(), dim_ * dim_, layers::Init::kXavierNormal));
  transform_ = register_module("transform_matrix",
                               torch::nn::Linear(torch::nn::LinearOptions(dim_, dim_).bias(false)));
  layers::initialize(*this, layers::Init::kXavierNormal);
  to(ctx.device.device());

  // Triples by head, in KG-table order.
  const int64_t e = g.n_entities();
  std::vector<int64_t> start(static_cast<size_t>(e) + 1, 0);
  for (int32_t h : g.heads()) ++start[size_t(h) + 1];
  std::partial_sum(start.begin(), start.end(), start.begin());
  std::vector<int64_t> fill(start.begin(), start.end() - 1), by_head(g.heads().size());
  for (size_t k = 0; k < g.heads().size(); ++k)
    by_head[size_t(fill[size_t(g.heads()[k])]++)] = int64_t(k);

  const int64_t m = n_memory_;
  torch::Tensor heads = torch::zeros({ctx.n_users, n_hop_, m}, torch::kInt64);
  torch::Tensor rels = torch::zeros_like(heads), tails = torch::zeros_like(heads);
  data::Rng rng(static_cast<uint64_t>(ctx.config.get_int("seed")) ^ 0x726970706c65ULL);
  int64_t padded = 0;
  std::vector<int64_t> candidates, pick(static_cast<size_t>(m)), previous_tails;
  // The triples whose head is one of `entities` (with repeats), in KG-table order per head.
  const auto triples_of = [&](const auto& entities) {
    candidates.clear();
    for (const auto entity : entities)
      for (int64_t p = start[size_t(entity)]; p < start[size_t(entity) + 1]; ++p)
        candidates.push_back(by_head[size_t(p)]);
  };
  for (int32_t u = 1; u < ctx.train.n_users(); ++u) {
    if (ctx.train.row_size(u) == 0) continue;
    for (int64_t h = 0; h < n_hop_; ++h) {
      if (h > 0 && hops_repeat_) {  // RecBole's sets: hop 0 again (see the header)
        for (auto* table : {&heads, &rels, &tails}) (*table)[u][h].copy_((*table)[u][0]);
        continue;
      }
      if (h == 0)
        triples_of(std::vector<int32_t>(ctx.train.row_begin(u), ctx.train.row_end(u)));
      else
        triples_of(previous_tails);
      const auto n = static_cast<int64_t>(candidates.size());
      if (n == 0 && h == 0) {
        ++padded;
        break;
      }
      // A hop ≥ 1 whose heads start no triple keeps the previous hop's draw.
      for (int64_t j = 0; j < m && n > 0; ++j) {
        if (n >= m) {  // distinct: a partial Fisher-Yates
          std::swap(candidates[size_t(j)],
                    candidates[size_t(j) + size_t(rng.below(uint64_t(n - j)))]);
          pick[size_t(j)] = candidates[size_t(j)];
        } else {
          pick[size_t(j)] = candidates[size_t(rng.below(uint64_t(n)))];
        }
      }
      previous_tails.clear();
      for (int64_t j = 0; j < m; ++j) {
        const size_t k = size_t(pick[size_t(j)]);
        heads[u][h][j] = int64_t{g.heads()[k]};
        rels[u][h][j] = int64_t{g.relations()[k]};
        tails[u][h][j] = int64_t{g.tails()[k]};
        previous_tails.push_back(int64_t{g.tails()[k]});
      }
    }
  }
  if (padded > 0)
    log::info("RippleNet: " + std::to_string(padded) +
              " users have no KG triple from their items; their ripple sets are padding");
  memory_heads_ = register_buffer("memory_heads", ctx.device.place(heads));
  memory_relations_ = register_buffer("memory_relations", ctx.device.place(rels));
  memory_tails_ = register_buffer("memory_tails", ctx.device.place(tails));
}

RippleNet::Memories RippleNet::memories(const torch::Tensor& users, bool with_kge) const {
  const auto [distinct_host, inverse] = layers::distinct_ids(users, device_manager());
  const torch::Tensor distinct = distinct_host.to(users.device());
  const int64_t u = distinct.size(0), m = n_memory_;
  // [u·M, k] per distinct user's memory → [B, M, k] at the batch's rows.
  const auto to_rows = [&](const torch::Tensor& x) {
    return x.view({u, m, -1}).index_select(0, inverse);
  };
  // Rows of R_r transposed, so that x · R_rᵀ = (R_r x)ᵀ.
  const torch::Tensor transposed =
      relation_embedding_.view({-1, dim_, dim_}).transpose(1, 2).reshape({-1, dim_ * dim_});
  Memories out;
  for (int64_t h = 0; h < n_hop_; ++h) {
    if (h > 0 && hops_repeat_) {  // the same tensors: their gradients add up, as two copies' would
      for (auto* hops : {&out.heads, &out.relation_ids, &out.tails, &out.rh, &out.kge})
        if (!hops->empty()) hops->push_back(hops->front());
      continue;
    }
    auto ids = [&](const torch::Tensor& table) {
      return table.index_select(0, distinct).select(1, h).reshape({-1});
    };
    const torch::Tensor heads = entity_embedding_.index_select(0, ids(memory_heads_));
    const torch::Tensor tails = entity_embedding_.index_select(0, ids(memory_tails_));
    const torch::Tensor rels = ids(memory_relations_);
    out.heads.push_back(to_rows(heads));
    out.tails.push_back(to_rows(tails));
    out.relation_ids.push_back(to_rows(rels).reshape({-1}));
    out.rh.push_back(to_rows(layers::transr_project(heads, transposed, rels, dim_)));
    if (with_kge) {  // hᵀ R t (row vector times matrix), as RecBole's KGE term
      const torch::Tensor hr = layers::transr_project(heads, relation_embedding_, rels, dim_);
      out.kge.push_back(to_rows((hr * tails).sum(1)).reshape({-1}));
    }
  }
  return out;
}

torch::Tensor RippleNet::scores(const Memories& m, torch::Tensor v) {
  const int64_t b = v.size(0), n = v.size(1);
  torch::Tensor o_sum;
  for (int64_t h = 0; h < n_hop_; ++h) {
    // Attention over the memories for each of the N items: [B, N, M]. One item per row (the
    // training rows) is a broadcast product: a batched product of 1-row matrices would make
    // one tiny GEMM call per row.
    torch::Tensor o;  // [B, N, d]
    if (n == 1) {
      const torch::Tensor p = torch::softmax((m.rh[size_t(h)] * v).sum(-1), -1);  // [B, M]
      o = (p.unsqueeze(-1) * m.tails[size_t(h)]).sum(1).unsqueeze(1);
    } else {
      const torch::Tensor p = torch::softmax(torch::bmm(v, m.rh[size_t(h)].transpose(1, 2)), -1);
      o = torch::bmm(p, m.tails[size_t(h)]);
    }
    v = transform_->forward((v + o).view({b * n, dim_})).view({b, n, dim_});
    o_sum = h == 0 ? o : o_sum + o;
  }
  return (v * o_sum).sum(-1);  // [B, N]
}

torch::Tensor RippleNet::calculate_loss(const data::Batch& batch) {
  const Memories m = memories(batch.users, /*with_kge=*/true);
  const torch::Tensor v = entity_embedding_.index_select(0, batch.items).unsqueeze(1);
  const torch::Tensor s = scores(m, v).view({-1});
  torch::Tensor loss = torch::binary_cross_entropy_with_logits(s, batch.labels);
  torch::Tensor kge = torch::zeros({}, s.options()), reg = torch::zeros({}, s.options());
  // ‖R‖ over the B·M gathered matrices, from each relation's count: √(Σ_r n_r ‖R_r‖²).
  const torch::Tensor row_sq = relation_embedding_.pow(2).sum(1);
  for (int64_t h = 0; h < n_hop_; ++h) {
    const torch::Tensor& rels = m.relation_ids[size_t(h)];
    kge = kge + torch::sigmoid(m.kge[size_t(h)]).mean();
    const torch::Tensor counts =
        torch::bincount(rels, {}, relation_embedding_.size(0)).to(row_sq.scalar_type());
    const torch::Tensor r_norm = (counts * row_sq).sum().sqrt();
    reg = reg + (m.heads[size_t(h)].norm() + m.tails[size_t(h)].norm() + r_norm) /
                    static_cast<double>(rels.size(0));
  }
  reg = reg + layers::emb_loss({transform_->weight});
  return loss - kg_weight_ * kge + reg_weight_ * reg;
}

torch::Tensor RippleNet::predict(const data::Batch& batch) {
  return scores(memories(batch.users, /*with_kge=*/false),
                entity_embedding_.index_select(0, batch.items).unsqueeze(1))
      .view({-1});
}

torch::Tensor RippleNet::full_sort_predict(const data::Batch& batch) {
  const int64_t b = batch.users.size(0), n = n_items();
  torch::Tensor out = torch::empty({b, n}, entity_embedding_.options());
  const torch::Tensor items = entity_embedding_.narrow(0, 0, n);
  // Users per task: each task's [c, n, d] tensors hold about 1M floats.
  const int64_t chunk = std::max<int64_t>(1, (int64_t{1} << 20) / (n * dim_));
  layers::run_chunks((b + chunk - 1) / chunk, out.is_cuda(), [&](int64_t task) {
    const int64_t begin = task * chunk, c = std::min(chunk, b - begin);
    const Memories m = memories(batch.users.narrow(0, begin, c), /*with_kge=*/false);
    out.narrow(0, begin, c).copy_(scores(m, items.unsqueeze(0).expand({c, n, dim_}).contiguous()));
  });
  return out;
}

RECBOLE_REGISTER_MODEL(RippleNet) {
  using config::Key;
  using config::KeyType;
  register_model(
      {"RippleNet",
       "knowledge",
       InputType::kPointwise,
       "Ripple network: a user's preferences spread over its items' KG triples, hop by hop",
       {keys::embedding_size().decl("Dimension of entity rows"),
        Key("n_hop", KeyType::kInt).min(1).help("Hops of the ripple set"),
        Key("n_memory", KeyType::kInt).min(1).help("Triples per hop of a user's ripple set"),
        Key("kg_weight", KeyType::kFloat).min(0).help("Weight of the KG embedding term"),
        keys::reg_weight().decl("Weight of the EmbLoss regulariser"),
        Key("ripple_sets", KeyType::kString)
            .choices({"recbole", "paper"})
            .help("recbole: every hop after the first repeats hop 0, as RecBole 1.2.1 builds "
                  "them; paper: hop h draws from the triples whose head is a tail of hop h - 1 "
                  "(not a RecBole key)")},
       [](const ModelContext& ctx) { return std::make_shared<RippleNet>(ctx); }});
}

}  // namespace recbole::models
