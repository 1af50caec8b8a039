// The knowledge task's data: the preset a knowledge model gets, ml-100k's knowledge graph and
// splits as RecBole has them (issue 26's figures), the id merge of items and entities, the KG
// batches beside the recommendation batches, and clear errors for bad KG input.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <string>

#include <torch/torch.h>

#include "models/layers/knowledge.h"
#include "recbole/config/config.h"
#include "recbole/data/dataset.h"
#include "recbole/data/split.h"
#include "recbole/utils/error.h"
#include "tasks/knowledge/knowledge_pipeline.h"
#include "tasks/task_family.h"
#include "tests/tasks/pipeline_fixture.h"

using recbole::config::Config;
using recbole::config::ConfigSources;
using recbole::testing::error_of;
using recbole::testing::shared_datasets;

namespace {

Config kg_config(const std::string& model, const std::string& dataset, const std::string& data_path,
                 std::vector<std::pair<std::string, std::string>> extra = {}) {
  ConfigSources s;
  s.model = model;
  s.dataset = dataset;
  s.api_overrides = {{"data_path", data_path}};
  for (auto& kv : extra) s.api_overrides.push_back(kv);
  return Config::build(s);
}

recbole::data::Dataset load(const Config& c) {
  return recbole::data::Dataset::load(recbole::data::DatasetOptions::from_config(c));
}

// A folder "kgd" holding kgd.inter, kgd.kg and kgd.link with the given texts (a text left
// empty: no file).
struct KnowledgeDataset {
  std::filesystem::path root;
  KnowledgeDataset(const std::string& inter, const std::string& kg, const std::string& link) {
    root = std::filesystem::temp_directory_path() /
           ("recbole_kg_" + std::to_string(reinterpret_cast<uintptr_t>(this)) + "_" +
            std::to_string(::getpid()));
    std::filesystem::create_directories(root / "kgd");
    std::ofstream(root / "kgd" / "kgd.inter") << inter;
    if (!kg.empty()) std::ofstream(root / "kgd" / "kgd.kg") << kg;
    if (!link.empty()) std::ofstream(root / "kgd" / "kgd.link") << link;
  }
  ~KnowledgeDataset() { std::filesystem::remove_all(root); }
  std::string path() const { return root.string(); }
};

constexpr const char* kInter =
    "user_id:token\titem_id:token\trating:float\ttimestamp:float\n"
    "u1\ti1\t5\t1\nu1\ti2\t4\t2\nu1\ti3\t3\t3\nu2\ti2\t5\t4\nu2\ti4\t2\t5\nu2\ti1\t4\t6\n"
    "u3\ti3\t5\t7\nu3\ti4\t1\t8\nu3\ti1\t2\t9\n";
constexpr const char* kKg =
    "head_id:token\trelation_id:token\ttail_id:token\n"
    "m1\tgenre\tg1\nm2\tgenre\tg1\nm3\tdirected_by\td1\ng1\tgenre_of\tm1\n";
// i4 has no link: its interactions are dropped. i1's entity m1 comes after i2's in the link.
constexpr const char* kLink = "item_id:token\tentity_id:token\ni2\tm2\ni1\tm1\ni3\tm3\n";

}  // namespace

