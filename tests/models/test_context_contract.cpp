// The model contract of the context models, over every registered one: built from ml-100k's
// feature fields (the context preset), a few training batches give a finite loss; predict gives
// [B] float32 probabilities in [0, 1] on the device; a fixed seed repeats exactly; a save/load
// round trip gives identical scores; full_sort_predict's row of a user is predict over the
// rows (user, item) of every item. LR's, FM's, WideDeep's and DeepFM's
// closed-form step gives autograd's loss and gradients, and a step in parts the whole batch's.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <memory>
#include <optional>
#include <sstream>

#include <torch/torch.h>

#include "models/context/context_model.h"
#include "models/context/kd_dagfm.h"
#include "models/context/xdeepfm.h"
#include "models/layers/dropout.h"
#include "models/model.h"
#include "recbole/config/config.h"
#include "recbole/data/dataset.h"
#include "recbole/data/split.h"
#include "recbole/runtime/checkpoint_file.h"
#include "recbole/runtime/device_manager.h"
#include "recbole/runtime/dist.h"
#include "recbole/utils/atomic_write.h"
#include "recbole/utils/error.h"
#include "tasks/context/context_pipeline.h"
#include "tests/models/model_fixture.h"
#include "trainer/evaluator.h"
#include "trainer/resume_checkpoint.h"

using recbole::models::Model;

namespace {

struct ContextRun {
  recbole::config::Config config;
  recbole::data::Dataset dataset;
  recbole::data::SplitDataset split;
  recbole::tasks::ContextPipeline pipeline;
  recbole::DeviceManager device;

  static recbole::config::Config make_config(
      const std::string& model, const std::vector<std::pair<std::string, std::string>>& extra) {
    recbole::config::ConfigSources s;
    s.model = model;
    s.dataset = "ml-100k";
    s.api_overrides = {{"data_path", std::string(RECBOLE_SHARED_DIR) + "/datasets"},
                       {"train_batch_size", "512"},
                       {"eval_batch_size", "300"}};
    s.api_overrides.insert(s.api_overrides.end(), extra.begin(), extra.end());
    return recbole::config::Config::build(s);
  }
  explicit ContextRun(const std::string& model,
                      const std::vector<std::pair<std::string, std::string>>& extra = {})
      : config(make_config(model, extra)),
        dataset(recbole::data::Dataset::load(recbole::data::DatasetOptions::from_config(config))),
        split(recbole::data::split_dataset(dataset,
                                           recbole::data::DatasetOptions::from_config(config))),
        pipeline(config, dataset, split),
        device(recbole::DeviceManager::from_config(config)) {}

  // The model afresh from the base seed, as a ContextModel.
  std::shared_ptr<recbole::models::ContextModel> fresh() {
    device.seed(device.base_seed());
    auto m = std::dynamic_pointer_cast<recbole::models::ContextModel>(
        recbole::models::create_model(config.model(), pipeline.model_context(device)));
    REQUIRE(m);
    return m;
  }

  std::shared_ptr<Model> trained() {
    device.seed(device.base_seed());
    std::shared_ptr<Model> m =
        recbole::models::create_model(config.model(), pipeline.model_context(device));
    m->train();
    torch::optim::Adam opt(m->parameters(), torch::optim::AdamOptions(0.01));
    auto source = pipeline.training_source(m->input_type(), m->name(), 0, 1);
    source->start_epoch(0);
    recbole::data::Batch batch;
    for (int b = 0; b < 3 && source->next(batch); ++b) {
      opt.zero_grad();
      torch::Tensor loss = m->calculate_loss(device.place(batch));
      REQUIRE(loss.numel() == 1);
      REQUIRE(std::isfinite(loss.item<double>()));
      loss.backward();
      opt.step();
    }
    m->eval();
    return m;
  }

