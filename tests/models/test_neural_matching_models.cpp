// The neural matching models (NeuMF, DMF, SimpleX) against formulas written out independently on
// tiny inputs: losses, the batched full sort against per-pair scores, RecBole's quirks kept on
// purpose, and bad keys as ConfigErrors naming the model and the key.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "models/model.h"
#include "recbole/data/dense_rows.h"
#include "recbole/utils/error.h"
#include "tasks/general/interaction_sources.h"
#include "tasks/training_source.h"
#include "tests/models/model_fixture.h"

using recbole::data::Batch;
using recbole::testing::check_bad_key;
using recbole::testing::dense_train;
using recbole::testing::model_config;
using recbole::testing::ModelHarness;
using recbole::testing::param;
using recbole::testing::pointwise_batch;
using recbole::testing::scramble;
using recbole::testing::TinyData;

namespace {

torch::Tensor bce(const torch::Tensor& logits, const torch::Tensor& labels) {
  const torch::Tensor p = torch::sigmoid(logits);
  return -(labels * torch::log(p) + (1 - labels) * torch::log(1 - p)).mean();
}

// ---- NeuMF by hand: logit = w·[p ⊙ q ; MLP([p'; q'])] + b.
torch::Tensor neumf_logits(recbole::models::Model& m, const torch::Tensor& users,
                           const torch::Tensor& items) {
  const torch::Tensor p = param(m, "user_mf_embedding").index_select(0, users);
  const torch::Tensor q = param(m, "item_mf_embedding").index_select(0, items);
  torch::Tensor h = torch::cat({param(m, "user_mlp_embedding").index_select(0, users),
                                param(m, "item_mlp_embedding").index_select(0, items)},
                               1);
  for (const char* layer : {"mlp.linear0", "mlp.linear1"})
    h = torch::relu(torch::matmul(h, param(m, std::string(layer) + ".weight").t()) +
                    param(m, std::string(layer) + ".bias"));
  return torch::matmul(torch::cat({p * q, h}, 1), param(m, "predict_layer.weight").t()).squeeze(1) +
         param(m, "predict_layer.bias");
}

}  // namespace

TEST_CASE("NeuMF: loss and scores equal the GMF + MLP formula, full sort equals predict",
          "[models][neumf]") {
  TinyData d;
  ModelHarness h(model_config("NeuMF", {{"mf_embedding_size", "3"},
                                        {"mlp_embedding_size", "2"},
                                        {"mlp_hidden_size", "[4, 3]"},
                                        {"dropout_prob", "0"}}),
                 d);
  auto m = h.create();
  scramble(*m, 0.7);
  m->train();
  const torch::Tensor users = torch::tensor({1, 5, 7, 5}, torch::kInt64);
  const torch::Tensor items = torch::tensor({2, 3, 9, 20}, torch::kInt64);
  const torch::Tensor labels = torch::tensor({1.0, 0.0, 1.0, 0.0}, torch::kFloat64);
  const Batch b = pointwise_batch(h.device, {1, 5, 7, 5}, {2, 3, 9, 20}, {1, 0, 1, 0});
  CHECK(m->calculate_loss(b).item<double>() ==
        Approx(bce(neumf_logits(*m, users, items), labels).item<double>()).epsilon(1e-5));

  m->eval();
  torch::NoGradGuard no_grad;
  const torch::Tensor all_items = torch::arange(d.n_items, torch::kInt64);
  const torch::Tensor scores =
      m->full_sort_predict(recbole::testing::user_batch(h.device, {1, 5, 7})).cpu();
  int row = 0;
  for (int64_t u : {1, 5, 7}) {
    const torch::Tensor expected =
        torch::sigmoid(neumf_logits(*m, torch::full({d.n_items}, u, torch::kInt64), all_items));
    CHECK(torch::allclose(scores[row++].to(torch::kFloat64), expected, 1e-5, 1e-6));
  }
}

