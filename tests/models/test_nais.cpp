// NAIS against its formula written out in float64 on tiny inputs: the loss (both attention
// inputs), the block-wise full sort against predict and the formula on every item, the
// stabilised exponentials where RecBole's overflow, FISM tables loaded from a checkpoint, and bad
// keys as ConfigErrors.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "models/model.h"
#include "recbole/runtime/checkpoint_file.h"
#include "recbole/utils/atomic_write.h"
#include "recbole/utils/error.h"
#include "tests/models/model_fixture.h"
#include "trainer/resume_checkpoint.h"

using recbole::data::Batch;
using recbole::testing::check_bad_key;
using recbole::testing::model_config;
using recbole::testing::ModelHarness;
using recbole::testing::param;
using recbole::testing::pointwise_batch;
using recbole::testing::scramble;
using recbole::testing::TinyData;

namespace {

// y of (u, i) by the formula, in float64: over j ∈ R_u, l_j = h·ReLU(W x_j + c) with x_j =
// p_j ⊙ q_i (prod) or [p_j ; q_i] (concat), a_j = exp(l_j) / (Σ exp l)^β,
// y = |R_u|^-α Σ a_j p_j·q_i + b_i.
double nais_y(recbole::models::Model& m, const TinyData& d, int64_t u, int64_t i, bool concat,
              double alpha, double beta) {
  std::vector<int64_t> hist(d.train.row_begin(static_cast<int32_t>(u)),
                            d.train.row_end(static_cast<int32_t>(u)));
  const torch::Tensor p = param(m, "item_src_embedding").index_select(0, torch::tensor(hist));
  const torch::Tensor q = param(m, "item_dst_embedding")[i].unsqueeze(0).expand_as(p);
  const torch::Tensor x = concat ? torch::cat({p, q}, 1) : p * q;
  const torch::Tensor hidden =
      torch::relu(torch::matmul(x, param(m, "mlp_layers.linear0.weight").t()) +
                  param(m, "mlp_layers.linear0.bias"));
  const torch::Tensor l = torch::matmul(hidden, param(m, "weight_layer")).squeeze(1);
  const torch::Tensor a = torch::exp(l) / torch::exp(l).sum().pow(beta);
  const double scale = std::pow(static_cast<double>(hist.size()), -alpha);
  return scale * (a * (p * q).sum(1)).sum().item<double>() + param(m, "bias")[i].item<double>();
}

double bce(double logit, double label) {
  const double p = 1.0 / (1.0 + std::exp(-logit));
  return -(label * std::log(p) + (1 - label) * std::log(1 - p));
}

// Full sort of `users` equals predict on every item, and σ(y) of the formula.
void check_full_sort(recbole::models::Model& m, const ModelHarness& h, const TinyData& d,
                     const std::vector<int64_t>& users, bool concat, double alpha, double beta) {
  torch::NoGradGuard no_grad;
  const torch::Tensor scores = m.full_sort_predict(recbole::testing::user_batch(h.device, users));
  REQUIRE(scores.sizes() == torch::IntArrayRef({static_cast<int64_t>(users.size()), d.n_items}));
  REQUIRE(torch::isfinite(scores).all().item<bool>());
  for (size_t r = 0; r < users.size(); ++r) {
    Batch pairs;
    pairs.users = torch::full({d.n_items}, users[r], torch::kInt64);
    pairs.items = torch::arange(d.n_items, torch::kInt64);
    const torch::Tensor row = scores[static_cast<int64_t>(r)].cpu();
    CHECK(torch::allclose(row, m.predict(h.device.place(pairs)).cpu(), 1e-5, 1e-6));
    for (int64_t i = 0; i < d.n_items; ++i) {
      const double y = nais_y(m, d, users[r], i, concat, alpha, beta);
      CHECK(row[i].item<double>() == Approx(1.0 / (1.0 + std::exp(-y))).epsilon(1e-5));
    }
  }
}

}  // namespace

