// The autoencoders and non-sampling models (MultiVAE, MultiDAE, RecVAE, CDAE, ENMF, DiffRec)
// against independent formulas on the tiny fixture: losses recomputed from the models' own weights
// with plain loops or closed forms, the KL annealing counter, RecVAE's composite prior and pass
// schedule, ENMF's pad-slot quirk; and bad key values as ConfigErrors naming the key.
#include <catch2/catch.hpp>

#include <array>
#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "models/general/cdae.h"
#include "models/general/diffrec.h"
#include "models/general/enmf.h"
#include "models/general/ldiffrec.h"
#include "models/general/macridvae.h"
#include "models/general/multidae.h"
#include "models/general/multivae.h"
#include "models/general/recvae.h"
#include "models/layers/autoencoder.h"
#include "models/layers/diffusion.h"
#include "models/layers/history.h"
#include "recbole/data/dense_rows.h"
#include "recbole/data/split.h"
#include "recbole/utils/error.h"
#include "tests/models/model_fixture.h"

using recbole::testing::cpu_model_config;
using recbole::testing::model_config;
using recbole::testing::ModelHarness;
using recbole::testing::TinyData;
using recbole::testing::user_batch;
namespace layers = recbole::models::layers;

namespace {

// A training-style batch of `users` with their dense rows, on the device.
recbole::data::Batch rows_batch(const ModelHarness& h, const std::vector<int64_t>& users) {
  recbole::data::Batch b;
  b.users = torch::tensor(users, torch::kInt64);
  b.history = recbole::data::dense_rows(h.data.train, users);
  return h.device.place(b);
}

// Every named parameter of a model, as float64 CPU tensors.
std::map<std::string, torch::Tensor> weights(const recbole::models::Model& m) {
  std::map<std::string, torch::Tensor> w;
  for (const auto& p : m.named_parameters())
    w[p.key()] = p.value().detach().to(torch::kCPU).to(torch::kFloat64);
  return w;
}

// −mean_u Σ_i x_ui log softmax(logits)_ui, with an explicit log-sum-exp per row.
double multinomial_nll_by_hand(const torch::Tensor& logits, const torch::Tensor& x) {
  const torch::Tensor l = logits.to(torch::kCPU).to(torch::kFloat64);
  const torch::Tensor r = x.to(torch::kCPU).to(torch::kFloat64);
  double total = 0;
  for (int64_t u = 0; u < l.size(0); ++u) {
    double mx = -1e300;
    for (int64_t i = 0; i < l.size(1); ++i) mx = std::max(mx, l[u][i].item<double>());
    double s = 0;
    for (int64_t i = 0; i < l.size(1); ++i) s += std::exp(l[u][i].item<double>() - mx);
    const double lse = mx + std::log(s);
    for (int64_t i = 0; i < l.size(1); ++i)
      total -= r[u][i].item<double>() * (l[u][i].item<double>() - lse);
  }
  return total / static_cast<double>(l.size(0));
}

// Expects building `model` with key = value to be a ConfigError naming the model and the key.
void expect_bad_key(const std::string& model, const std::string& key, const std::string& value) {
  INFO(model << " " << key << " = " << value);
  try {
    model_config(model, {{key, value}});
    FAIL("expected a ConfigError");
  } catch (const recbole::ConfigError& e) {
    CHECK_THAT(e.what(), Catch::Contains(model + " key " + key + ": expected"));
  }
}

}  // namespace

TEST_CASE("the Gaussian KL and the annealing counter follow their closed forms",
          "[models][autoencoder]") {
  // KL(N((1, 0), diag(1, 2)) ‖ N(0, I)) = ½ (1 + 1 − 2 + 2 − ln 2) = 1 − ln 2 / 2.
  const torch::Tensor mu = torch::tensor({{1.0f, 0.0f}});
  const torch::Tensor logvar = torch::tensor({{0.0f, static_cast<float>(std::log(2.0))}});
  CHECK(layers::gaussian_kl(mu, logvar).item<double>() == Approx(1 - std::log(2.0) / 2));
  // Mean over rows: a second row at the prior adds 0 and halves the mean.
  CHECK(layers::gaussian_kl(torch::cat({mu, torch::zeros({1, 2})}),
                            torch::cat({logvar, torch::zeros({1, 2})}))
            .item<double>() == Approx((1 - std::log(2.0) / 2) / 2));
  layers::KlAnneal a(0.6, 4);
  CHECK(a.next() == Approx(0.25));
  CHECK(a.next() == Approx(0.5));
  CHECK(a.next() == Approx(0.6));
  CHECK(layers::KlAnneal(0.3, 0).next() == Approx(0.3));
  // Rows are L2-normalised; the all-zero pad row stays zero.
  const torch::Tensor n =
      layers::normalized_dropout(torch::tensor({{3.0f, 4.0f}, {0.0f, 0.0f}}), 0.5, false);
  CHECK(torch::allclose(n, torch::tensor({{0.6f, 0.8f}, {0.0f, 0.0f}})));
}