TEST_CASE("NeuMF with one branch: full sort equals predict on every pair", "[models][neumf]") {
  TinyData d;
  for (const char* off : {"mf_train", "mlp_train"}) {
    ModelHarness h(model_config("NeuMF", {{off, "false"}, {"mlp_hidden_size", "[8, 4, 2]"}}), d);
    auto m = h.create();
    scramble(*m, 0.5);
    m->eval();
    torch::NoGradGuard no_grad;
    const std::vector<int64_t> users{2, 9};
    const torch::Tensor scores =
        m->full_sort_predict(recbole::testing::user_batch(h.device, users));
    for (size_t r = 0; r < users.size(); ++r) {
      Batch pairs;
      pairs.users = torch::full({d.n_items}, users[r], torch::kInt64);
      pairs.items = torch::arange(d.n_items, torch::kInt64);
      CHECK(torch::allclose(scores[static_cast<int64_t>(r)], m->predict(h.device.place(pairs)),
                            1e-5, 1e-6));
    }
  }
}

TEST_CASE("NeuMF: bad keys are ConfigErrors naming the model and the key", "[models][neumf]") {
  check_bad_key("NeuMF", {{"dropout_prob", "1.0"}}, "dropout_prob");
  check_bad_key("NeuMF", {{"mlp_hidden_size", "[64, 0]"}}, "mlp_hidden_size");
  check_bad_key("NeuMF", {{"use_pretrain", "true"}}, "use_pretrain", true);
  check_bad_key("NeuMF", {{"mf_train", "false"}, {"mlp_train", "false"}}, "mlp_train", true);

  // A pointwise model without negative sampling has no labels to learn from.
  TinyData d;
  ModelHarness h(model_config("NeuMF", {{"train_neg_sample_args", "~"}}), d);
  const std::vector<int32_t> users{1, 2}, items{3, 4};
  const std::vector<int64_t> counts = d.train.item_degrees();
  try {
    recbole::tasks::make_training_source(
        recbole::models::InputType::kPointwise, "NeuMF", {users, items, d.train, counts},
        recbole::tasks::source_settings_from_config(h.config, 0, 1));
    FAIL("no ConfigError");
  } catch (const recbole::ConfigError& e) {
    const std::string what = e.what();
    CHECK(what.find("NeuMF") != std::string::npos);
    CHECK(what.find("train_neg_sample_args") != std::string::npos);
  }
}

TEST_CASE("DMF: towers over rows and columns, BCE, RecBole's final ReLU kept", "[models][dmf]") {
  TinyData d;
  ModelHarness h(model_config("DMF", {{"user_embedding_size", "4"},
                                      {"item_embedding_size", "3"},
                                      {"user_hidden_size_list", "[5, 2]"},
                                      {"item_hidden_size_list", "[2]"}}),
                 d);
  auto m = h.create();
  scramble(*m, 0.6);
  m->train();
  const torch::Tensor r = dense_train(d);  // [n_users, n_items]
  auto tower = [&](torch::Tensor x, const std::string& name, int layers) {
    for (int k = 0; k < layers; ++k) {
      const std::string l = name + ".linear" + std::to_string(k);
      x = torch::relu(torch::matmul(x, param(*m, l + ".weight").t()) + param(*m, l + ".bias"));
    }
    return x;
  };
  // Every user's and item's tower output, from the dense matrix.
  const torch::Tensor yu = tower(torch::matmul(r, param(*m, "user_item_weight")), "user_tower", 2);
  const torch::Tensor yi =
      tower(torch::matmul(r.t(), param(*m, "item_user_weight")), "item_tower", 1);
  const torch::Tensor logits = torch::matmul(yu, yi.t());

  const Batch b = pointwise_batch(h.device, {1, 5, 7, 5}, {2, 3, 9, 20}, {1, 0, 1, 0});
  const torch::Tensor picked =
      torch::stack({logits[1][2], logits[5][3], logits[7][9], logits[5][20]});
  CHECK(m->calculate_loss(b).item<double>() ==
        Approx(bce(picked, torch::tensor({1.0, 0.0, 1.0, 0.0}, torch::kFloat64)).item<double>())
            .epsilon(1e-5));

  m->eval();
  m->before_evaluation();
  torch::NoGradGuard no_grad;
  const torch::Tensor scores = recbole::testing::all_scores(*m, h.device, d.n_users);
  CHECK(
      torch::allclose(scores.to(torch::kFloat64), torch::sigmoid(logits.slice(0, 1)), 1e-5, 1e-6));
  // Both towers end in ReLU: logits >= 0, so every score is >= 0.5 (RecBole's behaviour).
  CHECK(scores.min().item<float>() >= 0.5f);
}

