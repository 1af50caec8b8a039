// The sequential task's data: RecBole's prefix samples, leave-one-out split, truncation and
// padding, cut per batch from one stored sequence per user; its preset and its refusals.
#include <catch2/catch.hpp>

#include <set>
#include <sstream>

#include <torch/torch.h>

#include "models/layers/sequence.h"
#include "models/model.h"
#include "recbole/config/config.h"
#include "recbole/data/dataset.h"
#include "recbole/data/dataset_options.h"
#include "recbole/data/sequence_store.h"
#include "recbole/utils/error.h"
#include "tasks/sequential/sequential_pipeline.h"
#include "tests/data/data_test_util.h"

using recbole::data::EvalArgs;
using recbole::data::SequenceSamples;
using recbole::data::SequenceStore;

namespace {

EvalArgs leave_one_out(const std::string& mode = "valid_and_test") {
  EvalArgs ea;
  ea.split = EvalArgs::SplitKind::kLeaveOneOut;
  ea.leave_one_mode = mode;
  ea.order = "TO";
  return ea;
}

// RecBole's fixture tests/data/seq_dataset (reference 2.5), users and items in time order:
// u1: 1..8, u2: 4..8, u3: 4, 5, 6, u4: 3, 4.
SequenceStore fixture(int64_t max_len = 50, const EvalArgs& ea = leave_one_out()) {
  std::vector<int32_t> users, items;
  auto add = [&](int32_t u, std::vector<int32_t> seq) {
    for (int32_t i : seq) users.push_back(u), items.push_back(i);
  };
  add(1, {1, 2, 3, 4, 5, 6, 7, 8});
  add(2, {4, 5, 6, 7, 8});
  add(3, {4, 5, 6});
  add(4, {3, 4});
  return SequenceStore::from_ordered(5, users, items, ea, max_len);
}

// Every sample of a part as "u: [inputs] -> target".
std::vector<std::string> describe(const SequenceStore& s, const SequenceSamples& part) {
  std::vector<std::string> out;
  std::vector<int64_t> row(static_cast<size_t>(s.max_len()));
  for (int64_t k = 0; k < part.size(); ++k) {
    const int64_t len = s.write_input(part.users[k], part.positions[k], row.data());
    std::ostringstream os;
    os << part.users[k] << ": [";
    for (int64_t j = 0; j < len; ++j) os << (j ? "," : "") << row[j];
    os << "] -> " << part.targets[k];
    for (int64_t j = len; j < s.max_len(); ++j) REQUIRE(row[j] == 0);  // right padding
    out.push_back(os.str());
  }
  return out;
}

}  // namespace

TEST_CASE("sequence samples, leave-one-out and padding as RecBole's fixture", "[sequential]") {
  const SequenceStore s = fixture();
  using V = std::vector<std::string>;
  CHECK(describe(s, s.train()) ==
        V({"1: [1] -> 2", "1: [1,2] -> 3", "1: [1,2,3] -> 4", "1: [1,2,3,4] -> 5",
           "1: [1,2,3,4,5] -> 6", "2: [4] -> 5", "2: [4,5] -> 6", "3: [4] -> 5", "4: [3] -> 4"}));
  CHECK(describe(s, s.valid()) == V({"1: [1,2,3,4,5,6] -> 7", "2: [4,5,6] -> 7"}));
  // The test input holds the valid target; u3 (3 interactions) has a test sample, no valid one.
  CHECK(describe(s, s.test()) ==
        V({"1: [1,2,3,4,5,6,7] -> 8", "2: [4,5,6,7] -> 8", "3: [4,5] -> 6"}));
  CHECK(s.short_users().two == 1);
  CHECK(s.short_users().three == 1);
  // The sequences are stored once: one item per interaction.
  CHECK(s.items().size() == 18);
}

TEST_CASE("inputs keep the MAX_ITEM_LIST_LENGTH most recent items", "[sequential]") {
  const SequenceStore s = fixture(3);
  using V = std::vector<std::string>;
  CHECK(describe(s, s.test()) == V({"1: [5,6,7] -> 8", "2: [5,6,7] -> 8", "3: [4,5] -> 6"}));
  CHECK(describe(s, s.train())[4] == "1: [3,4,5] -> 6");
  CHECK_THROWS_AS(fixture(0), recbole::ConfigError);
}