TEST_CASE("a knowledge model on ml-100k gets RecBole's preset, knowledge graph and splits",
          "[pipeline][knowledge]") {
  const Config c = kg_config("CKE", "ml-100k", shared_datasets());
  CHECK(c.node("load_col")["kg"].size() == 3);
  CHECK_FALSE(c.get_bool("kg_reverse_r"));
  const recbole::data::Dataset ds = load(c);
  CHECK(ds.n_users() == 944);
  CHECK(ds.n_items() == 1599);
  CHECK(ds.n_inters() == 97554);
  const recbole::data::KnowledgeGraph* g = ds.knowledge_graph();
  REQUIRE(g != nullptr);
  CHECK(g->n_entities() == 34629);
  CHECK(g->n_relations() == 26);
  CHECK(g->n_triples() == 91631);
  CHECK(g->n_linked_items() == 1598);
  CHECK(g->relation_token(1) == "film.producer.film");  // the first line of ml-100k.kg
  CHECK(g->relation_token(g->ui_relation()) == "[UI-Relation]");
  // Items are the first entities: entity i's token is item i's linked entity, never an item
  // id beyond the items.
  for (int32_t i = 1; i < 5; ++i) CHECK_FALSE(g->entity_token(i).empty());
  const recbole::data::SplitDataset split =
      recbole::data::split_dataset(ds, recbole::data::DatasetOptions::from_config(c));
  CHECK(split.train.size() == 78836);
  CHECK(split.valid.size() == 9359);
  CHECK(split.test.size() == 9359);
  CHECK(ds.summary().find("The number of entities: 34629") != std::string::npos);

  // With reverse relations every triple gets its reverse, and 24 more relation ids.
  const recbole::data::Dataset rev =
      load(kg_config("CKE", "ml-100k", shared_datasets(), {{"kg_reverse_r", "true"}}));
  CHECK(rev.knowledge_graph()->n_relations() == 50);
  CHECK(rev.knowledge_graph()->n_triples() == 2 * 91631);
  CHECK(rev.knowledge_graph()->relation_token(25) == "film.producer.film_r");
}

TEST_CASE("items and entities share ids: linked items first, then the other entities",
          "[pipeline][knowledge]") {
  KnowledgeDataset t(kInter, kKg, kLink);
  const recbole::data::Dataset ds = load(kg_config("CKE", "kgd", t.path()));
  // i4 (no link) and its two interactions are gone; the items keep first-appearance order.
  CHECK(ds.n_inters() == 7);
  REQUIRE(ds.n_items() == 4);
  CHECK(ds.item_token(1) == "i1");
  CHECK(ds.item_token(2) == "i2");
  CHECK(ds.item_token(3) == "i3");
  CHECK(ds.item_id("i4") == -1);
  const recbole::data::KnowledgeGraph& g = *ds.knowledge_graph();
  // Entity i is item i's entity; g1 and d1 follow in order of first appearance (heads, then
  // tails: g1 is a head on line 4 but a tail on line 1, and heads come first).
  REQUIRE(g.n_entities() == 6);
  CHECK(g.entity_token(1) == "m1");
  CHECK(g.entity_token(3) == "m3");
  CHECK(g.entity_token(4) == "g1");
  CHECK(g.entity_token(5) == "d1");
  CHECK(g.n_relations() == 5);  // pad, genre, directed_by, genre_of, [UI-Relation]
  CHECK(g.heads() == std::vector<int32_t>({1, 2, 3, 4}));
  CHECK(g.relations() == std::vector<int32_t>({1, 1, 2, 3}));
  CHECK(g.tails() == std::vector<int32_t>({4, 4, 5, 1}));
}