TEST_CASE("DMF: bad keys are ConfigErrors naming the model and the key", "[models][dmf]") {
  check_bad_key("DMF", {{"inter_matrix_type", "rating"}}, "inter_matrix_type", true);
  check_bad_key("DMF", {{"inter_matrix_type", "binary"}}, "inter_matrix_type");
  check_bad_key("DMF", {{"item_hidden_size_list", "[64, 32]"}}, "item_hidden_size_list", true);
  check_bad_key("DMF", {{"user_embedding_size", "0"}}, "user_embedding_size");
}

TEST_CASE("SimpleX: CCL loss with K negatives in tiles, mean and attention aggregation",
          "[models][simplex]") {
  TinyData d;
  const torch::Tensor r = dense_train(d);
  for (const char* aggregator : {"mean", "user_attention", "self_attention"}) {
    DYNAMIC_SECTION(aggregator) {
      // history_len above every degree keeps each user's whole row.
      ModelHarness h(model_config("SimpleX", {{"embedding_size", "4"},
                                              {"aggregator", aggregator},
                                              {"history_len", "100"},
                                              {"dropout_prob", "0"},
                                              {"reg_weight", "0.1"},
                                              {"gamma", "0.3"},
                                              {"margin", "0.2"},
                                              {"negative_weight", "2"},
                                              {"train_neg_sample_args",
                                               "{distribution: uniform, sample_num: 2}"}}),
                     d);
      auto m = h.create();
      m->train();
      // The parameters themselves (in float64), so that the expected loss has their gradients.
      auto live = [&](const char* name) {
        return m->named_parameters()[name].to(torch::kCPU, torch::kFloat64);
      };
      const torch::Tensor e_u = live("user_embedding");
      const torch::Tensor e_i = live("item_embedding");
      CHECK(e_i[0].abs().sum().item<double>() == 0);
      const torch::Tensor ui = live("ui_map.weight");
      // v_u by hand over the user's whole training row.
      auto v_of = [&](int64_t u) {
        const torch::Tensor mask = r[u] > 0;
        const torch::Tensor hist = e_i.index({mask});  // [n_u, d]
        torch::Tensor a;
        if (std::string(aggregator) == "mean") {
          a = hist.mean(0);
        } else {
          const torch::Tensor key =
              torch::tanh(torch::matmul(hist, live("w_k.weight").t()) + live("w_k.bias"));
          const torch::Tensor logit = std::string(aggregator) == "user_attention"
                                          ? torch::matmul(key, e_u[u])
                                          : torch::matmul(key, live("w_q.weight")[0]);
          a = torch::matmul(torch::softmax(logit, 0), hist);
        }
        return 0.3 * e_u[u] + 0.7 * torch::matmul(ui, a);
      };
      auto cos = [](const torch::Tensor& a, const torch::Tensor& b) {
        return torch::dot(a, b) / (a.norm() * b.norm());
      };
      // Users 1, 5, 7 with positives 2, 3, 9; tile k holds each user's k-th negative.
      const std::vector<int64_t> users{1, 5, 7}, pos{2, 3, 9};
      const std::vector<std::vector<int64_t>> neg{{11, 12}, {13, 14}, {15, 16}};
      Batch b;
      b.users = torch::tensor({1, 5, 7, 1, 5, 7}, torch::kInt64);
      b.items = torch::tensor({2, 3, 9, 2, 3, 9}, torch::kInt64);
      b.neg_items = torch::tensor({11, 13, 15, 12, 14, 16}, torch::kInt64);
      // The expected loss as a tensor of the parameters, so that its gradients are compared too.
      torch::Tensor ccl = torch::zeros({}), hist_sq = torch::zeros({}), neg_sq = torch::zeros({});
      torch::Tensor user_sq = torch::zeros({}), pos_sq = torch::zeros({});
      for (size_t j = 0; j < users.size(); ++j) {
        const torch::Tensor v = v_of(users[j]);
        torch::Tensor neg_loss = torch::zeros({});
        for (int64_t n : neg[j]) neg_loss = neg_loss + torch::relu(cos(v, e_i[n]) - 0.2);
        ccl = ccl + torch::relu(1 - cos(v, e_i[pos[j]])) + 2 * neg_loss / 2;
        user_sq = user_sq + e_u[users[j]].pow(2).sum();
        pos_sq = pos_sq + e_i[pos[j]].pow(2).sum();
        hist_sq = hist_sq + (e_i * r[users[j]].unsqueeze(1)).pow(2).sum();
        for (int64_t n : neg[j]) neg_sq = neg_sq + e_i[n].pow(2).sum();
      }
      const torch::Tensor norms = user_sq.sqrt() + pos_sq.sqrt() + hist_sq.sqrt() + neg_sq.sqrt();
      const torch::Tensor expected = ccl / 3 + 0.1 * norms / 3;
      const torch::Tensor loss = m->calculate_loss(h.device.place(b));
      CHECK(loss.item<double>() == Approx(expected.item<double>()).epsilon(1e-5));
      const std::vector<torch::Tensor> params = m->parameters();
      const auto got = torch::autograd::grad({loss}, params, {}, true, false, true);
      const auto want = torch::autograd::grad({expected}, params, {}, false, false, true);
      for (size_t k = 0; k < params.size(); ++k) {
        INFO("parameter " << k);
        REQUIRE(got[k].defined() == want[k].defined());
        if (got[k].defined()) CHECK(torch::allclose(got[k], want[k], 1e-4, 1e-6));
      }

      // Training never moves the padding row; the full sort is the cosine with every item.
      torch::optim::Adam opt(m->parameters(), torch::optim::AdamOptions(0.05));
      for (int s = 0; s < 3; ++s) {
        opt.zero_grad();
        m->calculate_loss(h.device.place(b)).backward();
        opt.step();
      }
      CHECK(param(*m, "item_embedding")[0].abs().sum().item<double>() == 0);
    }
  }
}

