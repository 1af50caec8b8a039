#include "models/knowledge/kgcn.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/simd.h"
#include "models/layers/backward_parts.h"
#include "models/layers/init.h"
#include "models/layers/knowledge.h"
#include "models/layers/losses.h"
#include "models/shared_keys.h"
#include "recbole/config/config.h"

namespace recbole::models {

KGCN::KGCN(const ModelContext& ctx, const std::string& name)
    : Model(name, ctx),
      dim_(keys::embedding_size().get(ctx.config)),
      n_iter_(ctx.config.get_int("n_iter")),
      k_(ctx.config.get_int("neighbor_sample_size")),
      aggregator_(ctx.config.get_string("aggregator")),
      reg_weight_(keys::reg_weight().get(ctx.config)) {
  const data::KnowledgeGraph& g = ctx.need<data::KnowledgeGraph>();
  // On the CPU until to() below, where layers::initialize(*this) draws every table again, so
  // that a seed gives the same weights on every device.
  const auto table = [&](const char* name, int64_t rows) {
    return register_parameter(name, layers::new_table(rows, dim_, layers::Init::kXavierNormal));
  };
  user_embedding_ = table("user_embedding", ctx.n_users);
  entity_embedding_ = table("entity_embedding", g.n_entities());
  // One more row than the relations, as RecBole's table (the last is never read).
  relation_embedding_ = table("relation_embedding", g.n_relations() + 1);
  for (int64_t i = 0; i < n_iter_; ++i) {
    auto linear =
        register_module("linear_" + std::to_string(i),
                        torch::nn::Linear(aggregator_ == "concat" ? 2 * dim_ : dim_, dim_));
    linears_.push_back(linear);
  }
  layers::initialize(*this, layers::Init::kXavierNormal);
  to(ctx.device.device());
  const layers::NeighborTable adj =
      layers::sample_neighbors(g, k_, static_cast<uint64_t>(ctx.config.get_int("seed")));
  adj_entity_ = register_buffer("adj_entity", ctx.device.place(adj.entities));
  adj_relation_ = register_buffer("adj_relation", ctx.device.place(adj.relations));
}

torch::Tensor KGCN::relation_logits(const torch::Tensor& users) const {
  return torch::matmul(users, relation_embedding_.t()) / static_cast<double>(dim_);
}

KGCN::Field KGCN::receptive_field(const torch::Tensor& items) const {
  const int64_t b = items.size(0);
  Field f{{items.view({b, 1})}, {torch::Tensor()}};
  for (int64_t j = 0; j < n_iter_; ++j) {
    const torch::Tensor flat = f.entities.back().reshape({-1});
    f.entities.push_back(adj_entity_.index_select(0, flat).view({b, -1}));
    f.relations.push_back(adj_relation_.index_select(0, flat).view({b, -1}));
  }
  return f;
}

torch::Tensor KGCN::neighbor_weights(const torch::Tensor& logits, const Field& field,
                                     int64_t j) const {
  const int64_t b = logits.size(0), width = field.entities[size_t(j)].size(1);
  return torch::softmax(logits.gather(1, field.relations[size_t(j) + 1]).view({b, width, k_}), -1);
}

torch::Tensor KGCN::item_vectors(const torch::Tensor& logits, const torch::Tensor& items) {
  return item_vectors(logits, receptive_field(items));
}

torch::Tensor KGCN::item_vectors(const torch::Tensor& logits, const Field& field) {
  const int64_t b = logits.size(0);
  // gather_rows: in a training part only the gathered rows get gradients, not a zeroed copy of
  // the whole entity table per gather (34,629 × 64 on ml-100k).
  std::vector<torch::Tensor> vec;
  for (const torch::Tensor& e : field.entities)
    vec.push_back(layers::gather_rows(entity_embedding_, e.reshape({-1})).view({b, -1, dim_}));
  for (int64_t i = 0; i < n_iter_; ++i) {
    std::vector<torch::Tensor> next;
    for (int64_t j = 0; j < n_iter_ - i; ++j) {
      const int64_t width = vec[size_t(j)].size(1);
      const torch::Tensor a = neighbor_weights(logits, field, j);
      const torch::Tensor neigh = vec[size_t(j) + 1].view({b, width, k_, dim_});
      const torch::Tensor agg = (a.unsqueeze(-1) * neigh).sum(2) / static_cast<double>(k_);
      const torch::Tensor& self = vec[size_t(j)];
      torch::Tensor in = aggregator_ == "sum"        ? self + agg
                         : aggregator_ == "neighbor" ? agg
                                                     : torch::cat({self, agg}, -1);
      torch::Tensor out = linears_[size_t(i)]->forward(in);
      next.push_back(i == n_iter_ - 1 ? torch::tanh(out) : torch::relu(out));
    }
    vec = std::move(next);
  }
  return vec[0].view({b, dim_});
}

layers::PartForward KGCN::loss_part(const data::Batch& part, int64_t batch_rows) {
  const torch::Tensor u = layers::gather_rows(user_embedding_, part.users);
  const torch::Tensor logits = relation_logits(u);
  // Positives and negatives through one aggregation: [2n] rows.
  const int64_t n = part.users.size(0);
  const torch::Tensor both =
      item_vectors(logits.repeat({2, 1}), torch::cat({part.items, part.neg_items}));
  const torch::Tensor scores = (u.repeat({2, 1}) * both).sum(1);
  const torch::Tensor target = torch::cat({torch::ones_like(part.users, scores.options()),
                                           torch::zeros_like(part.users, scores.options())});
  const torch::Tensor bce = torch::binary_cross_entropy_with_logits(
      scores, target, /*weight=*/{}, /*pos_weight=*/{}, at::Reduction::Sum);
  return {bce / static_cast<double>(2 * batch_rows),
          {u, both.narrow(0, 0, n), both.narrow(0, n, n)}};
}

torch::Tensor KGCN::coupled_loss(const std::vector<std::vector<torch::Tensor>>& parts) const {
  std::vector<torch::Tensor> whole;
  for (size_t j = 0; j < parts.front().size(); ++j) {
    std::vector<torch::Tensor> rows;
    for (const std::vector<torch::Tensor>& part : parts) rows.push_back(part[j]);
    whole.push_back(rows.size() == 1 ? rows[0] : torch::cat(rows));
  }
  return reg_weight_ * layers::emb_loss(whole);
}

torch::Tensor KGCN::calculate_loss(const data::Batch& batch) {
  const layers::PartForward f = loss_part(batch, batch.users.size(0));
  return f.loss + coupled_loss({f.coupled});
}

torch::Tensor KGCN::train_step(const data::Batch& batch, TrainStep& step) {
  const int64_t rows = batch.users.size(0);
  const torch::Tensor total = layers::backward_parts_coupled(
      parameters(), (rows + kPartRows - 1) / kPartRows,
      [&](int64_t k) {
        const int64_t start = k * kPartRows, n = std::min(kPartRows, rows - start);
        return loss_part(batch.narrow(start, n), rows);
      },
      [&](const std::vector<std::vector<torch::Tensor>>& z) { return coupled_loss(z); },
      [&](const torch::Tensor& loss) { device_manager().check(loss, name(), "loss"); });
  step.finish_gradients();
  step.optimizer().step();
  return total;
}

torch::Tensor KGCN::predict(const data::Batch& batch) {
  const torch::Tensor u = user_embedding_.index_select(0, batch.users);
  return (u * item_vectors(relation_logits(u), batch.items)).sum(1);
}

torch::Tensor KGCN::full_sort_predict(const data::Batch& batch) {
  const int64_t n_users = batch.users.size(0), n = n_items();
  const torch::Tensor u = user_embedding_.index_select(0, batch.users);
  const torch::Tensor logits = relation_logits(u);
  if (n_iter_ == 1) return one_hop_scores(u, logits);
  const torch::Tensor all_items = torch::arange(n, batch.users.options());
  // Users per chunk: the receptive field of a chunk's pairs holds about 4M floats.
  int64_t field = 1;
  for (int64_t j = 0; j < n_iter_; ++j) field *= k_;
  const int64_t chunk = std::max<int64_t>(1, (int64_t{1} << 22) / (n * field * dim_));
  std::vector<torch::Tensor> rows;
  for (int64_t begin = 0; begin < n_users; begin += chunk) {
    const int64_t size = std::min(chunk, n_users - begin);
    const torch::Tensor l =
        logits.narrow(0, begin, size).unsqueeze(1).expand({size, n, logits.size(1)});
    const torch::Tensor items = all_items.repeat({size});
    const torch::Tensor v = item_vectors(l.reshape({size * n, -1}), items).view({size, n, dim_});
    rows.push_back((v * u.narrow(0, begin, size).unsqueeze(1)).sum(-1));
  }
  return torch::cat(rows);
}

// One iteration: the linear map is applied before the user-specific weighting (W(e + agg) =
// W e + Σ_k a_k W e_k / K, and likewise for the concatenation's two halves), so each entity is
// mapped once per call and a user–item pair costs K weighted rows of d.
torch::Tensor KGCN::one_hop_scores(const torch::Tensor& u, const torch::Tensor& logits) {
  const int64_t n = n_items(), b = u.size(0);
  const torch::Tensor weight = linears_[0]->weight, bias = linears_[0]->bias;
  const torch::Tensor items = entity_embedding_.narrow(0, 0, n);
  const torch::Tensor adj_e = adj_entity_.narrow(0, 0, n), adj_r = adj_relation_.narrow(0, 0, n);
  const torch::Tensor neigh = entity_embedding_.index_select(0, adj_e.reshape({-1}));  // [n·K, d]
  torch::Tensor self_part, neigh_part;  // [n, d], [n·K, d]
  if (aggregator_ == "concat") {
    self_part = torch::matmul(items, weight.narrow(1, 0, dim_).t());
    neigh_part = torch::matmul(neigh, weight.narrow(1, dim_, dim_).t());
  } else {
    self_part = aggregator_ == "sum" ? torch::matmul(items, weight.t()) : torch::zeros_like(items);
    neigh_part = torch::matmul(neigh, weight.t());
  }
  self_part = self_part + bias;
  if (!u.is_cuda())
    return one_hop_scores_cpu(u, logits, self_part, neigh_part.view({n, k_, dim_}), adj_r);
  // Per chunk of users, a: [n, c, K] (per item, each user's weights over its K neighbours);
  // the weighted sums as one batched product per item: [n, c, K] × [n, K, d] → [n, c, d].
  // Chunks keep that product near 1M floats.
  const torch::Tensor neigh_rows = neigh_part.view({n, k_, dim_});
  const torch::Tensor rel_index = adj_r.reshape({-1});
  const int64_t chunk = std::max<int64_t>(1, (int64_t{1} << 20) / (n * dim_));
  torch::Tensor out = torch::empty({b, n}, u.options());
  layers::run_chunks((b + chunk - 1) / chunk, out.is_cuda(), [&](int64_t task) {
    const int64_t begin = task * chunk, c = std::min(chunk, b - begin);
    const torch::Tensor a =
        torch::softmax(logits.narrow(0, begin, c).index_select(1, rel_index).view({c, n, k_}), -1)
            .transpose(0, 1);
    const torch::Tensor agg = torch::bmm(a, neigh_rows) / static_cast<double>(k_);
    const torch::Tensor v = torch::tanh(agg + self_part.unsqueeze(1));  // [n, c, d]
    out.narrow(0, begin, c).copy_((v * u.narrow(0, begin, c).unsqueeze(0)).sum(-1).t());
  });
  return out;
}

namespace {

// One user's scores against items [0, n): for item i, with its K neighbours' relations rel and
// e[r] = exp(logit_r − the user's largest), v = self_i + Σ_j e[rel_j] / (Σ e[rel] · K) · neigh_ij
// and score = ⟨u, tanh(v)⟩. v and t are scratch of d floats each. The loops over d vectorise,
// tanh included (simd::tanh); the dot product is 16 partial sums (one AVX-512 register).
RECBOLE_MULTIVERSION RECBOLE_NO_TRAPPING_MATH void user_scores(
    const float* __restrict u, const float* __restrict e, const float* __restrict self,
    const float* __restrict neigh, const int64_t* __restrict rel, int64_t n, int64_t k, int64_t d,
    float* __restrict v, float* __restrict t, float* __restrict out) {
  for (int64_t i = 0; i < n; ++i) {
    const int64_t* r = rel + i * k;
    float sum = 0;
    for (int64_t j = 0; j < k; ++j) sum += e[r[j]];
    const float* s = self + i * d;
    for (int64_t c = 0; c < d; ++c) v[c] = s[c];
    // Four neighbours per pass over v, each added in turn as before (the same roundings): GCC 12
    // jams a one-neighbour loop two neighbours at a time into a c loop it leaves scalar.
    const auto weight = [&](int64_t j) { return e[r[j]] / (sum * static_cast<float>(k)); };
    const float* row = neigh + i * k * d;
    int64_t j = 0;
    for (; j + 4 <= k; j += 4, row += 4 * d) {
      const float w0 = weight(j), w1 = weight(j + 1), w2 = weight(j + 2), w3 = weight(j + 3);
      for (int64_t c = 0; c < d; ++c) {
        float x = v[c];
        x += w0 * row[c];
        x += w1 * row[d + c];
        x += w2 * row[2 * d + c];
        x += w3 * row[3 * d + c];
        v[c] = x;
      }
    }
    for (; j < k; ++j, row += d) {
      const float w = weight(j);
      for (int64_t c = 0; c < d; ++c) v[c] += w * row[c];
    }
    for (int64_t c = 0; c < d; ++c) t[c] = u[c] * simd::tanh(v[c]);
    float part[16] = {};
    int64_t c = 0;
    for (; c + 16 <= d; c += 16)
      for (int l = 0; l < 16; ++l) part[l] += t[c + l];
    for (int half = 8; half > 0; half /= 2)
      for (int l = 0; l < half; ++l) part[l] += part[l + half];
    float dot = part[0];
    for (; c < d; ++c) dot += t[c];
    out[i] = dot;
  }
}

}  // namespace

// Per user, one pass over the items with each pair in registers and L1 (user_scores). The
// libtorch path materialises [n, c, d] three times per chunk of users, and its tanh alone was
// 13 % of a run's samples (perf).
torch::Tensor KGCN::one_hop_scores_cpu(const torch::Tensor& u, const torch::Tensor& logits,
                                       const torch::Tensor& self_part,
                                       const torch::Tensor& neigh_part,
                                       const torch::Tensor& adj_relation) const {
  const int64_t n = self_part.size(0), b = u.size(0), n_rel = logits.size(1);
  const torch::Tensor uc = u.detach().contiguous(), lc = logits.detach().contiguous();
  const torch::Tensor sc = self_part.detach().contiguous(), nc = neigh_part.detach().contiguous();
  const torch::Tensor rc = adj_relation.contiguous();
  torch::Tensor out = torch::empty({b, n}, u.options());
  const float *pu = uc.data_ptr<float>(), *pl = lc.data_ptr<float>();
  const float *ps = sc.data_ptr<float>(), *pn = nc.data_ptr<float>();
  const int64_t* pr = rc.data_ptr<int64_t>();
  float* po = out.data_ptr<float>();
  layers::run_chunks(b, /*on_cuda=*/false, [&](int64_t user) {
    const float* l = pl + user * n_rel;
    const float top = *std::max_element(l, l + n_rel);
    std::vector<float> e(static_cast<size_t>(n_rel)), scratch(2 * static_cast<size_t>(dim_));
    for (int64_t r = 0; r < n_rel; ++r) e[size_t(r)] = std::exp(l[r] - top);
    user_scores(pu + user * dim_, e.data(), ps, pn, pr, n, k_, dim_, scratch.data(),
                scratch.data() + dim_, po + user * n);
  });
  return out;
}

std::vector<config::KeyDecl> kgcn_keys() {
  using config::Key;
  using config::KeyType;
  return {keys::embedding_size().decl("Dimension of user, entity, relation rows"),
          Key("n_iter", KeyType::kInt).min(1).max(4).help("Aggregation iterations (hops)"),
          Key("aggregator", KeyType::kString)
              .choices({"sum", "neighbor", "concat"})
              .help("How an entity combines with its aggregated neighbours"),
          keys::reg_weight().decl("Weight of the EmbLoss regulariser"),
          Key("neighbor_sample_size", KeyType::kInt)
              .min(1)
              .help("Neighbours sampled per entity (once, at construction)")};
}

RECBOLE_REGISTER_MODEL(KGCN) {
  register_model({"KGCN", "knowledge", InputType::kPairwise,
                  "Knowledge graph convolution: user-weighted aggregation of sampled KG neighbours",
                  kgcn_keys(),
                  [](const ModelContext& ctx) { return std::make_shared<KGCN>(ctx); }});
}

}  // namespace recbole::models