  torch::Tensor scores(Model& m) {
    torch::NoGradGuard no_grad;
    const auto& valid = static_cast<const recbole::tasks::LabeledSource&>(pipeline.valid());
    return m.predict(device.place(valid.batch(0)));
  }
};

// full_sort_predict over three users (eval_batch_size 300 < n_items: one user per predict call)
// equals predict over each user's rows (u, 0), ..., (u, n_items − 1) built from the pipeline's
// feature columns.
void check_ranks_every_item(ContextRun& run, Model& m) {
  torch::NoGradGuard no_grad;
  const recbole::tasks::ContextPipeline& p = run.pipeline;
  const std::string& uid = p.schema().uid_field;
  const std::string& iid = p.schema().iid_field;
  const int64_t n = p.n_items(), users = 3;
  recbole::data::Batch q;
  q.users = torch::arange(1, users + 1, torch::kInt64);
  q.features[uid] = q.users;
  p.user_features().gather(q.users, q.features);
  const torch::Tensor all =
      recbole::DeviceManager::to_host(m.full_sort_predict(run.device.place(q)));
  REQUIRE(all.sizes() == torch::IntArrayRef({users, n}));
  for (int64_t r = 0; r < users; ++r) {
    recbole::data::Batch row;
    row.users = torch::full({n}, r + 1, torch::kInt64);
    row.items = torch::arange(n, torch::kInt64);
    row.features[uid] = row.users;
    row.features[iid] = row.items;
    p.user_features().gather(row.users, row.features);
    p.item_features().gather(row.items, row.features);
    const torch::Tensor expected =
        recbole::DeviceManager::to_host(m.predict(run.device.place(row)));
    INFO("user " << r + 1);
    CHECK(torch::allclose(all[r], expected, 1e-5, 1e-6));
  }
}

}  // namespace

TEST_CASE("every context model satisfies the context model contract",
          "[models][contract][context]") {
  for (const auto& descriptor : recbole::models::registered_models()) {
    if (descriptor.task != "context") continue;
    const std::string& name = descriptor.name;
    DYNAMIC_SECTION(name) {
      CHECK(descriptor.input == recbole::models::InputType::kPointwise);
      ContextRun run(name);
      std::shared_ptr<Model> m = run.trained();
      torch::Tensor s = run.scores(*m);
      CHECK_NOTHROW(run.device.check(s, name, "predict scores"));
      REQUIRE(s.scalar_type() == torch::kFloat32);
      REQUIRE(s.sizes() == torch::IntArrayRef({300}));
      REQUIRE(torch::isfinite(s).all().item<bool>());
      CHECK(s.min().item<float>() >= 0.0f);
      CHECK(s.max().item<float>() <= 1.0f);
      CHECK(s.std().item<float>() > 0.0f);  // the features reach the score
      check_ranks_every_item(run, *m);

      // A fixed seed repeats exactly.
      std::shared_ptr<Model> again = run.trained();
      CHECK(torch::equal(run.scores(*again), s));

      // Save and load into a fresh model: identical scores.
      std::shared_ptr<Model> loaded =
          recbole::models::create_model(name, run.pipeline.model_context(run.device));
      recbole::testing::save_and_load(*m, *loaded, run.device.device());
      CHECK(torch::equal(run.scores(*loaded), s));
    }
  }
}

namespace {

// xDeepFM with its field embeddings reachable, for the CIN test below.
struct XDeepFMProbe : recbole::models::XDeepFM {
  using ContextModel::embed;
  using XDeepFM::XDeepFM;
};

}  // namespace

