// alias_of_entity_id / alias_of_relation_id (fields remapped into the knowledge graph's ids) and
// preload_weight (dense matrices of per-id values), on tiny atomic files written per test.
#include <catch2/catch.hpp>

#include <functional>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "data_test_util.h"
#include "recbole/data/dataset.h"
#include "recbole/data/preload_weight.h"
#include "recbole/utils/error.h"

using namespace recbole::data;
using recbole::data::testing::TempDir;

namespace {

using Cols = std::map<std::string, std::vector<std::string>>;

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const recbole::Error& e) {
    return e.what();
  }
  return "";
}

bool contains(const std::string& text, std::initializer_list<const char*> parts) {
  for (const char* p : parts)
    if (text.find(p) == std::string::npos) return false;
  return true;
}

// A knowledge dataset "k": items i1..i3 linked to m1..m3; the other entities g1, g2 (ids 4, 5
// after the merge); relations r1, r2. ents (token_seq) and rel (token) of the .inter, and ent of
// the .item, hold KG tokens, some of them unknown (e9, rX, e7) or missing.
struct KgFixture {
  TempDir dir;
  KgFixture() {
    dir.write("k/k.inter",
              "user_id:token\titem_id:token\tents:token_seq\trel:token\tw:float\n"
              "u1\ti1\tm2 g1\tr1\t1\nu1\ti2\te9\tr2\t2\nu2\ti1\t\trX\t3\nu2\ti3\tg2\t\t4\n");
    dir.write("k/k.item",
              "item_id:token\tent:token\tew:float\ni1\tg1\t0.5\ni2\tm3\t2\ni3\te7\t1\n");
    dir.write("k/k.kg",
              "head_id:token\trelation_id:token\ttail_id:token\nm1\tr1\tg1\nm2\tr2\tg1\n"
              "m3\tr1\tg2\n");
    dir.write("k/k.link", "item_id:token\tentity_id:token\ni1\tm1\ni2\tm2\ni3\tm3\n");
  }
  DatasetOptions options() const {
    DatasetOptions o;
    o.dataset = "k";
    o.data_path = dir.path();
    o.load_col = Cols{{"inter", {"user_id", "item_id", "ents", "rel", "w"}},
                      {"item", {"item_id", "ent", "ew"}},
                      {"kg", {"head_id", "relation_id", "tail_id"}},
                      {"link", {"item_id", "entity_id"}}};
    return o;
  }
};

// A dataset "p" for preload_weight: items i1, i2, i5 (only in .inter) and i4 (only in .item)
// get ids 1, 2, 3, 4. vec is a float_seq of at most 3 values; i4's w is missing.
struct PreloadFixture {
  TempDir dir;
  explicit PreloadFixture(const std::string& inter =
                              "user_id:token\titem_id:token\tscore:float\n"
                              "u1\ti1\t1\nu1\ti2\t2\nu2\ti5\t1.5\nu2\ti1\t1\n") {
    dir.write("p/p.inter", inter);
    dir.write("p/p.item",
              "item_id:token\tvec:float_seq\tw:float\tcode:token\tcat:token\n"
              "i2\t0.5 0.25\t3\tk2\tc1\ni1\t1.5\t1\tk1\tc2\ni4\t1 2 3\t\tk4\tc1\n");
  }
  DatasetOptions options(std::vector<std::pair<std::string, std::string>> preload) const {
    DatasetOptions o;
    o.dataset = "p";
    o.data_path = dir.path();
    o.load_col = Cols{{"inter", {"*"}}, {"item", {"*"}}};
    o.filter_inter_by_user_or_item = false;  // i5 stays: an id without a row in the .item file
    o.preload_weight = std::move(preload);
    return o;
  }
};

std::vector<float> values_of(const torch::Tensor& t) {
  const torch::Tensor c = t.contiguous();
  return std::vector<float>(c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
}

}  // namespace