TEST_CASE("MultiVAE: latent of half the code, z = mu at eval, loss = NLL + annealed KL",
          "[models][autoencoder][multivae]") {
  TinyData d;
  ModelHarness h(model_config("MultiVAE", {{"mlp_hidden_size", "[8]"},
                                           {"latent_dimension", "6"},
                                           {"anneal_cap", "0.3"},
                                           {"total_anneal_steps", "4"}}),
                 d);
  h.device.seed(1);
  auto model = std::dynamic_pointer_cast<recbole::models::MultiVAE>(h.create());
  REQUIRE(model != nullptr);
  model->eval();
  const recbole::data::Batch b = rows_batch(h, {0, 3, 17, 39});
  const auto out = model->forward(b.history);
  REQUIRE(out.mu.size(1) == 3);
  REQUIRE(out.logvar.size(1) == 3);
  // Eval: the scores are the decoder logits at z = μ, and repeat exactly.
  CHECK(torch::equal(model->full_sort_predict(b), out.logits));
  CHECK(torch::equal(model->full_sort_predict(b), out.logits));
  const double nll = multinomial_nll_by_hand(out.logits, b.history);
  const auto mu = out.mu.to(torch::kFloat64), lv = out.logvar.to(torch::kFloat64);
  const double kl = (-0.5 * (1 + lv - mu * mu - lv.exp()).sum(1)).mean().item<double>();
  // The counter advances per call (per training batch): weights 0.25, 0.3 (capped), 0.3.
  CHECK(model->calculate_loss(b).item<double>() == Approx(nll + 0.25 * kl).epsilon(1e-5));
  CHECK(model->calculate_loss(b).item<double>() == Approx(nll + 0.3 * kl).epsilon(1e-5));
  CHECK(model->calculate_loss(b).item<double>() == Approx(nll + 0.3 * kl).epsilon(1e-5));
  // The pad user's zero row gives no likelihood term, only its KL.
  const recbole::data::Batch pad = rows_batch(h, {0});
  const auto pad_out = model->forward(pad.history);
  const auto pmu = pad_out.mu.to(torch::kFloat64), plv = pad_out.logvar.to(torch::kFloat64);
  const double pad_kl = (-0.5 * (1 + plv - pmu * pmu - plv.exp()).sum(1)).mean().item<double>();
  CHECK(model->calculate_loss(pad).item<double>() == Approx(0.3 * pad_kl).epsilon(1e-5));
  // Training: dropout and noise change the scores.
  model->train();
  CHECK_FALSE(torch::equal(model->forward(b.history).logits, out.logits));
}

TEST_CASE("MultiDAE: loss is the multinomial NLL of the decoder logits, tanh on the code",
          "[models][autoencoder][multidae]") {
  TinyData d;
  ModelHarness h(model_config("MultiDAE", {{"mlp_hidden_size", "[8]"}, {"latent_dimension", "4"}}),
                 d);
  h.device.seed(2);
  auto model = std::dynamic_pointer_cast<recbole::models::MultiDAE>(h.create());
  REQUIRE(model != nullptr);
  model->eval();
  const recbole::data::Batch b = rows_batch(h, {0, 1, 2, 20, 39});
  const torch::Tensor logits = model->forward(b.history);
  CHECK(model->calculate_loss(b).item<double>() ==
        Approx(multinomial_nll_by_hand(logits, b.history)).epsilon(1e-5));

  // The forward pass by hand from the weights: normalise, tanh(W1), tanh(W2) (the code too),
  // tanh(W3), W4.
  auto w = weights(*model);
  torch::Tensor x = b.history.to(torch::kCPU).to(torch::kFloat64);
  x = x / x.norm(2, 1, true).clamp_min(1e-12);
  auto lin = [&](const torch::Tensor& v, const std::string& name) {
    return torch::matmul(v, w[name + ".weight"].t()) + w[name + ".bias"];
  };
  torch::Tensor z = torch::tanh(lin(torch::tanh(lin(x, "encoder.linear0")), "encoder.linear1"));
  torch::Tensor expected = lin(torch::tanh(lin(z, "decoder.linear0")), "decoder.linear1");
  CHECK(torch::allclose(logits.to(torch::kCPU).to(torch::kFloat64), expected, 1e-5, 1e-6));
}

namespace {

// The trainer's side of a step for RecVAE: an Adam per parameter group.
class TwoOptimizers : public recbole::models::TrainStep {
 public:
  explicit TwoOptimizers(recbole::models::Model& m) {
    for (auto& group : m.optimizer_groups())
      optimizers_.push_back(
          std::make_unique<torch::optim::Adam>(group, torch::optim::AdamOptions(0.01)));
  }
  torch::optim::Optimizer& optimizer(size_t k) override { return *optimizers_.at(k); }
  void finish_gradients() override {}

 private:
  std::vector<std::unique_ptr<torch::optim::Optimizer>> optimizers_;
};

bool same_prefix(const std::map<std::string, torch::Tensor>& a,
                 const std::map<std::string, torch::Tensor>& b, const std::string& prefix) {
  for (const auto& [k, v] : a)
    if (k.rfind(prefix, 0) == 0 && !torch::equal(v, b.at(k))) return false;
  return true;
}

}  // namespace

