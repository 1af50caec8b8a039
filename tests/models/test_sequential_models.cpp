// The model contract for sequential models (the general one ranks users; these rank samples of
// sequences), and the no-look-ahead property of the causal ones.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <sstream>

#include <torch/torch.h>

#include "models/layers/sequence.h"
#include "models/layers/session_graph.h"
#include "models/model.h"
#include "models/sequential/bert4rec.h"
#include "models/sequential/core.h"
#include "models/sequential/nextitnet.h"
#include "models/sequential/sasrec.h"
#include "models/sequential/sequential_model.h"
#include "recbole/config/eval_mode.h"
#include "recbole/config/model_keys.h"
#include "recbole/data/sequence_store.h"
#include "recbole/runtime/dist.h"
#include "tasks/sequential/sequential_pipeline.h"
#include "tests/models/model_fixture.h"
#include "trainer/evaluator.h"

using recbole::data::SequenceStore;
using recbole::models::Model;

namespace {

// 40 users' sequences over 30 items (TinyData's rows, then its valid item), split by
// leave-one-out; inputs at most `max_len` wide.
SequenceStore tiny_sequences(int64_t max_len) {
  recbole::testing::TinyData d;
  std::vector<int32_t> users, items;
  for (int32_t u = 1; u < d.n_users; ++u) {
    for (const int32_t* it = d.train.row_begin(u); it != d.train.row_end(u); ++it)
      users.push_back(u), items.push_back(*it);
    users.push_back(u), items.push_back(d.valid.row_begin(u)[0]);
  }
  recbole::data::EvalArgs ea;
  ea.split = recbole::data::EvalArgs::SplitKind::kLeaveOneOut;
  ea.order = "TO";
  return SequenceStore::from_ordered(d.n_users, users, items, ea, max_len);
}

struct SeqHarness {
  recbole::config::Config config;
  recbole::DeviceManager device;
  recbole::tasks::SequentialPipeline pipeline;
  recbole::models::ModelContext ctx;

  SeqHarness(const std::string& model, std::vector<std::pair<std::string, std::string>> extra = {})
      : config(recbole::testing::model_config(model, with_length(std::move(extra)))),
        device(recbole::DeviceManager::from_config(config)),
        pipeline(config, tiny_sequences(config.get_int("MAX_ITEM_LIST_LENGTH")), 40, 30),
        ctx(pipeline.model_context(device)) {}

  static std::vector<std::pair<std::string, std::string>> with_length(
      std::vector<std::pair<std::string, std::string>> extra) {
    extra.insert(extra.begin(), {"MAX_ITEM_LIST_LENGTH", "6"});
    return extra;
  }

  std::shared_ptr<Model> create() {
    device.seed(device.base_seed());
    return recbole::models::create_model(config.model(), ctx);
  }

  // Three batches of the model's training source, Adam(0.01).
  void train(Model& m) {
    m.train();
    torch::optim::Adam opt(m.parameters(), torch::optim::AdamOptions(0.01));
    auto source = pipeline.training_source(m.input_type(), m.name(), 0, 1);
    source->start_epoch(0);
    recbole::data::Batch batch;
    for (int b = 0; b < 3 && source->next(batch); ++b) {
      opt.zero_grad();
      torch::Tensor loss = m.calculate_loss(device.place(batch));
      REQUIRE(loss.numel() == 1);
      REQUIRE(std::isfinite(loss.item<double>()));
      loss.backward();
      opt.step();
    }
    m.eval();
  }

  // Scores of the test samples `rows` (CPU).
  torch::Tensor scores(Model& m, const std::vector<int64_t>& rows) {
    torch::NoGradGuard no_grad;
    const auto& src = static_cast<const recbole::tasks::SequenceRankingSource&>(pipeline.test());
    return recbole::DeviceManager::to_host(m.full_sort_predict(device.place(src.batch(rows))));
  }
};

}  // namespace