TEST_CASE("xDeepFM's CIN is RecBole's width-1 convolution over [B, H·F, d]", "[context][models]") {
  ContextRun run("xDeepFM");
  run.device.seed(run.device.base_seed());
  XDeepFMProbe m(run.pipeline.model_context(run.device));
  m.eval();
  torch::NoGradGuard no_grad;
  const auto& valid = static_cast<const recbole::tasks::LabeledSource&>(run.pipeline.valid());
  const recbole::data::Batch batch = run.device.place(valid.batch(0));
  auto params = m.named_parameters();

  // The CIN as RecBole writes it: per layer the [B, H·F, d] outer products, a Conv1d of width 1
  // (a [h, H·F] matrix applied to each row's d columns), ReLU, half kept unless direct.
  const torch::Tensor x0 = m.embed(batch);  // [B, F, d]
  const int64_t b = x0.size(0), d = x0.size(2);
  const std::vector<int64_t> sizes = run.config.get_int_list("cin_layer_size");
  REQUIRE_FALSE(run.config.get_bool("direct"));
  torch::Tensor x = x0;
  std::vector<torch::Tensor> parts;
  for (size_t k = 0; k < sizes.size(); ++k) {
    const torch::Tensor z = (x.unsqueeze(2) * x0.unsqueeze(1)).reshape({b, -1, d});
    const torch::Tensor w = params["conv_w" + std::to_string(k)];
    const torch::Tensor bias = params["conv_b" + std::to_string(k)];
    const torch::Tensor o = torch::relu(w.matmul(z) + bias.view({1, -1, 1}));  // [B, h, d]
    if (k + 1 == sizes.size()) {
      parts.push_back(o);
    } else {
      auto halves = o.split(sizes[k] / 2, 1);
      x = halves[0];
      parts.push_back(halves[1]);
    }
  }
  torch::Tensor cin_weight = params["cin_linear.weight"];
  const torch::Tensor expected = torch::cat(parts, 1).sum(2).matmul(cin_weight.t()).squeeze(1);

  // The model's CIN term: its logits less its logits with the CIN's output weights zeroed.
  const torch::Tensor full = m.logits(batch);
  const torch::Tensor saved = cin_weight.clone();
  cin_weight.zero_();
  const torch::Tensor without_cin = m.logits(batch);
  cin_weight.copy_(saved);
  REQUIRE(expected.abs().max().item<double>() > 1e-3);  // the CIN term is not vanishingly small
  CHECK(torch::allclose(full - without_cin, expected, 1e-4, 1e-5));
}

namespace {

// The closed-form step of `m` on `batch` against autograd's: the loss and every parameter's
// gradient. With a dropout key, the model trains and both draw their masks from it (the closed
// form draws its part's key from libtorch's generator, which is seeded to give that key).
void check_closed_form(recbole::models::ContextModel& m, const recbole::data::Batch& batch,
                       std::optional<uint64_t> key, double rtol, double atol) {
  using recbole::models::layers::DropoutKeyScope;
  torch::Tensor loss;
  {
    std::optional<DropoutKeyScope> scope;
    if (key) scope.emplace(*key);
    loss = m.calculate_loss(batch);
  }
  loss.backward();
  std::vector<torch::Tensor> expected;
  for (const torch::Tensor& p : m.parameters())
    expected.push_back(p.grad().defined() ? p.grad().clone() : torch::Tensor());
  for (torch::Tensor p : m.parameters()) p.mutable_grad() = torch::Tensor();
  if (key) torch::manual_seed(1234);  // the seed whose first key the test drew
  const torch::Tensor direct = m.closed_form_backward(batch);
  CHECK(direct.item<float>() == Approx(loss.item<float>()).epsilon(1e-6));
  const std::vector<torch::Tensor> params = m.parameters();
  for (size_t k = 0; k < params.size(); ++k) {
    INFO("parameter " << k);
    REQUIRE(params[k].grad().defined() == expected[k].defined());
    if (expected[k].defined()) CHECK(torch::allclose(params[k].grad(), expected[k], rtol, atol));
  }
}

}  // namespace