TEST_CASE("RecVAE: composite prior by hand, encoder passes, prior update, decoder passes",
          "[models][autoencoder][recvae]") {
  TinyData d;
  ModelHarness h(model_config("RecVAE", {{"hidden_dimension", "8"},
                                         {"latent_dimension", "3"},
                                         {"mixture_weights", "[0.2, 0.5, 0.3]"}}),
                 d);
  h.device.seed(3);
  auto model = std::dynamic_pointer_cast<recbole::models::RecVAE>(h.create());
  REQUIRE(model != nullptr);
  REQUIRE(recbole::testing::as<recbole::models::MultiPassEpoch>(*model).passes_per_epoch() == 4);
  const recbole::data::Batch b = rows_batch(h, {0, 5, 9, 33});

  // The old encoder starts as an independent network; update_prior copies the encoder.
  auto w = weights(*model);
  CHECK_FALSE(torch::equal(w["encoder.fc1.weight"], w["encoder_old.fc1.weight"]));
  model->update_prior();
  w = weights(*model);
  CHECK(torch::equal(w["encoder.fc1.weight"], w["encoder_old.fc1.weight"]));
  CHECK_FALSE(w.empty());
  for (const auto& p : model->named_parameters())
    CHECK(p.value().requires_grad() == (p.key().rfind("encoder_old.", 0) != 0));

  // log p(z) at z = μ_old for one row: log Σ_k w_k N(z; m_k, v_k) per dimension, in float64.
  model->eval();
  const torch::Tensor z = torch::tensor({{0.5f, -1.0f, 2.0f}}).to(h.device.device());
  const recbole::data::Batch one = rows_batch(h, {5});
  const torch::Tensor prior = model->log_prior(one.history, z).to(torch::kCPU);
  // μ_old, logvar_old by hand from the old encoder's weights: normalise, five swish + LayerNorm
  // (eps 0.1) layers with dense residual sums, then the two heads.
  auto enc = [&](torch::Tensor x) {
    x = x / x.norm(2, 1, true).clamp_min(1e-12);
    auto lin = [&](const torch::Tensor& v, const std::string& name) {
      return torch::matmul(v, w["encoder_old." + name + ".weight"].t()) +
             w["encoder_old." + name + ".bias"];
    };
    auto ln = [&](const torch::Tensor& v, const std::string& name) {
      const torch::Tensor m = v.mean(1, true);
      const torch::Tensor var = (v - m).pow(2).mean(1, true);
      return (v - m) / (var + 0.1).sqrt() * w["encoder_old." + name + ".weight"] +
             w["encoder_old." + name + ".bias"];
    };
    auto swish = [](const torch::Tensor& v) { return v * torch::sigmoid(v); };
    std::vector<torch::Tensor> hs;
    torch::Tensor sum;
    for (int k = 1; k <= 5; ++k) {
      const std::string id = std::to_string(k);
      torch::Tensor pre = lin(k == 1 ? x : hs.back(), "fc" + id);
      if (k > 1) pre = pre + sum;
      hs.push_back(ln(swish(pre), "ln" + id));
      sum = k == 1 ? hs.back() : sum + hs.back();
    }
    return std::make_pair(lin(hs.back(), "fc_mu"), lin(hs.back(), "fc_logvar"));
  };
  auto [mu_old, lv_old] = enc(one.history.to(torch::kCPU).to(torch::kFloat64));
  const double weights3[3] = {0.2, 0.5, 0.3};
  for (int64_t k = 0; k < 3; ++k) {
    const double zk = z[0][k].item<double>();
    auto pdf = [&](double m, double lv) {
      return std::exp(-0.5 * (lv + std::log(2 * M_PI) + (zk - m) * (zk - m) / std::exp(lv)));
    };
    const double p = weights3[0] * pdf(0, 0) +
                     weights3[1] * pdf(mu_old[0][k].item<double>(), lv_old[0][k].item<double>()) +
                     weights3[2] * pdf(0, 10);
    CHECK(prior[0][k].item<double>() == Approx(std::log(p)).epsilon(1e-4));
  }

  // One epoch of the schedule: passes 0..2 train the encoder only (reported loss 0), pass 3
  // first copies the encoder into the old one, then trains the decoder only.
  model->train();
  TwoOptimizers step(*model);
  for (int64_t pass = 0; pass < 4; ++pass) {
    model->on_pass_start(pass);
    const auto before = weights(*model);
    const double loss = model->train_step(b, step).item<double>();
    const auto after = weights(*model);
    if (pass < 3) {
      CHECK(loss == 0);
      CHECK_FALSE(same_prefix(before, after, "encoder."));
      CHECK(same_prefix(before, after, "decoder."));
    } else {
      CHECK(loss != 0);
      CHECK(torch::equal(before.at("encoder.fc1.weight"), before.at("encoder_old.fc1.weight")));
      CHECK(same_prefix(before, after, "encoder."));
      CHECK_FALSE(same_prefix(before, after, "decoder."));
    }
  }
  // Outside the trainer the loss is the encoder phase's, and finite.
  model->on_pass_start(0);
  CHECK(std::isfinite(model->calculate_loss(b).item<double>()));
}

TEST_CASE("CDAE: BCE sum + L1/L2 of the user table and W equals the formula by hand",
          "[models][autoencoder][cdae]") {
  TinyData d;
  ModelHarness h(
      model_config("CDAE",
                   {{"embedding_size", "5"}, {"reg_weight_1", "0.03"}, {"reg_weight_2", "0.02"}}),
      d);
  h.device.seed(4);
  auto model = h.create();
  model->eval();
  const std::vector<int64_t> users{0, 4, 12, 39};
  const recbole::data::Batch b = rows_batch(h, users);
  auto w = weights(*model);
  const torch::Tensor x = b.history.to(torch::kCPU).to(torch::kFloat64);
  const torch::Tensor v = w["user_embedding"];
  const torch::Tensor hid = torch::relu(torch::matmul(x, w["h_item.weight"].t()) +
                                        w["h_item.bias"] + v.index_select(0, torch::tensor(users)));
  const torch::Tensor out = torch::matmul(hid, w["out_layer.weight"].t()) + w["out_layer.bias"];
  double bce = 0;
  for (int64_t u = 0; u < out.size(0); ++u)
    for (int64_t i = 0; i < out.size(1); ++i) {
      const double o = out[u][i].item<double>(), t = x[u][i].item<double>();
      bce += -t * std::log(1 / (1 + std::exp(-o))) - (1 - t) * std::log(1 - 1 / (1 + std::exp(-o)));
    }
  const torch::Tensor& wi = w["h_item.weight"];
  const double reg = 0.03 * (v.abs().sum() + wi.abs().sum()).item<double>() +
                     0.02 * (v.norm() + wi.norm()).item<double>();
  CHECK(model->calculate_loss(b).item<double>() == Approx(bce + reg).epsilon(1e-5));
  CHECK(torch::allclose(model->full_sort_predict(b).to(torch::kCPU).to(torch::kFloat64),
                        torch::sigmoid(out), 1e-5, 1e-6));
}