TEST_CASE("every sequential model satisfies the model contract", "[models][contract][sequential]") {
  for (const auto& descriptor : recbole::models::registered_models()) {
    if (descriptor.task != "sequential") continue;
    const std::string& name = descriptor.name;
    DYNAMIC_SECTION(name) {
      CHECK_FALSE(descriptor.description.empty());
      SeqHarness h(name);
      std::shared_ptr<Model> m = h.create();
      REQUIRE(m->name() == name);
      h.train(*m);
      const std::vector<int64_t> rows{3, 1, 17, 30};
      const torch::Tensor s = h.scores(*m, rows);
      REQUIRE(s.scalar_type() == torch::kFloat32);
      REQUIRE(s.sizes() == torch::IntArrayRef({4, 30}));
      REQUIRE(torch::isfinite(s).all().item<bool>());
      // A row scores the same alone as in a block (to rounding: on a GPU, cuBLAS picks other
      // kernels for other batch sizes).
      const double atol = h.device.device().is_cuda() ? 1e-4 : 1e-6;
      CHECK(torch::allclose(h.scores(*m, {17}), s[2].unsqueeze(0), 1e-5, atol));
      // predict agrees with full_sort_predict.
      {
        torch::NoGradGuard no_grad;
        const auto& src =
            static_cast<const recbole::tasks::SequenceRankingSource&>(h.pipeline.test());
        recbole::data::Batch b = src.batch(rows);
        b.items = torch::tensor({5, 2, 12, 29}, torch::kInt64);
        const torch::Tensor p = recbole::DeviceManager::to_host(m->predict(h.device.place(b)));
        CHECK(torch::allclose(p, s.gather(1, b.items.view({-1, 1})).view({-1}), 1e-5, 1e-6));
        // Dynamic sampling's candidates, three blocks of 150 rows that differ in the item
        // (more rows than a part of the pool's): predict_candidates scores them as predict.
        std::vector<int64_t> block;
        for (int64_t r = 0; r < 3 * 150; ++r) block.push_back((r % 150) % 30);
        recbole::data::Batch c = src.batch(block);
        c.items = torch::randint(1, 30, {3 * 150}, torch::kInt64);
        // A model without CandidateScores is scored by predict (the trainer's fallback).
        auto* once = recbole::models::capability<recbole::models::CandidateScores>(*m);
        const torch::Tensor pc = recbole::DeviceManager::to_host(
            once ? once->predict_candidates(h.device.place(c), 3) : m->predict(h.device.place(c)));
        CHECK(torch::allclose(pc, recbole::DeviceManager::to_host(m->predict(h.device.place(c))),
                              1e-5, atol));
      }
      // The evaluator ranks every valid sample.
      recbole::Dist dist;
      recbole::evaluator::EvaluatorSettings es;
      es.metrics = {"mrr"};
      es.topk = {5};
      recbole::evaluator::Evaluator ev(es, h.device, dist, 30, h.pipeline.item_train_count());
      const auto& valid = static_cast<const recbole::tasks::RankingSource&>(h.pipeline.valid());
      CHECK(ev.collect(*m, valid).n_users() == static_cast<int64_t>(valid.rows().size()));
      // Sampled evaluation (uniN, popN) ranks each sample's target among N sampled items.
      for (const char* mode : {"uni10", "pop10"}) {
        es.valid_mode = *recbole::config::EvalMode::parse(mode);
        recbole::evaluator::Evaluator sampled(es, h.device, dist, 30,
                                              h.pipeline.item_train_count());
        const auto rec = sampled.collect(*m, valid);
        CHECK(rec.n_users() == static_cast<int64_t>(valid.rows().size()));
      }
      // A fixed seed repeats exactly.
      std::shared_ptr<Model> again = h.create();
      h.train(*again);
      CHECK(torch::equal(h.scores(*again, rows), s));
      // Save and load: identical scores.
      std::shared_ptr<Model> loaded = h.create();
      recbole::testing::save_and_load(*m, *loaded, h.device.device());
      CHECK(torch::equal(h.scores(*loaded, rows), s));
      // BPR, where the model offers it: trains on sampled negatives.
      const recbole::config::KeyDecl* loss = recbole::config::find_model_key(name, "loss_type");
      if (loss &&
          std::find(loss->choices.begin(), loss->choices.end(), "BPR") != loss->choices.end()) {
        SeqHarness bpr(name, {{"loss_type", "BPR"}});
        std::shared_ptr<Model> mb = bpr.create();
        bpr.train(*mb);
      }
    }
  }
}