TEST_CASE("KG batches ride beside the recommendation batches with true negative tails",
          "[pipeline][knowledge]") {
  KnowledgeDataset t(kInter, kKg, kLink);
  const Config c = kg_config("CKE", "kgd", t.path(), {{"train_batch_size", "2"}});
  const recbole::data::Dataset ds = load(c);
  const recbole::data::SplitDataset split =
      recbole::data::split_dataset(ds, recbole::data::DatasetOptions::from_config(c));
  recbole::tasks::KnowledgePipeline p(c, ds, split);
  auto source = p.training_source(recbole::models::InputType::kPairwise, "CKE", 0, 1);
  const recbole::data::KnowledgeGraph& g = *ds.knowledge_graph();
  std::set<std::pair<int64_t, int64_t>> edges;
  for (int64_t k = 0; k < g.n_triples(); ++k)
    edges.insert({g.heads()[size_t(k)], g.tails()[size_t(k)]});
  int64_t batches = 0, triples = 0;
  for (int64_t epoch = 0; epoch < 3; ++epoch) {
    source->start_epoch(epoch);
    recbole::data::Batch b;
    while (source->next(b)) {
      ++batches;
      REQUIRE(b.has(recbole::models::layers::kKgHeads));
      CHECK(b.column(recbole::models::layers::kKgHeads).size(0) <= 2);
      for (int64_t r = 0; r < b.column(recbole::models::layers::kKgHeads).size(0); ++r) {
        const int64_t h = b.column(recbole::models::layers::kKgHeads)[r].item<int64_t>(),
                      n = b.column(recbole::models::layers::kKgNegTails)[r].item<int64_t>();
        CHECK(edges.count({h, b.column(recbole::models::layers::kKgTails)[r].item<int64_t>()}) ==
              1);
        CHECK(n >= 1);
        CHECK(n < g.n_entities());
        CHECK(edges.count({h, n}) == 0);  // not a tail of the head under any relation
        ++triples;
      }
    }
  }
  CHECK(batches == 3 * source->batches_per_epoch());
  CHECK(triples > 0);
  // A model that ignores the KG part gets plain recommendation batches.
  auto plain = p.training_source(recbole::models::InputType::kPairwise, "KGCN", 0, 1);
  plain->start_epoch(0);
  recbole::data::Batch b;
  REQUIRE(plain->next(b));
  CHECK_FALSE(b.has(recbole::models::layers::kKgHeads));
}

TEST_CASE("bad knowledge input gets errors naming the file, row or key", "[pipeline][knowledge]") {
  SECTION("a .kg without one of its three fields") {
    KnowledgeDataset t(kInter, "head_id:token\ttail_id:token\nm1\tg1\n", kLink);
    const std::string e = error_of([&] { load(kg_config("CKE", "kgd", t.path())); });
    CHECK(e.find("kgd.kg") != std::string::npos);
    CHECK(e.find("relation_id") != std::string::npos);
  }
  SECTION("a .link with a malformed line") {
    KnowledgeDataset t(kInter, kKg, "item_id:token\tentity_id:token\ni1\tm1\ni2\n");
    const std::string e = error_of([&] { load(kg_config("CKE", "kgd", t.path())); });
    CHECK(e.find("kgd.link:3") != std::string::npos);
  }
  SECTION("an item linked to two entities") {
    KnowledgeDataset t(kInter, kKg, "item_id:token\tentity_id:token\ni1\tm1\ni1\tm2\n");
    const std::string e = error_of([&] { load(kg_config("CKE", "kgd", t.path())); });
    CHECK(e.find("kgd.link") != std::string::npos);
    CHECK(e.find("item i1 is linked to entity m1") != std::string::npos);
    CHECK(e.find("one entity per item") != std::string::npos);
  }
  SECTION("an entity linked to two items") {
    KnowledgeDataset t(kInter, kKg, "item_id:token\tentity_id:token\ni1\tm1\ni2\tm1\n");
    const std::string e = error_of([&] { load(kg_config("CKE", "kgd", t.path())); });
    CHECK(e.find("entity m1 is linked to item i1") != std::string::npos);
  }
  SECTION("a relation filter that leaves no triple") {
    KnowledgeDataset t(kInter, kKg, kLink);
    const std::string e = error_of([&] {
      load(kg_config("CKE", "kgd", t.path(), {{"relation_kg_num_interval", "[10,inf)"}}));
    });
    CHECK(e.find("kgd.kg") != std::string::npos);
    CHECK(e.find("relation_kg_num_interval") != std::string::npos);
    CHECK(e.find("no triple left") != std::string::npos);
  }
  SECTION("a knowledge model on a dataset without a .kg file") {
    KnowledgeDataset t(kInter, "", kLink);
    const std::string e = error_of([&] { load(kg_config("CKE", "kgd", t.path())); });
    CHECK(e.find("kgd.kg: file not found") != std::string::npos);
  }
  SECTION("a knowledge model whose load_col leaves the graph out") {
    KnowledgeDataset t(kInter, kKg, kLink);
    const Config c =
        kg_config("CKE", "kgd", t.path(), {{"load_col", "{inter: [user_id, item_id]}"}});
    const recbole::data::Dataset ds = load(c);
    const recbole::data::SplitDataset split =
        recbole::data::split_dataset(ds, recbole::data::DatasetOptions::from_config(c));
    const std::string e = error_of([&] { recbole::tasks::KnowledgePipeline(c, ds, split); });
    CHECK(e.find("load_col") != std::string::npos);
    CHECK(e.find("knowledge model") != std::string::npos);
  }
  SECTION("interactions whose items all lack a link") {
    KnowledgeDataset t(kInter, kKg, "item_id:token\tentity_id:token\ni9\tm1\n");
    const std::string e = error_of([&] { load(kg_config("CKE", "kgd", t.path())); });
    CHECK(e.find("kgd.inter") != std::string::npos);
    CHECK(e.find("link") != std::string::npos);
  }
}

