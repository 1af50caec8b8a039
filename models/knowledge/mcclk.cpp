#include "models/knowledge/mcclk.h"

#include <algorithm>
#include <limits>

#include <torch/torch.h>

#include "models/layers/dropout.h"
#include "models/layers/init.h"
#include "models/layers/key_checks.h"
#include "models/layers/losses.h"
#include "models/shared_keys.h"
#include "recbole/config/config.h"

namespace recbole::models {

namespace F = torch::nn::functional;

namespace {

// Stream tags: the two edge samples of one forward and the evaluation's derived seed.
constexpr uint64_t kStructuralStream = 0x7374727563747572ULL;
constexpr uint64_t kSemanticStream = 0x73656d616e746963ULL;
constexpr uint64_t kEvaluationStream = 0x6576616c75617465ULL;

torch::Tensor normalized(const torch::Tensor& x) {
  return F::normalize(x, F::NormalizeFuncOptions().dim(1));
}

// a · A + b · B (patterns merged, shared entries summed).
layers::SparseMatrix weighted_sum(const layers::SparseMatrix& a, float wa,
                                  const layers::SparseMatrix& b, float wb) {
  std::vector<int64_t> r, c;
  std::vector<float> v;
  r.reserve(size_t(a.nnz() + b.nnz()));
  c.reserve(r.capacity());
  v.reserve(r.capacity());
  for (const auto& [m, w] : {std::make_pair(&a, wa), std::make_pair(&b, wb)})
    for (int64_t row = 0; row < m->rows; ++row)
      for (int64_t k = m->indptr[size_t(row)]; k < m->indptr[size_t(row) + 1]; ++k)
        r.push_back(row), c.push_back(m->indices[size_t(k)]), v.push_back(w * m->values[size_t(k)]);
  return layers::SparseMatrix::from_triplets(a.rows, a.cols, r, c, v);
}

torch::nn::Sequential projection_head(int64_t d) {
  return torch::nn::Sequential(torch::nn::Linear(d, d), torch::nn::ReLU(), torch::nn::Linear(d, d));
}

}  // namespace

namespace {

// Rows per chunk of the contrastive term: [chunk, n] similarity blocks instead of [n, n] (the
// default batch has n = 4,096 item rows; a 4 GiB pair of matrices at n = 16,384). 256 rows make
// 4 MiB blocks, which the allocator keeps between chunks: the 16 MiB blocks of 1,024 rows were
// handed back to the kernel and faulted in again (~1.9 M page faults in an ml-100k epoch).
constexpr int64_t kNceChunk = 256;

int64_t chunks_of(int64_t rows) { return (rows + kNceChunk - 1) / kNceChunk; }

// The contrastive term on unit rows a, b [n, d], computed and differentiated in row chunks:
// nothing n × n is kept for the backward, which recomputes each chunk's similarities. The
// chunks run on the ThreadPool (layers::run_chunks), each with its own GEMMs and exps.
// With S = a aᵀ / τ, T = a bᵀ / τ, D_r = Σ_j e^{S_rj} + Σ_j e^{T_rj} − e^{S_rr}:
//   L = mean_r (log D_r − T_rr);  ∂L/∂S_rj = e^{S_rj} / D_r / n (0 for j = r);
//   ∂L/∂T_rj = (e^{T_rj} / D_r − [j = r]) / n.
struct ChunkedNce : public torch::autograd::Function<ChunkedNce> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& a,
                               const torch::Tensor& b, double tau) {
    const int64_t n = a.size(0);
    torch::Tensor denominators = torch::empty({n}, a.options());
    torch::Tensor positives = torch::empty({n}, a.options());
    layers::run_chunks(chunks_of(n), a.is_cuda(), [&](int64_t chunk) {
      const int64_t r0 = chunk * kNceChunk, c = std::min(kNceChunk, n - r0);
      const torch::Tensor rows = a.narrow(0, r0, c);
      const torch::Tensor s = rows.mm(a.t()).div_(tau).exp_();
      const torch::Tensor t = rows.mm(b.t()).div_(tau);
      positives.narrow(0, r0, c).copy_(t.narrow(1, r0, c).diagonal());
      denominators.narrow(0, r0, c).copy_(s.sum(1) + t.exp_().sum(1) -
                                          s.narrow(1, r0, c).diagonal());
    });
    ctx->save_for_backward({a, b, denominators});
    ctx->saved_data["tau"] = tau;
    return (denominators.log() - positives).mean();
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const torch::Tensor &a = saved[0], &b = saved[1], &denominators = saved[2];
    const double tau = ctx->saved_data["tau"].toDouble();
    const int64_t n = a.size(0);
    const torch::Tensor scale = grads[0] / (static_cast<double>(n) * tau);
    // Each chunk's share of the gradients, summed in chunk order afterwards.
    const int64_t chunks = chunks_of(n);
    if (chunks == 0) return {torch::zeros_like(a), torch::zeros_like(b), torch::Tensor()};
    std::vector<torch::Tensor> da_parts(static_cast<size_t>(chunks)), db_parts(da_parts.size());
    layers::run_chunks(chunks, a.is_cuda(), [&](int64_t chunk) {
      const int64_t r0 = chunk * kNceChunk, c = std::min(kNceChunk, n - r0);
      const torch::Tensor rows = a.narrow(0, r0, c);
      const torch::Tensor inv = denominators.narrow(0, r0, c).reciprocal().unsqueeze(1);
      torch::Tensor gs = rows.mm(a.t()).div_(tau).exp_().mul_(inv);
      torch::Tensor gt = rows.mm(b.t()).div_(tau).exp_().mul_(inv);
      gs.narrow(1, r0, c).diagonal().zero_();
      gt.narrow(1, r0, c).diagonal().sub_(1.0);
      gs.mul_(scale);
      gt.mul_(scale);
      torch::Tensor da = gs.t().mm(rows);
      da.narrow(0, r0, c).add_(gs.mm(a) + gt.mm(b));
      da_parts[size_t(chunk)] = da;
      db_parts[size_t(chunk)] = gt.t().mm(rows);
    });
    torch::Tensor da = da_parts[0], db = db_parts[0];
    for (size_t p = 1; p < da_parts.size(); ++p) {
      da.add_(da_parts[p]);
      db.add_(db_parts[p]);
    }
    return {da, db, torch::Tensor()};
  }
};

}  // namespace