TEST_CASE("sequential models train a batch in parts to the whole batch's loss and gradient",
          "[models][sequential]") {
  // train_step reorders the rows longest first and cuts them into kMicroBatch parts, each run to
  // its own longest row: the same mean loss and gradient as the batch in one piece. Dropout off
  // (eval mode), so that the parts' dropout keys do not enter; BERT4Rec's masks are drawn per
  // row in batch order, so its loss depends on the order and is left out.
  for (const auto& descriptor : recbole::models::registered_models()) {
    if (descriptor.task != "sequential" || descriptor.name == "BERT4Rec") continue;
    DYNAMIC_SECTION(descriptor.name) {
      SeqHarness h(descriptor.name);
      std::shared_ptr<Model> m = h.create();
      recbole::testing::scramble(*m, 0.3);
      m->eval();
      auto source = h.pipeline.training_source(m->input_type(), m->name(), 0, 1);
      source->start_epoch(0);
      recbole::data::Batch b;
      REQUIRE(source->next(b));
      // Three copies of the batch in a random order: more rows than two parts, lengths mixed.
      b = recbole::testing::three_shuffled_copies(b);
      REQUIRE(b.size() > 2 * recbole::models::SequentialModel::kMicroBatch);
      recbole::testing::check_step_equals_whole_batch(*m, h.device.place(b));
    }
  }
}

TEST_CASE("causal sequential models never look ahead", "[models][sequential]") {
  for (const char* name : {"GRU4Rec", "SASRec", "NARM"}) {
    DYNAMIC_SECTION(name) {
      SeqHarness h(name);
      std::shared_ptr<Model> m = h.create();
      h.train(*m);
      auto& seq = dynamic_cast<recbole::models::SequentialModel&>(*m);
      torch::NoGradGuard no_grad;
      // One sequence of 6 items, read as each of its prefixes (length t): the items after a
      // prefix stay in the row, so a model that looked ahead would see them.
      const torch::Tensor s = torch::tensor({4, 9, 2, 17, 9, 25}, torch::kInt64);
      auto prefixes = [&](const torch::Tensor& row) {
        recbole::data::Batch b;
        b.columns[recbole::models::layers::kItemSeq] = row.unsqueeze(0).repeat({6, 1});
        b.columns[recbole::models::layers::kItemSeqLen] = torch::arange(1, 7, torch::kInt64);
        return recbole::DeviceManager::to_host(seq.encode(h.device.place(b)));
      };
      const torch::Tensor base = prefixes(s);
      for (int64_t j = 1; j < 6; ++j) {
        torch::Tensor changed = s.clone();
        changed[j] = 28;
        const torch::Tensor other = prefixes(changed);
        INFO("item " << j << " changed");
        // Every prefix that ends before position j is unchanged; the one that reads j changes.
        CHECK(torch::equal(other.narrow(0, 0, j), base.narrow(0, 0, j)));
        CHECK_FALSE(torch::allclose(other[j], base[j]));
      }
      // SASRec: every position of the encoder's output, not just the gathered one.
      if (auto* sasrec = dynamic_cast<recbole::models::SASRec*>(m.get())) {
        const torch::Tensor all = sasrec->encode_all(h.device.place(s.unsqueeze(0)));
        for (int64_t j = 1; j < 6; ++j) {
          torch::Tensor changed = s.clone();
          changed[j] = 28;
          const torch::Tensor other = sasrec->encode_all(h.device.place(changed.unsqueeze(0)));
          CHECK(torch::equal(other.narrow(1, 0, j), all.narrow(1, 0, j)));
        }
      }
    }
  }
}