TEST_CASE(
    "The closed-form step of LR and FM and WideDeep and DeepFM equals autograd's loss and "
    "gradients",
    "[context][models]") {
  for (const std::string name : {"LR", "FM", "WideDeep", "DeepFM"}) {
    DYNAMIC_SECTION(name) {
      ContextRun run(name);
      auto m = run.fresh();
      REQUIRE(m->closed_form_applies() == run.device.device().is_cpu());
      if (!m->closed_form_applies()) return;
      auto source = run.pipeline.training_source(m->input_type(), name, 0, 1);
      source->start_epoch(0);
      recbole::data::Batch batch;
      REQUIRE(source->next(batch));
      REQUIRE(batch.size() == 512);
      // A deep part: products on other kernels than libtorch's, so rounding differs more.
      const bool deep = name == "WideDeep" || name == "DeepFM";
      const double rtol = deep ? 1e-4 : 1e-5, atol = deep ? 1e-6 : 1e-7;
      if (deep) {
        recbole::testing::scramble(*m, 0.3);  // no ReLU dead at init; every term matters
        SECTION("training: dropout masks from the part's key, as autograd's layers::dropout") {
          m->train();
          torch::manual_seed(1234);
          const uint64_t key = recbole::models::layers::draw_dropout_key();
          check_closed_form(*m, batch, key, rtol, atol);
        }
        SECTION("in two parts on the pool (evaluation mode: no dropout)") {
          m->eval();
          const recbole::data::Batch three = recbole::testing::three_shuffled_copies(batch);
          REQUIRE(three.size() > recbole::models::ContextModel::kPartRows);
          check_closed_form(*m, three, std::nullopt, rtol, atol);
        }
      } else {
        check_closed_form(*m, batch, std::nullopt, rtol, atol);
      }
      // Evaluation (gradients off) takes the closed form too: the autograd path's scores.
      m->eval();
      const torch::Tensor autograd_scores = torch::sigmoid(m->logits(batch)).detach();
      torch::NoGradGuard no_grad;
      CHECK(torch::allclose(m->predict(batch), autograd_scores, rtol, atol));
    }
  }
  CHECK_FALSE(ContextRun("FNN").fresh()->closed_form_applies());
}

TEST_CASE("context models train a batch in parts to the whole batch's loss and gradient",
          "[context][models]") {
  // train_step cuts a batch into parts of kPartRows rows, each a forward and backward pass on
  // the pool, the regulariser with the first: the same loss and gradient as the batch in one
  // piece. Dropout off (eval mode), so that the parts' dropout keys do not enter. Models with
  // BatchNorm (the whole batch's statistics) step whole.
  using recbole::models::ContextModel;
  for (const auto& descriptor : recbole::models::registered_models()) {
    if (descriptor.task != "context") continue;
    const std::string& name = descriptor.name;
    DYNAMIC_SECTION(name) {
      ContextRun run(name);
      auto m = run.fresh();
      const bool whole_batch = name == "DCN" || name == "DCNV2" || name == "NFM" || name == "DSSM";
      CHECK(m->trains_in_parts() == (!whole_batch && run.device.device().is_cpu()));
      if (m->closed_form_applies() || !m->trains_in_parts()) continue;
      recbole::testing::scramble(*m, 0.3);
      m->eval();
      auto source = run.pipeline.training_source(m->input_type(), name, 0, 1);
      source->start_epoch(0);
      recbole::data::Batch b;
      REQUIRE(source->next(b));
      // Three copies of the batch in a random order: two parts, the second shorter.
      b = recbole::testing::three_shuffled_copies(b);
      REQUIRE(b.size() > ContextModel::kPartRows);
      recbole::testing::check_step_equals_whole_batch(*m, run.device.place(b));
    }
  }
}

namespace {

// A copy of `model`'s submodule `prefix` (its parameters and buffers) in a fresh `into`.
template <class Module>
Module copy_of(const Model& model, const std::string& prefix, Module into) {
  torch::NoGradGuard no_grad;
  const auto from = model.named_parameters();
  for (auto& p : into->named_parameters()) p.value().copy_(from[prefix + p.key()]);
  return into;
}

// Two fields for ml-100k's seven features: the user's side and the item's.
const char* const kTwoFields =
    "{0: [user_id, age, gender, occupation], 1: [item_id, release_year, class, not_loaded]}";

int64_t side_field(const std::string& name) {
  return name == "user_id" || name == "age" || name == "gender" || name == "occupation" ? 0 : 1;
}

}  // namespace