TEST_CASE("ENMF: the non-sampling loss over the padded history equals a loop by hand",
          "[models][autoencoder][enmf]") {
  TinyData d;
  ModelHarness h(
      model_config("ENMF",
                   {{"embedding_size", "4"}, {"negative_weight", "0.3"}, {"reg_weight", "0.01"}}),
      d);
  h.device.seed(5);
  auto model = h.create();
  model->eval();  // no dropout
  const std::vector<int64_t> users{0, 2, 7, 38};
  const recbole::data::Batch b = rows_batch(h, users);
  auto w = weights(*model);
  const torch::Tensor p = w["user_embedding"], q = w["item_embedding"];
  const torch::Tensor hv = w["H_i.weight"].view({-1});
  auto score = [&](int64_t u, int64_t i) { return (hv * p[u] * q[i]).sum().item<double>(); };
  // RecBole's loop: every slot of the padded history, pad slots as positives of item 0.
  const layers::PaddedHistory hist = layers::padded_history(d.train);
  REQUIRE(hist.ids.size(1) > 1);
  const double c0 = 0.3;
  double expected = 0;
  for (int64_t u : users) {
    for (int64_t l = 0; l < hist.ids.size(1); ++l) {
      const double r = score(u, hist.ids[u][l].item<int64_t>());
      expected += (1 - c0) * r * r - 2 * r;
    }
    for (int64_t i = 0; i < d.n_items; ++i) expected += c0 * score(u, i) * score(u, i);
  }
  expected += 0.01 * (p.norm() + q.norm()).item<double>();
  torch::Tensor loss = model->calculate_loss(b);
  CHECK(loss.item<double>() == Approx(expected).epsilon(1e-5));
  // Masked (pad_slots_as_positives false): the pad slots' terms are gone.
  double pad_terms = 0;
  for (int64_t u : users) {
    const double r = score(u, 0);
    pad_terms += static_cast<double>(hist.ids.size(1) - hist.lengths[u].item<int64_t>()) *
                 ((1 - c0) * r * r - 2 * r);
  }
  ModelHarness hm(model_config("ENMF", {{"embedding_size", "4"},
                                        {"negative_weight", "0.3"},
                                        {"reg_weight", "0.01"},
                                        {"pad_slots_as_positives", "false"}}),
                  d);
  h.device.seed(5);
  auto masked = hm.create();
  masked->eval();
  CHECK(masked->calculate_loss(rows_batch(hm, users)).item<double>() ==
        Approx(expected - pad_terms).epsilon(1e-5));

  // Lookups send no gradient into the pad rows: with c0 = 0 and no regulariser, q_0 and p_0 get
  // none although the pad slots use q_0; h does.
  ModelHarness h0(model_config("ENMF", {{"embedding_size", "4"}, {"negative_weight", "0"}}), d);
  auto m0 = h0.create();
  m0->eval();
  m0->calculate_loss(rows_batch(h0, users)).backward();
  for (const auto& param : m0->named_parameters()) {
    const torch::Tensor g = param.value().grad().to(torch::kCPU);
    if (param.key() == "H_i.weight") CHECK(g.abs().sum().item<double>() > 0);
    if (param.key() == "item_embedding" || param.key() == "user_embedding") {
      CHECK(g[0].abs().sum().item<double>() == 0);
      CHECK(g.abs().sum().item<double>() > 0);
    }
  }
  // Scores: h · (p_u ⊙ q_i), and the factors the evaluator may fuse give the same.
  const torch::Tensor s = model->full_sort_predict(b).to(torch::kCPU).to(torch::kFloat64);
  CHECK(s[1][3].item<double>() == Approx(score(2, 3)).epsilon(1e-5));
  torch::Tensor fu, fi;
  REQUIRE(recbole::testing::as<recbole::models::FactorScores>(*model).score_factors(&fu, &fi));
  CHECK(torch::allclose(torch::matmul(fu.index_select(0, b.users), fi.t()).to(torch::kCPU),
                        s.to(torch::kFloat32), 1e-5, 1e-6));
}