TEST_CASE("alias_of_entity_id and alias_of_relation_id map fields into the KG's ids",
          "[dataset][knowledge]") {
  KgFixture f;
  DatasetOptions o = f.options();
  o.entity_aliases = {"ents", "ent"};
  o.relation_aliases = {"rel"};
  const Dataset ds = Dataset::load(o);
  const KnowledgeGraph& g = *ds.knowledge_graph();
  REQUIRE(g.n_entities() == 6);
  REQUIRE(g.entity_token(4) == "g1");
  REQUIRE(g.entity_token(5) == "g2");
  // A linked entity is its item's id (m2 -> i2 = 2); g1 and g2 keep their KG ids; e9, not in
  // the graph, and an empty cell are the padding id.
  const Column& ents = ds.inter_table().column("ents");
  CHECK(ents.tokens == std::vector<int32_t>({2, 4, 0, 5}));
  CHECK(ents.offsets == std::vector<int64_t>({0, 2, 3, 3, 4}));
  CHECK(ents.vocab->size() == g.n_entities());
  CHECK(ents.vocab->token(4) == "g1");
  // The .item alias, row i = item i after the re-index: g1, m3 (= i3), e7 (unknown).
  CHECK(ds.item_table()->column("ent").tokens == std::vector<int32_t>({0, 4, 3, 0}));
  const Column& rel = ds.inter_table().column("rel");
  CHECK(rel.tokens == std::vector<int32_t>({1, 2, 0, 0}));
  CHECK(rel.vocab->size() == g.n_relations());
  CHECK(rel.vocab->token(2) == "r2");

  // Without the aliases the same fields are id spaces of their own.
  const Dataset plain = Dataset::load(f.options());
  CHECK(plain.inter_table().column("rel").tokens == std::vector<int32_t>({1, 2, 3, 0}));
}

TEST_CASE("alias_of_relation_id maps to the file's relations, never to a reverse one",
          "[dataset][knowledge]") {
  KgFixture f;
  f.dir.write("k/k.inter",
              "user_id:token\titem_id:token\tents:token_seq\trel:token\tw:float\n"
              "u1\ti1\tm2\tr2\t1\nu1\ti2\tm1\tr1_r\t2\nu2\ti3\tm3\t[UI-Relation]\t3\n");
  DatasetOptions o = f.options();
  o.kg.reverse_relations = true;
  o.relation_aliases = {"rel"};
  const Dataset ds = Dataset::load(o);
  const KnowledgeGraph& g = *ds.knowledge_graph();
  REQUIRE(g.n_relations() == 6);  // pad, r1, r2, r1_r, r2_r, [UI-Relation]
  REQUIRE(g.relation_token(3) == "r1_r");
  CHECK(ds.inter_table().column("rel").tokens == std::vector<int32_t>({2, 0, 0}));
}

TEST_CASE("KG aliases: each error names the key and the field", "[dataset][knowledge]") {
  KgFixture f;
  auto load_with = [&](std::vector<std::string> entity, std::vector<std::string> relation,
                       std::vector<std::string> item = {}) {
    return error_of([&] {
      DatasetOptions o = f.options();
      o.entity_aliases = std::move(entity);
      o.relation_aliases = std::move(relation);
      o.item_aliases = std::move(item);
      Dataset::load(o);
    });
  };
  CHECK(contains(load_with({"nothing"}, {}), {"alias_of_entity_id", "nothing", "no loaded"}));
  CHECK(contains(load_with({}, {"w"}), {"alias_of_relation_id", "w", "float", "token"}));
  CHECK(contains(load_with({"head_id"}, {}), {"alias_of_entity_id", "head_id"}));
  CHECK(contains(load_with({}, {"relation_id"}), {"alias_of_relation_id", "relation_id"}));
  CHECK(contains(load_with({"ents"}, {"ents"}), {"alias_of_relation_id", "ents", "alias list"}));
  CHECK(contains(load_with({"ent"}, {}, {"ent"}), {"alias_of_entity_id", "ent", "alias list"}));
  CHECK(contains(load_with({"ents", "ents"}, {}), {"alias_of_entity_id", "ents"}));
  CHECK(contains(load_with({"item_id"}, {}), {"alias_of_entity_id", "item_id", "id field"}));
  // Without a knowledge graph there are no entity ids to share.
  DatasetOptions no_kg = f.options();
  no_kg.load_col = Cols{{"inter", {"user_id", "item_id", "ents"}}};
  no_kg.entity_aliases = {"ents"};
  CHECK(contains(error_of([&] { Dataset::load(no_kg); }),
                 {"alias_of_entity_id", "no knowledge graph"}));
}

TEST_CASE("preload_weight: a matrix per id field, rows by remapped id", "[dataset][preload]") {
  PreloadFixture f;
  const Dataset ds = Dataset::load(f.options({{"item_id", "vec"}, {"code", "w"}}));
  REQUIRE(ds.n_items() == 5);
  REQUIRE(ds.item_id("i5") == 3);
  REQUIRE(ds.item_id("i4") == 4);
  const auto& m = ds.preload_weights().by_field;
  REQUIRE(m.size() == 2);

  // float_seq: width 3 (the longest sequence); row 0 and i5 (not in the .item file) zeros.
  const torch::Tensor vec = m.at("item_id");
  CHECK(vec.sizes() == torch::IntArrayRef({5, 3}));
  CHECK(vec.dtype() == torch::kFloat32);
  CHECK(vec.device().is_cpu());
  CHECK(values_of(vec) == std::vector<float>({0, 0, 0, 1.5, 0, 0, 0.5, 0.25, 0, 0, 0, 0, 1, 2, 3}));

  // A token field of the .item file: code k2, k1, k4 = 1, 2, 3. i4's missing w is filled with
  // the column's mean (1 + 3) / 2 before the matrix is built, as RecBole fills.
  const torch::Tensor code = m.at("code");
  CHECK(code.sizes() == torch::IntArrayRef({4, 1}));
  CHECK(values_of(code) == std::vector<float>({0, 3, 1, 2}));

  // Not set: no matrices.
  CHECK(Dataset::load(f.options({})).preload_weights().by_field.empty());
}

