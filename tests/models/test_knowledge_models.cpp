// Knowledge models beyond the contract: the shared KG layers (neighbour tables, the grouped
// TransR projection), KGCN's one-hop full ranking against its per-pair path for every
// aggregator and depth, CFKG's transe scores, KGAT's propagation against dense bi layers over
// the whole graph.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <map>
#include <set>

#include <torch/torch.h>

#include "models/layers/gathered_bpr_loss.h"
#include "models/layers/knowledge.h"
#include "tests/models/model_fixture.h"

using recbole::testing::ModelHarness;
using recbole::testing::TinyData;

namespace {

// predict on every (user, item) pair of users {3, 17} agrees with full_sort_predict.
void check_predict_matches_full_sort(recbole::models::Model& m, const ModelHarness& h) {
  torch::NoGradGuard no_grad;
  m.eval();
  const torch::Tensor full =
      m.full_sort_predict(recbole::testing::user_batch(h.device, {3, 17})).to(torch::kCPU);
  std::vector<int64_t> users, items;
  for (int64_t u : {3, 17})
    for (int64_t i = 0; i < h.data.n_items; ++i) users.push_back(u), items.push_back(i);
  const torch::Tensor pairs =
      m.predict(recbole::testing::user_batch(h.device, users, items)).to(torch::kCPU);
  CHECK(torch::allclose(pairs.view({2, -1}), full, 1e-4, 1e-5));
}

}  // namespace

TEST_CASE("KG neighbour tables: k distinct neighbours when there are k, else drawn or self",
          "[models][knowledge]") {
  const TinyData d;
  const auto adj = recbole::models::layers::sample_neighbors(d.kg, 2, 7);
  REQUIRE(adj.entities.sizes() == torch::IntArrayRef({45, 2}));
  // Undirected lists: (entity, relation) pairs of each entity.
  std::vector<std::set<std::pair<int64_t, int64_t>>> lists(45);
  std::vector<int64_t> degree(45, 0);
  for (int64_t k = 0; k < d.kg.n_triples(); ++k) {
    const int64_t h = d.kg.heads()[size_t(k)], t = d.kg.tails()[size_t(k)],
                  r = d.kg.relations()[size_t(k)];
    lists[size_t(h)].insert({t, r});
    lists[size_t(t)].insert({h, r});
    ++degree[size_t(h)], ++degree[size_t(t)];
  }
  for (int64_t e = 0; e < 45; ++e) {
    for (int64_t j = 0; j < 2; ++j) {
      const int64_t n = adj.entities[e][j].item<int64_t>(), r = adj.relations[e][j].item<int64_t>();
      if (degree[size_t(e)] == 0) {
        CHECK(n == e);  // the pad and virtual entities point at themselves
        CHECK(r == 0);
      } else {
        CHECK(lists[size_t(e)].count({n, r}) == 1);
      }
    }
  }
  // The same seed, the same tables.
  CHECK(torch::equal(recbole::models::layers::sample_neighbors(d.kg, 2, 7).entities, adj.entities));
}

TEST_CASE("the grouped TransR projection equals a matrix per row", "[models][knowledge]") {
  torch::manual_seed(3);
  const torch::Tensor x = torch::randn({9, 4});
  const torch::Tensor w = torch::randn({5, 4 * 3});
  const torch::Tensor rels = torch::tensor({4, 1, 1, 0, 3, 4, 2, 1, 4}, torch::kInt64);
  const torch::Tensor got = recbole::models::layers::transr_project(x, w, rels, 3);
  const torch::Tensor want =
      torch::bmm(x.unsqueeze(1), w.index_select(0, rels).view({9, 4, 3})).squeeze(1);
  CHECK(torch::allclose(got, want, 1e-6, 1e-6));
}