torch::Tensor mcclk_nce(const torch::Tensor& a, const torch::Tensor& b, double temperature) {
  return ChunkedNce::apply(normalized(a), normalized(b), temperature);
}

MCCLK::MCCLK(const ModelContext& ctx)
    : CachedFactorModel("MCCLK", ctx),
      hops_(ctx.config.get_int("n_hops")),
      lightgcn_layers_(ctx.config.get_int("lightgcn_layer")),
      item_agg_layers_(ctx.config.get_int("item_agg_layer")),
      k_(ctx.config.get_int("k")),
      node_rate_(ctx.config.get_double("node_dropout_rate")),
      mess_rate_(ctx.config.get_double("mess_dropout_rate")),
      reg_weight_(keys::reg_weight().get(ctx.config)),
      alpha_(ctx.config.get_double("alpha")),
      beta_(ctx.config.get_double("beta")),
      lambda_(ctx.config.get_double("lambda_coeff")),
      temperature_(ctx.config.get_double("temperature")),
      separately_(ctx.config.get_bool("build_graph_separately")),
      bce_(ctx.config.get_string("loss_type") == "BCE") {
  const data::KnowledgeGraph& g = ctx.need<data::KnowledgeGraph>();
  n_entities_ = g.n_entities();
  if (k_ > n_entities_)
    throw ConfigError(ctx.config.source("k") + ": MCCLK: k: expected at most n_entities (" +
                      std::to_string(n_entities_) + ") neighbours, got " + std::to_string(k_));
  const int64_t d = keys::embedding_size().get(ctx.config);
  const auto table = [&](const char* name, int64_t rows, int64_t cols) {
    return register_table(name, rows, cols, layers::Init::kXavierNormal);
  };
  user_embedding_ = table("user_embedding", ctx.n_users, d);
  entity_embedding_ = table("entity_embedding", n_entities_, d);
  relation_embedding_ = table("relation_embedding", g.n_relations(), d);
  fc1_ = register_module("fc1", projection_head(d));
  fc2_ = register_module("fc2", projection_head(d));
  fc3_ = register_module("fc3", projection_head(d));
  for (auto* fc : {&fc1_, &fc2_, &fc3_}) layers::initialize(**fc, layers::Init::kXavierNormal);
  edge_seed_ = register_buffer(
      "edge_seed", torch::randint(0, std::numeric_limits<int64_t>::max(), {1}, torch::kInt64));
  to(ctx.device.device());
  inter_ = layers::user_item_mean_matrix(ctx.train, n_entities_);
  inter_op_ = layers::GraphOperator(inter_, /*symmetric=*/false, ctx.device);
  graph_op_ =
      layers::GraphOperator(layers::row_normalized_interaction_graph(ctx.train, n_entities_),
                            /*symmetric=*/false, ctx.device);
  edges_ = layers::kg_edge_list(g, ctx.device);
}