TEST_CASE("preload_weight: values after normalisation, from .inter rows, repeated equal rows",
          "[dataset][preload]") {
  PreloadFixture f;
  DatasetOptions o = f.options({{"code", "w"}});
  o.normalize_field = {"w"};
  // w = 1, 3 and the fill 2 become 0, 1 and 0.5.
  CHECK(values_of(Dataset::load(o).preload_weights().by_field.at("code")) ==
        std::vector<float>({0, 1, 0, 0.5}));

  // item_id and score are both columns of the .inter file (item_id of the .item file too): i1
  // has two rows of the same score; i4 has no interaction.
  const Dataset inter = Dataset::load(f.options({{"item_id", "score"}}));
  CHECK(values_of(inter.preload_weights().by_field.at("item_id")) ==
        std::vector<float>({0, 1, 2, 1.5, 0}));
}

TEST_CASE("preload_weight: an entity alias id field has a row per entity",
          "[dataset][preload][knowledge]") {
  KgFixture f;
  DatasetOptions o = f.options();
  o.entity_aliases = {"ent"};
  o.preload_weight = {{"ent", "ew"}};
  const Dataset ds = Dataset::load(o);
  // ent: g1 (4) = 0.5, m3 (i3 = 3) = 2, e7 (not in the graph: the padding) has no row.
  CHECK(values_of(ds.preload_weights().by_field.at("ent")) ==
        std::vector<float>({0, 0, 0, 2, 0.5, 0}));
}

TEST_CASE("preload_weight: each error names the key, the fields and the file",
          "[dataset][preload]") {
  PreloadFixture f;
  auto error_with = [&](std::vector<std::pair<std::string, std::string>> preload) {
    return error_of([&] { Dataset::load(f.options(std::move(preload))); });
  };
  CHECK(contains(error_with({{"nope", "vec"}}), {"preload_weight", "nope", "not a loaded"}));
  CHECK(contains(error_with({{"item_id", "nope"}}), {"preload_weight", "nope", "not a loaded"}));
  CHECK(contains(error_with({{"user_id", "vec"}}),
                 {"preload_weight", "user_id", "vec", "p.inter", "p.item", "one file"}));
  CHECK(contains(error_with({{"vec", "w"}}),
                 {"preload_weight", "p.item", "vec", "float_seq", "expected token"}));
  CHECK(contains(error_with({{"item_id", "cat"}}),
                 {"preload_weight", "p.item", "cat", "expected float or float_seq"}));
  // An id with two different values.
  PreloadFixture twice(
      "user_id:token\titem_id:token\tscore:float\n"
      "u1\ti1\t1\nu1\ti2\t2\nu2\ti1\t4\n");
  const std::string e = error_of([&] { Dataset::load(twice.options({{"item_id", "score"}})); });
  CHECK(contains(e, {"preload_weight", "p.inter", "item_id i1", "score", "one value per id"}));
  // The .item file's own duplicate: c1 has the w values 3 and (missing).
  CHECK(contains(error_with({{"cat", "w"}}), {"preload_weight", "p.item", "cat c1", "w"}));
}

TEST_CASE("preload_weight and the KG aliases are read from the config", "[dataset][preload]") {
  const auto options = [](std::vector<std::pair<std::string, std::string>> overrides) {
    overrides.push_back({"data_path", testing::shared_datasets_path()});
    return DatasetOptions::from_config(testing::config_of("ml-100k", std::move(overrides)));
  };
  const DatasetOptions o = options({{"preload_weight", "{item_id: vec, code: w}"},
                                    {"alias_of_entity_id", "[a, b]"},
                                    {"alias_of_relation_id", "[r]"}});
  const std::vector<std::pair<std::string, std::string>> pairs = {{"item_id", "vec"},
                                                                  {"code", "w"}};
  CHECK(o.preload_weight == pairs);
  CHECK(o.entity_aliases == std::vector<std::string>({"a", "b"}));
  CHECK(o.relation_aliases == std::vector<std::string>({"r"}));
  for (const char* bad : {"[item_id]", "{item_id: item_id}", "{item_id: [a, b]}"}) {
    INFO(bad);
    CHECK(contains(error_of([&] { options({{"preload_weight", bad}}); }), {"preload_weight"}));
  }
}
