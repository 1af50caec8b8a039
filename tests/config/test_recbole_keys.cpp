// RecBole users bring their YAML files: every key of RecBole 1.2.1's overall.yaml and
// dataset/sample.yaml (and the keys its code reads beside them) is a declared key here, so it
// is accepted with RecBole's meaning or refused as "not supported yet", never as unknown.
#include <catch2/catch.hpp>

#include "recbole/config/config.h"
#include "recbole/config/config_keys.h"
#include "recbole/utils/error.h"

TEST_CASE("every key of RecBole's overall.yaml and sample.yaml is declared", "[config]") {
  for (const char* key :
       {// overall.yaml
        "gpu_id", "worker", "use_gpu", "seed", "state", "reproducibility", "data_path",
        "checkpoint_dir", "show_progress", "save_dataset", "dataset_save_path", "save_dataloaders",
        "dataloaders_save_path", "log_wandb", "wandb_project", "shuffle", "epochs",
        "train_batch_size", "learner", "learning_rate", "train_neg_sample_args", "eval_step",
        "stopping_step", "clip_grad_norm", "weight_decay", "loss_decimal_place", "require_pow",
        "enable_amp", "enable_scaler", "transform", "eval_args", "repeatable", "metrics", "topk",
        "valid_metric", "valid_metric_bigger", "eval_batch_size", "metric_decimal_place",
        // dataset/sample.yaml
        "field_separator", "seq_separator", "USER_ID_FIELD", "ITEM_ID_FIELD", "RATING_FIELD",
        "TIME_FIELD", "seq_len", "LABEL_FIELD", "threshold", "NEG_PREFIX", "numerical_features",
        "load_col", "unload_col", "unused_col", "additional_feat_suffix", "rm_dup_inter",
        "val_interval", "filter_inter_by_user_or_item", "user_inter_num_interval",
        "item_inter_num_interval", "alias_of_user_id", "alias_of_item_id", "alias_of_entity_id",
        "alias_of_relation_id", "preload_weight", "normalize_field", "normalize_all",
        "discretization", "ITEM_LIST_LENGTH_FIELD", "LIST_SUFFIX", "MAX_ITEM_LIST_LENGTH",
        "POSITION_FIELD", "HEAD_ENTITY_ID_FIELD", "TAIL_ENTITY_ID_FIELD", "RELATION_ID_FIELD",
        "ENTITY_ID_FIELD", "kg_reverse_r", "entity_kg_num_interval", "relation_kg_num_interval",
        "benchmark_filename",
        // read by RecBole's code beside those files
        "encoding", "tail_ratio", "nproc", "world_size", "ip", "port", "offset", "local_rank"}) {
    INFO(key);
    CHECK(recbole::config::find_key(key) != nullptr);
  }
}

TEST_CASE("a RecBole key whose feature is missing is refused as not supported yet", "[config]") {
  for (const auto& [key, value] :
       std::vector<std::pair<std::string, std::string>>{{"transform", "crop_itemseq"}}) {
    INFO(key);
    recbole::config::ConfigSources s;
    s.model = "BPR";
    s.dataset = "ml-100k";
    s.api_overrides = {{key, value}};
    try {
      recbole::config::Config::build(s);
      FAIL("accepted");
    } catch (const recbole::ConfigError& e) {
      const std::string what = e.what();
      CHECK(what.find(key) != std::string::npos);
      CHECK(what.find("not supported yet") != std::string::npos);
    }
    // null, RecBole's default, is accepted.
    s.api_overrides = {{key, "~"}};
    CHECK_NOTHROW(recbole::config::Config::build(s));
  }
}

TEST_CASE(
    "a key of a RecBole model not implemented yet is refused as not supported yet, naming "
    "the models",
    "[config]") {
  recbole::config::ConfigSources s;
  s.model = "BPR";
  s.dataset = "ml-100k";
  for (const auto& [key, models] : std::vector<std::pair<std::string, std::string>>{
           {"gru_type", "RecBole's DIEN model"},
           {"n_facet_all", "RecBole's GRU4RecCPR, SASRecCPR models"},
           {"critic_layers", "RecBole's RaCT model"},
           {"lgb_params", "RecBole's lightgbm model"}}) {
    INFO(key);
    s.api_overrides = {{key, "1"}};
    try {
      recbole::config::Config::build(s);
      FAIL("accepted");
    } catch (const recbole::ConfigError& e) {
      CHECK_THAT(e.what(), Catch::Contains(key + ": a RecBole key not supported yet (a key of " +
                                           models + ", not implemented in this version)"));
    }
  }
  // A made-up key stays unknown, with the nearest declared key suggested.
  s.api_overrides = {{"gru_typo", "1"}};
  CHECK_THROWS_WITH(recbole::config::Config::build(s), Catch::Contains("unknown config key"));
  // A key an implemented model declares stays that model's (DiffRec's, not LDiffRec's).
  s.api_overrides = {{"noise_schedule", "linear"}};
  CHECK_THROWS_WITH(recbole::config::Config::build(s),
                    Catch::Contains("BPR has no key \"noise_schedule\""));
}

TEST_CASE("transform accepts BERT4Rec's mask_itemseq", "[config]") {
  recbole::config::ConfigSources s;
  s.dataset = "ml-100k";
  s.api_overrides = {{"transform", "mask_itemseq"}};
  for (const char* model : {"BERT4Rec", "SASRec"}) {
    s.model = model;
    CHECK(recbole::config::Config::build(s).get_string("transform") == "mask_itemseq");
  }
}

TEST_CASE("the KG alias keys and preload_weight are accepted with RecBole's shapes", "[config]") {
  for (const auto& [key, value] : std::vector<std::pair<std::string, std::string>>{
           {"alias_of_entity_id", "[e]"},
           {"alias_of_relation_id", "[r, s]"},
           {"preload_weight", "{item_id: v, ent_id: ent_vec}"}}) {
    INFO(key);
    recbole::config::ConfigSources s;
    s.model = "BPR";
    s.dataset = "ml-100k";
    s.api_overrides = {{key, value}};
    CHECK_NOTHROW(recbole::config::Config::build(s));
  }
  for (const char* bad : {"[item_id]", "{item_id: item_id}", "{item_id: [a]}", "{item_id: ~}"}) {
    INFO(bad);
    recbole::config::ConfigSources s;
    s.model = "BPR";
    s.dataset = "ml-100k";
    s.api_overrides = {{"preload_weight", bad}};
    try {
      recbole::config::Config::build(s);
      FAIL("accepted");
    } catch (const recbole::ConfigError& e) {
      CHECK(std::string(e.what()).find("preload_weight") != std::string::npos);
    }
  }
}
