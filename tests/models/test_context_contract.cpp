// The model contract of the context models, over every registered one: built from ml-100k's
// feature fields (the context preset), a few training batches give a finite loss; predict gives
// [B] float32 probabilities in [0, 1] on the device; a fixed seed repeats exactly; a save/load
// round trip gives identical scores; ranking all items is a clear error. LR's and FM's
// closed-form step gives autograd's loss and gradients.
#include <catch2/catch.hpp>

#include <cmath>
#include <memory>
#include <sstream>

#include <torch/torch.h>

#include "models/context/context_model.h"
#include "models/context/xdeepfm.h"
#include "models/model.h"
#include "recbole/config/config.h"
#include "recbole/data/dataset.h"
#include "recbole/data/split.h"
#include "recbole/pipeline/context_pipeline.h"
#include "recbole/utils/device_manager.h"
#include "recbole/utils/error.h"
#include "tests/models/model_fixture.h"

using recbole::models::Model;

namespace {

struct ContextRun {
  recbole::config::Config config;
  recbole::data::Dataset dataset;
  recbole::data::SplitDataset split;
  recbole::pipeline::ContextPipeline pipeline;
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
    const auto& valid = static_cast<const recbole::evaluator::LabeledSource&>(pipeline.valid());
    return m.predict(device.place(valid.batch(0)));
  }
};

}  // namespace

TEST_CASE("every context model satisfies the context model contract",
          "[models][contract][context]") {
  for (const auto& descriptor : recbole::models::registered_models()) {
    if (descriptor.task != recbole::models::Task::kContext) continue;
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
      CHECK_THROWS_AS(
          m->full_sort_predict(run.device.place(
              static_cast<const recbole::evaluator::LabeledSource&>(run.pipeline.valid())
                  .batch(0))),
          recbole::ConfigError);

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
  const auto& valid = static_cast<const recbole::evaluator::LabeledSource&>(run.pipeline.valid());
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

TEST_CASE("LR's and FM's closed-form step equals autograd's loss and gradients",
          "[context][models]") {
  using recbole::models::ContextModel;
  for (const std::string name : {"LR", "FM"}) {
    DYNAMIC_SECTION(name) {
      ContextRun run(name);
      run.device.seed(run.device.base_seed());
      auto m = std::dynamic_pointer_cast<ContextModel>(
          recbole::models::create_model(name, run.pipeline.model_context(run.device)));
      REQUIRE(m);
      REQUIRE(m->closed_form_applies());
      auto source = run.pipeline.training_source(m->input_type(), name, 0, 1);
      source->start_epoch(0);
      recbole::data::Batch batch;
      REQUIRE(source->next(batch));
      REQUIRE(batch.size() == 512);

      // Autograd: the loss and every parameter's gradient (undefined: not reached).
      torch::Tensor loss = m->calculate_loss(batch);
      loss.backward();
      std::vector<torch::Tensor> expected;
      for (const torch::Tensor& p : m->parameters())
        expected.push_back(p.grad().defined() ? p.grad().clone() : torch::Tensor());
      for (torch::Tensor p : m->parameters()) p.mutable_grad() = torch::Tensor();
      const torch::Tensor direct = m->closed_form_backward(batch);
      CHECK(direct.item<float>() == Approx(loss.item<float>()).epsilon(1e-6));
      const std::vector<torch::Tensor> params = m->parameters();
      for (size_t k = 0; k < params.size(); ++k) {
        INFO("parameter " << k);
        REQUIRE(params[k].grad().defined() == expected[k].defined());
        if (expected[k].defined())
          CHECK(torch::allclose(params[k].grad(), expected[k], 1e-5, 1e-7));
      }
    }
  }
  ContextRun deep("DeepFM");
  auto m = std::dynamic_pointer_cast<ContextModel>(
      recbole::models::create_model("DeepFM", deep.pipeline.model_context(deep.device)));
  CHECK_FALSE(m->closed_form_applies());
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
        static_cast<const recbole::evaluator::LabeledSource&>(run.pipeline.valid()).batch(0);
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
        static_cast<const recbole::evaluator::LabeledSource&>(run.pipeline.valid()).batch(0);
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