TEST_CASE("KGCN ranks every item as its per-pair path scores it", "[models][knowledge]") {
  const TinyData d;
  // 3, 4 and 6 neighbours: the one-hop CPU pass adds them four at a time, then one at a time.
  for (const char* aggregator : {"sum", "neighbor", "concat"})
    for (const char* n_iter : {"1", "2"})
      for (const char* k : {"3", "4", "6"}) {
        DYNAMIC_SECTION(aggregator << " n_iter " << n_iter << " k " << k) {
          ModelHarness h(recbole::testing::model_config("KGCN", {{"aggregator", aggregator},
                                                                 {"n_iter", n_iter},
                                                                 {"neighbor_sample_size", k}}),
                         d);
          auto m = h.create();
          recbole::testing::scramble(*m, 0.5);
          check_predict_matches_full_sort(*m, h);
        }
      }
}

// KGAT's F (every row) and its loss with dense matrices: A[s, t] = Σ_r 1 / outdeg_r(s) over the
// CKG's edges, the aggregator's layers on all N rows. float64 on the CPU.
struct DenseKgat {
  torch::Tensor features;  // F: [N, d + Σ layers]
  torch::Tensor loss;
  std::map<std::string, torch::Tensor> leaves;  // the model's parameters read, with gradients

  DenseKgat(const recbole::models::Model& m, const TinyData& d, const recbole::data::Batch& b,
            int64_t n_layers, const std::string& aggregator) {
    using recbole::testing::param;
    const int64_t u_count = d.n_users, n = u_count + d.kg.n_entities(), n_rel = d.kg.n_relations();
    std::vector<std::array<int64_t, 3>> edges;  // source, target, relation
    for (int32_t u = 0; u < d.train.n_users(); ++u)
      for (const int32_t* it = d.train.row_begin(u); it != d.train.row_end(u); ++it) {
        edges.push_back({u, u_count + *it, d.kg.ui_relation()});
        edges.push_back({u_count + *it, u, d.kg.ui_relation()});
      }
    for (int64_t k = 0; k < d.kg.n_triples(); ++k)
      edges.push_back({u_count + d.kg.heads()[size_t(k)], u_count + d.kg.tails()[size_t(k)],
                       d.kg.relations()[size_t(k)]});
    torch::Tensor outdeg = torch::zeros({n, n_rel}, torch::kFloat64);
    for (const auto& e : edges) outdeg[e[0]][e[2]] += 1;
    torch::Tensor a = torch::zeros({n, n}, torch::kFloat64);
    for (const auto& e : edges) a[e[0]][e[1]] += 1.0 / outdeg[e[0]][e[2]].item<double>();
    const auto leaf = [&](const std::string& name) {
      return leaves[name] = param(m, name).requires_grad_(true);
    };
    torch::Tensor x = torch::cat({leaf("user_embedding"), leaf("entity_embedding")});
    std::vector<torch::Tensor> outs{x};
    for (int64_t l = 0; l < n_layers; ++l) {
      const std::string i = std::to_string(l);
      const torch::Tensor s = a.mm(x);
      const auto layer = [&](const std::string& w, const torch::Tensor& in) {
        return torch::leaky_relu(
            torch::addmm(leaf(w + "_" + i + ".bias"), in, leaf(w + "_" + i + ".weight").t()));
      };
      if (aggregator == "bi")
        x = layer("w1", x + s) + layer("w2", x * s);
      else if (aggregator == "gcn")
        x = layer("w1", x + s);
      else
        x = layer("w1", torch::cat({x, s}, 1));
      outs.push_back(x / x.norm(2, 1, true).clamp_min(1e-12));
    }
    features = torch::cat(outs, 1);
    loss = recbole::models::layers::gathered_bpr_loss_composed(features, b.users, b.items + u_count,
                                                               b.neg_items + u_count, 1e-5);
    loss.backward();
  }
};

