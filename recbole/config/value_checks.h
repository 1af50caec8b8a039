#pragma once
// Checks of structured and patterned values, one per kind of value, used by the declarations in
// config_keys.cpp (KeyDecl::check). Each takes a value that has passed its key's type check (never
// null), returns it normalised and throws InvalidValue naming the offending part.
#include <functional>
#include <string>

#include <yaml-cpp/yaml.h>

#include "recbole/config/key_decl.h"

namespace recbole::config {

// Shape of an interval value, for the declarations and the messages.
inline constexpr const char* kIntervalShape =
    "intervals like \"[10,inf)\" or \"(0,5]\", joined by ';'";

// eval_args: {split, order, group_by, mode}, each optional. split is {RS: [3 ratios]} or
// {LS: valid_and_test|valid_only|test_only}; order RO|TO; group_by user|none (null = none); mode
// full|labeled|uniN|popN, or {valid: m, test: m} where one phase given copies it to the other.
YAML::Node check_eval_args(const YAML::Node& v);
// train_neg_sample_args: {distribution, sample_num, alpha, dynamic, candidate_num}, each
// optional; the string "None" is null (RecBole).
YAML::Node check_train_neg_sample_args(const YAML::Node& v);
// metrics: names of the metric registry (recbole/config/metric_registry.h), each once, in
// their canonical spelling; ranking metrics or value metrics, not both.
YAML::Node check_metrics(const YAML::Node& list);
// valid_metric: "<metric>@<k>" (k >= 1) for top-k metrics, the bare name otherwise (GAUC, the
// value metrics).
YAML::Node check_valid_metric(const YAML::Node& v);
// load_col / unload_col / unused_col: {suffix: [columns] | "*"}.
YAML::Node check_column_map(const YAML::Node& v);
// "[10,inf)", "(0,5]" and several joined by ';'.
YAML::Node check_interval(const YAML::Node& v);
// val_interval: {field: "intervals"} for float fields or {field: [values]} for token fields.
YAML::Node check_val_interval(const YAML::Node& v);
// threshold: {field: number}, exactly one field.
YAML::Node check_threshold(const YAML::Node& v);
// seq_len: {field: maximum length (int >= 1)}.
YAML::Node check_seq_len(const YAML::Node& v);
// preload_weight: {id field: value field}, both names non-empty and different.
YAML::Node check_preload_weight(const YAML::Node& v);
// clip_grad_norm: {max_norm: float > 0, norm_type: float > 0}, max_norm required.
YAML::Node check_clip_grad_norm(const YAML::Node& v);
// One character; the two characters `\t` (as a shell passes "\t") are read as a tab.
YAML::Node check_separator(const YAML::Node& v);
// auto, cpu, cuda or cuda:N, in lower case.
YAML::Node check_device(const YAML::Node& v);
// 64 hexadecimal digits, in lower case.
YAML::Node check_sha256(const YAML::Node& v);
// log_wandb: false only.
YAML::Node check_wandb_off(const YAML::Node& v);
// Keys RecBole has for features recbole-cpp does not implement: accepted at their "off" value
// (false, or an empty list), so that RecBole's YAML files load, and an error otherwise (never
// silently ignored). `expected` is the message.
std::function<YAML::Node(const YAML::Node&)> off_only(std::string expected);
// RecBole keys whose feature is not built yet: null is accepted (RecBole's default), any other
// value is an error saying so; `feature` names what the key does.
std::function<YAML::Node(const YAML::Node&)> not_supported_yet(std::string feature);
// transform: mask_itemseq (BERT4Rec's masked training, which the model draws itself); RecBole's
// other transforms are refused as not supported yet.
YAML::Node check_transform(const YAML::Node& v);
// Paths of saved datasets and dataloaders: any value other than null is an error.
YAML::Node check_no_path(const YAML::Node& v);
// encoding: utf-8, utf8 or ascii.
YAML::Node check_utf8(const YAML::Node& v);
// http://, https:// or file:/// followed by something.
YAML::Node check_url(const YAML::Node& v);
// A list with at least one element.
YAML::Node check_nonempty(const YAML::Node& v);

}  // namespace recbole::config
