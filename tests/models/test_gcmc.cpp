// GCMC's encoder, decoder and loss against the dense formula; full sort (cached factors) returns
// exactly what predict returns and equals the class-1 logit of the decoder; node dropout only
// while training.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include <torch/torch.h>

#include "models/general/gcmc.h"
#include "tests/models/model_fixture.h"

using recbole::testing::cpu_model_config;
using recbole::testing::dense_adjacency;
using recbole::testing::ModelHarness;
using recbole::testing::param;
using recbole::testing::TinyData;

namespace {

// The encoder without dropout: [N, d] float64.
torch::Tensor dense_encoder(const recbole::models::Model& m, const TinyData& d) {
  return torch::relu(dense_adjacency(d).matmul(param(m, "encoder_weight")))
      .matmul(param(m, "dense_weight").t());
}

// Class logits of (user, item) pairs from the dense encoder: [B, class_num] float64.
torch::Tensor dense_logits(const recbole::models::Model& m, const TinyData& d,
                           const std::vector<int64_t>& users, const std::vector<int64_t>& items) {
  const torch::Tensor z = dense_encoder(m, d);
  const torch::Tensor q = param(m, "decoder_basis");
  const torch::Tensor c = param(m, "decoder_weight");
  torch::Tensor out =
      torch::zeros({static_cast<int64_t>(users.size()), c.size(0)}, torch::kFloat64);
  for (size_t b = 0; b < users.size(); ++b) {
    const torch::Tensor u = z[users[b]];
    const torch::Tensor v = z[d.n_users + items[b]];
    std::vector<torch::Tensor> t;
    for (int64_t s = 0; s < q.size(0); ++s) t.push_back(u.matmul(q[s]).dot(v));
    out[static_cast<int64_t>(b)] = c.matmul(torch::stack(t));
  }
  return out;
}

}  // namespace

TEST_CASE("GCMC's loss is the 2-class cross-entropy of the dense encoder and decoder",
          "[models][gcmc]") {
  TinyData d;
  // Dropout off so that the training forward is deterministic; 3 bases, 3 classes.
  ModelHarness h(cpu_model_config("GCMC", {{"dropout_prob", "0"},
                                           {"gcn_output_dim", "12"},
                                           {"embedding_size", "6"},
                                           {"num_basis_functions", "3"},
                                           {"class_num", "3"}}),
                 d);
  auto m = h.create();
  CHECK(param(*m, "encoder_weight").sizes() == torch::IntArrayRef({d.n_users + d.n_items, 12}));
  // Orthogonal bases with gain 1.1.
  const torch::Tensor q = param(*m, "decoder_basis");
  for (int64_t s = 0; s < 3; ++s)
    CHECK(
        torch::allclose(q[s].matmul(q[s].t()), 1.21 * torch::eye(6, torch::kFloat64), 1e-5, 1e-5));
  m->train();
  const std::vector<int64_t> users{1, 5, 5, 17, 39}, items{2, 8, 3, 20, 1}, negs{9, 4, 29, 4, 13};
  recbole::data::Batch batch;
  batch.users = torch::tensor(users, torch::kInt64);
  batch.items = torch::tensor(items, torch::kInt64);
  batch.neg_items = torch::tensor(negs, torch::kInt64);
  std::vector<int64_t> all_users = users, all_items = items;
  all_users.insert(all_users.end(), users.begin(), users.end());
  all_items.insert(all_items.end(), negs.begin(), negs.end());
  const torch::Tensor logits = dense_logits(*m, d, all_users, all_items);
  const torch::Tensor log_p = torch::log_softmax(logits, 1);
  double want = 0;
  for (int64_t b = 0; b < 10; ++b) want -= log_p[b][b < 5 ? 1 : 0].item<double>();
  want /= 10;
  CHECK(m->calculate_loss(h.device.place(batch)).item<double>() == Approx(want).epsilon(1e-5));
}

TEST_CASE("GCMC: full sort returns exactly predict's class-1 logit, dropout only in training",
          "[models][gcmc]") {
  TinyData d;
  ModelHarness h(cpu_model_config("GCMC", {{"gcn_output_dim", "16"}, {"embedding_size", "8"}}), d);
  auto m = h.create();
  auto* gcmc = dynamic_cast<recbole::models::GCMC*>(m.get());
  REQUIRE(gcmc != nullptr);
  torch::NoGradGuard no_grad;

  // Training: node dropout and dropout change the encoder's output from call to call.
  m->train();
  const auto [u1, i1] = gcmc->encode();
  const auto [u2, i2] = gcmc->encode();
  CHECK_FALSE(torch::equal(u1, u2));

  m->eval();
  const auto [ue, ie] = gcmc->encode();
  const auto [ue2, ie2] = gcmc->encode();
  CHECK(torch::equal(ue, ue2));
  CHECK(torch::equal(ie, ie2));
  const torch::Tensor z = dense_encoder(*m, d);
  CHECK(torch::allclose(torch::cat({ue, ie}).to(torch::kFloat64), z, 1e-5, 1e-6));

  const std::vector<int64_t> users{3, 1, 17, 39, 39, 8}, items{5, 0, 12, 29, 1, 7};
  const recbole::data::Batch pairs = recbole::testing::user_batch(h.device, users, items);
  const torch::Tensor predicted = m->predict(pairs).cpu();
  const torch::Tensor full = m->full_sort_predict(pairs).cpu();
  REQUIRE(full.sizes() == torch::IntArrayRef({6, d.n_items}));
  CHECK(torch::equal(predicted, full.gather(1, pairs.items.cpu().view({-1, 1})).view({-1})));
  // The cached bilinear form equals the decoder's class-1 logit of each pair.
  const torch::Tensor decoder =
      gcmc->logits(ue, ie, pairs.users, pairs.items).select(1, 1).cpu().to(torch::kFloat64);
  CHECK(torch::allclose(predicted.to(torch::kFloat64), decoder, 1e-5, 1e-6));
  CHECK(torch::allclose(predicted.to(torch::kFloat64),
                        dense_logits(*m, d, users, items).select(1, 1), 1e-4, 1e-5));
  // A training batch drops the cache: the next evaluation sees the new weights.
  torch::Tensor f, it;
  CHECK(recbole::testing::as<recbole::models::FactorScores>(*m).score_factors(&f, &it));
}