TEST_CASE("NAIS: loss = BCE(y) + norms, full sort equals predict and the formula",
          "[models][nais]") {
  TinyData d;
  for (const char* algorithm : {"prod", "concat"}) {
    DYNAMIC_SECTION(algorithm) {
      const bool concat = std::string(algorithm) == "concat";
      ModelHarness h(model_config("NAIS", {{"algorithm", algorithm},
                                           {"embedding_size", "3"},
                                           {"weight_size", "4"},
                                           {"alpha", "0.3"},
                                           {"beta", "0.7"},
                                           {"reg_weights", "[0.01, 0.02, 0.03]"}}),
                     d);
      auto m = h.create();
      scramble(*m, 0.8);
      m->train();
      const std::vector<int64_t> users{1, 5, 7, 5}, items{2, 3, 9, 20};
      const std::vector<float> labels{1, 0, 1, 0};
      double expected = 0;
      for (size_t k = 0; k < users.size(); ++k)
        expected += bce(nais_y(*m, d, users[k], items[k], concat, 0.3, 0.7), labels[k]) / 4;
      expected += 0.01 * param(*m, "item_src_embedding").norm().item<double>() +
                  0.02 * param(*m, "item_dst_embedding").norm().item<double>() +
                  0.03 * param(*m, "mlp_layers.linear0.weight").norm().item<double>();
      const torch::Tensor loss = m->calculate_loss(pointwise_batch(h.device, users, items, labels));
      CHECK(loss.item<double>() == Approx(expected).epsilon(1e-5));
      loss.backward();
      CHECK(torch::isfinite(m->named_parameters()["weight_layer"].grad()).all().item<bool>());

      m->eval();
      check_full_sort(*m, h, d, {1, 5, 7, 39}, concat, 0.3, 0.7);
    }
  }
}

TEST_CASE("NAIS: a full sort in several blocks of items equals predict", "[models][nais]") {
  // 16384 floats per history item: blocks of 2^20 / (|R_u| · 16384) = 64 / |R_u| items.
  TinyData d;
  ModelHarness h(model_config("NAIS", {{"embedding_size", "16384"}, {"weight_size", "2"}}), d);
  auto m = h.create();
  m->eval();
  check_full_sort(*m, h, d, {3, 8}, false, 0.0, 0.5);
}

TEST_CASE("NAIS: attention logits past exp's float range stay finite and exact", "[models][nais]") {
  // Logits near 150: exp(l) overflows float32 (RecBole's unstabilised form gives inf/inf = NaN);
  // with β = 1 the attention is a softmax: the scores must still equal the float64 formula.
  TinyData d;
  ModelHarness h(
      model_config("NAIS", {{"embedding_size", "3"}, {"weight_size", "4"}, {"beta", "1.0"}}), d);
  auto m = h.create();
  scramble(*m, 1.0);
  {
    torch::NoGradGuard no_grad;
    auto params = m->named_parameters();
    params["mlp_layers.linear0.bias"].fill_(30.0);
    params["weight_layer"].fill_(1.25);  // l ≈ 4 · 30 · 1.25 = 150
    params["item_dst_embedding"].mul_(0.01);
  }
  m->eval();
  const std::vector<int64_t> users{1, 2};
  const Batch b = pointwise_batch(h.device, {1, 2}, {4, 6}, {1, 0});
  CHECK(std::isfinite(m->calculate_loss(b).item<double>()));
  check_full_sort(*m, h, d, users, false, 0.0, 1.0);
}

TEST_CASE("NAIS: pretrain_path loads p and q from a FISM checkpoint", "[models][nais]") {
  TinyData d;
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("nais_pretrain_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "FISM.pth").string();
  ModelHarness fh(model_config("FISM", {{"embedding_size", "3"}}), d);
  auto fism = fh.create();
  scramble(*fism, 0.5);
  auto archive = std::make_shared<torch::serialize::OutputArchive>();
  recbole::trainer::snapshot_module(*fism, *archive);
  recbole::write_file_atomically(path, recbole::trainer::checkpoint_bytes(archive));

  ModelHarness h(model_config("NAIS", {{"embedding_size", "3"}, {"pretrain_path", path}}), d);
  auto m = h.create();
  CHECK(torch::equal(param(*m, "item_src_embedding"), param(*fism, "item_src_embedding")));
  CHECK(torch::equal(param(*m, "item_dst_embedding"), param(*fism, "item_dst_embedding")));

  // Another embedding size: a ConfigError naming the key and the shapes.
  ModelHarness wrong(model_config("NAIS", {{"embedding_size", "4"}, {"pretrain_path", path}}), d);
  CHECK_THROWS_WITH(wrong.create(), Catch::Contains("pretrain_path") && Catch::Contains("[30, 3]"));
  // A missing file is an error naming it.
  const std::string missing = (dir / "none.pth").string();
  ModelHarness absent(model_config("NAIS", {{"pretrain_path", missing}}), d);
  CHECK_THROWS_WITH(absent.create(), Catch::Contains(missing));
  std::filesystem::remove_all(dir);
}

TEST_CASE("NAIS: bad keys are ConfigErrors naming the model and the key", "[models][nais]") {
  check_bad_key("NAIS", {{"reg_weights", "[1e-7, 1e-7]"}}, "reg_weights");
  check_bad_key("NAIS", {{"algorithm", "sum"}}, "algorithm");
  check_bad_key("NAIS", {{"beta", "-1"}}, "beta");
}
