// The params file (RecBole's hyper.test format): a good file read completely, and each kind of
// mistake reported with its file:line and what was expected.
#include <catch2/catch.hpp>

#include <string>

#include "recbole/config/model_keys.h"
#include "recbole/utils/error.h"
#include "run/experiment/search_space.h"

using recbole::experiment::Distribution;
using recbole::experiment::parse_search_space;

namespace {

// This binary has no models (no libtorch): two stand-ins declare their keys the way models do,
// so that the check sees model keys as recbole_run would.
recbole::experiment::KeyCheck test_model_check() {
  using recbole::config::Key;
  using recbole::config::KeyType;
  recbole::config::register_model_keys(
      "HyperTestModel",
      {Key("embedding_size", KeyType::kInt).min(1), Key("n_layers", KeyType::kInt).min(1),
       Key("dropout_prob", KeyType::kFloat).min(0), Key("mlp_hidden_size", KeyType::kIntList)});
  recbole::config::register_model_keys("OtherTestModel", {Key("reg_weight", KeyType::kFloat)});
  return recbole::experiment::config_key_check("HyperTestModel");
}

// The message of the ConfigError that parsing `text` as "hyper.test" raises ("" if none).
std::string error_of(const std::string& text) {
  try {
    parse_search_space(text, "hyper.test", test_model_check());
  } catch (const recbole::ConfigError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("a params file with every distribution, comments and blank lines") {
  const std::string text =
      "# RecBole's example\n"
      "learning_rate loguniform -8,0\n"
      "\n"
      "embedding_size choice [32,64,128]   # sizes\n"
      "dropout_prob uniform 0, 0.5\n"
      "n_layers quniform 1,4,1\n"
      "learner choice ['adam', \"sgd\"]\n";
  const auto space = parse_search_space(text, "hyper.test", test_model_check());
  REQUIRE(space.params.size() == 5);
  const auto& lr = space.params[0];
  CHECK(lr.name == "learning_rate");
  CHECK(lr.kind == Distribution::kLogUniform);
  CHECK(lr.args == std::vector<double>{-8, 0});
  CHECK(lr.where == "hyper.test:2");
  const auto& emb = space.params[1];
  CHECK(emb.kind == Distribution::kChoice);
  REQUIRE(emb.values.size() == 3);
  CHECK(emb.values[0].is_number_integer());
  CHECK(emb.values[2].get<int>() == 128);
  CHECK(emb.where == "hyper.test:4");
  CHECK(space.params[2].args == std::vector<double>{0, 0.5});
  CHECK(space.params[3].kind == Distribution::kQUniform);
  CHECK(space.params[3].args == std::vector<double>{1, 4, 1});
  CHECK(space.params[4].values == std::vector<nlohmann::json>{"adam", "sgd"});

  // trials.json's "params": ranges as args (integers stay integers), choices as values.
  const nlohmann::json j = space.to_json();
  CHECK(j[0] == nlohmann::json::parse(R"({"name":"learning_rate","kind":"loguniform",
                                          "args":[-8,0]})"));
  CHECK(j[1] == nlohmann::json::parse(R"({"name":"embedding_size","kind":"choice",
                                          "values":[32,64,128]})"));
  CHECK(j[3]["args"].dump() == "[1,4,1]");
}

TEST_CASE("choice values: numbers, quoted strings, booleans and lists, as recbole_run reads them") {
  const auto space = parse_search_space(
      "learning_rate choice [1e-3, 0.01]\n"
      "embedding_size choice ['64', 128]\n"
      "mlp_hidden_size choice ['[64,64]', [128, 32]]\n"
      "reproducibility choice [true, false]\n",
      "h", test_model_check());
  using recbole::experiment::value_text;
  CHECK(space.params[0].values[0].is_number_float());
  CHECK(value_text(space.params[0].values[0]) == "0.001");
  CHECK(space.params[1].values[0].is_string());  // quoted: kept as text
  CHECK(value_text(space.params[1].values[0]) == "64");
  // RecBole's quoted list is passed through as written, so recbole_run reads it as a list.
  CHECK(value_text(space.params[2].values[0]) == "[64,64]");
  CHECK(value_text(space.params[2].values[1]) == "[128,32]");
  CHECK(value_text(space.params[3].values[0]) == "true");
}

TEST_CASE("params file errors name file:line and what was expected") {
  SECTION("unknown distribution") {
    const std::string e = error_of("\nlearning_rate normal 0,1\n");
    CHECK_THAT(e,
               Catch::StartsWith("hyper.test:2: learning_rate: unknown distribution \"normal\""));
    CHECK_THAT(e, Catch::Contains("choice, uniform, loguniform, quniform"));
  }
  SECTION("a range that is not two numbers") {
    const std::string e = error_of("learning_rate loguniform -8\n");
    CHECK_THAT(e, Catch::StartsWith("hyper.test:1: learning_rate loguniform: expected 2 numbers "
                                    "low,high, got \"-8\""));
    CHECK_THAT(error_of("dropout_prob uniform 0,x\n"),
               Catch::StartsWith("hyper.test:1: dropout_prob uniform: expected 2 numbers"));
    CHECK_THAT(error_of("dropout_prob uniform 0,0.2,0.4\n"),
               Catch::StartsWith("hyper.test:1: dropout_prob uniform: expected 2 numbers"));
  }
  SECTION("quniform needs three numbers and q > 0") {
    CHECK_THAT(error_of("n_layers quniform 1,4\n"),
               Catch::StartsWith("hyper.test:1: n_layers quniform: expected 3 numbers "
                                 "low,high,q, got \"1,4\""));
    CHECK_THAT(error_of("n_layers quniform 1,4,0\n"),
               Catch::StartsWith("hyper.test:1: n_layers quniform: expected q > 0, got \"1,4,0\""));
  }
  SECTION("low must be below high") {
    CHECK_THAT(error_of("# c\ndropout_prob uniform 0.5,0.1\n"),
               Catch::StartsWith("hyper.test:2: dropout_prob uniform: expected low < high, got "
                                 "\"0.5,0.1\""));
    CHECK_THAT(error_of("learning_rate loguniform 0,0\n"), Catch::Contains("expected low < high"));
  }
  SECTION("an empty or malformed choice") {
    CHECK_THAT(error_of("embedding_size choice []\n"),
               Catch::StartsWith("hyper.test:1: embedding_size choice: expected a non-empty list "
                                 "of values"));
    CHECK_THAT(error_of("embedding_size choice 32\n"),
               Catch::StartsWith("hyper.test:1: embedding_size choice: expected a non-empty list"));
    CHECK_THAT(error_of("embedding_size choice [32,\n"),
               Catch::StartsWith("hyper.test:1: embedding_size choice: expected a non-empty list"));
  }
  SECTION("a parameter given twice") {
    CHECK(error_of("embedding_size choice [8]\nlearning_rate choice [0.1]\n"
                   "embedding_size choice [16]\n") ==
          "hyper.test:3: embedding_size: given twice (first at hyper.test:1)");
  }
  SECTION("a name that is no config key, with the nearest key suggested") {
    CHECK(error_of("learnin_rate choice [0.1]\n") ==
          "hyper.test:1: unknown config key \"learnin_rate\"; did you mean \"learning_rate\"?");
  }
  SECTION("another model's key") {
    CHECK(error_of("reg_weight choice [0.1]\n") ==
          "hyper.test:1: HyperTestModel has no key \"reg_weight\"; its keys: embedding_size, "
          "n_layers, dropout_prob, mlp_hidden_size");
  }
  SECTION("keys each trial sets itself") {
    CHECK_THAT(error_of("model choice [BPR]\n"),
               Catch::StartsWith("hyper.test:1: \"model\" cannot be searched"));
    CHECK_THAT(error_of("valid_metric_bigger choice [true]\n"),
               Catch::StartsWith("hyper.test:1: \"valid_metric_bigger\" is derived"));
  }
  SECTION("a line without values") {
    CHECK_THAT(error_of("learning_rate\n"),
               Catch::StartsWith("hyper.test:1: expected `<name> <distribution> <values>`"));
  }
  SECTION("no parameter at all") {
    CHECK_THAT(error_of("# nothing\n\n"), Catch::StartsWith("hyper.test: no parameter to search"));
  }
}

TEST_CASE("exhaustive search needs every parameter as a choice") {
  const auto space =
      parse_search_space("embedding_size choice [8,16]\nlearning_rate loguniform -8,0\n",
                         "hyper.test", test_model_check());
  try {
    recbole::experiment::require_all_choices(space);
    FAIL("no error");
  } catch (const recbole::ConfigError& e) {
    CHECK_THAT(e.what(), Catch::StartsWith("hyper.test:2: learning_rate loguniform: exhaustive "
                                           "search needs every parameter as `choice [...]`"));
  }
}

TEST_CASE("read_search_space names a missing file") {
  CHECK_THROWS_WITH(
      recbole::experiment::read_search_space("/nonexistent/hyper.test", test_model_check()),
      "--params_file: cannot read \"/nonexistent/hyper.test\"");
}