TEST_CASE("MacridVAE: concept-weighted encodings and cosine logits equal the formula by hand",
          "[models][autoencoder][macridvae]") {
  TinyData d;
  ModelHarness h(model_config("MacridVAE", {{"embedding_size", "4"},
                                            {"kfac", "3"},
                                            {"encoder_hidden_size", "[6]"},
                                            {"tau", "0.5"},
                                            {"anneal_cap", "0.8"},
                                            {"total_anneal_steps", "4"}}),
                 d);
  h.device.seed(6);
  auto model = std::dynamic_pointer_cast<recbole::models::MacridVAE>(h.create());
  REQUIRE(model != nullptr);
  model->eval();
  const recbole::data::Batch b = rows_batch(h, {0, 6, 21});
  auto w = weights(*model);
  auto unit = [](const torch::Tensor& t) { return t / t.norm(2, 1, true).clamp_min(1e-12); };
  const torch::Tensor items = unit(w["item_embedding"]);
  const torch::Tensor cates =
      torch::softmax(torch::matmul(items, unit(w["k_embedding"]).t()) / 0.5, 1);
  const torch::Tensor x = unit(b.history.to(torch::kCPU).to(torch::kFloat64));
  auto lin = [&](const torch::Tensor& v, const std::string& name) {
    return torch::matmul(v, w[name + ".weight"].t()) + w[name + ".bias"];
  };
  torch::Tensor probs = torch::zeros({3, d.n_items}, torch::kFloat64);
  double kl = 0;
  for (int64_t k = 0; k < 3; ++k) {
    const torch::Tensor ck = cates.select(1, k).unsqueeze(0);
    const torch::Tensor hk = lin(torch::tanh(lin(x * ck, "encoder.linear0")), "encoder.linear1");
    const torch::Tensor lv = hk.slice(1, 4);
    kl += (-0.5 * (1 + lv - lv.exp()).sum(1)).mean().item<double>();
    probs += torch::exp(torch::matmul(unit(hk.slice(1, 0, 4)), items.t()) / 0.5) * ck;
  }
  const torch::Tensor expected = probs.log();
  const torch::Tensor logits = model->full_sort_predict(b).to(torch::kCPU).to(torch::kFloat64);
  CHECK(torch::allclose(logits, expected, 1e-4, 1e-5));
  const double nll = multinomial_nll_by_hand(expected, b.history);
  CHECK(model->calculate_loss(b).item<double>() == Approx(nll + 0.25 * kl).epsilon(1e-4));
  CHECK(model->calculate_loss(b).item<double>() == Approx(nll + 0.5 * kl).epsilon(1e-4));
  // Training samples the assignments (Gumbel-softmax) and the latent: scores change.
  model->train();
  CHECK_FALSE(torch::allclose(model->forward(b.history).logits.to(torch::kCPU).to(torch::kFloat64),
                              expected, 1e-4, 1e-5));
}

TEST_CASE("autoencoder keys out of bounds are ConfigErrors naming the model and the key",
          "[models][autoencoder][config]") {
  expect_bad_key("MultiVAE", "anneal_cap", "-0.1");
  expect_bad_key("MultiVAE", "dropout_prob", "1.0");
  expect_bad_key("MultiVAE", "total_anneal_steps", "-1");
  expect_bad_key("MultiDAE", "latent_dimension", "0");
  expect_bad_key("MultiDAE", "dropout_prob", "-0.5");
  expect_bad_key("RecVAE", "n_enc_epochs", "0");
  expect_bad_key("RecVAE", "mixture_weights", "[0.5, 0.5]");
  expect_bad_key("RecVAE", "gamma", "-1");
  expect_bad_key("CDAE", "corruption_ratio", "1");
  expect_bad_key("CDAE", "loss_type", "hinge");
  expect_bad_key("CDAE", "hid_activation", "gelu");
  expect_bad_key("ENMF", "negative_weight", "1.5");
  expect_bad_key("ENMF", "dropout_prob", "1");
  expect_bad_key("MacridVAE", "tau", "0");
  expect_bad_key("MacridVAE", "kfac", "0");
  expect_bad_key("MacridVAE", "reg_weights", "[0.1]");
  expect_bad_key("DiffRec", "noise_scale", "-0.1");
  expect_bad_key("DiffRec", "steps", "0");
  expect_bad_key("DiffRec", "mean_type", "v");
  expect_bad_key("DiffRec", "noise_schedule", "sigmoid");
  expect_bad_key("LDiffRec", "in_dims", "[]");
  expect_bad_key("LDiffRec", "ae_act_func", "gelu");
  expect_bad_key("LDiffRec", "anneal_steps", "-1");
}

// ---- DiffRec ----

TEST_CASE("diffusion schedules: the betas and the DDPM coefficients by hand",
          "[models][autoencoder][diffrec]") {
  using layers::diffusion_betas;
  // linear: numpy.linspace(scale·lo, scale·hi, steps).
  const auto linear = diffusion_betas("linear", 5, 0.001, 0.0005, 0.005);
  REQUIRE(linear.size() == 5);
  for (int t = 0; t < 5; ++t)
    CHECK(linear[t] == Approx(5e-7 + t * (5e-6 - 5e-7) / 4).epsilon(1e-12));
  // linear-var: the spacing is 1 − ᾱ_t.
  const auto var = diffusion_betas("linear-var", 3, 1.0, 0.1, 0.3);
  CHECK(var[0] == Approx(0.1));
  CHECK(var[1] == Approx(1 - 0.8 / 0.9));
  CHECK(var[2] == Approx(1 - 0.7 / 0.8));
  const auto binomial = diffusion_betas("binomial", 3, 0, 0, 0);
  const std::vector<double> binomial_expected{1.0 / 4, 1.0 / 3, 1.0 / 2};
  CHECK(binomial == binomial_expected);
  const auto cosine = diffusion_betas("cosine", 2, 0, 0, 0);
  auto abar = [](double s) { return std::pow(std::cos((s + 0.008) / 1.008 * M_PI / 2), 2); };
  CHECK(cosine[0] == Approx(1 - abar(0.5) / abar(0)));
  CHECK(cosine[1] == Approx(0.999));  // ᾱ(1) ≈ 0: capped

  const layers::DiffusionSchedule s({0.1, 0.2, 0.3});
  const double a0 = 0.9, a1 = 0.9 * 0.8, a2 = 0.9 * 0.8 * 0.7;
  CHECK(s.alphas_cumprod[2] == Approx(a2));
  CHECK(s.alphas_cumprod_prev[0] == 1.0);
  CHECK(s.alphas_cumprod_prev[2] == Approx(a1));
  CHECK(s.snr(1) == Approx(a1 / (1 - a1)));
  CHECK(s.posterior_variance[0] == 0.0);
  CHECK(s.posterior_variance[2] == Approx(0.3 * (1 - a1) / (1 - a2)));
  CHECK(s.posterior_log_variance_clipped[0] == Approx(std::log(0.2 * (1 - a0) / (1 - a1))));
  CHECK(s.posterior_mean_coef1[1] == Approx(0.2 * std::sqrt(a0) / (1 - a1)));
  CHECK(s.posterior_mean_coef2[1] == Approx((1 - a0) * std::sqrt(0.8) / (1 - a1)));
  CHECK(s.sqrt_recipm1_alphas_cumprod[2] == Approx(std::sqrt(1 / a2 - 1)));
}