TEST_CASE("KGAT's propagation and loss equal dense layers over the whole graph",
          "[models][knowledge]") {
  // TinyData's CKG has rows without out-edges (the pad user, the pad item, items 27..29) and
  // items and entities with them, so both the W2 bias rows and the last layer's read rows count.
  const TinyData d;
  const std::string aggregator = GENERATE(as<std::string>{}, "bi", "gcn", "graphsage");
  INFO(aggregator);
  ModelHarness h(recbole::testing::cpu_model_config("KGAT", {{"embedding_size", "8"},
                                                             {"layers", "[6, 4]"},
                                                             {"mess_dropout", "0.0"},
                                                             {"reg_weight", "1e-5"},
                                                             {"aggregator_type", aggregator}}),
                 d);
  auto m = h.create();
  recbole::testing::scramble(*m, 0.5);
  recbole::data::Batch b;
  b.users = torch::tensor(std::vector<int64_t>{3, 17, 39, 5});
  b.items = torch::tensor(std::vector<int64_t>{4, 28, 1, 29});
  b.neg_items = torch::tensor(std::vector<int64_t>{27, 9, 0, 26});
  const DenseKgat want(*m, d, b, 2, aggregator);
  m->train();
  const torch::Tensor loss = m->calculate_loss(b);
  CHECK(loss.item<double>() == Approx(want.loss.item<double>()).epsilon(1e-5));
  m->zero_grad();
  loss.backward();
  // Two tables and two layers of W1 (and of W2 for bi): weight and bias each.
  REQUIRE(want.leaves.size() == (aggregator == "bi" ? 10u : 6u));
  for (const auto& [name, leaf] : want.leaves) {
    INFO(name);
    const torch::Tensor grad = m->named_parameters()[name].grad();
    REQUIRE(grad.defined());
    CHECK(torch::allclose(grad.to(torch::kFloat64), leaf.grad(), 1e-4, 1e-7));
  }
  // Scores of every item against F's rows.
  m->eval();
  torch::NoGradGuard no_grad;
  const torch::Tensor scores =
      m->full_sort_predict(recbole::testing::user_batch(h.device, {3, 17})).to(torch::kFloat64);
  const torch::Tensor f = want.features;
  const torch::Tensor expected = f.index_select(0, torch::tensor(std::vector<int64_t>{3, 17}))
                                     .mm(f.narrow(0, d.n_users, d.n_items).t());
  CHECK(torch::allclose(scores, expected, 1e-4, 1e-5));
}

TEST_CASE("RippleNet's hops repeat hop 0 as RecBole's, or start from hop h - 1's tails",
          "[models][knowledge]") {
  const TinyData d;
  std::set<std::array<int64_t, 3>> triples;
  for (int64_t k = 0; k < d.kg.n_triples(); ++k)
    triples.insert({d.kg.heads()[size_t(k)], d.kg.relations()[size_t(k)], d.kg.tails()[size_t(k)]});
  std::map<std::string, std::array<torch::Tensor, 3>> sets;  // heads, relations, tails
  for (const char* mode : {"recbole", "paper"}) {
    ModelHarness h(recbole::testing::cpu_model_config(
                       "RippleNet", {{"ripple_sets", mode}, {"n_hop", "3"}, {"n_memory", "4"}}),
                   d);
    auto m = h.create();
    auto buffers = m->named_buffers();
    sets[mode] = {buffers["memory_heads"], buffers["memory_relations"], buffers["memory_tails"]};
  }
  for (const auto& [mode, set] : sets)
    for (int64_t u = 1; u < d.n_users; ++u)
      for (int64_t hop = 0; hop < 3; ++hop)
        for (int64_t j = 0; j < 4; ++j) {
          INFO(mode << " user " << u << " hop " << hop << " memory " << j);
          const std::array<int64_t, 3> t = {set[0][u][hop][j].item<int64_t>(),
                                            set[1][u][hop][j].item<int64_t>(),
                                            set[2][u][hop][j].item<int64_t>()};
          CHECK(triples.count(t) == 1);
          if (hop == 0) {
            // From the user's training items.
            const auto* row = d.train.row_begin(int32_t(u));
            CHECK(std::find(row, d.train.row_end(int32_t(u)), int32_t(t[0])) !=
                  d.train.row_end(int32_t(u)));
          } else if (mode == "recbole") {
            CHECK(t[0] == set[0][u][0][j].item<int64_t>());
            CHECK(t[2] == set[2][u][0][j].item<int64_t>());
          } else {  // every tail of TinyData's KG starts a triple, so no hop is kept
            const torch::Tensor previous = set[2][u][hop - 1];
            CHECK((previous == t[0]).any().item<bool>());
          }
        }
  // The first user's hop 0 is the same draw in both modes; later hops of "paper" differ.
  CHECK(torch::equal(sets["recbole"][0][1][0], sets["paper"][0][1][0]));
  CHECK_FALSE(torch::equal(sets["recbole"][0].select(1, 1), sets["paper"][0].select(1, 1)));
}