TEST_CASE("SRGNN's session graph of a sequence written out by hand", "[models][sequential]") {
  // Items 3 5 3 7 then padding: nodes 0 3 5 7 (ascending, the padding item among them), edges
  // 3→5, 5→3, 3→7.
  const torch::Tensor seq = torch::tensor({3, 5, 3, 7, 0, 0}, torch::kInt64).view({1, 6});
  const auto g = recbole::models::layers::session_graphs(seq, torch::tensor({4}, torch::kInt64), 6);
  CHECK(torch::equal(g.nodes[0], torch::tensor({0, 3, 5, 7, 0, 0}, torch::kInt64)));
  CHECK(torch::equal(g.alias[0], torch::tensor({1, 2, 1, 3, 0, 0}, torch::kInt64)));
  torch::Tensor out = torch::zeros({6, 6}), in = torch::zeros({6, 6});
  out[1][2] = 0.5, out[1][3] = 0.5, out[2][1] = 1;  // node 3 has two successors
  in[2][1] = 1, in[1][2] = 1, in[3][1] = 1;         // each node one predecessor
  CHECK(torch::equal(g.a_out[0], out));
  CHECK(torch::equal(g.a_in[0], in));
  // A repeated transition counts once: 4 6 4 6 → M[4→6] = M[6→4] = 1, no weights above 1.
  const auto r = recbole::models::layers::session_graphs(
      torch::tensor({4, 6, 4, 6}, torch::kInt64).view({1, 4}), torch::tensor({4}, torch::kInt64),
      4);
  CHECK(r.a_out.max().item<float>() == 1.f);
  CHECK(r.a_in.sum().item<float>() == 2.f);
}

TEST_CASE("BERT4Rec masks as RecBole's mask_itemseq", "[models][sequential]") {
  // Rows of lengths 6, 1 and 4 (MAX_ITEM_LIST_LENGTH 6, so K = floor(0.2 * 6) = 1 by default).
  recbole::data::Batch b;
  b.columns[recbole::models::layers::kItemSeq] =
      torch::tensor({4, 9, 2, 17, 9, 25, 7, 0, 0, 0, 0, 0, 3, 5, 8, 1, 0, 0}, torch::kInt64)
          .view({3, 6});
  b.columns[recbole::models::layers::kItemSeqLen] = torch::tensor({6, 1, 4}, torch::kInt64);
  const int64_t mask_id = 30;  // n_items of the harness
  SECTION("last-item mode: each row's last item, not counted at position 0") {
    SeqHarness h("BERT4Rec", {{"ft_ratio", "1"}});
    auto m = std::dynamic_pointer_cast<recbole::models::BERT4Rec>(h.create());
    const auto masked = m->mask(b);
    CHECK(torch::equal(masked.rows, torch::tensor({0, 2}, torch::kInt64)));
    CHECK(torch::equal(masked.positions, torch::tensor({5, 3}, torch::kInt64)));
    CHECK(torch::equal(masked.pos_items, torch::tensor({25, 1}, torch::kInt64)));
    CHECK((masked.offsets == std::vector<int64_t>{0, 1, 1, 2}));
    CHECK(masked.seq[1][0].item<int64_t>() == mask_id);  // masked, though not counted
    CHECK(masked.seq[0][5].item<int64_t>() == mask_id);
    CHECK(masked.seq[0][4].item<int64_t>() == 9);
  }
  SECTION("cloze mode: every item masked with mask_ratio 1, the last K counted") {
    SeqHarness h("BERT4Rec", {{"ft_ratio", "0"}, {"mask_ratio", "1"}, {"loss_type", "BPR"}});
    auto m = std::dynamic_pointer_cast<recbole::models::BERT4Rec>(h.create());
    const auto masked = m->mask(b);
    // K = 6: row 0's positions 0..5 (0 not counted), row 1's 0 (not counted), row 2's 0..3.
    CHECK(torch::equal(masked.positions, torch::tensor({1, 2, 3, 4, 5, 1, 2, 3}, torch::kInt64)));
    CHECK(torch::equal(masked.seq.gt(0), recbole::models::layers::item_seq(b).gt(0)));
    CHECK(torch::equal(masked.seq.masked_select(recbole::models::layers::item_seq(b).gt(0)),
                       torch::full({11}, mask_id, torch::kInt64)));
    // Negatives: items of [1, n_items) not in their row.
    REQUIRE(masked.neg_items.numel() == 8);
    for (int64_t k = 0; k < 8; ++k) {
      const int64_t row = masked.rows[k].item<int64_t>(), neg = masked.neg_items[k].item<int64_t>();
      CHECK(neg >= 1);
      CHECK(neg < mask_id);
      CHECK_FALSE(recbole::models::layers::item_seq(b)[row].eq(neg).any().item<bool>());
    }
    // The loss is finite and the masks repeat under the same seed.
    const auto again = std::dynamic_pointer_cast<recbole::models::BERT4Rec>(h.create());
    CHECK(torch::equal(again->mask(b).neg_items, masked.neg_items));
  }
  SECTION("cloze mode keeps only the last K = floor(mask_ratio * L) masks of a row") {
    SeqHarness h("BERT4Rec", {{"ft_ratio", "0"}, {"mask_ratio", "0.5"}});
    auto m = std::dynamic_pointer_cast<recbole::models::BERT4Rec>(h.create());
    for (int trial = 0; trial < 20; ++trial) {
      const auto masked = m->mask(b);
      for (size_t r = 0; r + 1 < masked.offsets.size(); ++r)
        CHECK(masked.offsets[r + 1] - masked.offsets[r] <= 3);
      // Every counted position holds the mask in the input and was an item.
      for (int64_t k = 0; k < masked.rows.numel(); ++k) {
        const int64_t row = masked.rows[k].item<int64_t>(), p = masked.positions[k].item<int64_t>();
        CHECK(masked.seq[row][p].item<int64_t>() == mask_id);
        CHECK(masked.pos_items[k].item<int64_t>() ==
              recbole::models::layers::item_seq(b)[row][p].item<int64_t>());
      }
    }
  }
  SECTION("evaluation input: shifted left, the mask at len - 1") {
    const torch::Tensor e = recbole::models::BERT4Rec::mask_last(
        recbole::models::layers::item_seq(b), recbole::models::layers::item_seq_len(b), mask_id);
    CHECK(torch::equal(
        e, torch::tensor({9, 2, 17, 9, 25, 30, 30, 0, 0, 0, 0, 0, 5, 8, 1, 30, 0, 0}, torch::kInt64)
               .view({3, 6})));
  }
}