namespace {

// DiffRec's denoiser written out from its weights (eval mode: no dropout): the sinusoidal
// embedding of t (cos then sin, 10000^(−k/half)), its Linear, [x, emb] through Linear → tanh →
// Linear.
torch::Tensor diffrec_denoise_by_hand(const recbole::models::Model& m, const torch::Tensor& x,
                                      const std::vector<int64_t>& t, int64_t width) {
  auto w = weights(m);
  const int64_t half = width / 2;
  torch::Tensor emb = torch::zeros({static_cast<int64_t>(t.size()), width}, torch::kFloat64);
  for (size_t r = 0; r < t.size(); ++r)
    for (int64_t k = 0; k < half; ++k) {
      const double a = static_cast<double>(t[r]) * std::exp(-std::log(10000.0) * k / half);
      emb[r][k] = std::cos(a);
      emb[r][half + k] = std::sin(a);
    }
  auto lin = [&](const torch::Tensor& v, const std::string& name) {
    return torch::matmul(v, w[name + ".weight"].t()) + w[name + ".bias"];
  };
  const torch::Tensor h =
      torch::cat({x.to(torch::kCPU).to(torch::kFloat64), lin(emb, "time_layer")}, 1);
  return lin(torch::tanh(lin(h, "mlp.linear0")), "mlp.linear1");
}

}  // namespace

TEST_CASE("DiffRec: denoiser, loss and reverse chain against the formulas",
          "[models][autoencoder][diffrec]") {
  TinyData d;
  const std::vector<int64_t> users{0, 1, 2, 20, 39};
  for (const char* mean_type : {"x0", "eps"}) {
    DYNAMIC_SECTION("mean_type " << mean_type) {
      // A schedule noisy enough to matter: β = 0.1 · linspace(0.1, 0.5) (β_0 = 1e−5, fixed).
      ModelHarness h(cpu_model_config("DiffRec", {{"dims_dnn", "[6]"},
                                                  {"embedding_size", "4"},
                                                  {"noise_scale", "0.1"},
                                                  {"noise_min", "0.1"},
                                                  {"noise_max", "0.5"},
                                                  {"steps", "3"},
                                                  {"mean_type", mean_type}}),
                     d);
      h.device.seed(3);
      auto model = std::dynamic_pointer_cast<recbole::models::DiffRec>(h.create());
      REQUIRE(model != nullptr);
      model->eval();  // no dropout, so the loss can be recomputed
      const recbole::data::Batch b = rows_batch(h, users);
      const torch::Tensor x0 = b.history.to(torch::kFloat64);

      const std::vector<int64_t> ts{0, 1, 2, 2, 1};
      const torch::Tensor t = torch::tensor(ts, torch::kInt64);
      CHECK(torch::allclose(model->denoise(b.history, t).to(torch::kFloat64),
                            diffrec_denoise_by_hand(*model, b.history, ts, 4), 1e-5, 1e-6));

      const std::vector<double> betas{1e-5, 0.03, 0.05};
      double abar[3], prev[3];
      for (int k = 0; k < 3; ++k) {
        prev[k] = k == 0 ? 1.0 : abar[k - 1];
        abar[k] = prev[k] * (1 - betas[k]);
      }
      auto snr = [&](int k) { return abar[k] / (1 - abar[k]); };
      const bool x0_mode = std::string(mean_type) == "x0";
      for (int k = 1; k < 3; ++k) {
        const double expected = x0_mode
                                    ? snr(k - 1) - snr(k)
                                    : (1 - abar[k]) / (std::pow(1 - prev[k], 2) * (1 - betas[k]));
        CHECK(model->step_weights()[k] == Approx(expected).epsilon(1e-9));
      }
      CHECK(model->step_weights()[0] == 1.0);

      // The loss: the first draws are the uniform timesteps, then the noise.
      h.device.seed(11);
      const double loss = model->calculate_loss(b).item<double>();
      h.device.seed(11);
      const torch::Tensor drawn = torch::randint(0, 3, {5}, torch::kInt64);
      const torch::Tensor eps = torch::randn({5, d.n_items}).to(torch::kFloat64);
      double expected = 0;
      for (int64_t r = 0; r < 5; ++r) {
        const int64_t k = drawn[r].item<int64_t>();
        const torch::Tensor xt = std::sqrt(abar[k]) * x0[r] + std::sqrt(1 - abar[k]) * eps[r];
        const torch::Tensor out =
            diffrec_denoise_by_hand(*model, xt.unsqueeze(0).to(torch::kFloat32), {k}, 4)[0];
        double row = ((out - (x0_mode ? x0[r] : eps[r])).pow(2)).mean().item<double>();
        if (!x0_mode && k == 0) {
          const torch::Tensor x0_hat =
              std::sqrt(1 / abar[0]) * xt - std::sqrt(1 / abar[0] - 1) * out;
          row = (x0[r] - x0_hat).pow(2).mean().item<double>() / 2;
        }
        expected += model->step_weights()[k] * row / 5;
      }
      CHECK(loss == Approx(expected).epsilon(1e-4));

      // Scores: the posterior mean of the denoiser's x₀ from t = 2 down to 0, from the rows.
      torch::Tensor x = x0;
      for (int64_t k = 2; k >= 0; --k) {
        const torch::Tensor out =
            diffrec_denoise_by_hand(*model, x.to(torch::kFloat32), std::vector<int64_t>(5, k), 4);
        const torch::Tensor x0_hat =
            x0_mode ? out : std::sqrt(1 / abar[k]) * x - std::sqrt(1 / abar[k] - 1) * out;
        x = betas[k] * std::sqrt(prev[k]) / (1 - abar[k]) * x0_hat +
            (1 - prev[k]) * std::sqrt(1 - betas[k]) / (1 - abar[k]) * x;
      }
      torch::NoGradGuard no_grad;
      CHECK(torch::allclose(model->full_sort_predict(b).to(torch::kFloat64), x, 1e-4, 1e-5));
    }
  }
}

