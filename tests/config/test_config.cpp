// Tests of the configuration system: layers and precedence, completion of eval_args and
// train_neg_sample_args, typed values from every source, error messages (file:line, key,
// expectation, suggestion), the dump, and the consistency of declarations with the YAML files.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "recbole/config/config.h"
#include "recbole/config/config_keys.h"
#include "recbole/config/embedded_configs.h"
#include "recbole/config/model_keys.h"
#include "recbole/utils/error.h"

namespace fs = std::filesystem;
using recbole::ConfigError;
using namespace recbole::config;

namespace {

// A fresh folder under the system temp dir, removed at the end of the test.
class TempDir {
 public:
  TempDir() {
    static std::atomic<int> counter{0};
    path_ = fs::temp_directory_path() /
            ("recbole_config_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string write(const std::string& name, const std::string& text) const {
    fs::path p = path_ / name;
    std::ofstream(p) << text;
    return p.string();
  }

 private:
  fs::path path_;
};

// The message of the ConfigError that `f` throws ("" when it throws none).
template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

Config build_with(std::vector<std::string> files = {},
                  std::vector<std::pair<std::string, std::string>> api = {},
                  std::vector<std::pair<std::string, std::string>> cli = {}, std::string model = "",
                  std::string dataset = "") {
  ConfigSources s;
  s.config_files = std::move(files);
  s.api_overrides = std::move(api);
  s.command_line = std::move(cli);
  s.model = std::move(model);
  s.dataset = std::move(dataset);
  return Config::build(s);
}

// True when `source` is "<embedded file>:<line>" and that line of the file sets `key`.
bool points_at_key(const std::string& source, const std::string& file, const std::string& key) {
  if (source.rfind(file + ":", 0) != 0) return false;
  int line = std::stoi(source.substr(file.size() + 1));
  std::istringstream in(*embedded_file(file));
  std::string text;
  for (int i = 0; i < line && std::getline(in, text); ++i) {
  }
  return text.rfind(key + ":", 0) == 0;
}

YAML::Node embedded_yaml(const std::string& path) { return YAML::Load(*embedded_file(path)); }

}  // namespace

TEST_CASE("defaults come from the embedded overall.yaml with file:line sources", "[config]") {
  Config c = build_with();
  CHECK(c.get_int("epochs") == 300);
  CHECK(c.get_double("learning_rate") == Approx(0.001));
  CHECK(c.get_string("device") == "auto");
  CHECK(c.get_int("eval_memory_budget_mb") == 256);
  CHECK(c.get_bool("fast_bpr"));
  CHECK(c.is_null("result_file"));
  CHECK(c.has("result_file"));
  CHECK_FALSE(c.has("embedding_size"));  // no model: no model keys
  CHECK(c.model().empty());
  CHECK(points_at_key(c.source("epochs"), "configs/overall.yaml", "epochs"));
  CHECK(points_at_key(c.source("field_separator"), "configs/dataset/default.yaml",
                      "field_separator"));
  CHECK(c.get_string("field_separator") == "\t");
  CHECK(c.get_string_list("metrics") ==
        std::vector<std::string>{"Recall", "MRR", "NDCG", "Hit", "Precision"});
  CHECK(c.get_int_list("topk") == std::vector<int64_t>{10});
}

TEST_CASE("precedence across all layers", "[config]") {
  TempDir dir;
  std::string a = dir.write("a.yaml",
                            "epochs: 5\n"
                            "learning_rate: 0.01\n"
                            "train_batch_size: 50\n");
  std::string b = dir.write("b.yaml",
                            "learning_rate: 0.02\n"
                            "embedding_size: 32\n"
                            "normalize_all: false\n"
                            "train_batch_size: 100\n"
                            "stopping_step: 1\n");
  Config c = build_with({a, b}, {{"train_batch_size", "200"}, {"stopping_step", "3"}},
                        {{"stopping_step", "4"}}, "BPR", "ml-100k");

  // Layer 1, overall.yaml: untouched keys.
  CHECK(c.get_int("eval_batch_size") == 4096);
  CHECK(points_at_key(c.source("eval_batch_size"), "configs/overall.yaml", "eval_batch_size"));
  // Layer 3, dataset/default.yaml, where the dataset file says nothing more.
  // Layer 4, ml-100k.yaml over dataset/default.yaml.
  CHECK(c.is_null("user_inter_num_interval"));
  CHECK(points_at_key(c.source("user_inter_num_interval"), "configs/dataset/ml-100k.yaml",
                      "user_inter_num_interval"));
  CHECK(points_at_key(c.source("load_col"), "configs/dataset/ml-100k.yaml", "load_col"));
  // Layer 5, user files: a < b, and both over the model file and the dataset file.
  CHECK(c.get_int("epochs") == 5);
  CHECK(c.source("epochs") == a + ":1");
  CHECK(c.get_double("learning_rate") == Approx(0.02));
  CHECK(c.source("learning_rate") == b + ":1");
  CHECK(c.get_int("embedding_size") == 32);  // over configs/model/BPR.yaml
  CHECK(c.source("embedding_size") == b + ":2");
  CHECK_FALSE(c.get_bool("normalize_all"));  // over configs/dataset/ml-100k.yaml
  // Layer 6, API overrides over files.
  CHECK(c.get_int("train_batch_size") == 200);
  CHECK(c.source("train_batch_size") == "API override");
  // Layer 7, command line over everything.
  CHECK(c.get_int("stopping_step") == 4);
  CHECK(c.source("stopping_step") == "command line --stopping_step");
  // model / dataset from the explicit fields.
  CHECK(c.model() == "BPR");
  CHECK(c.dataset() == "ml-100k");
  CHECK(c.get_string("model") == "BPR");
  CHECK(c.source("model") == "API argument");
}

TEST_CASE("model yaml and ml-100k dataset yaml are loaded", "[config]") {
  Config c = build_with({}, {}, {}, "BPR", "ml-100k");
  CHECK(c.get_int("embedding_size") == 64);
  CHECK(points_at_key(c.source("embedding_size"), "configs/model/BPR.yaml", "embedding_size"));
  YAML::Node load_col = c.node("load_col");
  REQUIRE(load_col.IsMap());
  std::vector<std::string> inter;
  for (const auto& x : load_col["inter"]) inter.push_back(x.as<std::string>());
  CHECK(inter == std::vector<std::string>{"user_id", "item_id", "rating", "timestamp"});
  CHECK(c.get_bool("normalize_all"));
  CHECK(c.is_null("user_inter_num_interval"));
  CHECK(c.is_null("item_inter_num_interval"));

  Config other = build_with({}, {}, {}, "EASE", "some-other-dataset");
  CHECK(other.get_double("reg_weight") == Approx(250.0));
  CHECK(other.get_string("user_inter_num_interval") == "[0,inf)");
  CHECK(other.is_null("benchmark_filename"));
  YAML::Node lc = other.node("load_col");
  CHECK(lc["inter"].size() == 2);

  // Model and dataset named inside a user file, and a model name in another case.
  TempDir dir;
  std::string f = dir.write("m.yaml", "model: EASE\ndataset: ml-100k\n");
  Config from_file = build_with({f});
  CHECK(from_file.model() == "EASE");
  CHECK(from_file.get_double("reg_weight") == Approx(250.0));
  CHECK(from_file.source("model") == f + ":1");
  CHECK(from_file.get_bool("normalize_all"));
  CHECK(build_with({}, {}, {}, "itemknn").get_int("k") == 100);

  // Pop and Random have (empty) model files; they add no keys.
  for (const char* m : {"Pop", "Random"}) {
    REQUIRE(embedded_file(std::string("configs/model/") + m + ".yaml"));
    CHECK(build_with({}, {}, {}, m).keys() == build_with().keys());
  }
}

TEST_CASE("eval_args given in part is completed from the defaults", "[config]") {
  TempDir dir;
  std::string f = dir.write("e.yaml", "eval_args:\n  order: TO\n");
  Config c = build_with({f});
  YAML::Node e = c.node("eval_args");
  CHECK(e["order"].as<std::string>() == "TO");
  CHECK(e["split"]["RS"].size() == 3);
  CHECK(e["split"]["RS"][0].as<double>() == Approx(0.8));
  CHECK(e["group_by"].as<std::string>() == "user");
  CHECK(e["mode"]["valid"].as<std::string>() == "full");
  CHECK(e["mode"]["test"].as<std::string>() == "full");
  CHECK(c.source("eval_args") == f + ":1");

  // A string mode applies to both phases; a one-phase dict is copied to the other.
  Config s = build_with({}, {{"eval_args", "{mode: uni100}"}});
  CHECK(s.node("eval_args")["mode"]["valid"].as<std::string>() == "uni100");
  CHECK(s.node("eval_args")["mode"]["test"].as<std::string>() == "uni100");
  CHECK(s.node("eval_args")["order"].as<std::string>() == "RO");
  Config d = build_with({}, {{"eval_args", "{mode: {valid: pop50}, group_by: None}"}});
  CHECK(d.node("eval_args")["mode"]["test"].as<std::string>() == "pop50");
  CHECK(d.node("eval_args")["group_by"].as<std::string>() == "none");
  Config two = build_with({}, {{"eval_args", "{mode: {valid: uni10, test: full}}"}});
  CHECK(two.node("eval_args")["mode"]["valid"].as<std::string>() == "uni10");
  CHECK(two.node("eval_args")["mode"]["test"].as<std::string>() == "full");

  // Leave-one-out, and a split replacing the default one entirely.
  Config ls = build_with({}, {}, {{"eval_args", "{split: {LS: valid_and_test}, order: TO}"}});
  CHECK(ls.node("eval_args")["split"]["LS"].as<std::string>() == "valid_and_test");
  CHECK_FALSE(ls.node("eval_args")["split"]["RS"]);
  CHECK(ls.source("eval_args") == "command line --eval_args");

  // Bad parts name the nested key and the line.
  std::string bad = dir.write("bad.yaml",
                              "epochs: 3\n"
                              "eval_args:\n"
                              "  split: {RS: [0.8, 0.1, 0.1]}\n"
                              "  order: XX\n");
  CHECK(error_of([&] { build_with({bad}); }) ==
        bad + ":4: eval_args.order: expected one of RO, TO, got \"XX\"");
  CHECK(error_of([&] {
          build_with({}, {{"eval_args", "{split: {RS: [0.8, 0.2]}}"}});
        }) ==
        "API override: eval_args.split.RS: expected a list of 3 numbers >= 0 with a positive "
        "sum, got \"[0.8, 0.2]\"");
  CHECK(error_of([&] { build_with({}, {{"eval_args", "{split: {RS: [0, 0, 0]}}"}}); }) != "");
  CHECK(error_of([&] { build_with({}, {{"eval_args", "{split: {XS: [1, 1, 1]}}"}}); }) != "");
  CHECK(error_of([&] {
          build_with({}, {{"eval_args", "{mode: uni0}"}});
        }).find("eval_args.mode: expected full, labeled, uniN or popN") != std::string::npos);
  CHECK(error_of([&] {
          build_with({}, {{"eval_args", "{spilt: {RS: [1,1,1]}}"}});
        }).find("\"spilt\"") != std::string::npos);
  CHECK(error_of([&] { build_with({}, {{"eval_args", "{group_by: item}"}}); }) != "");
}

TEST_CASE("train_neg_sample_args completion and the none sentinel", "[config]") {
  Config part = build_with({}, {{"train_neg_sample_args", "{sample_num: 3}"}});
  YAML::Node t = part.node("train_neg_sample_args");
  CHECK(t["distribution"].as<std::string>() == "uniform");
  CHECK(t["sample_num"].as<int>() == 3);
  CHECK(t["alpha"].as<double>() == Approx(1.0));
  CHECK(t["dynamic"].as<bool>() == false);
  CHECK(t["candidate_num"].as<int>() == 0);

  for (const std::string& none :
       {"~", "None", "\"None\"", "{distribution: ~}", "{distribution: none, sample_num: 4}",
        // The canonical form a run's config snapshot writes (read back from a checkpoint).
        "{distribution: none, sample_num: 0, alpha: 1.0, dynamic: false, candidate_num: 0}"}) {
    INFO(none);
    YAML::Node s = build_with({}, {{"train_neg_sample_args", none}}).node("train_neg_sample_args");
    CHECK(s["distribution"].as<std::string>() == "none");
    CHECK(s["sample_num"].as<int>() == 0);
  }
  CHECK(error_of([] {
          build_with({}, {{"train_neg_sample_args", "{distribution: gauss}"}});
        }) ==
        "API override: train_neg_sample_args.distribution: expected one of uniform, popularity, "
        "none, got \"gauss\"");
  CHECK(error_of([] {
          build_with({}, {{"train_neg_sample_args", "{sample_num: 0}"}});
        }) == "API override: train_neg_sample_args.sample_num: expected int >= 1, got \"0\"");
  CHECK(error_of([] {
          build_with({}, {{"train_neg_sample_args", "{distribution: uniform, sample_num: 0}"}});
        }) == "API override: train_neg_sample_args.sample_num: expected int >= 1, got \"0\"");
  CHECK(error_of([] {
          build_with({}, {{"train_neg_sample_args", "{dynamic: true}"}});
        }).find("candidate_num: expected int >= 1 when dynamic is true") != std::string::npos);
  Config dyn = build_with({}, {{"train_neg_sample_args",
                                "{distribution: popularity, dynamic: true, candidate_num: 5}"}});
  CHECK(dyn.node("train_neg_sample_args")["candidate_num"].as<int>() == 5);
  CHECK(dyn.node("train_neg_sample_args")["distribution"].as<std::string>() == "popularity");
}

TEST_CASE("type errors name the file, line, key, expectation and value", "[config]") {
  TempDir dir;
  std::string f = dir.write("exp.yaml",
                            "# comment\n"
                            "learning_rate: 0.01\n"
                            "epochs: -4\n");
  CHECK(error_of([&] { build_with({f}); }) == f + ":3: epochs: expected int >= 0, got \"-4\"");

  std::string g = dir.write("g.yaml", "show_progress: maybe\n");
  CHECK(error_of([&] { build_with({g}); }) ==
        g + ":1: show_progress: expected bool, got \"maybe\"");
  std::string h = dir.write("h.yaml", "epochs: 1\ntopk: [5,\n  0]\n");
  CHECK(error_of([&] { build_with({h}); }) == h + ":3: topk: expected list of int >= 1, got \"0\"");
  std::string i = dir.write("i.yaml", "epochs: 2.5\n");
  CHECK(error_of([&] { build_with({i}); }) == i + ":1: epochs: expected int >= 0, got \"2.5\"");
  std::string j = dir.write("j.yaml", "epochs: ~\n");
  CHECK(error_of([&] { build_with({j}); }) == j + ":1: epochs: expected int >= 0, got \"~\"");
  std::string k = dir.write("k.yaml", "learning_rate: [1, 2]\n");
  CHECK(error_of([&] { build_with({k}); }) ==
        k + ":1: learning_rate: expected float > 0, got \"[1, 2]\"");
  CHECK(error_of([] {
          build_with({}, {}, {{"epochs", "abc"}});
        }) == "command line --epochs: epochs: expected int >= 0, got \"abc\"");
  CHECK(error_of([] {
          build_with({}, {{"epochs", "abc"}});
        }) == "API override: epochs: expected int >= 0, got \"abc\"");

  // An error in a file that a later layer overrides is still reported: every value is checked.
  CHECK(error_of([&] { build_with({f}, {}, {{"epochs", "3"}}); }) != "");
}

TEST_CASE("YAML floats, bools and nulls", "[config]") {
  TempDir dir;
  std::string f = dir.write("f.yaml",
                            "learning_rate: 1e-5\n"
                            "weight_decay: 1\n"
                            "show_progress: False\n"
                            "reproducibility: TRUE\n"
                            "dataset_save_path: None\n"
                            "gpu_id: 0\n"
                            "ip: '1e3'\n");
  Config c = build_with({f});
  CHECK(c.get_double("learning_rate") == Approx(1e-5));
  CHECK(c.get_double("weight_decay") == 1.0);  // ints are accepted as floats
  CHECK_FALSE(c.get_bool("show_progress"));
  CHECK(c.get_bool("reproducibility"));
  CHECK(c.node("show_progress").as<std::string>() == "false");  // normalised spelling
  CHECK(c.is_null("dataset_save_path"));
  CHECK(c.get_string("gpu_id") == "0");
  CHECK(c.get_string("ip") == "1e3");
  CHECK(parse_float("1e-5").value() == Approx(1e-5));
  CHECK(parse_float("-.inf").value() < 0);
  CHECK_FALSE(parse_float("1e").has_value());
  CHECK_FALSE(parse_int("1.0").has_value());
  CHECK(parse_int("+7").value() == 7);
  // Typed getters refuse another type.
  CHECK(error_of([&] { c.get_int("learning_rate"); }).find("learning_rate: expected int") !=
        std::string::npos);
  CHECK(error_of([&] { c.get_bool("no_such_key"); }).find("unknown config key") !=
        std::string::npos);
}

TEST_CASE("command-line values are typed YAML", "[config]") {
  TempDir dir;
  std::string a = dir.write("a.yaml", "epochs: 7\n");
  std::string b = dir.write("b.yaml", "epochs: 8\n");
  std::string files_arg = "--config_files=" + a + "," + b;
  std::vector<const char*> argv = {
      "recbole_run",           "--model=BPR",
      "--dataset=ml-100k",     files_arg.c_str(),
      "--topk=[5,10]",         "--learning_rate=1e-3",
      "--show_progress=false", "--eval_args={split: {RS: [8,1,1]}, order: TO}",
      "--metrics=ndcg",        "--valid_metric=ndcg@5",
      "--field_separator=\\t", "--dump_split=out.txt"};
  std::map<std::string, std::string> tool;
  ConfigSources s =
      parse_command_line(static_cast<int>(argv.size()), argv.data(), {"dump_split"}, &tool);
  CHECK(s.model == "BPR");
  CHECK(s.dataset == "ml-100k");
  CHECK(s.config_files == std::vector<std::string>{a, b});
  CHECK(tool.at("dump_split") == "out.txt");
  Config c = Config::build(s);
  CHECK(c.get_int_list("topk") == std::vector<int64_t>{5, 10});
  CHECK(c.get_double("learning_rate") == Approx(0.001));
  CHECK_FALSE(c.get_bool("show_progress"));
  CHECK(c.get_int("epochs") == 8);
  CHECK(c.node("eval_args")["split"]["RS"][0].as<double>() == 8);
  CHECK(c.node("eval_args")["order"].as<std::string>() == "TO");
  CHECK(c.node("eval_args")["mode"]["test"].as<std::string>() == "full");
  CHECK(c.get_string_list("metrics") == std::vector<std::string>{"NDCG"});  // string -> list
  CHECK(c.get_string("valid_metric") == "NDCG@5");
  CHECK(c.get_string("field_separator") == "\t");
  CHECK(c.source("topk") == "command line --topk");
  CHECK(c.source("model") == "command line --model");
  CHECK(c.get_int("embedding_size") == 64);

  // Spaces also separate config files.
  std::string spaced = "--config_files=" + a + " " + b;
  const char* argv2[] = {"x", spaced.c_str()};
  CHECK(parse_command_line(2, argv2).config_files.size() == 2);

  // Malformed tokens and contradictions.
  const char* no_eq[] = {"x", "--epochs"};
  CHECK(error_of([&] { parse_command_line(2, no_eq); }) ==
        "command line: expected --key=value, got \"--epochs\"");
  const char* positional[] = {"x", "BPR"};
  CHECK(error_of([&] { parse_command_line(2, positional); }) ==
        "command line: expected --key=value, got \"BPR\"");
  const char* twice[] = {"x", "--epochs=3", "--epochs=4"};
  CHECK(error_of([&] { parse_command_line(3, twice); }) ==
        "command line --epochs: given twice with different values (\"3\" and \"4\")");
  const char* same_twice[] = {"x", "--epochs=3", "--epochs=3"};
  CHECK(parse_command_line(3, same_twice).command_line.size() == 1);
  const char* flag[] = {"x", "--help"};
  std::map<std::string, std::string> tv;
  parse_command_line(2, flag, {"help"}, &tv);
  CHECK(tv.at("help") == "true");
  // An integer written as a float is not an int.
  const char* float_epochs[] = {"x", "--epochs=1e3"};
  CHECK(error_of([&] { Config::build(parse_command_line(2, float_epochs)); }) ==
        "command line --epochs: epochs: expected int >= 0, got \"1e3\"");
  // Text that YAML reads as something else: the error shows what was typed.
  const char* comma[] = {"x", "--field_separator=,"};
  CHECK(error_of([&] { Config::build(parse_command_line(2, comma)); }) ==
        "command line --field_separator: field_separator: expected one character, got \"~\" "
        "(the text \",\" reads as YAML null; quote it to pass it as a string: ',')");
  const char* empty[] = {"x", "--epochs="};
  CHECK(error_of([&] { Config::build(parse_command_line(2, empty)); }) ==
        "command line --epochs: epochs: expected int >= 0, got \"~\" (the value is empty)");
  // A tool's default model and dataset give way to a config file naming them (recbole_run
  // used to run BPR on ml-100k whatever the file said); an empty --dataset= is an error.
  std::string named = dir.write("named.yaml", "model: Pop\ndataset: other\n");
  std::string files = "--config_files=" + named;
  const char* with_file[] = {"x", files.c_str()};
  ConfigSources fs = parse_command_line(2, with_file);
  fs.default_model = "BPR";
  fs.default_dataset = "ml-100k";
  Config from_file = Config::build(fs);
  CHECK(from_file.model() == "Pop");
  CHECK(from_file.dataset() == "other");
  const char* nothing[] = {"x"};
  ConfigSources ds = parse_command_line(1, nothing);
  ds.default_model = "BPR";
  ds.default_dataset = "ml-100k";
  Config defaults = Config::build(ds);
  CHECK(defaults.model() == "BPR");
  CHECK(defaults.dataset() == "ml-100k");
  CHECK(defaults.source("dataset") == "default");
  const char* empty_dataset[] = {"x", "--dataset="};
  CHECK(error_of([&] { parse_command_line(2, empty_dataset); }) ==
        "command line --dataset: expected a dataset name, got an empty value");
  const char* quoted_comma[] = {"x", "--field_separator=','"};
  CHECK(Config::build(parse_command_line(2, quoted_comma)).get_string("field_separator") == ",");
}

TEST_CASE("unknown keys suggest the nearest declared key", "[config]") {
  TempDir dir;
  std::string f = dir.write("exp.yaml",
                            "epochs: 3\n"
                            "# a comment\n"
                            "train_batch_size: 64\n"
                            "learnig_rate: 0.01\n");
  CHECK(error_of([&] { build_with({f}); }) ==
        f + ":4: unknown config key \"learnig_rate\"; did you mean \"learning_rate\"?");
  CHECK(error_of([] {
          build_with({}, {}, {{"embeding_size", "8"}});
        }) ==
        "command line --embeding_size: unknown config key \"embeding_size\"; did you mean "
        "\"embedding_size\"?");
  CHECK(error_of([] {
          build_with({}, {{"EPOCHS", "8"}});
        }) == "API override: unknown config key \"EPOCHS\"; did you mean \"epochs\"?");
  std::string far = error_of([] { build_with({}, {{"completely_unrelated_name", "1"}}); });
  CHECK(far.find("did you mean") == std::string::npos);
  CHECK(far.find("unknown config key \"completely_unrelated_name\"") != std::string::npos);
  CHECK(nearest_key("topK") == "topk");
  CHECK(error_of([] {
          build_with({}, {{"neg_sampling", "{uniform: 1}"}});
        }).find("train_neg_sample_args") != std::string::npos);
}

TEST_CASE("bounds are enforced", "[config]") {
  auto err = [](const std::string& key, const std::string& value) {
    return error_of([&] { build_with({}, {{key, value}}); });
  };
  CHECK(err("port", "70000") == "API override: port: expected int in [1, 65535], got \"70000\"");
  CHECK(err("port", "0") != "");
  CHECK(err("port", "65535") == "");
  CHECK(err("learning_rate", "0") == "API override: learning_rate: expected float > 0, got \"0\"");
  CHECK(err("dist_timeout", "-1") != "");
  CHECK(err("download_timeout", "0.5") == "");
  CHECK(err("num_threads", "-1") != "");
  CHECK(err("num_threads", "0") == "");
  CHECK(err("nproc", "0") == "API override: nproc: expected int >= 1, got \"0\"");
  CHECK(err("world_size", "-2") != "");
  CHECK(err("world_size", "-1") == "");
  CHECK(err("eval_memory_budget_mb", "0") != "");
  CHECK(err("topk", "[5, 0]") != "");
  CHECK(err("topk", "[]").find("topk: expected a non-empty list of int >= 1") !=
        std::string::npos);  // an empty list crashed the evaluator
  // Model keys are checked against the chosen model's declaration.
  auto model_err = [](const std::string& model, const std::string& key, const std::string& value) {
    return error_of([&] { build_with({}, {{key, value}}, {}, model); });
  };
  CHECK(model_err("SLIMElastic", "l1_ratio", "1.5") ==
        "API override: SLIMElastic key l1_ratio: expected float in [0, 1], got \"1.5\"");
  CHECK(model_err("BPR", "embedding_size", "0") ==
        "API override: BPR key embedding_size: expected int >= 1, got \"0\"");
  CHECK(model_err("SLIMElastic", "tol", "0") != "");
  CHECK(err("result_file", "~") == "");                // nullable
  CHECK(err("epochs", "99999999999999999999") != "");  // out of int64 range
}

TEST_CASE("choices and structured values are enforced", "[config]") {
  auto err = [](const std::string& key, const std::string& value) {
    return error_of([&] { build_with({}, {{key, value}}); });
  };
  CHECK(err("learner", "adamx") ==
        "API override: learner: expected one of adam, adamw, sgd, adagrad, rmsprop, sparse_adam, "
        "got \"adamx\"");
  CHECK(build_with({}, {{"learner", "Adam"}}).get_string("learner") == "adam");
  CHECK(build_with({}, {{"state", "debug"}}).get_string("state") == "DEBUG");
  CHECK(error_of([&] { build_with({}, {{"knn_method", "items"}}, {}, "ItemKNN"); }) != "");
  CHECK(err("dist_backend", "mpi") != "");
  CHECK(err("rm_dup_inter", "first") == "");
  CHECK(err("rm_dup_inter", "middle") ==
        "API override: rm_dup_inter: expected one of first, last or null, got \"middle\"");
  CHECK(err("device", "cuda:1") == "");
  CHECK(err("device", "gpu") ==
        "API override: device: expected auto, cpu, cuda or cuda:N, got \"gpu\"");
  CHECK(err("metrics", "[Recall, Foo]").find("metrics: expected metric names") !=
        std::string::npos);
  CHECK(err("metrics", "[gauc, itemcoverage, TailPercentage]") == "");
  CHECK(err("valid_metric", "Recall") != "");
  CHECK(err("valid_metric", "Recall@0") != "");
  CHECK(err("valid_metric", "GAUC") == "");
  CHECK(err("valid_metric", "Foo@10") != "");
  CHECK(err("load_col", "{inter: [user_id, item_id], item: '*'}") == "");
  CHECK(err("load_col", "{inter: user_id}") != "");
  CHECK(err("load_col", "[user_id]") != "");
  CHECK(err("unused_col", "{inter: [timestamp]}") == "");
  CHECK(err("val_interval", "{rating: '[3,inf)', genre: [a, b]}") == "");
  CHECK(err("val_interval", "{rating: '3 to 5'}") != "");
  CHECK(err("threshold", "{rating: 4}") == "");
  CHECK(err("threshold", "{rating: 4, timestamp: 3}") != "");
  CHECK(err("user_inter_num_interval", "'[10,inf)'") == "");
  CHECK(err("user_inter_num_interval", "'(0,5];[10,20)'") == "");
  CHECK(err("user_inter_num_interval", "'[5,1]'") != "");
  CHECK(err("user_inter_num_interval", "'10,inf'") ==
        "API override: user_inter_num_interval: expected intervals like \"[10,inf)\" or "
        "\"(0,5]\", joined by ';' or null, got \"10,inf\"");
  CHECK(err("field_separator", "','") == "");
  CHECK(err("field_separator", "'::'") != "");
  CHECK(err("seq_separator", "' '") == "");
  CHECK(err("normalize_field", "[rating, timestamp]") == "");
  CHECK(err("normalize_all", "yes please") != "");
  CHECK(err("benchmark_filename", "[train, valid, test]") == "");
  CHECK(err("clip_grad_norm", "{max_norm: 5, norm_type: 2}") == "");
  CHECK(err("clip_grad_norm", "{norm_type: 2}") != "");
  CHECK(err("seq_len", "{tags: 0}") != "");
  CHECK(err("download_sha256", "abc") != "");
  CHECK(err("download_url", "https://example.org/d.zip") == "");
  CHECK(err("download_url", "file:///data/d.zip") == "");
  CHECK(err("download_url", "srv/good.zip") ==  // used to fail as "Could not resolve host: srv"
        "API override: download_url: expected a URL: http://, https:// or file:///absolute/path "
        "or null, got \"srv/good.zip\"");
  CHECK(err("log_wandb", "true") != "");
  // RecBole keys for features recbole-cpp lacks: accepted off, an error on, never ignored.
  CHECK(err("save_dataset", "false") == "");
  CHECK(err("save_dataset", "true") ==
        "API override: save_dataset: expected false (saving the filtered dataset is not "
        "supported), got \"true\"");
  CHECK(err("save_dataloaders", "true") != "");
  CHECK(err("dataset_save_path", "~") == "");
  CHECK(err("dataset_save_path", "/tmp/ds.pth") != "");
  CHECK(err("dataloaders_save_path", "/tmp/dl.pth") != "");
  CHECK(err("repeatable", "false") == "");
  CHECK(err("repeatable", "true") == "");  // the general pipeline refuses it, not the config
  CHECK(err("MAX_ITEM_LIST_LENGTH", "50") == "");
  CHECK(err("MAX_ITEM_LIST_LENGTH", "0").find("MAX_ITEM_LIST_LENGTH") != std::string::npos);
  CHECK(err("additional_feat_suffix", "~") == "");
  CHECK(err("additional_feat_suffix", "[]") == "");
  CHECK(err("additional_feat_suffix", "[ent]") != "");
  CHECK(err("encoding", "utf-8") == "");
  CHECK(err("encoding", "UTF8") == "");
  CHECK(err("encoding", "latin-1") != "");
}

TEST_CASE("derived and normalised keys", "[config]") {
  Config c = build_with({}, {{"valid_metric", "AveragePopularity@10"},
                             {"metrics", "[AveragePopularity]"},
                             {"topk", "10"}});
  CHECK_FALSE(c.get_bool("valid_metric_bigger"));
  CHECK(c.source("valid_metric_bigger") == "derived");
  CHECK(c.get_int_list("topk") == std::vector<int64_t>{10});
  CHECK(build_with().get_bool("valid_metric_bigger"));
  CHECK(build_with({}, {{"valid_metric", "GiniIndex@10"}}).get_bool("valid_metric_bigger") ==
        false);
  // A value set by hand is replaced, as RecBole does.
  CHECK(build_with({}, {{"valid_metric_bigger", "false"}}).get_bool("valid_metric_bigger"));
  CHECK(build_with({}, {{"metrics", "Recall"}}).get_string_list("metrics") ==
        std::vector<std::string>{"Recall"});
}

TEST_CASE("metric names come from the evaluator's registry", "[config][metrics]") {
  auto err = [](std::vector<std::pair<std::string, std::string>> api) {
    return error_of([&] { build_with({}, std::move(api)); });
  };
  // An unknown name: the message lists the ranking metrics, as before value metrics existed.
  CHECK(err({{"metrics", "[Recall, Foo]"}}) ==
        "API override: metrics: expected metric names, each one of Recall, MRR, NDCG, Hit, "
        "Precision, MAP, GAUC, ItemCoverage, AveragePopularity, GiniIndex, ShannonEntropy, "
        "TailPercentage, got \"Foo\"");
  CHECK(err({{"valid_metric", "Foo@10"}}) ==
        "API override: valid_metric: expected <metric>@<k> (k >= 1) or GAUC, got \"Foo@10\"");

  // Value metrics: accepted with the labeled mode.
  Config c = build_with({}, {{"metrics", "[auc, LOGLOSS]"},
                             {"valid_metric", "logloss"},
                             {"eval_args", "{mode: labeled}"}});
  CHECK(c.get_string_list("metrics") == std::vector<std::string>{"AUC", "LogLoss"});
  CHECK(c.get_string("valid_metric") == "LogLoss");
  CHECK_FALSE(c.get_bool("valid_metric_bigger"));
  CHECK(build_with(
            {}, {{"metrics", "[AUC]"}, {"valid_metric", "AUC"}, {"eval_args", "{mode: labeled}"}})
            .get_bool("valid_metric_bigger"));
  for (const char* smaller : {"MAE", "RMSE"}) {
    CHECK_FALSE(
        build_with(
            {}, {{"metrics", smaller}, {"valid_metric", smaller}, {"eval_args", "{mode: labeled}"}})
            .get_bool("valid_metric_bigger"));
  }
  // Not with full ranking (the default mode), in either phase; with sampled candidates (uniN,
  // popN) they measure the positives against the sampled negatives, as RecBole.
  CHECK(err({{"metrics", "[AUC]"}, {"valid_metric", "AUC"}}) ==
        "API override: metrics: AUC is a value metric: it needs labelled rows (eval_args mode "
        "labeled) or sampled negatives (uniN, popN), not full ranking (eval_args mode.valid is "
        "full)");
  CHECK_THAT(err({{"metrics", "[RMSE]"}, {"eval_args", "{mode: {valid: pop10, test: full}}"}}),
             Catch::Contains("mode.test is full"));
  CHECK(err({{"metrics", "[MAE]"}, {"valid_metric", "MAE"}, {"eval_args", "{mode: uni100}"}}) ==
        "");
  CHECK(err({{"metrics", "[RMSE]"},
             {"valid_metric", "RMSE"},
             {"eval_args", "{mode: {valid: labeled, test: pop10}}"}}) == "");
  // Not mixed with ranking metrics; no @k.
  CHECK(err({{"metrics", "[Recall, AUC]"}, {"eval_args", "{mode: labeled}"}}) ==
        "API override: metrics: expected ranking metrics or value metrics (AUC, LogLoss, MAE, "
        "RMSE, with GAUC beside either), not both, got \"AUC\"");
  // GAUC goes with either kind: per user from the labelled rows in the labeled mode.
  CHECK_THAT(err({{"metrics", "[GAUC, LogLoss]"}}), Catch::Contains("not full ranking"));
  CHECK(err({{"metrics", "[GAUC, LogLoss]"},
             {"valid_metric", "GAUC"},
             {"eval_args", "{mode: labeled}"}}) == "");
  CHECK(err({{"valid_metric", "AUC@10"}}) ==
        "API override: valid_metric: expected AUC without @k (a value metric), got \"AUC@10\"");
}

TEST_CASE("set() after build validates and re-derives", "[config]") {
  Config c = build_with({}, {}, {}, "BPR");
  c.set("epochs", "12");
  CHECK(c.get_int("epochs") == 12);
  CHECK(c.source("epochs") == "API override");
  c.set("valid_metric", "GiniIndex@10", "test");
  CHECK_FALSE(c.get_bool("valid_metric_bigger"));
  c.set("eval_args", "{order: TO}");
  CHECK(c.node("eval_args")["split"]["RS"].size() == 3);
  CHECK(error_of([&] { c.set("epochs", "-1", "tool --x"); }) ==
        "tool --x: epochs: expected int >= 0, got \"-1\"");
  CHECK(error_of([&] { c.set("model", "EASE"); }) != "");
  CHECK(c.get_int("epochs") == 12);  // unchanged after a failed set
  // A copy is independent of the original.
  Config copy = c;
  copy.set("epochs", "99");
  CHECK(c.get_int("epochs") == 12);
}

TEST_CASE("missing files and YAML syntax errors", "[config]") {
  TempDir dir;
  CHECK(error_of([] { build_with({"/nonexistent/dir/exp.yaml"}); }) ==
        "config file \"/nonexistent/dir/exp.yaml\" not found");
  std::string bad = dir.write("bad.yaml", "epochs: 3\ntopk: [5, 10\nseed: 1\n");
  std::string e = error_of([&] { build_with({bad}); });
  CHECK(e.rfind(bad + ":3: YAML syntax error", 0) == 0);
  std::string list = dir.write("list.yaml", "- epochs\n- 3\n");
  CHECK(error_of([&] { build_with({list}); }).rfind(list + ":1: expected `key: value` lines", 0) ==
        0);
  std::string dup = dir.write("dup.yaml", "epochs: 3\nseed: 1\nepochs: 4\n");
  CHECK(error_of([&] { build_with({dup}); }) ==
        dup + ":3: key \"epochs\" is given twice (first at line 1)");
  std::string empty = dir.write("empty.yaml", "# nothing here\n");
  CHECK(error_of([&] { build_with({empty}); }) == "");
  // A second document used to be dropped unread (with its invalid value); the error names the
  // line of its `---`.
  std::string multi = dir.write("multi.yaml", "epochs: 1\n---\nlearning_rate: abc\n");
  CHECK(error_of([&] { build_with({multi}); }).rfind(multi + ":2: a second YAML document", 0) == 0);
  // yaml-cpp 0.7's LoadAll never returned on a document starting with a stray ',' (config
  // fuzzer, tests/fuzz/regressions/config/yaml-leading-comma-hang); YAML::Load read it as empty.
  std::string comma = dir.write("comma.yaml", ", 0.1]}\n  order: RO\n");
  CHECK(error_of([&] { build_with({comma}); }) ==
        comma + ":1: YAML syntax error: unexpected ',' (a flow indicator outside [...] or {...})");
  std::string tab = dir.write("tab.yaml", "eval_args:\n\tmode: full\n");
  CHECK(error_of([&] { build_with({tab}); }).find("a tab indents line 2") != std::string::npos);
  // Nine levels of aliases, 10 references each: 10⁹ values to check (the run hung).
  std::string expr = "&l0 [10, 10]";
  for (int i = 1; i < 9; ++i) {
    std::string refs;
    for (int k = 0; k < 9; ++k) refs += ", *l" + std::to_string(i - 1);
    expr = "&l" + std::to_string(i) + " [" + expr + refs + "]";
  }
  std::string bomb = dir.write("bomb.yaml", "topk: " + expr + "\n");
  CHECK(error_of([&] { build_with({bomb}); }) ==
        bomb +
            ": more than 100000 values once YAML aliases (*name) are expanded; expected a "
            "config file");
}

TEST_CASE("dump groups keys by category with their sources", "[config]") {
  TempDir dir;
  std::string f = dir.write("d.yaml", "epochs: 5\n");
  Config c = build_with({f}, {}, {{"topk", "[5,10]"}}, "BPR", "ml-100k");
  std::string d = c.dump();
  CHECK(d.find("epochs = 5    (" + f + ":1)") != std::string::npos);
  CHECK(d.find("topk = [5, 10]    (command line --topk)") != std::string::npos);
  CHECK(d.find("valid_metric_bigger = true    (derived)") != std::string::npos);
  CHECK(d.find("embedding_size = 64    (configs/model/BPR.yaml:") != std::string::npos);
  CHECK(d.find("field_separator = \"\\t\"    (configs/dataset/ml-100k.yaml:") != std::string::npos);
  size_t general = d.find("General Hyper Parameters:");
  size_t training = d.find("Training Hyper Parameters:");
  size_t dataset = d.find("Dataset Hyper Parameters:");
  size_t model = d.find("Model Hyper Parameters:");
  REQUIRE(general != std::string::npos);
  CHECK(general < training);
  CHECK(training < d.find("epochs = 5"));
  CHECK(d.find("epochs = 5") < dataset);
  CHECK(dataset < model);
  CHECK(model < d.find("embedding_size = 64"));
  // One line per key present.
  size_t lines = std::count(d.begin(), d.end(), '\n');
  CHECK(lines > c.keys().size());
  for (const auto& k : c.keys()) CHECK(d.find("\n" + k + " = ") != std::string::npos);
}

TEST_CASE("declarations and shipped YAML files agree", "[config]") {
  std::set<std::string> names;
  for (const auto& k : declared_keys()) {
    INFO(k.name);
    CHECK(names.insert(k.name).second);  // declared once
    CHECK_FALSE(k.help.empty());
    CHECK_FALSE(k.category.empty());
    CHECK(find_key(k.name) == &k);
  }
  // Keys with a default in each kind of file.
  std::set<std::string> global, model_keys;
  std::map<std::string, std::set<std::string>> keys_of_model;
  std::vector<std::string> config_files;
  for (const auto& f : embedded_files()) {
    std::string p = f.path;
    if (p.rfind("configs/", 0) != 0) continue;
    config_files.push_back(p);
    YAML::Node doc = YAML::Load(f.content);
    if (doc.IsNull()) continue;
    REQUIRE(doc.IsMap());
    bool is_model = p.rfind("configs/model/", 0) == 0;
    std::string model = is_model ? p.substr(14, p.size() - 14 - 5) : "";
    for (auto it = doc.begin(); it != doc.end(); ++it) {
      std::string key = it->first.as<std::string>();
      INFO(p << ": " << key);
      // Every shipped key is declared: by the model of the file, or as a general key.
      const KeyDecl* decl = is_model ? find_model_key(model, key) : find_key(key);
      REQUIRE(decl != nullptr);
      CHECK_FALSE(decl->derived);
      // Model keys live only in model files, other keys never in model files.
      CHECK(decl->is_model_key() == is_model);
      if (is_model) CHECK(find_key(key) == nullptr);
      // Every shipped default passes its own declaration.
      CHECK_NOTHROW(validate_value(*decl, it->second));
      if (is_model) {
        model_keys.insert(key);
        keys_of_model[model].insert(key);
      } else if (p == "configs/overall.yaml" || p == "configs/dataset/default.yaml") {
        global.insert(key);
      }
    }
  }
  // Every model with keys has its file, and sets each of its keys there (and only them).
  for (const auto& [m, keys] : all_model_keys()) {
    INFO(m);
    CHECK(std::find(config_files.begin(), config_files.end(), "configs/model/" + m + ".yaml") !=
          config_files.end());
    std::set<std::string> declared;
    for (const auto& k : keys) declared.insert(k.name);
    CHECK(declared == keys_of_model[m]);
  }
  for (const auto& k : declared_keys()) {
    INFO(k.name);
    if (k.derived) {
      CHECK(global.count(k.name) + model_keys.count(k.name) == 0);
      continue;
    }
    // A general key has its default in the overall or dataset defaults, never in a model file.
    CHECK(global.count(k.name) == 1);
    CHECK(model_keys.count(k.name) == 0);
  }
  // The completion bases are complete in overall.yaml.
  YAML::Node overall = embedded_yaml("configs/overall.yaml");
  for (const char* k : {"split", "order", "group_by", "mode"}) CHECK(overall["eval_args"][k]);
  for (const char* k : {"distribution", "sample_num", "alpha", "dynamic", "candidate_num"})
    CHECK(overall["train_neg_sample_args"][k]);
}

TEST_CASE("docs/config-keys.md is up to date", "[config]") {
  std::ifstream in(std::string(RECBOLE_SOURCE_DIR) + "/docs/config-keys.md");
  REQUIRE(in.good());
  std::stringstream ss;
  ss << in.rdbuf();
  std::string md = keys_reference_markdown();
  CHECK(ss.str() == md);  // regenerate with: gen_config_docs > docs/config-keys.md
  for (const auto& k : declared_keys()) CHECK(md.find("| `" + k.name + "` |") != std::string::npos);
  std::string help = keys_help_text();
  CHECK(help.find("--learning_rate=<float > 0>") != std::string::npos);
  CHECK(help.find("--embedding_size=<int >= 1>") != std::string::npos);
}

TEST_CASE("model keys belong to their model: another model's key names the chosen model's keys",
          "[config][model_keys]") {
  TempDir dir;
  // The example, from the command line and from a file (with its line).
  REQUIRE_THROWS_WITH(build_with({}, {}, {{"embedding_size", "8"}}, "EASE"),
                      "command line --embedding_size: EASE has no key \"embedding_size\"; its "
                      "keys: reg_weight");
  const std::string f = dir.write("other_model.yaml", "epochs: 3\nembedding_size: 32\n");
  REQUIRE_THROWS_WITH(build_with({f}, {}, {}, "ItemKNN"),
                      f + ":2: ItemKNN has no key \"embedding_size\"; its keys: k, shrink, "
                          "knn_method");
  REQUIRE_THROWS_WITH(build_with({}, {}, {{"k", "5"}}, "Pop"),
                      Catch::Contains("Pop has no key \"k\"; it has no keys of its own"));
  // One name, two meanings, two bounds: ItemKNN's k counts neighbours, ADMMSLIM's iterations.
  CHECK(build_with({}, {{"k", "7"}}, {}, "ItemKNN").get_int("k") == 7);
  CHECK(build_with({}, {{"k", "7"}}, {}, "ADMMSLIM").get_int("k") == 7);
  REQUIRE_THROWS_WITH(build_with({}, {{"alpha", "-1"}}, {}, "SLIMElastic"),
                      "API override: SLIMElastic key alpha: expected float >= 0, got \"-1\"");
  // A model key's value is checked against the chosen model's declaration, with its file line.
  const std::string g = dir.write("bad_model_value.yaml", "epochs: 3\nknn_method: items\n");
  REQUIRE_THROWS_WITH(build_with({g}, {}, {}, "ItemKNN"),
                      g + ":2: ItemKNN key knn_method: expected one of item, user, got \"items\"");
  CHECK(build_with({}, {{"knn_method", "USER"}}, {}, "ItemKNN").get_string("knn_method") == "user");
  // Without a model (recbole_data), model keys in a shared file are accepted unchecked.
  CHECK(build_with({f}).get_int("embedding_size") == 32);
  // A key no model declares is unknown, with the nearest general or model key suggested.
  REQUIRE_THROWS_WITH(build_with({}, {{"knn_methd", "item"}}, {}, "ItemKNN"),
                      Catch::Contains("did you mean \"knn_method\"?"));
}

TEST_CASE("the dump lists only the chosen model's keys under the model section",
          "[config][model_keys]") {
  const std::string d = build_with({}, {}, {}, "ADMMSLIM").dump();
  CHECK(d.find("Model Hyper Parameters:\nlambda1 = 3.0") != std::string::npos);
  CHECK(d.find("embedding_size") == std::string::npos);
  CHECK(d.find("center_columns = false") != std::string::npos);
}
