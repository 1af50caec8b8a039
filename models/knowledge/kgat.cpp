#include "models/knowledge/kgat.h"

#include <algorithm>
#include <cmath>

#include "models/layers/dropout.h"
#include "models/layers/gathered_bpr_loss.h"
#include "models/layers/init.h"
#include "models/layers/key_checks.h"
#include "models/layers/knowledge.h"
#include "models/layers/losses.h"
#include "models/shared_keys.h"
#include "recbole/config/config.h"
#include "recbole/utils/error.h"

namespace recbole::models {

namespace F = torch::nn::functional;

KGAT::KGAT(const ModelContext& ctx)
    : CachedFactorModel("KGAT", ctx),
      kg_size_(ctx.config.get_int("kg_embedding_size")),
      aggregator_(ctx.config.get_string("aggregator_type")),
      dropout_(ctx.config.get_double("mess_dropout")),
      reg_weight_(keys::reg_weight().get(ctx.config)) {
  const data::KnowledgeGraph& g = ctx.need<data::KnowledgeGraph>();
  n_entities_ = g.n_entities();
  const int64_t d = keys::embedding_size().get(ctx.config);
  const auto table = [&](const char* name, int64_t rows, int64_t cols) {
    return register_table(name, rows, cols, layers::Init::kXavierNormal);
  };
  user_embedding_ = table("user_embedding", ctx.n_users, d);
  entity_embedding_ = table("entity_embedding", n_entities_, d);
  relation_embedding_ = table("relation_embedding", g.n_relations(), kg_size_);
  trans_w_ = table("trans_w", g.n_relations(), d * kg_size_);
  int64_t in = d;
  const std::vector<int64_t> sizes = ctx.config.get_int_list("layers");
  for (size_t l = 0; l < sizes.size(); ++l) {
    const int64_t out = sizes[l];
    w1_.push_back(
        register_module("w1_" + std::to_string(l),
                        torch::nn::Linear(aggregator_ == "graphsage" ? 2 * in : in, out)));
    layers::initialize(*w1_.back(), layers::Init::kXavierNormal);
    if (aggregator_ == "bi") {
      w2_.push_back(register_module("w2_" + std::to_string(l), torch::nn::Linear(in, out)));
      layers::initialize(*w2_.back(), layers::Init::kXavierNormal);
    }
    in = out;
  }
  to(ctx.device.device());

  // The CKG: user → item and item → user per training pair ([UI-Relation]), then the triples.
  const int64_t u_count = ctx.n_users, n_nodes = u_count + n_entities_;
  const int64_t ui = g.ui_relation(), n_rel = g.n_relations();
  std::vector<int64_t> src, tgt, rel;
  for (int direction = 0; direction < 2; ++direction)
    for (int32_t u = 0; u < ctx.train.n_users(); ++u)
      for (const int32_t* it = ctx.train.row_begin(u); it != ctx.train.row_end(u); ++it) {
        src.push_back(direction == 0 ? u : u_count + *it);
        tgt.push_back(direction == 0 ? u_count + *it : u);
        rel.push_back(ui);
      }
  for (int64_t k = 0; k < g.n_triples(); ++k) {
    src.push_back(u_count + g.heads()[size_t(k)]);
    tgt.push_back(u_count + g.tails()[size_t(k)]);
    rel.push_back(g.relations()[size_t(k)]);
  }
  // A at construction: Σ over relations of D_r⁻¹ A_r (rows = sources).
  std::vector<int32_t> outdeg(static_cast<size_t>(n_nodes * n_rel), 0);
  for (size_t e = 0; e < src.size(); ++e) ++outdeg[size_t(src[e] * n_rel + rel[e])];
  std::vector<float> w(src.size());
  for (size_t e = 0; e < src.size(); ++e)
    w[e] = 1.0f / static_cast<float>(outdeg[size_t(src[e] * n_rel + rel[e])]);
  pattern_ = layers::SparseMatrix::from_triplets(n_nodes, n_nodes, src, tgt, w);
  edge_entry_.resize(src.size());
  for (size_t e = 0; e < src.size(); ++e) {
    const int32_t* begin = pattern_.indices.data() + pattern_.indptr[size_t(src[e])];
    const int32_t* end = pattern_.indices.data() + pattern_.indptr[size_t(src[e]) + 1];
    edge_entry_[e] =
        std::lower_bound(begin, end, static_cast<int32_t>(tgt[e])) - pattern_.indices.data();
  }
  edge_source_ = ctx.device.place(data::id_tensor(src));
  edge_target_ = ctx.device.place(data::id_tensor(tgt));
  edge_relation_ = ctx.device.place(data::id_tensor(rel));
  attention_ = register_buffer(
      "attention",
      ctx.device.place(
          torch::from_blob(pattern_.values.data(), {pattern_.nnz()}, torch::kFloat32).clone()));
  // Rows with out-edges: elsewhere S = 0, so a bi layer's W2(X ⊙ S) is W2's bias there.
  std::vector<int64_t> linked;
  for (int64_t r = 0; r < n_nodes; ++r)
    if (pattern_.indptr[size_t(r) + 1] > pattern_.indptr[size_t(r)]) linked.push_back(r);
  const int64_t read = u_count + ctx.n_items;
  linked_rows_ = ctx.device.place(data::id_tensor(linked));
  linked_read_rows_ = linked_rows_.narrow(  // ascending, so the read rows' share is a prefix
      0, 0, std::lower_bound(linked.begin(), linked.end(), read) - linked.begin());
  rebuild_operator();
}

namespace {

// Rows [0, n) of m: an n × m.cols matrix.
layers::SparseMatrix first_rows(const layers::SparseMatrix& m, int64_t n) {
  layers::SparseMatrix top;
  top.rows = n;
  top.cols = m.cols;
  top.indptr.assign(m.indptr.begin(), m.indptr.begin() + n + 1);
  top.indices.assign(m.indices.begin(), m.indices.begin() + top.indptr.back());
  top.values.assign(m.values.begin(), m.values.begin() + top.indptr.back());
  return top;
}

}  // namespace

void KGAT::rebuild_operator() {
  const torch::Tensor v = DeviceManager::to_host(attention_).contiguous();
  std::copy(v.data_ptr<float>(), v.data_ptr<float>() + v.numel(), pattern_.values.begin());
  adjacency_ = layers::GraphOperator(pattern_, /*symmetric=*/false, device_manager());
  read_adjacency_ = layers::GraphOperator(first_rows(pattern_, n_users() + n_items()),
                                          /*symmetric=*/false, device_manager());
}

void KGAT::load(torch::serialize::InputArchive& archive) {
  Model::load(archive);
  rebuild_operator();
  drop_factors();
}

torch::Tensor KGAT::propagate() {
  const int64_t read = n_users() + n_items();
  torch::Tensor x = torch::cat({user_embedding_, entity_embedding_});
  std::vector<torch::Tensor> outs{x.narrow(0, 0, read)};
  for (size_t l = 0; l < w1_.size(); ++l) {
    // The last layer is read at the user and item rows alone, which come first.
    const bool last = l + 1 == w1_.size();
    const torch::Tensor s = layers::spmm(last ? read_adjacency_ : adjacency_, x);
    torch::Tensor next =
        aggregate(l, last ? x.narrow(0, 0, read) : x, s, last ? linked_read_rows_ : linked_rows_);
    // The mask of element i does not depend on the tensor's size, so the shorter last layer
    // keeps the masks of the whole one.
    next = layers::dropout(next, dropout_, is_training());
    outs.push_back(F::normalize(next.narrow(0, 0, read), F::NormalizeFuncOptions().dim(1)));
    x = next;
  }
  return torch::cat(outs, 1);
}

torch::Tensor KGAT::aggregate(size_t l, const torch::Tensor& x, const torch::Tensor& s,
                              const torch::Tensor& linked) {
  const auto act = [](const torch::Tensor& t) { return F::leaky_relu(t); };
  if (aggregator_ == "gcn") return act(w1_[l]->forward(x + s));
  if (aggregator_ == "graphsage") return act(w1_[l]->forward(torch::cat({x, s}, 1)));
  // bi: W2(X ⊙ S) at the rows with out-edges; the others (S = 0: ~80 % of ml-100k's CKG, the
  // entities no triple starts from) get W2's bias.
  const torch::Tensor product =
      act(w2_[l]->forward(x.index_select(0, linked) * s.index_select(0, linked)));
  const torch::Tensor bias = act(w2_[l]->bias).expand({x.size(0), product.size(1)});
  return act(w1_[l]->forward(x + s)) + bias.index_copy(0, linked, product);
}

std::pair<torch::Tensor, torch::Tensor> KGAT::evaluation_factors() {
  const torch::Tensor f = propagate();
  return {f.narrow(0, 0, n_users()), f.narrow(0, n_users(), n_items())};
}

torch::Tensor KGAT::calculate_loss(const data::Batch& batch) {
  drop_factors();
  if (!batch.users.defined()) {  // the KG pass: TransR on the ego rows
    const int64_t b = batch.column(layers::kKgHeads).size(0);
    const torch::Tensor ents =
        torch::cat({batch.column(layers::kKgHeads), batch.column(layers::kKgTails),
                    batch.column(layers::kKgNegTails)});
    const torch::Tensor projected =
        layers::transr_project(entity_embedding_.index_select(0, ents), trans_w_,
                               batch.column(layers::kKgRelations).repeat({3}), kg_size_);
    const torch::Tensor h = projected.narrow(0, 0, b), t_pos = projected.narrow(0, b, b),
                        t_neg = projected.narrow(0, 2 * b, b);
    const torch::Tensor r = relation_embedding_.index_select(0, batch.column(layers::kKgRelations));
    const torch::Tensor d_pos = (h + r - t_pos).pow(2).sum(1);
    const torch::Tensor d_neg = (h + r - t_neg).pow(2).sum(1);
    return F::softplus(d_pos - d_neg).mean() + reg_weight_ * layers::emb_loss({h, r, t_pos, t_neg});
  }
  // Items are nodes n_users + item of the propagated table.
  return layers::gathered_bpr_loss(propagate(), batch.users, batch.items + n_users(),
                                   batch.neg_items + n_users(), reg_weight_);
}

void KGAT::on_epoch_end(int64_t epoch) {
  (void)epoch;
  update_attention();
  drop_factors();
}

void KGAT::update_attention() {
  torch::NoGradGuard no_grad;
  const torch::Tensor x = torch::cat({user_embedding_, entity_embedding_});
  const int64_t n = edge_source_.size(0);
  torch::Tensor scores = torch::empty({n}, x.options());
  // Edges in chunks: each holds a few [chunk, d] gathers.
  constexpr int64_t kChunk = 1 << 16;
  for (int64_t begin = 0; begin < n; begin += kChunk) {
    const int64_t c = std::min(kChunk, n - begin);
    const torch::Tensor rel = edge_relation_.narrow(0, begin, c);
    const torch::Tensor ps = layers::transr_project(
        x.index_select(0, edge_source_.narrow(0, begin, c)), trans_w_, rel, kg_size_);
    const torch::Tensor pt = layers::transr_project(
        x.index_select(0, edge_target_.narrow(0, begin, c)), trans_w_, rel, kg_size_);
    scores.narrow(0, begin, c)
        .copy_((pt * torch::tanh(ps + relation_embedding_.index_select(0, rel))).sum(1));
  }
  // Scores of one (source, target) pair summed, then a softmax over each source's entries.
  const torch::Tensor host = DeviceManager::to_host(scores).contiguous();
  const float* s = host.data_ptr<float>();
  std::vector<double> entry(static_cast<size_t>(pattern_.nnz()), 0.0);
  for (size_t e = 0; e < edge_entry_.size(); ++e) entry[size_t(edge_entry_[e])] += s[e];
  torch::Tensor values = torch::empty({pattern_.nnz()}, torch::kFloat32);
  float* v = values.data_ptr<float>();
  for (int64_t r = 0; r < pattern_.rows; ++r) {
    const int64_t b = pattern_.indptr[size_t(r)], end = pattern_.indptr[size_t(r) + 1];
    if (b == end) continue;
    double top = entry[size_t(b)], sum = 0;
    for (int64_t k = b; k < end; ++k) top = std::max(top, entry[size_t(k)]);
    for (int64_t k = b; k < end; ++k) sum += std::exp(entry[size_t(k)] - top);
    for (int64_t k = b; k < end; ++k)
      v[k] = static_cast<float>(std::exp(entry[size_t(k)] - top) / sum);
  }
  attention_.copy_(device_manager().place(values));
  rebuild_operator();
}

RECBOLE_REGISTER_MODEL(KGAT) {
  using config::Key;
  using config::KeyType;
  register_model(
      {"KGAT",
       "knowledge",
       InputType::kPairwise,
       "Knowledge graph attention network: attentive propagation over the user-item-entity graph",
       {keys::embedding_size().decl("Dimension of user and entity rows"),
        Key("kg_embedding_size", KeyType::kInt).min(1).help("Dimension of relation rows (TransR)"),
        layers::sizes_key("layers").help("Output sizes of the propagation layers"),
        layers::probability_key("mess_dropout").help("Dropout on each layer's messages"),
        keys::reg_weight().decl("Weight of the EmbLoss regularisers"),
        Key("aggregator_type", KeyType::kString)
            .choices({"bi", "gcn", "graphsage"})
            .help("How a node combines with its neighbours' messages")},
       [](const ModelContext& ctx) { return std::make_shared<KGAT>(ctx); }});
}

}  // namespace recbole::models