TEST_CASE("SimpleX: bad keys are ConfigErrors naming the model and the key", "[models][simplex]") {
  check_bad_key("SimpleX", {{"aggregator", "max"}}, "aggregator");
  check_bad_key("SimpleX", {{"dropout_prob", "-0.1"}}, "dropout_prob");
  check_bad_key("SimpleX", {{"history_len", "0"}}, "history_len");
  check_bad_key("SimpleX", {{"train_neg_sample_args", "~"}}, "train_neg_sample_args", true);
}

TEST_CASE("FISM: x = |R_u|^-alpha Σ p_j·q_i + biases, RecBole's double sigmoid in the loss",
          "[models][fism]") {
  TinyData d;
  ModelHarness h(
      model_config("FISM",
                   {{"embedding_size", "3"}, {"alpha", "0.5"}, {"reg_weights", "[0.01, 0.02]"}}),
      d);
  auto m = h.create();
  scramble(*m, 0.5);
  m->train();
  const torch::Tensor r = dense_train(d);
  const torch::Tensor scale = r.sum(1).clamp_min(1).pow(-0.5);
  const torch::Tensor x = torch::matmul(r, param(*m, "item_src_embedding")) * scale.unsqueeze(1);
  const torch::Tensor all = torch::matmul(x, param(*m, "item_dst_embedding").t()) +
                            param(*m, "user_bias").unsqueeze(1) +
                            param(*m, "item_bias").unsqueeze(0);  // [n_users, n_items]

  const Batch b = pointwise_batch(h.device, {1, 5, 7, 5}, {2, 3, 9, 20}, {1, 0, 1, 0});
  const torch::Tensor picked = torch::stack({all[1][2], all[5][3], all[7][9], all[5][20]});
  const double reg = 0.01 * param(*m, "item_src_embedding").norm().item<double>() +
                     0.02 * param(*m, "item_dst_embedding").norm().item<double>();
  CHECK(m->calculate_loss(b).item<double>() ==
        Approx(bce(torch::sigmoid(picked), torch::tensor({1.0, 0.0, 1.0, 0.0}, torch::kFloat64))
                   .item<double>() +
               reg)
            .epsilon(1e-5));
  m->eval();
  torch::NoGradGuard no_grad;
  CHECK(torch::allclose(recbole::testing::all_scores(*m, h.device, d.n_users).to(torch::kFloat64),
                        all.slice(0, 1), 1e-5, 1e-6));
}