TEST_CASE("NextItNet's blocks are causal dilated convolutions, written out by hand",
          "[models][sequential]") {
  using recbole::models::NextItNet;
  SECTION("one block, kernel 2, dilations 1 and 2") {
    SeqHarness h("NextItNet", {{"block_num", "1"}, {"dilations", "[1]"}, {"kernel_size", "2"}});
    std::shared_ptr<Model> m = h.create();
    h.train(*m);
    auto& net = dynamic_cast<NextItNet&>(*m);
    torch::NoGradGuard no_grad;
    const torch::Tensor seq = torch::tensor({{4, 9, 2, 17, 0, 0}}, torch::kInt64);
    const torch::Tensor got =
        recbole::DeviceManager::to_host(net.encode_all(h.device.place(seq)))[0];
    auto p = m->named_parameters();
    auto host = [&](const std::string& n) { return recbole::DeviceManager::to_host(p[n]); };
    const torch::Tensor x = host("item_embedding").index_select(0, seq[0]);  // [L, C]
    // conv(v)[t] = b + W[:, :, 0] v[t − dil] + W[:, :, 1] v[t] (zero before position 0), then
    // LayerNorm over C (eps 1e-8) and ReLU.
    auto step = [&](const torch::Tensor& v, const std::string& k, int64_t dil) {
      const torch::Tensor w = host("conv" + k + ".weight"), b = host("conv" + k + ".bias");
      torch::Tensor out = torch::empty_like(v);
      for (int64_t t = 0; t < v.size(0); ++t) {
        torch::Tensor o = b + torch::matmul(w.select(2, 1), v[t]);
        if (t - dil >= 0) o = o + torch::matmul(w.select(2, 0), v[t - dil]);
        const torch::Tensor mean = o.mean(), var = (o - mean).pow(2).mean();
        out[t] = torch::relu((o - mean) / torch::sqrt(var + 1e-8) * host("norm" + k + ".weight") +
                             host("norm" + k + ".bias"));
      }
      return out;
    };
    const torch::Tensor want = step(step(x, "0", 1), "1", 2) + x;
    CHECK(torch::allclose(got, want, 1e-4, 1e-5));
    // h reads the last column (a padding position here), through the final Linear.
    recbole::data::Batch b;
    b.columns[recbole::models::layers::kItemSeq] = seq;
    b.columns[recbole::models::layers::kItemSeqLen] = torch::tensor({4}, torch::kInt64);
    const torch::Tensor hv = recbole::DeviceManager::to_host(net.encode(h.device.place(b)))[0];
    CHECK(torch::allclose(hv, torch::matmul(host("final.weight"), got[5]) + host("final.bias"),
                          1e-4, 1e-5));
  }
  SECTION("the defaults: later items never reach earlier positions; the loss adds the norms") {
    SeqHarness h("NextItNet");
    std::shared_ptr<Model> m = h.create();
    h.train(*m);
    auto& net = dynamic_cast<NextItNet&>(*m);
    torch::NoGradGuard no_grad;
    const torch::Tensor s = torch::tensor({4, 9, 2, 17, 9, 25}, torch::kInt64);
    const torch::Tensor all = net.encode_all(h.device.place(s.unsqueeze(0)));
    for (int64_t j = 0; j < 6; ++j) {
      torch::Tensor changed = s.clone();
      changed[j] = 28;
      const torch::Tensor other = net.encode_all(h.device.place(changed.unsqueeze(0)));
      INFO("item " << j << " changed");
      CHECK(torch::equal(other.narrow(1, 0, j), all.narrow(1, 0, j)));
      CHECK_FALSE(
          torch::allclose(other.select(1, 5), all.select(1, 5)));  // the last column sees it
    }
    const auto& src = static_cast<const recbole::tasks::SequenceRankingSource&>(h.pipeline.test());
    const recbole::data::Batch b = h.device.place(src.batch({0, 1, 2, 3}));
    const torch::Tensor ce = torch::nn::functional::cross_entropy(m->full_sort_predict(b), b.items);
    double norms = 0;
    int64_t weights = 0;
    for (const auto& p : m->named_parameters()) {
      const std::string& n = p.key();
      if (n == "item_embedding" || n == "final.weight" ||
          ((n.rfind("conv", 0) == 0 || n.rfind("norm", 0) == 0) && n.size() > 7 &&
           n.compare(n.size() - 7, 7, ".weight") == 0)) {
        norms += p.value().norm().item<double>();
        ++weights;
      }
    }
    CHECK(weights == 2 + 2 * 20);  // 5 × [1, 4] blocks of two convolutions
    CHECK(m->calculate_loss(b).item<double>() ==
          Approx(ce.item<double>() + 1e-5 * norms).epsilon(1e-6));
  }
}