void MCCLK::load(torch::serialize::InputArchive& archive) {
  Model::load(archive);
  drop_factors();
}

layers::KgEdges MCCLK::sampled_edges(uint64_t seed) const {
  if (node_rate_ <= 0) return edges_;
  return edges_.index_select(
      device_manager().place(layers::sample_edges(edges_.size(), node_rate_, seed)));
}

std::pair<torch::Tensor, torch::Tensor> MCCLK::structural(const layers::KgEdges& edges,
                                                          const layers::GraphOperator& inter) {
  const torch::Tensor q = relation_embedding_.index_select(0, edges.relations);
  torch::Tensor e = entity_embedding_, u = user_embedding_;
  std::vector<torch::Tensor> es{e}, us{u};
  for (int64_t hop = 0; hop < hops_; ++hop) {
    const torch::Tensor head_r = e.index_select(0, edges.heads) * q;
    const torch::Tensor tail_r = e.index_select(0, edges.tails) * q;
    // (‖e_h ⊙ Q_r‖ · ‖e_t ⊙ Q_r‖)², as a product of squared norms (smooth at 0).
    const torch::Tensor w = head_r.pow(2).sum(1) * tail_r.pow(2).sum(1);
    const torch::Tensor att = layers::segment_softmax(w, edges.heads, n_entities_);
    torch::Tensor e_next =
        layers::scatter_mean(att.unsqueeze(1) * tail_r, edges.heads, n_entities_);
    const torch::Tensor m = layers::spmm(inter, e);
    const torch::Tensor beta = torch::softmax(u.mm(relation_embedding_.t()), 1);
    torch::Tensor u_next = m + beta.mm(relation_embedding_) * m;
    if (mess_rate_ > 0 && is_training()) {
      e_next = layers::dropout(e_next, mess_rate_, true);
      u_next = layers::dropout(u_next, mess_rate_, true);
    }
    e = normalized(e_next);
    u = normalized(u_next);
    es.push_back(e);
    us.push_back(u);
  }
  return {torch::stack(us, 1).mean(1), torch::stack(es, 1).mean(1)};
}