TEST_CASE("DiffRec: timesteps are importance-sampled once every step has its loss history",
          "[models][autoencoder][diffrec]") {
  TinyData d;
  ModelHarness h(cpu_model_config("DiffRec", {{"steps", "2"}, {"history_num_per_term", "2"}}), d);
  auto model = std::dynamic_pointer_cast<recbole::models::DiffRec>(h.create());
  REQUIRE(model != nullptr);
  auto record = [&](std::vector<int64_t> t, std::vector<double> l) {
    model->record_losses(torch::tensor(t, torch::kInt64), torch::tensor(l, torch::kFloat64));
  };
  record({0, 1, 1}, {1.0, 3.0, 3.0});
  // Step 0 has one loss recorded: still uniform, probabilities 1.
  auto [t0, p0] = model->sample_timesteps(50);
  CHECK(torch::all(p0 == 1).item<bool>());
  // Step 0 fills to [1, 1]; each later loss pushes the oldest out: [1, 7], then [7, 5] (rms
  // √37); step 1 holds [3, 3] (rms 3).
  record({0, 0, 0}, {1.0, 7.0, 5.0});
  const double rms0 = std::sqrt(37.0);
  const double p_step0 = rms0 / (rms0 + 3) * 0.999 + 0.0005,
               p_step1 = 3 / (rms0 + 3) * 0.999 + 0.0005;
  auto [t, pt] = model->sample_timesteps(4000);
  int64_t zeros = 0, wrong_p = 0;
  for (int64_t r = 0; r < t.size(0); ++r) {
    const bool first = t[r].item<int64_t>() == 0;
    zeros += first;
    wrong_p += std::abs(pt[r].item<double>() - 2 * (first ? p_step0 : p_step1)) > 1e-6;
  }
  CHECK(wrong_p == 0);
  CHECK(static_cast<double>(zeros) / 4000 == Approx(p_step0).margin(0.03));
}