TEST_CASE("leave-one-out variants and a user with one interaction", "[sequential]") {
  std::vector<int32_t> users{1, 2, 2, 2}, items{5, 1, 2, 3};
  const SequenceStore v =
      SequenceStore::from_ordered(3, users, items, leave_one_out("valid_only"), 50);
  CHECK(v.train().size() == 1);
  CHECK(v.valid().size() == 1);
  CHECK(v.test().size() == 0);
  CHECK(v.short_users().one == 1);  // user 1: no sample at all
  const SequenceStore t =
      SequenceStore::from_ordered(3, users, items, leave_one_out("test_only"), 50);
  CHECK(t.test().size() == 1);
  CHECK(t.valid().size() == 0);
}

TEST_CASE("a batch cuts each sample's prefix from the stored sequence", "[sequential]") {
  const SequenceStore s = fixture(4);
  const recbole::data::Batch b = recbole::tasks::sequence_batch(s, s.train(), {4, 0, 8});
  REQUIRE(recbole::models::layers::item_seq(b).sizes() ==
          torch::IntArrayRef({3, 4}));  // always MAX_ITEM_LIST_LENGTH wide
  CHECK(torch::equal(
      recbole::models::layers::item_seq(b),
      torch::tensor({2, 3, 4, 5, 1, 0, 0, 0, 3, 0, 0, 0}, torch::kInt64).view({3, 4})));
  CHECK(torch::equal(recbole::models::layers::item_seq_len(b),
                     torch::tensor({4, 1, 1}, torch::kInt64)));
  CHECK(torch::equal(b.items, torch::tensor({6, 2, 4}, torch::kInt64)));
  CHECK(torch::equal(b.users, torch::tensor({1, 1, 4}, torch::kInt64)));
}

TEST_CASE("the next-item source gives every training sample once an epoch, and resumes",
          "[sequential]") {
  const SequenceStore s = fixture();
  recbole::tasks::SourceSettings settings;
  settings.batch_size = 4;
  std::vector<int64_t> counts(9, 1);
  auto source = recbole::tasks::make_next_item_source(s, 9, counts, settings);
  REQUIRE(source->batches_per_epoch() == 3);
  source->start_epoch(2);
  std::multiset<int64_t> targets;
  std::vector<recbole::data::Batch> batches;
  recbole::data::Batch b;
  while (source->next(b)) {
    CHECK_FALSE(b.neg_items.defined());  // CE: no negatives
    for (int64_t r = 0; r < b.size(); ++r) targets.insert(b.items[r].item<int64_t>());
    batches.push_back(b);
  }
  CHECK(targets == std::multiset<int64_t>({2, 3, 4, 5, 6, 5, 6, 5, 4}));
  // Skipping two batches gives the third as it was.
  source->start_epoch(2);
  source->skip_batches(2);
  REQUIRE(source->next(b));
  CHECK(torch::equal(recbole::models::layers::item_seq(b),
                     recbole::models::layers::item_seq(batches[2])));

  // BPR: one negative per sample, never the sample's own target.
  settings.negatives.distribution = "uniform";
  auto pairs = recbole::tasks::make_next_item_source(s, 9, counts, settings);
  pairs->start_epoch(0);
  while (pairs->next(b)) {
    REQUIRE(b.neg_items.defined());
    for (int64_t r = 0; r < b.size(); ++r) {
      const int64_t neg = b.neg_items[r].item<int64_t>();
      CHECK(neg >= 1);
      CHECK(neg < 9);
      CHECK(neg != b.items[r].item<int64_t>());
    }
  }
}