torch::Tensor MCCLK::item_aggregation(const layers::KgEdges& edges) {
  torch::NoGradGuard no_grad;  // it only feeds the kNN graph, whose values carry no gradient
  const torch::Tensor q = relation_embedding_.index_select(0, edges.relations);
  torch::Tensor e = entity_embedding_;
  std::vector<torch::Tensor> es{e};
  for (int64_t hop = 0; hop < hops_; ++hop) {
    torch::Tensor next =
        layers::scatter_mean(e.index_select(0, edges.tails) * q, edges.heads, n_entities_);
    if (mess_rate_ > 0 && is_training()) next = layers::dropout(next, mess_rate_, true);
    e = normalized(next);
    es.push_back(e);
  }
  return torch::stack(es, 1).mean(1);
}

MCCLK::Views MCCLK::views(uint64_t seed) {
  const DeviceManager& dm = device_manager();
  Views v;
  const layers::GraphOperator inter =
      is_training() && mess_rate_ > 0
          ? layers::GraphOperator(layers::sparse_dropout(inter_, mess_rate_), false, dm)
          : inter_op_;
  std::tie(v.user_g, v.entity_g) = structural(sampled_edges(seed ^ kStructuralStream), inter);

  // The semantic view's kNN graph: constant for this forward (no gradient through its values).
  const torch::Tensor ego = entity_embedding_.detach();
  const torch::Tensor basis =
      separately_ ? item_aggregation(sampled_edges(seed ^ kSemanticStream)) : v.entity_g.detach();
  // E_s is read at the item rows only. With one product those need the graph's item rows
  // alone (the first n_items entities); more products read other rows' products too.
  const int64_t graph_rows = item_agg_layers_ == 1 ? n_items() : n_entities_;
  const auto lambda = static_cast<float>(lambda_);
  const layers::GraphOperator knn(
      weighted_sum(layers::knn_graph(basis, k_, graph_rows), 1.0f - lambda,
                   layers::knn_graph(ego, k_, graph_rows), lambda),
      /*symmetric=*/false, dm);
  torch::Tensor x = entity_embedding_;
  std::vector<torch::Tensor> xs{x};
  for (int64_t l = 0; l < item_agg_layers_; ++l) {
    x = layers::spmm(knn, x);
    xs.push_back(x);
  }
  v.entity_s = torch::stack(xs, 1).mean(1).narrow(0, 0, n_items());

  const torch::Tensor collab = layers::mean_propagation(
      graph_op_, torch::cat({user_embedding_, entity_embedding_}), lightgcn_layers_);
  v.user_c = collab.narrow(0, 0, n_users());
  v.entity_c = collab.narrow(0, n_users(), n_entities_);
  return v;
}

std::pair<torch::Tensor, torch::Tensor> MCCLK::evaluation_factors() {
  const uint64_t seed =
      static_cast<uint64_t>(DeviceManager::to_host(edge_seed_).item<int64_t>()) ^ kEvaluationStream;
  const Views v = views(seed);
  const int64_t items = n_items();
  return {
      torch::cat({v.user_g, v.user_c}, 1),
      torch::cat({v.entity_g.narrow(0, 0, items), v.entity_s + v.entity_c.narrow(0, 0, items)}, 1)};
}

torch::Tensor MCCLK::full_sort_predict(const data::Batch& batch) {
  const torch::Tensor s = CachedFactorModel::full_sort_predict(batch);
  return bce_ ? torch::sigmoid(s) : s;
}

torch::Tensor MCCLK::predict(const data::Batch& batch) {
  const torch::Tensor s = CachedFactorModel::predict(batch);
  return bce_ ? torch::sigmoid(s) : s;
}