// RippleNet's loss written per row and per memory, as RecBole computes it (a d × d matrix
// gathered per memory, every hop from its own rows of the sets), in float64 with autograd; the
// model computes each distinct user's memories once and, with RecBole's sets, hop 0's once.
TEST_CASE("RippleNet's loss and gradients equal the per-memory formula on repeated users",
          "[models][knowledge]") {
  const TinyData d;
  const std::vector<int64_t> users{3, 5, 3, 7, 5, 3}, items{1, 2, 4, 1, 9, 12};
  const std::vector<float> labels{1, 0, 1, 0, 1, 0};
  const double kg_weight = 0.5, reg_weight = 0.1;
  for (const char* mode : {"recbole", "paper"}) {
    INFO(mode);
    ModelHarness h(recbole::testing::cpu_model_config("RippleNet", {{"ripple_sets", mode},
                                                                    {"n_hop", "2"},
                                                                    {"n_memory", "4"},
                                                                    {"embedding_size", "6"},
                                                                    {"kg_weight", "0.5"},
                                                                    {"reg_weight", "0.1"}}),
                   d);
    auto m = h.create();
    recbole::testing::scramble(*m, 0.3);
    m->train();
    const torch::Tensor loss =
        m->calculate_loss(recbole::testing::pointwise_batch(h.device, users, items, labels));
    loss.backward();

    auto leaf = [&](const char* name) {
      return recbole::testing::param(*m, name).clone().requires_grad_(true);
    };
    const torch::Tensor ent = leaf("entity_embedding"), rel = leaf("relation_embedding"),
                        w = leaf("transform_matrix.weight");
    auto buffers = m->named_buffers();
    const torch::Tensor heads = buffers["memory_heads"], rels = buffers["memory_relations"],
                        tails = buffers["memory_tails"];
    const int64_t dim = 6, n_rows = int64_t(users.size()), n_mem = 4;
    torch::Tensor bce = torch::zeros({}, torch::kFloat64), kge = torch::zeros_like(bce),
                  reg = torch::zeros_like(bce);
    // Per hop, every row's memories: heads, tails, matrices, hᵀ R t.
    std::vector<torch::Tensor> hop_h[2], hop_t[2], hop_r[2], hop_kge[2];
    for (int64_t row = 0; row < n_rows; ++row) {
      const int64_t u = users[size_t(row)];
      torch::Tensor v = ent[items[size_t(row)]], o_sum = torch::zeros({dim}, torch::kFloat64);
      for (int64_t hop = 0; hop < 2; ++hop) {
        const torch::Tensor hs = ent.index_select(0, heads[u][hop]),
                            ts = ent.index_select(0, tails[u][hop]),
                            rs = rel.index_select(0, rels[u][hop]).view({n_mem, dim, dim});
        const torch::Tensor r_h = torch::bmm(rs, hs.unsqueeze(-1)).squeeze(-1);  // R h
        const torch::Tensor p = torch::softmax(r_h.mv(v), 0);
        const torch::Tensor o = (p.unsqueeze(1) * ts).sum(0);
        v = w.mv(v + o);
        o_sum = o_sum + o;
        const torch::Tensor h_r_t = torch::bmm(torch::bmm(hs.unsqueeze(1), rs), ts.unsqueeze(-1));
        hop_h[hop].push_back(hs);
        hop_t[hop].push_back(ts);
        hop_r[hop].push_back(rs);
        hop_kge[hop].push_back(h_r_t.reshape({-1}));
      }
      const double y = labels[size_t(row)];
      const torch::Tensor s = v.dot(o_sum);
      bce = bce + (torch::softplus(s) - y * s) / double(n_rows);  // BCE with logits
    }
    for (size_t hop = 0; hop < 2; ++hop) {
      kge = kge + torch::sigmoid(torch::cat(hop_kge[hop])).mean();
      reg = reg + (torch::cat(hop_h[hop]).norm() + torch::cat(hop_t[hop]).norm() +
                   torch::cat(hop_r[hop]).norm()) /
                      double(n_rows * n_mem);
    }
    reg = reg + w.norm() / double(dim);
    const torch::Tensor want = bce - kg_weight * kge + reg_weight * reg;
    want.backward();

    CHECK(loss.item<double>() == Approx(want.item<double>()).epsilon(1e-5));
    auto named = m->named_parameters();
    for (const auto& [name, ref] : {std::pair<std::string, torch::Tensor>{"entity_embedding", ent},
                                    {"relation_embedding", rel},
                                    {"transform_matrix.weight", w}}) {
      INFO(name);
      CHECK(torch::allclose(named[name].grad().to(torch::kFloat64), ref.grad(), 1e-4, 1e-6));
    }
  }
}

