// ConvNCF against its formula written out in float64 on tiny inputs (outer product, the
// convolutions as explicit sums, spatial sum, Linear; summed softplus loss and norms), the
// block-wise full sort against predict on every item, BPR tables loaded from a checkpoint, and
// bad keys as ConfigErrors.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cmath>
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
using recbole::testing::scramble;
using recbole::testing::TinyData;

namespace {

// out[c][y][x] = bias[c] + Σ_{k,a,b} W[c][k][a][b] · in[k][y·s + a][x·s + b], then ReLU.
torch::Tensor conv_relu(const torch::Tensor& in, const torch::Tensor& w, const torch::Tensor& bias,
                        int64_t stride) {
  const int64_t c_out = w.size(0), c_in = w.size(1), kern = w.size(2);
  const int64_t side = (in.size(1) - kern) / stride + 1;
  torch::Tensor out = torch::zeros({c_out, side, side}, torch::kFloat64);
  auto o = out.accessor<double, 3>();
  auto x = in.accessor<double, 3>();
  auto k = w.accessor<double, 4>();
  for (int64_t c = 0; c < c_out; ++c)
    for (int64_t y = 0; y < side; ++y)
      for (int64_t z = 0; z < side; ++z) {
        double s = bias[c].item<double>();
        for (int64_t ci = 0; ci < c_in; ++ci)
          for (int64_t a = 0; a < kern; ++a)
            for (int64_t b = 0; b < kern; ++b)
              s += k[c][ci][a][b] * x[ci][y * stride + a][z * stride + b];
        o[c][y][z] = std::max(s, 0.0);
      }
  return out;
}

// The score of (u, i) with the test's two layers (strides s0 and s1), dropout off.
double convncf_score(recbole::models::Model& m, int64_t u, int64_t i, int64_t s0 = 2,
                     int64_t s1 = 1) {
  const torch::Tensor eu = param(m, "user_embedding")[u];
  const torch::Tensor ei = param(m, "item_embedding")[i];
  torch::Tensor x = torch::outer(eu, ei).unsqueeze(0);  // [1, d, d], row = user dimension
  x = conv_relu(x, param(m, "conv0.weight"), param(m, "conv0.bias"), s0);
  x = conv_relu(x, param(m, "conv1.weight"), param(m, "conv1.bias"), s1);
  const torch::Tensor pooled = x.sum({1, 2});  // [c_last]
  return (torch::matmul(param(m, "predict_layers.linear0.weight"), pooled) +
          param(m, "predict_layers.linear0.bias"))
      .item<double>();
}

// predict of (3, 5) and (17, 12) equals the formula with strides s0 and s1.
void check_predict(recbole::models::Model& m, const ModelHarness& h, int64_t s0, int64_t s1) {
  torch::NoGradGuard no_grad;
  const torch::Tensor s = m.predict(recbole::testing::user_batch(h.device, {3, 17}, {5, 12}));
  CHECK(s[0].item<double>() == Approx(convncf_score(m, 3, 5, s0, s1)).epsilon(1e-5));
  CHECK(s[1].item<double>() == Approx(convncf_score(m, 17, 12, s0, s1)).epsilon(1e-5));
}

// Full sort of `users` equals predict on every item.
void check_full_sort(recbole::models::Model& m, const ModelHarness& h, const TinyData& d,
                     const std::vector<int64_t>& users) {
  torch::NoGradGuard no_grad;
  const torch::Tensor scores = m.full_sort_predict(recbole::testing::user_batch(h.device, users));
  REQUIRE(scores.sizes() == torch::IntArrayRef({static_cast<int64_t>(users.size()), d.n_items}));
  for (size_t r = 0; r < users.size(); ++r) {
    Batch pairs;
    pairs.users = torch::full({d.n_items}, users[r], torch::kInt64);
    pairs.items = torch::arange(d.n_items, torch::kInt64);
    CHECK(torch::allclose(scores[static_cast<int64_t>(r)].cpu(),
                          m.predict(h.device.place(pairs)).cpu(), 1e-5, 1e-5));
  }
}

}  // namespace

TEST_CASE("ConvNCF: loss = Σ softplus(s⁻ − s⁺) + norms of the CNN formula, full sort = predict",
          "[models][convncf]") {
  TinyData d;
  ModelHarness h(model_config("ConvNCF", {{"embedding_size", "8"},
                                          {"cnn_channels", "[1, 3, 2]"},
                                          {"cnn_kernels", "[2, 2]"},
                                          {"cnn_strides", "[2, 1]"},
                                          {"dropout_prob", "0"},
                                          {"reg_weights", "[0.01, 0.02]"}}),
                 d);
  auto m = h.create();
  scramble(*m, 0.6);
  m->train();
  const std::vector<int64_t> users{1, 5, 7, 5}, pos{2, 3, 9, 20}, neg{11, 4, 27, 1};
  double expected = 0;
  for (size_t k = 0; k < users.size(); ++k)
    expected += std::log1p(
        std::exp(convncf_score(*m, users[k], neg[k]) - convncf_score(*m, users[k], pos[k])));
  expected += 0.01 * (param(*m, "user_embedding").norm().item<double>() +
                      param(*m, "item_embedding").norm().item<double>());
  for (const char* w : {"conv0.weight", "conv1.weight", "predict_layers.linear0.weight"})
    expected += 0.02 * param(*m, w).norm().item<double>();
  Batch b = recbole::testing::user_batch(h.device, users, pos);
  b.neg_items = h.device.place(torch::tensor(neg, torch::kInt64));
  CHECK(m->calculate_loss(b).item<double>() == Approx(expected).epsilon(1e-5));

  m->eval();
  check_predict(*m, h, 2, 1);
  check_full_sort(*m, h, d, {1, 5, 7, 39});

  // Strides equal to the kernels: the layers run as patch GEMMs (layers::patch_conv2d).
  ModelHarness hp(model_config("ConvNCF", {{"embedding_size", "8"},
                                           {"cnn_channels", "[1, 3, 2]"},
                                           {"cnn_kernels", "[2, 2]"},
                                           {"cnn_strides", "[2, 2]"},
                                           {"dropout_prob", "0"}}),
                  d);
  auto mp = hp.create();
  scramble(*mp, 0.6);
  mp->eval();
  check_predict(*mp, hp, 2, 2);
  check_full_sort(*mp, hp, d, {1, 5, 7, 39});

  // In training mode the full sort draws dropout masks in a fixed order: a seed repeats.
  ModelHarness hd(model_config("ConvNCF", {{"embedding_size", "8"},
                                           {"cnn_channels", "[1, 3, 2]"},
                                           {"cnn_kernels", "[2, 2]"},
                                           {"cnn_strides", "[2, 1]"},
                                           {"dropout_prob", "0.5"}}),
                  d);
  auto md = hd.create();
  md->train();
  torch::NoGradGuard no_grad;
  torch::manual_seed(5);
  const torch::Tensor first = recbole::testing::all_scores(*md, hd.device, d.n_users);
  torch::manual_seed(5);
  CHECK(torch::equal(recbole::testing::all_scores(*md, hd.device, d.n_users), first));
}