TEST_CASE("dynamic sampling scores a next-item sample's candidates after its own sequence",
          "[sequential]") {
  const SequenceStore s = fixture();
  std::vector<int64_t> counts(9, 1);
  // A scorer that prefers high item ids and keeps what it was asked.
  std::vector<recbole::data::Batch> asked;
  int64_t told = 0;  // the candidate_num the scorer was told
  auto scorer = [&](const recbole::data::Batch& b, int64_t candidates) {
    told = candidates;
    asked.push_back(b);
    return b.items.to(torch::kFloat32);
  };
  auto walk = [&](int64_t candidates) {
    recbole::tasks::SourceSettings settings;
    settings.batch_size = 4;
    settings.negatives.distribution = "uniform";
    settings.negatives.candidate_num = candidates;
    auto source = recbole::tasks::make_next_item_source(s, 9, counts, settings);
    REQUIRE(source->set_candidate_scorer(scorer) == (candidates > 0));
    source->start_epoch(1);
    std::vector<recbole::data::Batch> batches;
    recbole::data::Batch b;
    while (source->next(b)) batches.push_back(b);
    return batches;
  };
  const auto fixed = walk(0);
  REQUIRE(asked.empty());
  const auto one = walk(1);  // one candidate: the static draw, scored and kept
  for (size_t k = 0; k < fixed.size(); ++k)
    CHECK(torch::equal(one[k].neg_items, fixed[k].neg_items));
  asked.clear();
  const auto dynamic = walk(3);
  REQUIRE(asked.size() == fixed.size());
  CHECK(told == 3);
  int64_t better = 0;
  for (size_t k = 0; k < dynamic.size(); ++k) {
    const recbole::data::Batch &b = dynamic[k], &c = asked[k];
    const int64_t n = b.size();
    REQUIRE(c.size() == 3 * n);
    for (int64_t j = 0; j < n; ++j) {
      int64_t best = 0;
      for (int64_t m = 0; m < 3; ++m) {
        // Candidate m of sample j comes with sample j's input sequence and user.
        CHECK(torch::equal(recbole::models::layers::item_seq(c)[m * n + j],
                           recbole::models::layers::item_seq(b)[j]));
        CHECK(recbole::models::layers::item_seq_len(c)[m * n + j].item<int64_t>() ==
              recbole::models::layers::item_seq_len(b)[j].item<int64_t>());
        CHECK(c.users[m * n + j].item<int64_t>() == b.users[j].item<int64_t>());
        const int64_t item = c.items[m * n + j].item<int64_t>();
        CHECK(item != b.items[j].item<int64_t>());  // never the sample's own target
        best = std::max(best, item);
      }
      CHECK(c.items[j].item<int64_t>() == fixed[k].neg_items[j].item<int64_t>());
      CHECK(b.neg_items[j].item<int64_t>() == best);
      better += best > fixed[k].neg_items[j].item<int64_t>();
    }
  }
  CHECK(better > 0);
}