TEST_CASE("CFKG's transe scores are minus the distance of user + buy to the item",
          "[models][knowledge]") {
  const TinyData d;
  ModelHarness h(recbole::testing::model_config("CFKG", {{"loss_function", "transe"}}), d);
  auto m = h.create();
  recbole::testing::scramble(*m, 0.5);
  check_predict_matches_full_sort(*m, h);
  torch::Tensor users, items;
  CHECK_FALSE(recbole::testing::as<recbole::models::FactorScores>(*m).score_factors(
      &users, &items));  // not an inner product
  const torch::Tensor u = recbole::testing::param(*m, "user_embedding")[3] +
                          recbole::testing::param(*m, "relation_embedding")[d.kg.n_relations()];
  const torch::Tensor e = recbole::testing::param(*m, "entity_embedding")[5];
  torch::NoGradGuard no_grad;
  const double got = m->predict(recbole::testing::user_batch(h.device, {3}, {5})).item<double>();
  CHECK(got == Approx(-(u - e).norm().item<double>()).epsilon(1e-5));
}

TEST_CASE("KGNNLS adds a label-smoothness term to KGCN's loss that moves the weights",
          "[models][knowledge]") {
  const TinyData d;
  auto loss_and_grad = [&](const char* model, const char* ls_weight) {
    std::vector<std::pair<std::string, std::string>> kv;
    if (std::string(model) == "KGNNLS") kv.push_back({"ls_weight", ls_weight});
    ModelHarness h(recbole::testing::model_config(model, kv), d);
    h.device.seed(h.device.base_seed());
    auto m = h.create();
    recbole::data::Batch b;
    // Users with their training items (labelled 1) as positives; item 1 + (i·5) % 26 is a KG
    // neighbour of item i, so labelled neighbours occur.
    b.users = torch::tensor({3, 5, 7, 9}, torch::kInt64);
    b.items = torch::tensor({*d.train.row_begin(3), *d.train.row_begin(5), *d.train.row_begin(7),
                             *d.train.row_begin(9)},
                            torch::kInt64);
    b.neg_items = torch::tensor({27, 28, 29, 27}, torch::kInt64);
    const torch::Tensor loss = m->calculate_loss(h.device.place(b));
    loss.backward();
    return std::make_pair(loss.item<double>(),
                          m->named_parameters()["relation_embedding"].grad().clone());
  };
  const auto kgcn = loss_and_grad("KGCN", "");
  const auto none = loss_and_grad("KGNNLS", "0");
  const auto half = loss_and_grad("KGNNLS", "0.5");
  CHECK(none.first == Approx(kgcn.first).epsilon(1e-6));
  CHECK(torch::allclose(none.second, kgcn.second, 1e-6, 1e-7));
  CHECK(half.first > none.first);  // BCE of a logit in [0, 1/K] is positive
  CHECK_FALSE(torch::allclose(half.second, none.second, 1e-6, 1e-7));
}