TEST_CASE("CORE's session is a weighted sum of its item vectors, scored by cosine / τ",
          "[models][sequential]") {
  for (const char* type : {"ave", "trm"}) {
    DYNAMIC_SECTION(type) {
      SeqHarness h("CORE", {{"dnn_type", type}});
      std::shared_ptr<Model> m = h.create();
      h.train(*m);
      auto& core = dynamic_cast<recbole::models::CORE&>(*m);
      torch::NoGradGuard no_grad;
      const auto& src =
          static_cast<const recbole::tasks::SequenceRankingSource&>(h.pipeline.test());
      const recbole::data::Batch b = h.device.place(src.batch({0, 5, 11, 23}));
      const torch::Tensor table = m->named_parameters()["item_embedding"];
      const int64_t longest = recbole::models::layers::item_seq_len(b).max().item<int64_t>();
      const torch::Tensor seq = recbole::models::layers::item_seq(b).narrow(1, 0, longest);
      const torch::Tensor x = table.index_select(0, seq.flatten()).view({4, longest, -1});
      const torch::Tensor alpha = core.weights(seq, x);  // [B, L]
      CHECK(torch::allclose(alpha.sum(1), torch::ones({4}, alpha.options())));
      CHECK(torch::equal(alpha.masked_select(seq.eq(0)),
                         torch::zeros({seq.eq(0).sum().item<int64_t>()}, alpha.options())));
      if (std::string(type) == "ave")
        CHECK(torch::allclose(
            alpha, seq.gt(0).to(torch::kFloat32) /
                       recbole::models::layers::item_seq_len(b).unsqueeze(1).to(torch::kFloat32)));
      // h = normalize(Σ α x); scores = h · normalize(E)ᵀ / 0.07; the loss is their CE.
      torch::Tensor hv = (alpha.unsqueeze(2) * x).sum(1);
      hv = hv / hv.norm(2, 1, true);
      const torch::Tensor want = torch::matmul(hv, (table / table.norm(2, 1, true)).t()) / 0.07;
      const torch::Tensor got = m->full_sort_predict(b);
      CHECK(torch::allclose(got, want, 1e-4, 1e-4));
      CHECK(
          m->calculate_loss(b).item<double>() ==
          Approx(torch::nn::functional::cross_entropy(want, b.items).item<double>()).epsilon(1e-5));
    }
  }
}