TEST_CASE("FFM and FwFM read their fields map by feature name", "[context][models]") {
  SECTION("FFM: pair (a, b) is ⟨V_field(b)[a], V_field(a)[b]⟩, sequences in view 0") {
    ContextRun run("FFM", {{"fields", kTwoFields}});
    std::shared_ptr<Model> m = run.trained();
    const recbole::models::layers::ContextFields fields(run.pipeline.schema());
    const std::vector<std::string> names = fields.names();  // E order
    REQUIRE(names.size() == 7);
    const recbole::data::Batch batch =
        static_cast<const recbole::tasks::LabeledSource&>(run.pipeline.valid()).batch(0);
    std::vector<torch::Tensor> view;
    for (const char* v : {"view0.", "view1."})
      view.push_back(
          copy_of(*m, v, recbole::models::layers::ContextEmbedding(fields, 10))->forward(batch));
    CHECK_FALSE(m->named_parameters().contains("view2.token_table.weight"));  // two views
    torch::Tensor want =
        copy_of(*m, "first_order.", recbole::models::layers::FirstOrderLinear(fields))
            ->forward(batch)
            .squeeze(1);
    auto seen_by = [&](size_t a, size_t by) {  // feature a in the view of by's field
      const int64_t v = names[a] == "class" ? 0 : side_field(names[by]);
      return view[static_cast<size_t>(v)].select(1, static_cast<int64_t>(a));
    };
    for (size_t a = 0; a < names.size(); ++a)
      for (size_t b = a + 1; b < names.size(); ++b)
        want = want + (seen_by(a, b) * seen_by(b, a)).sum(1);
    torch::NoGradGuard no_grad;
    CHECK(torch::allclose(m->predict(batch), torch::sigmoid(want), 1e-5, 1e-6));
  }
  SECTION("FwFM: pair i < j of E is weighted r[field(i)][field(j)]") {
    ContextRun run("FwFM", {{"fields", kTwoFields}});
    std::shared_ptr<Model> m = run.trained();
    const recbole::models::layers::ContextFields fields(run.pipeline.schema());
    const std::vector<std::string> names = fields.names();
    const recbole::data::Batch batch =
        static_cast<const recbole::tasks::LabeledSource&>(run.pipeline.valid()).batch(0);
    const torch::Tensor r = m->named_buffers()["pair_weights"];
    REQUIRE(r.sizes() == torch::IntArrayRef({2, 2}));
    const torch::Tensor e =
        copy_of(*m, "embedding.", recbole::models::layers::ContextEmbedding(fields, 10))
            ->forward(batch);
    torch::Tensor want =
        copy_of(*m, "first_order.", recbole::models::layers::FirstOrderLinear(fields))
            ->forward(batch)
            .squeeze(1);
    for (size_t i = 0; i < names.size(); ++i)
      for (size_t j = i + 1; j < names.size(); ++j)
        want =
            want + r[side_field(names[i])][side_field(names[j])] *
                       (e.select(1, static_cast<int64_t>(i)) * e.select(1, static_cast<int64_t>(j)))
                           .sum(1);
    torch::NoGradGuard no_grad;
    CHECK(torch::allclose(m->predict(batch), torch::sigmoid(want), 1e-5, 1e-6));
  }
  SECTION("maps that cannot be read are refused by key") {
    for (const auto& [value, expect] : std::vector<std::pair<std::string, std::string>>{
             {"{0: [user_id, age, gender, occupation], 1: [item_id, release_year]}",
              "the feature class is in no field"},
             {"{0: [user_id, age, gender, occupation, class], 1: [item_id, release_year, class]}",
              "class is in field 0 and in field 1"},
             {"{0: [user_id, age, gender, occupation], 2: [item_id, release_year, class]}",
              "the field ids that hold features are 0, 2; expected 0..1"},
             {"{user: [user_id, age, gender, occupation], 1: [item_id, release_year, class]}",
              "key user"}}) {
      INFO(value);
      for (const char* model : {"FFM", "FwFM"}) {
        ContextRun run(model, {{"fields", value}});
        try {
          recbole::models::create_model(model, run.pipeline.model_context(run.device));
          FAIL("accepted");
        } catch (const recbole::ConfigError& e) {
          CHECK(std::string(e.what()).find(std::string(model) + ": fields") != std::string::npos);
          CHECK(std::string(e.what()).find(expect) != std::string::npos);
        }
      }
    }
  }
}