TEST_CASE("DiffRec: settings RecBole would crash on are ConfigErrors naming the keys",
          "[models][autoencoder][diffrec][config]") {
  TinyData d;
  auto build_error = [&](std::vector<std::pair<std::string, std::string>> overrides) {
    ModelHarness h(cpu_model_config("DiffRec", std::move(overrides)), d);
    try {
      h.create();
    } catch (const recbole::ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK_THAT(build_error({{"sampling_steps", "6"}}),
             Catch::Contains("sampling_steps: expected at most steps (5)"));
  CHECK_THAT(build_error({{"noise_scale", "0"}, {"sampling_steps", "2"}}),
             Catch::Contains("sampling_steps: expected 0 when noise_scale is 0"));
  CHECK_THAT(build_error({{"noise_scale", "1000"}, {"noise_max", "1"}}),
             Catch::Contains(
                 "noise_scale, noise_min, noise_max: the linear schedule gives beta_1 = 250.375"));
  CHECK_THAT(build_error({{"beta_fixed", "false"}, {"noise_min", "0"}}),
             Catch::Contains("beta_0 = 0"));
  // noise_scale 0 is a plain denoiser applied `steps` times (RecBole's #1915).
  CHECK(build_error({{"noise_scale", "0"}}) == "no error");
}

TEST_CASE("DiffRec time-aware: a user's interactions weigh w_min … w_max in time order",
          "[models][autoencoder][diffrec]") {
  TinyData d;
  // Training rows in split order: (user, item, time). User 1 in time order: item 1 (t 2),
  // item 3 and item 2 (both t 5: split order kept), item 1 again (t 9, its later weight kept);
  // user 2 has one interaction (w_min).
  recbole::data::Split train;
  const std::vector<double> times{5, 2, 1, 5, 9, 0};
  const std::vector<std::array<int32_t, 2>> pairs{{1, 3}, {1, 1}, {2, 2}, {1, 2}, {1, 1}};
  for (size_t k = 0; k < pairs.size(); ++k) {
    train.rows.push_back(static_cast<int64_t>(k));
    train.users.push_back(pairs[k][0]);
    train.items.push_back(pairs[k][1]);
  }
  ModelHarness h(cpu_model_config("DiffRec", {{"time-aware", "true"}, {"w_min", "0.1"}}), d);
  const recbole::data::TrainInteractions with_times{train, &times};
  h.ctx.parts.provide(with_times);
  auto model = std::dynamic_pointer_cast<recbole::models::DiffRec>(h.create());
  REQUIRE(model != nullptr);
  recbole::data::Batch b = user_batch(h.device, {1, 2, 3, 0});
  b.history = torch::zeros({4, d.n_items});
  b.history[3][7] = 1;  // a history given for the padding user is taken as given
  torch::Tensor expected = torch::zeros({4, d.n_items});
  expected[0][1] = 1.0, expected[0][3] = 0.4, expected[0][2] = 0.7;
  expected[1][2] = 0.1;
  expected[3][7] = 1;
  CHECK(torch::allclose(model->rows(b), expected, 1e-6, 1e-7));
  // The weights travel in the checkpoint: a model rebuilt without times scores the same.
  ModelHarness bare(cpu_model_config("DiffRec", {{"time-aware", "true"}, {"w_min", "0.1"}}), d);
  auto loaded = bare.create();
  recbole::testing::save_and_load(*model, *loaded, bare.device.device());
  model->eval();
  torch::NoGradGuard no_grad;
  CHECK(torch::equal(loaded->full_sort_predict(b), model->full_sort_predict(b)));
  // A run whose dataset has no time field is refused, naming the key.
  ModelHarness no_times(cpu_model_config("DiffRec", {{"time-aware", "true"}}), d);
  const recbole::data::TrainInteractions without_times{train, nullptr};
  no_times.ctx.parts.provide(without_times);
  CHECK_THROWS_WITH(no_times.create(), Catch::Contains("time-aware: true needs the training "
                                                       "interactions' times"));
}

TEST_CASE("LDiffRec: the diffusion runs on the VAE code, loss and scores against the formulas",
          "[models][autoencoder][diffrec]") {
  TinyData d;
  ModelHarness h(cpu_model_config("LDiffRec", {{"in_dims", "[4]"},
                                               {"dims_dnn", "[6]"},
                                               {"embedding_size", "4"},
                                               {"noise_min", "0.1"},
                                               {"noise_max", "0.5"},
                                               {"steps", "3"},
                                               {"lamda", "0.5"},
                                               {"anneal_cap", "0.1"},
                                               {"anneal_steps", "10"},
                                               {"vae_anneal_steps", "4"}}),
                 d);
  h.device.seed(5);
  auto model = std::dynamic_pointer_cast<recbole::models::LDiffRec>(h.create());
  REQUIRE(model != nullptr);
  model->eval();  // no dropout, the code is μ
  const recbole::data::Batch b = rows_batch(h, {0, 1, 2, 20, 39});
  CHECK(model->diffusion_weight() == Approx(0.5));
  CHECK(model->kl_weight() == 0.0);
  model->calculate_loss(b);                          // the first batch: the weights move
  CHECK(model->diffusion_weight() == Approx(0.45));  // max((1 − 1/10)·0.5, 0.1)
  CHECK(model->kl_weight() == Approx(0.25));         // min(0.3, 1/4)

  // The encoder by hand: tanh(W x + b) = [μ | logvar], 4 + 4.
  auto w = weights(*model);
  const torch::Tensor x = b.history.to(torch::kFloat64);
  auto lin = [&](const torch::Tensor& v, const std::string& name) {
    return torch::matmul(v, w[name + ".weight"].t()) + w[name + ".bias"];
  };
  const torch::Tensor hidden = torch::tanh(lin(x, "encoder.linear0"));
  const torch::Tensor mu = hidden.narrow(1, 0, 4), logvar = hidden.narrow(1, 4, 4);
  const double kl = (-0.5 * (1 + logvar - mu * mu - logvar.exp()).sum(1)).mean().item<double>();
  const auto* s = model->schedule();
  REQUIRE(s != nullptr);

  h.device.seed(17);
  const double loss = model->calculate_loss(b).item<double>();
  h.device.seed(17);
  const torch::Tensor drawn = torch::randint(0, 3, {5}, torch::kInt64);
  const torch::Tensor eps = torch::randn({5, 4}).to(torch::kFloat64);
  torch::Tensor xt = torch::zeros({5, 4}, torch::kFloat64);
  for (int64_t r = 0; r < 5; ++r) {
    const int64_t k = drawn[r].item<int64_t>();
    xt[r] = s->sqrt_alphas_cumprod[k] * mu[r] + s->sqrt_one_minus_alphas_cumprod[k] * eps[r];
  }
  const torch::Tensor out = model->denoise(xt.to(torch::kFloat32), drawn).to(torch::kFloat64);
  double diffusion = 0;
  for (int64_t r = 0; r < 5; ++r)
    diffusion += model->step_weights()[drawn[r].item<int64_t>()] *
                 (out[r] - mu[r]).pow(2).mean().item<double>() / 5;
  const double nll = multinomial_nll_by_hand(lin(out, "decoder.linear0"), x);
  CHECK(loss == Approx(0.45 * diffusion + nll + 0.25 * kl).epsilon(1e-4));

  // Scores: the decoder of the reverse chain from μ.
  torch::Tensor z = mu;
  for (int64_t k = 2; k >= 0; --k) {
    const torch::Tensor o =
        model->denoise(z.to(torch::kFloat32), torch::full({5}, k, torch::kInt64))
            .to(torch::kFloat64);
    z = s->posterior_mean_coef1[k] * o + s->posterior_mean_coef2[k] * z;
  }
  torch::NoGradGuard no_grad;
  CHECK(torch::allclose(model->full_sort_predict(b).to(torch::kFloat64), lin(z, "decoder.linear0"),
                        1e-4, 1e-5));

  // Clustered items (n_cate > 1) need RecBole's item_emb.npy and k-means: not supported yet.
  ModelHarness clustered(cpu_model_config("LDiffRec", {{"n_cate", "2"}}), d);
  CHECK_THROWS_WITH(clustered.create(), Catch::Contains("LDiffRec: n_cate: expected 1"));
}