TEST_CASE("LightSANs' layer, written out head by head", "[models][sequential]") {
  SeqHarness h("LightSANs", {{"n_layers", "1"}, {"k_interests", "3"}});
  std::shared_ptr<Model> m = h.create();
  h.train(*m);
  auto& seq = dynamic_cast<recbole::models::SequentialModel&>(*m);
  torch::NoGradGuard no_grad;
  auto p = m->named_parameters();
  auto host = [&](const std::string& n) { return recbole::DeviceManager::to_host(p[n]); };
  auto linear = [&](const std::string& n, const torch::Tensor& x) {
    return torch::matmul(x, host(n + ".weight").t()) + host(n + ".bias");
  };
  auto norm = [&](const std::string& n, const torch::Tensor& x) {  // over the last axis
    const torch::Tensor mean = x.mean(-1, true), var = (x - mean).pow(2).mean(-1, true);
    return (x - mean) / torch::sqrt(var + 1e-12) * host(n + ".weight") + host(n + ".bias");
  };
  // Softmax down column j of a matrix (over its rows).
  auto column_softmax = [](const torch::Tensor& s) { return torch::exp(s) / torch::exp(s).sum(0); };

  const torch::Tensor items = torch::tensor({4, 9, 2, 17, 0, 0}, torch::kInt64);
  const int64_t L = 6, d = 64, dh = 32;
  const torch::Tensor x = norm("layer_norm", host("item_embedding").index_select(0, items));
  const std::string l = "layer0.";
  const torch::Tensor q = linear(l + "query", x), k = linear(l + "key", x),
                      v = linear(l + "value", x);
  // k interests: each a softmax-over-positions weighting of the keys (values).
  const torch::Tensor k_pooled = column_softmax(torch::matmul(k, host(l + "theta_k"))).t().mm(k);
  const torch::Tensor v_pooled = column_softmax(torch::matmul(v, host(l + "theta_v"))).t().mm(v);
  const torch::Tensor pos = norm(l + "ln_pos", host("position_embedding").narrow(0, 0, L));
  const torch::Tensor qp = linear(l + "pos_query", pos), kp = linear(l + "pos_key", pos);
  torch::Tensor context = torch::empty({L, d});
  for (int64_t head = 0; head < 2; ++head) {
    const auto cut = [&](const torch::Tensor& t) { return t.narrow(1, head * dh, dh); };
    const torch::Tensor item = column_softmax(cut(q).mm(cut(k_pooled).t()) / std::sqrt(32.0));
    const torch::Tensor at =
        column_softmax(cut(qp).mm(cut(kp).t()) / std::sqrt(64.0) / std::sqrt(32.0));
    context.narrow(1, head * dh, dh).copy_(item.mm(cut(v_pooled)) + at.mm(cut(v)));
  }
  const torch::Tensor a = norm(l + "ln_attn", linear(l + "out", context) + x);
  const torch::Tensor f = linear(l + "ff2", [&] {
    const torch::Tensor z = linear(l + "ff1", a);
    return 0.5 * z * (1 + torch::erf(z / std::sqrt(2.0)));  // gelu
  }());
  const torch::Tensor want = norm(l + "ln_ff", f + a);

  recbole::data::Batch b;
  b.columns[recbole::models::layers::kItemSeq] = items.unsqueeze(0);
  b.columns[recbole::models::layers::kItemSeqLen] = torch::tensor({4}, torch::kInt64);
  const torch::Tensor got = recbole::DeviceManager::to_host(seq.encode(h.device.place(b)))[0];
  CHECK(torch::allclose(got, want[3], 1e-4, 1e-4));  // the last item's state
  // The two θ start equal in every layer (RecBole deep-copies one layer).
  SeqHarness two("LightSANs");
  std::shared_ptr<Model> fresh = two.create();
  auto fp = fresh->named_parameters();
  CHECK(torch::equal(fp["layer0.theta_k"], fp["layer1.theta_k"]));
  CHECK(torch::equal(fp["layer0.theta_v"], fp["layer1.theta_v"]));
  CHECK_FALSE(torch::equal(fp["layer0.theta_k"], fp["layer0.theta_v"]));
}