namespace {

// E of the first `rows` validation rows under `m`'s embedding tables, and that batch.
std::pair<torch::Tensor, recbole::data::Batch> first_rows(ContextRun& run, const Model& m,
                                                          int64_t d, int64_t rows) {
  const recbole::data::Batch batch =
      static_cast<const recbole::tasks::LabeledSource&>(run.pipeline.valid())
          .batch(0)
          .narrow(0, rows);
  const recbole::models::layers::ContextFields fields(run.pipeline.schema());
  const torch::Tensor e =
      copy_of(m, "embedding.", recbole::models::layers::ContextEmbedding(fields, d))
          ->forward(batch);
  return {e.detach(), batch};
}

}  // namespace

TEST_CASE("KD_DAGFM's student and CIN teacher, written out by hand", "[context][models]") {
  using recbole::models::KDDAGFM;
  for (const char* type : {"inner", "outer"}) {
    DYNAMIC_SECTION("student, " << type) {
      ContextRun run("KD_DAGFM", {{"type", type}, {"embedding_size", "4"}, {"depth", "2"}});
      std::shared_ptr<Model> m = run.trained();
      recbole::testing::scramble(*m, 0.3);  // the student's tables too, C off the identity
      auto& kd = dynamic_cast<KDDAGFM&>(*m);
      auto [e, batch] = first_rows(run, *m, 4, 3);
      auto p = m->named_parameters();
      const torch::Tensor C = p["mix"], w = p["student_out.weight"][0];
      const bool outer = std::string(type) == "outer";
      const int64_t F = 7;
      torch::NoGradGuard no_grad;
      const torch::Tensor got = kd.student_logit(e);
      for (int64_t r = 0; r < 3; ++r) {
        std::vector<torch::Tensor> h0(F), h(F);
        for (int64_t i = 0; i < F; ++i) {
          h0[i] = torch::zeros({4});
          for (int64_t j = 0; j < F; ++j) h0[i] = h0[i] + C[i][j] * e[r][j];
          h[i] = h0[i];
        }
        torch::Tensor logit = p["student_out.bias"][0].clone();
        for (int64_t i = 0; i < F; ++i) logit = logit + w[i] * h0[i].sum();
        for (int64_t t = 0; t < 2; ++t) {
          const torch::Tensor P = p["p" + std::to_string(t)];
          std::vector<torch::Tensor> next(F);
          for (int64_t s2 = 0; s2 < F; ++s2) {
            torch::Tensor agg = torch::zeros({4});
            for (int64_t f = 0; f <= s2; ++f)  // the mask keeps edges f → s with s ≥ f
              agg = agg + (outer ? (h[f] * P[f][s2]).sum() * p["q" + std::to_string(t)][f][s2]
                                 : h[f] * P[f][s2]);
            next[s2] = h0[s2] * agg;
            logit = logit + w[(t + 1) * F + s2] * next[s2].sum();
          }
          h = next;
        }
        INFO("row " << r);
        CHECK(got[r].item<double>() == Approx(logit.item<double>()).epsilon(1e-4).margin(1e-5));
      }
    }
  }
  SECTION("CIN teacher") {
    ContextRun run("KD_DAGFM", {{"teacher", "CIN"}, {"t_cin", "[3, 2]"}, {"embedding_size", "4"}});
    std::shared_ptr<Model> m = run.trained();
    auto& kd = dynamic_cast<KDDAGFM&>(*m);
    auto [e, batch] = first_rows(run, *m, 4, 2);
    auto p = m->named_parameters();
    torch::NoGradGuard no_grad;
    const torch::Tensor got = kd.teacher_logit(e);
    const int64_t F = 7;
    for (int64_t r = 0; r < 2; ++r) {
      torch::Tensor x = e[r];  // [H, d], H = F first
      torch::Tensor logit = torch::zeros({});
      int64_t at = 0;
      for (int64_t k = 0; k < 2; ++k) {
        const torch::Tensor W = p["cin_w" + std::to_string(k)], b = p["cin_b" + std::to_string(k)];
        torch::Tensor next = torch::zeros({W.size(0), 4});
        for (int64_t o = 0; o < W.size(0); ++o) {
          next[o] = b[o] * torch::ones({4});
          for (int64_t a = 0; a < x.size(0); ++a)
            for (int64_t f = 0; f < F; ++f) next[o] = next[o] + W[o][a * F + f] * x[a] * e[r][f];
          logit = logit + p["cin_out"][at++] * next[o].sum();
        }
        x = next;
      }
      CHECK(got[r].item<double>() == Approx(logit.item<double>()).epsilon(1e-4).margin(1e-5));
    }
  }
}