TEST_CASE("FISM: bad keys are ConfigErrors naming the model and the key", "[models][fism]") {
  check_bad_key("FISM", {{"reg_weights", "[0.01]"}}, "reg_weights", true);
  check_bad_key("FISM", {{"reg_weights", "[0.01, -1]"}}, "reg_weights");
  check_bad_key("FISM", {{"alpha", "-1"}}, "alpha");
}

TEST_CASE("NNCF: neighbours come from the rows, batched full sort equals predict per pair",
          "[models][nncf]") {
  TinyData d;
  ModelHarness h(model_config("NNCF", {{"ui_embedding_size", "4"},
                                       {"neigh_embedding_size", "3"},
                                       {"num_conv_kernel", "5"},
                                       {"conv_kernel_size", "2"},
                                       {"pool_kernel_size", "2"},
                                       {"neigh_num", "6"},
                                       {"mlp_hidden_size", "[7, 3]"},
                                       {"dropout", "0"}}),
                 d);
  auto m = h.create();
  scramble(*m, 0.5);
  // With dropout 0 the loss is the mean BCE of the per-pair logits predict gives.
  m->train();
  const Batch b = pointwise_batch(h.device, {1, 5, 7, 5}, {2, 3, 9, 20}, {1, 0, 1, 0});
  const torch::Tensor p = m->predict(b).to(torch::kCPU, torch::kFloat64);
  CHECK(m->calculate_loss(b).item<double>() ==
        Approx(bce(torch::log(p / (1 - p)), torch::tensor({1.0, 0.0, 1.0, 0.0}, torch::kFloat64))
                   .item<double>())
            .epsilon(1e-4));
  m->eval();
  torch::NoGradGuard no_grad;
  const std::vector<int64_t> users{1, 9, 33};
  const torch::Tensor scores = m->full_sort_predict(recbole::testing::user_batch(h.device, users));
  for (size_t r = 0; r < users.size(); ++r) {
    Batch pairs;
    pairs.users = torch::full({d.n_items}, users[r], torch::kInt64);
    pairs.items = torch::arange(d.n_items, torch::kInt64);
    CHECK(torch::allclose(scores[static_cast<int64_t>(r)], m->predict(h.device.place(pairs)), 1e-5,
                          1e-6));
  }
}

TEST_CASE("NNCF: bad keys are ConfigErrors naming the model and the key", "[models][nncf]") {
  check_bad_key("NNCF", {{"neigh_info_method", "knn"}}, "neigh_info_method", true);
  check_bad_key("NNCF", {{"neigh_num", "6"}}, "neigh_num", true);
  check_bad_key("NNCF", {{"dropout", "1"}}, "dropout");
}