namespace {

recbole::config::Config seq_config(std::vector<std::pair<std::string, std::string>> extra = {},
                                   const std::string& model = "SASRec") {
  recbole::config::ConfigSources src;
  src.model = model;
  src.dataset = "ml-100k";
  src.api_overrides = {{"data_path", recbole::data::testing::shared_datasets_path()}};
  src.api_overrides.insert(src.api_overrides.end(), extra.begin(), extra.end());
  return recbole::config::Config::build(src);
}

std::string config_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const recbole::ConfigError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("the sequential preset applies to sequential models only", "[sequential]") {
  const auto c = seq_config();
  CHECK(c.get_bool("repeatable"));
  CHECK(c.node("eval_args")["order"].as<std::string>() == "TO");
  CHECK(c.node("eval_args")["split"]["LS"].as<std::string>() == "valid_and_test");
  CHECK(c.get_int("MAX_ITEM_LIST_LENGTH") == 50);
  const auto general = seq_config({}, "BPR");
  CHECK_FALSE(general.get_bool("repeatable"));
  CHECK(general.node("eval_args")["order"].as<std::string>() == "RO");
  // A user value wins over the preset.
  CHECK(seq_config({{"MAX_ITEM_LIST_LENGTH", "20"}}).get_int("MAX_ITEM_LIST_LENGTH") == 20);
  CHECK(config_error([] {
          seq_config({{"MAX_ITEM_LIST_LENGTH", "0"}});
        }).find("MAX_ITEM_LIST_LENGTH") != std::string::npos);
}

TEST_CASE("ml-100k with the sequential preset: RecBole's split sizes and the first user's samples",
          "[sequential][ml-100k]") {
  const auto c = seq_config();
  const auto ds = recbole::data::Dataset::load(recbole::data::DatasetOptions::from_config(c));
  const recbole::tasks::SequentialPipeline p(c, ds);
  CHECK(p.store().train().size() == 97171);
  CHECK(p.store().valid().size() == 943);
  CHECK(p.store().test().size() == 943);
  CHECK(p.split_sizes().train == 97171);

  // User 196 (the file's first user, id 1): its 39 items in time order, written out from the
  // file by hand; the training samples are its prefixes up to the third-last item.
  const std::vector<std::string> seq = {"242",  "286",  "269", "306", "340",  "1022", "251", "257",
                                        "1007", "1241", "428", "381", "202",  "8",    "116", "285",
                                        "655",  "111",  "238", "153", "173",  "70",   "382", "393",
                                        "287",  "663",  "66",  "845", "25",   "13",   "762", "67",
                                        "692",  "580",  "411", "108", "1118", "94",   "110"};
  const int32_t user = ds.user_id("196");
  REQUIRE(user == 1);
  const SequenceSamples& train = p.store().train();
  std::vector<int64_t> rows;
  for (int64_t k = 0; k < train.size(); ++k)
    if (train.users[k] == user) rows.push_back(k);
  REQUIRE(rows.size() == 36);
  const recbole::data::Batch b = recbole::tasks::sequence_batch(p.store(), train, rows);
  REQUIRE(recbole::models::layers::item_seq(b).size(1) == 50);
  auto token = [&](const torch::Tensor& t) {
    return ds.item_token(static_cast<int32_t>(t.item<int64_t>()));
  };
  // The first three by hand: [242] → 286, [242, 286] → 269, [242, 286, 269] → 306.
  CHECK(token(b.items[0]) == "286");
  CHECK(token(recbole::models::layers::item_seq(b)[0][0]) == "242");
  CHECK(recbole::models::layers::item_seq(b)[0][1].item<int64_t>() == 0);
  CHECK(token(b.items[2]) == "306");
  CHECK(recbole::models::layers::item_seq_len(b)[2].item<int64_t>() == 3);
  for (size_t t = 0; t < rows.size(); ++t) {
    INFO("sample " << t);
    CHECK(token(b.items[t]) == seq[t + 1]);
    REQUIRE(recbole::models::layers::item_seq_len(b)[t].item<int64_t>() ==
            static_cast<int64_t>(t + 1));
    for (size_t j = 0; j <= t; ++j)
      CHECK(token(recbole::models::layers::item_seq(b)[t][j]) == seq[j]);
  }
  // Valid and test: the prefixes before the last two items.
  const auto& valid = p.store().valid();
  for (int64_t k = 0; k < valid.size(); ++k)
    if (valid.users[k] == user) CHECK(ds.item_token(valid.targets[k]) == "94");
}

TEST_CASE("bad sequential input is a ConfigError naming the key", "[sequential][ml-100k]") {
  // No time field loaded.
  const auto no_time = seq_config({{"load_col", "{inter: [user_id, item_id]}"}});
  const auto ds = recbole::data::Dataset::load(recbole::data::DatasetOptions::from_config(no_time));
  CHECK(config_error([&] {
          recbole::tasks::SequentialPipeline p(no_time, ds);
        }).find("TIME_FIELD") != std::string::npos);
  // Random order.
  const auto ro = seq_config({{"eval_args", "{split: {LS: valid_and_test}, order: RO}"}});
  const auto ds2 = recbole::data::Dataset::load(recbole::data::DatasetOptions::from_config(ro));
  CHECK(config_error([&] { recbole::tasks::SequentialPipeline p(ro, ds2); }).find("order") !=
        std::string::npos);
  // repeatable false.
  const auto base = seq_config();
  const auto ds3 = recbole::data::Dataset::load(recbole::data::DatasetOptions::from_config(base));
  const auto rep = seq_config({{"repeatable", "false"}});
  CHECK(config_error([&] { recbole::tasks::SequentialPipeline p(rep, ds3); }).find("repeatable") !=
        std::string::npos);
  // CE with negatives set by the user (RecBole refuses it); the default gives way.
  const auto ce = seq_config({{"train_neg_sample_args", "{distribution: uniform, sample_num: 1}"}});
  const recbole::tasks::SequentialPipeline p(ce, ds3);
  CHECK(config_error([&] {
          p.training_source(recbole::models::InputType::kNextItem, "SASRec", 0, 1);
        }).find("train_neg_sample_args") != std::string::npos);
}