TEST_CASE("KD_DAGFM's distillation loads the teacher run and trains the student only",
          "[context][models]") {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("kd_dagfm_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "teacher.pth").string();
  ContextRun teacher_run("KD_DAGFM");
  std::shared_ptr<Model> teacher = teacher_run.trained();
  recbole::testing::scramble(*teacher, 0.1);
  auto archive = std::make_shared<torch::serialize::OutputArchive>();
  recbole::trainer::snapshot_module(*teacher, *archive);
  recbole::write_file_atomically(path, recbole::trainer::checkpoint_bytes(archive));

  ContextRun run("KD_DAGFM", {{"phase", "distillation"}, {"warm_up", path}});
  run.device.seed(run.device.base_seed());
  std::shared_ptr<Model> m =
      recbole::models::create_model("KD_DAGFM", run.pipeline.model_context(run.device));
  auto theirs = teacher->named_parameters();
  for (const auto& p : m->named_parameters()) {
    INFO(p.key());
    CHECK(torch::equal(p.value(), theirs[p.key()]));
  }
  m->train();
  auto& kd = dynamic_cast<recbole::models::KDDAGFM&>(*m);
  auto [e, batch] = first_rows(run, *m, 16, 64);
  const torch::Tensor loss = m->calculate_loss(batch);
  {
    torch::NoGradGuard no_grad;
    const torch::Tensor s = kd.student_logit(e), t = kd.teacher_logit(e);
    const double want =
        0.1 * torch::binary_cross_entropy(torch::sigmoid(s), batch.labels).item<double>() +
        921.6 * (t - s).pow(2).mean().item<double>();
    CHECK(loss.item<double>() == Approx(want).epsilon(1e-4));
  }
  loss.backward();
  for (const auto& p : m->named_parameters()) {
    const std::string& n = p.key();
    const bool student =
        n == "mix" || n.rfind("student_out.", 0) == 0 || n == "p0" || n == "q0" || n == "p2";
    const bool moved =
        p.value().grad().defined() && p.value().grad().abs().sum().item<double>() > 0;
    INFO(n);
    if (student) CHECK(moved);
    if (n.rfind("embedding.", 0) == 0 || n.rfind("cross_", 0) == 0) CHECK_FALSE(moved);
  }
  // The student's phases need a warm_up.
  ContextRun bare("KD_DAGFM", {{"phase", "finetuning"}});
  CHECK_THROWS_WITH(
      recbole::models::create_model("KD_DAGFM", bare.pipeline.model_context(bare.device)),
      Catch::Contains("warm_up"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("the evaluator ranks a context model's items under modes full and uni100",
          "[models][context][eval]") {
  for (const char* mode : {"full", "uni100"}) {
    DYNAMIC_SECTION(mode) {
      ContextRun run("FM", {{"eval_args", std::string("{mode: ") + mode + "}"},
                            {"metrics", "[Recall, NDCG, GAUC]"},
                            {"valid_metric", "NDCG@10"}});
      std::shared_ptr<Model> m = run.trained();
      recbole::Dist dist;
      recbole::evaluator::Evaluator ev(
          recbole::evaluator::evaluator_settings_from_config(run.config), run.device, dist,
          run.pipeline.n_items(), run.pipeline.item_train_count());
      const auto& valid = static_cast<const recbole::tasks::RankingSource&>(run.pipeline.valid());
      const recbole::evaluator::RankingRecords rec =
          ev.collect(*m, valid, recbole::evaluator::Phase::kValid);
      REQUIRE(rec.n_users() == static_cast<int64_t>(valid.rows().size()));
      if (std::string(mode) == "full") {
        // The first user's top 10: its scores from predict, the pad and its training items
        // masked, best first (ties broken by the lower id, as the evaluator's top-K).
        const int32_t u = valid.rows()[0];
        recbole::data::Batch q = valid.batch({u});
        torch::Tensor s = recbole::DeviceManager::to_host(m->full_sort_predict(run.device.place(q)))
                              .reshape({-1})
                              .clone();
        s[0] = -std::numeric_limits<float>::infinity();
        for (const int32_t* i = valid.mask()->row_begin(u); i != valid.mask()->row_end(u); ++i)
          if (!valid.positives().contains(u, *i)) s[*i] = -std::numeric_limits<float>::infinity();
        const torch::Tensor top = std::get<1>(torch::sort(s, /*stable=*/true, 0, true));
        for (int k = 0; k < 10; ++k) CHECK(rec.topk_items[k] == top[k].item<int64_t>());
      }
      const recbole::evaluator::MetricValues values =
          ev.evaluate(*m, run.pipeline.test(), recbole::evaluator::Phase::kTest);
      REQUIRE(values.size() == 3);
      for (const auto& [name, v] : values) {
        INFO(name);
        CHECK(std::isfinite(v));
        CHECK(v >= 0.0);
        CHECK(v <= 1.0);
      }
    }
  }
}

TEST_CASE("a context model's AUC and LogLoss under uni100 score positives against sampled items",
          "[models][context][eval]") {
  // RecBole's preset metrics with a sampled mode: every positive of the split (any label) is a
  // row labelled 1 and each of its 100 sampled items a row labelled 0.
  ContextRun run("FM", {{"eval_args", "{mode: uni100}"}});
  REQUIRE(run.config.get_string_list("metrics") == std::vector<std::string>{"AUC", "LogLoss"});
  std::shared_ptr<Model> m = run.trained();
  recbole::Dist dist;
  recbole::evaluator::Evaluator ev(recbole::evaluator::evaluator_settings_from_config(run.config),
                                   run.device, dist, run.pipeline.n_items(),
                                   run.pipeline.item_train_count());
  const auto& test = static_cast<const recbole::tasks::RankingSource&>(run.pipeline.test());
  const recbole::evaluator::ValueRecords rec =
      ev.collect_sampled_values(*m, test, recbole::evaluator::Phase::kTest);
  REQUIRE(rec.size() == static_cast<int64_t>(test.positives().nnz()) * 101);
  int64_t ones = 0;
  for (float l : rec.labels) ones += l == 1.0f;
  CHECK(ones == static_cast<int64_t>(test.positives().nnz()));
  // Probabilities from the sigmoid; LogLoss stays finite.
  for (float p : rec.scores) REQUIRE((p >= 0.0f && p <= 1.0f));
  const recbole::evaluator::MetricValues values =
      ev.evaluate(*m, run.pipeline.test(), recbole::evaluator::Phase::kTest);
  REQUIRE(values.size() == 2);
  CHECK(values[0].first == "auc");
  CHECK(values[0].second == Approx(recbole::evaluator::auc(rec)).margin(1e-4));
  CHECK(values[1].first == "logloss");
  CHECK(std::isfinite(values[1].second));
}