TEST_CASE("alias_of_item_id remaps a field together with the item ids", "[pipeline][knowledge]") {
  KnowledgeDataset t(
      "user_id:token\titem_id:token\tprev_item:token\nu1\ti1\ti9\nu1\ti2\ti1\nu2\ti2\ti1\n", "",
      "");
  const recbole::data::Dataset ds =
      load(kg_config("BPR", "kgd", t.path(),
                     {{"load_col", "{inter: [user_id, item_id, prev_item]}"},
                      {"alias_of_item_id", "[prev_item]"}}));
  // i9 occurs only in the alias column and still becomes an item (RecBole's meaning).
  CHECK(ds.n_items() == 4);
  CHECK(ds.item_id("i9") == 3);
  const auto& prev = ds.inter_table().column("prev_item");
  CHECK(prev.tokens == std::vector<int32_t>({3, 1, 1}));
  CHECK(error_of([&] {
          load(kg_config("BPR", "kgd", t.path(), {{"alias_of_item_id", "[nothing]"}}));
        }).find("alias_of_item_id") != std::string::npos);
}

TEST_CASE("preload_weight reaches the model context of the general and knowledge tasks",
          "[pipeline][knowledge]") {
  KnowledgeDataset t(
      "user_id:token\titem_id:token\tw:float\nu1\ti1\t0.5\nu1\ti2\t2\nu2\ti2\t2\n"
      "u2\ti3\t4\nu3\ti1\t0.5\nu3\ti3\t4\n",
      kKg, "item_id:token\tentity_id:token\ni1\tm1\ni2\tm2\ni3\tm3\n");
  for (const std::string model : {"BPR", "CKE"}) {
    INFO(model);
    std::vector<std::pair<std::string, std::string>> extra{{"preload_weight", "{item_id: w}"}};
    if (model == "BPR")
      extra.push_back({"load_col", "{inter: [user_id, item_id, w]}"});
    else
      extra.push_back({"load_col",
                       "{inter: [user_id, item_id, w], kg: [head_id, relation_id, "
                       "tail_id], link: [item_id, entity_id]}"});
    const Config c = kg_config(model, "kgd", t.path(), extra);
    const recbole::data::Dataset ds = load(c);
    const recbole::tasks::TaskFamily& family =
        recbole::tasks::find_family(model == "BPR" ? "general" : "knowledge");
    const auto task = recbole::tasks::make_task_pipeline(family, c, ds, family.split(c, ds));
    recbole::DeviceManager device;
    const recbole::models::ModelContext ctx = task->model_context(device);
    REQUIRE(ctx.preload_weights != nullptr);
    const torch::Tensor w = ctx.preload_weights->at("item_id");
    REQUIRE(w.sizes() == torch::IntArrayRef({4, 1}));
    CHECK(w[ds.item_id("i1")][0].item<float>() == 0.5f);
    CHECK(w[ds.item_id("i2")][0].item<float>() == 2.0f);
    CHECK(w[ds.item_id("i3")][0].item<float>() == 4.0f);
    CHECK(w[0][0].item<float>() == 0.0f);
  }
}