TEST_CASE("KGCN and KGNNLS train a batch in parts to the whole batch's loss and gradient",
          "[models][knowledge]") {
  const TinyData d;
  for (const char* model : {"KGCN", "KGNNLS"}) {
    DYNAMIC_SECTION(model) {
      // reg_weight large enough that the EmbLoss (the coupling of the parts) shows.
      ModelHarness h(recbole::testing::model_config(model, {{"reg_weight", "0.1"}}), d);
      auto m = h.create();
      recbole::testing::scramble(*m, 0.5);
      recbole::data::Batch b;  // 2,500 rows: three parts of at most 1,024
      b.users = torch::randint(1, d.n_users, {2500}, torch::kInt64);
      b.items = torch::randint(1, d.n_items, {2500}, torch::kInt64);
      b.neg_items = torch::randint(1, d.n_items, {2500}, torch::kInt64);
      recbole::testing::check_step_equals_whole_batch(*m, h.device.place(b));
      for (const auto& p : m->named_parameters()) {
        INFO(p.key());
        CHECK(p.value().grad().defined());  // the loss reaches every parameter
      }
    }
  }
}

TEST_CASE("MKR walks its KG pass in every kge_interval-th epoch and ranks as it scores pairs",
          "[models][knowledge]") {
  using recbole::models::PassBatches;
  const TinyData d;
  for (const char* inner : {"true", "false"}) {
    DYNAMIC_SECTION("use_inner_product " << inner) {
      ModelHarness h(recbole::testing::model_config("MKR", {{"use_inner_product", inner},
                                                            {"kge_interval", "2"},
                                                            {"low_layers_num", "2"},
                                                            {"high_layers_num", "2"}}),
                     d);
      auto m = h.create();
      REQUIRE(recbole::testing::as<recbole::models::MultiPassEpoch>(*m).passes_per_epoch() == 2);
      for (int64_t e = 0; e < 5; ++e) {
        CHECK(recbole::testing::as<recbole::models::MultiPassEpoch>(*m).pass_batches(e, 0) ==
              PassBatches::kMain);
        CHECK(recbole::testing::as<recbole::models::MultiPassEpoch>(*m).pass_batches(e, 1) ==
              (e % 2 == 0 ? PassBatches::kAuxiliary : PassBatches::kSkip));
      }
      recbole::testing::scramble(*m, 0.5);
      check_predict_matches_full_sort(*m, h);
    }
  }
}