torch::Tensor MCCLK::calculate_loss(const data::Batch& batch) {
  drop_factors();
  const int64_t seed =
      torch::randint(0, std::numeric_limits<int64_t>::max(), {1}, torch::kInt64).item<int64_t>();
  {
    torch::NoGradGuard no_grad;
    edge_seed_.fill_(seed);
  }
  const Views v = views(static_cast<uint64_t>(seed));
  const int64_t b = batch.items.size(0);
  const torch::Tensor items = torch::cat({batch.items, batch.neg_items});
  const torch::Tensor ug = v.user_g.index_select(0, batch.users);
  const torch::Tensor uc = v.user_c.index_select(0, batch.users);
  const torch::Tensor eg = v.entity_g.index_select(0, items);
  const torch::Tensor es = v.entity_s.index_select(0, items);
  const torch::Tensor ec = v.entity_c.index_select(0, items);
  const torch::Tensor esc = es + ec;

  const torch::Tensor local = mcclk_nce(head(fc1_, es), head(fc1_, ec), temperature_);
  const torch::Tensor pu = head(fc2_, ug), pc = head(fc2_, uc);
  const torch::Tensor pg = head(fc3_, eg), ps = head(fc3_, esc);
  const torch::Tensor global =
      0.5 * (mcclk_nce(pu, pc, temperature_) + mcclk_nce(pc, pu, temperature_)) +
      0.5 * (mcclk_nce(pg, ps, temperature_) + mcclk_nce(ps, pg, temperature_));

  const torch::Tensor user = torch::cat({ug, uc}, 1);
  const torch::Tensor item = torch::cat({eg, esc}, 1);
  const torch::Tensor pos = item.narrow(0, 0, b), neg = item.narrow(0, b, b);
  const torch::Tensor s_pos = (user * pos).sum(1), s_neg = (user * neg).sum(1);
  torch::Tensor rec;
  if (bce_) {
    const torch::Tensor labels = torch::cat({torch::ones_like(s_pos), torch::zeros_like(s_neg)});
    rec = F::binary_cross_entropy_with_logits(torch::cat({s_pos, s_neg}), labels);
  } else {
    rec = layers::bpr_loss(s_pos, s_neg);
  }
  return rec + reg_weight_ * layers::emb_loss({user, pos, neg}) +
         beta_ * (alpha_ * local + (1 - alpha_) * global);
}

RECBOLE_REGISTER_MODEL(MCCLK) {
  using config::Key;
  using config::KeyType;
  register_model(
      {"MCCLK",
       "knowledge",
       InputType::kPairwise,
       "Multi-level cross-view contrastive learning: structural, semantic (kNN) and "
       "collaborative views",
       {keys::embedding_size().decl("Dimension of user, entity, relation rows"),
        keys::reg_weight().decl("Weight of the EmbLoss regulariser"),
        Key("n_hops", KeyType::kInt).min(1).help("Hops of the structural (KG) view"),
        Key("node_dropout_rate", KeyType::kFloat)
            .min(0)
            .max(1)
            .help("Fraction of KG edges KEPT by each forward's samples, evaluation included "
                  "(0 or 1: all)"),
        layers::probability_key("mess_dropout_rate")
            .help("Dropout on each hop's outputs, and on the user-item matrix (training)"),
        Key("lightgcn_layer", KeyType::kInt).min(1).help("Layers of the collaborative view"),
        Key("item_agg_layer", KeyType::kInt).min(1).help("kNN-graph products of the semantic view"),
        Key("alpha", KeyType::kFloat).min(0).max(1).help("Weight of the local contrastive term"),
        Key("beta", KeyType::kFloat).min(0).help("Weight of the contrastive terms"),
        Key("k", KeyType::kInt).min(1).help("Neighbours per entity in the kNN entity graph"),
        Key("lambda_coeff", KeyType::kFloat)
            .min(0)
            .max(1)
            .help("Weight of the kNN graph of the ego entity rows in the semantic view"),
        Key("temperature", KeyType::kFloat).above(0).help("Temperature of the contrastive terms"),
        Key("build_graph_separately", KeyType::kBool)
            .help("kNN graph from a non-attentive KG aggregation of its own (else the structural "
                  "view)"),
        Key("loss_type", KeyType::kString)
            .choices({"BPR", "BCE"})
            .help("Recommendation loss: BPR on pairs, or BCE with logits on both items")},
       [](const ModelContext& ctx) { return std::make_shared<MCCLK>(ctx); }});
}

}  // namespace recbole::models