TEST_CASE("ConvNCF: the default network, and items scored in several blocks, match predict",
          "[models][convncf]") {
  TinyData d;
  // On the CPU: cuDNN's convolutions round through TF32 by default (in RecBole too), so on a GPU
  // other batch shapes agree only to ~1e-3.
  {
    // RecBole's network, dropout 0.2 (off in evaluation).
    ModelHarness h(recbole::testing::cpu_model_config("ConvNCF"), d);
    auto m = h.create();
    m->eval();
    check_full_sort(*m, h, d, {2, 9, 39});
  }
  {
    // 512² floats per map: 16 items per block, two blocks over 30 items.
    ModelHarness h(recbole::testing::cpu_model_config("ConvNCF", {{"embedding_size", "512"},
                                                                  {"cnn_channels", "[1, 2]"},
                                                                  {"cnn_kernels", "[512]"},
                                                                  {"cnn_strides", "[1]"}}),
                   d);
    auto m = h.create();
    m->eval();
    check_full_sort(*m, h, d, {4, 11});
  }
}

TEST_CASE("ConvNCF: after_pretrain loads the tables of a BPR checkpoint", "[models][convncf]") {
  TinyData d;
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("convncf_pretrain_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "BPR.pth").string();
  ModelHarness bh(model_config("BPR", {{"embedding_size", "8"}}), d);
  auto bpr = bh.create();
  scramble(*bpr, 0.5);
  auto archive = std::make_shared<torch::serialize::OutputArchive>();
  recbole::trainer::snapshot_module(*bpr, *archive);
  recbole::write_file_atomically(path, recbole::trainer::checkpoint_bytes(archive));

  const std::vector<std::pair<std::string, std::string>> small{{"embedding_size", "8"},
                                                               {"cnn_channels", "[1, 2]"},
                                                               {"cnn_kernels", "[8]"},
                                                               {"cnn_strides", "[1]"},
                                                               {"train_method", "after_pretrain"}};
  auto with = [&](std::vector<std::pair<std::string, std::string>> extra) {
    auto o = small;
    o.insert(o.end(), extra.begin(), extra.end());
    return model_config("ConvNCF", o);
  };
  ModelHarness h(with({{"pre_model_path", path}}), d);
  auto m = h.create();
  CHECK(torch::equal(param(*m, "user_embedding"), param(*bpr, "user_embedding")));
  CHECK(torch::equal(param(*m, "item_embedding"), param(*bpr, "item_embedding")));

  ModelHarness empty(with({}), d);
  CHECK_THROWS_AS(empty.create(), recbole::ConfigError);
  CHECK_THROWS_WITH(empty.create(), Catch::Contains("pre_model_path"));
  // A checkpoint of another model: the missing table is named.
  ModelHarness fh(model_config("FISM", {{"embedding_size", "8"}}), d);
  auto fism = fh.create();
  const std::string fism_path = (dir / "FISM.pth").string();
  auto fa = std::make_shared<torch::serialize::OutputArchive>();
  recbole::trainer::snapshot_module(*fism, *fa);
  recbole::write_file_atomically(fism_path, recbole::trainer::checkpoint_bytes(fa));
  ModelHarness wrong(with({{"pre_model_path", fism_path}}), d);
  CHECK_THROWS_WITH(wrong.create(),
                    Catch::Contains("user_embedding") && Catch::Contains("BPR checkpoint"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("ConvNCF: bad keys are ConfigErrors naming the model and the key", "[models][convncf]") {
  check_bad_key("ConvNCF", {{"reg_weights", "[0.1]"}}, "reg_weights");
  check_bad_key("ConvNCF", {{"cnn_channels", "[1, 32, 32]"}}, "cnn_channels");
  check_bad_key("ConvNCF", {{"cnn_channels", "[2, 32, 32, 32, 32]"}}, "cnn_channels");
  check_bad_key("ConvNCF", {{"embedding_size", "16"}}, "cnn_kernels");
  check_bad_key("ConvNCF", {{"dropout_prob", "1.0"}}, "dropout_prob");
  check_bad_key("ConvNCF", {{"train_method", "pretrain"}}, "train_method");
}