TEST_CASE("MKR's KG loss is minus the summed tail scores plus the batch-scaled L2",
          "[models][knowledge]") {
  const TinyData d;
  ModelHarness h(recbole::testing::model_config("MKR", {{"reg_weight", "0"}}), d);
  auto m = h.create();
  recbole::data::Batch kg;
  kg.columns[recbole::models::layers::kKgHeads] = torch::tensor({1, 2, 3}, torch::kInt64);
  kg.columns[recbole::models::layers::kKgRelations] = torch::tensor({1, 1, 2}, torch::kInt64);
  kg.columns[recbole::models::layers::kKgTails] = torch::tensor({31, 32, 33}, torch::kInt64);
  kg.columns[recbole::models::layers::kKgNegTails] = torch::tensor({34, 35, 36}, torch::kInt64);
  torch::NoGradGuard no_grad;
  const double plain = m->calculate_loss(h.device.place(kg)).item<double>();
  // −Σ σ(·) over 3 rows lies in (−3, 0).
  CHECK(plain < 0);
  CHECK(plain > -3);
  ModelHarness h_reg(recbole::testing::model_config("MKR", {{"reg_weight", "0.5"}}), d);
  h.device.seed(h.device.base_seed());
  auto a = h.create();
  h_reg.device.seed(h.device.base_seed());
  auto b = h_reg.create();
  const double without = a->calculate_loss(h.device.place(kg)).item<double>();
  const double with = b->calculate_loss(h_reg.device.place(kg)).item<double>();
  CHECK(with > without);  // the same weights (same seed) plus a positive L2 term
}

TEST_CASE("KTUP alternates blocks of recommendation and KG epochs", "[models][knowledge]") {
  using recbole::models::PassBatches;
  const TinyData d;
  {
    ModelHarness h(recbole::testing::model_config("KTUP", {}), d);  // (5, 5)
    auto m = h.create();
    for (int64_t e = 0; e < 20; ++e)
      CHECK(recbole::testing::as<recbole::models::MultiPassEpoch>(*m).pass_batches(e, 0) ==
            (e % 10 < 5 ? PassBatches::kMain : PassBatches::kAuxiliary));
  }
  {
    ModelHarness h(recbole::testing::model_config("KTUP", {{"train_kg_step", "~"}}), d);
    auto m = h.create();
    for (int64_t e = 0; e < 12; ++e)
      CHECK(recbole::testing::as<recbole::models::MultiPassEpoch>(*m).pass_batches(e, 0) ==
            PassBatches::kMain);
  }
}

TEST_CASE("KTUP without Gumbel noise ranks as it scores pairs, and with it a seed repeats",
          "[models][knowledge]") {
  const TinyData d;
  {
    ModelHarness h(recbole::testing::model_config("KTUP", {{"use_st_gumbel", "false"}}), d);
    auto m = h.create();
    recbole::testing::scramble(*m, 0.5);
    check_predict_matches_full_sort(*m, h);
  }
  ModelHarness h(recbole::testing::model_config("KTUP", {}), d);
  h.device.seed(h.device.base_seed());
  auto m = h.create();
  torch::NoGradGuard no_grad;
  m->eval();
  auto scores = [&] {
    h.device.seed(h.device.base_seed() + 1);
    return m->full_sort_predict(recbole::testing::user_batch(h.device, {3, 17})).to(torch::kCPU);
  };
  const torch::Tensor first = scores();
  CHECK(torch::equal(first, scores()));
  // With one relation per pair the score is minus a squared distance.
  CHECK(first.narrow(1, 1, d.n_items - 1).max().item<double>() <= 0);
}

TEST_CASE("KTUP's KG loss has no align term, not a NaN, on a batch without item ids",
          "[models][knowledge]") {
  const TinyData d;
  ModelHarness h(recbole::testing::model_config("KTUP", {}), d);
  auto m = h.create();
  recbole::data::Batch kg;
  const int64_t e = d.n_items + 1;  // pure KG entities only
  kg.columns[recbole::models::layers::kKgHeads] = torch::tensor({e, e + 1}, torch::kInt64);
  kg.columns[recbole::models::layers::kKgRelations] = torch::tensor({1, 2}, torch::kInt64);
  kg.columns[recbole::models::layers::kKgTails] = torch::tensor({e + 2, e + 3}, torch::kInt64);
  kg.columns[recbole::models::layers::kKgNegTails] = torch::tensor({e + 4, e + 5}, torch::kInt64);
  const torch::Tensor loss = m->calculate_loss(h.device.place(kg));
  CHECK(std::isfinite(loss.item<double>()));
  loss.backward();
  CHECK(m->named_parameters()["item_embedding"].grad().defined() == false);
}
