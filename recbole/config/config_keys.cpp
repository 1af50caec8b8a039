#include "recbole/config/config_keys.h"

#include <algorithm>
#include <map>

#include "recbole/config/learners.h"
#include "recbole/config/metric_registry.h"
#include "recbole/config/model_keys.h"
#include "recbole/config/value_checks.h"
#include "recbole/utils/text.h"

namespace recbole::config {

namespace {

constexpr KeyType kBool = KeyType::kBool;
constexpr KeyType kInt = KeyType::kInt;
constexpr KeyType kFloat = KeyType::kFloat;
constexpr KeyType kStr = KeyType::kString;
constexpr KeyType kIntList = KeyType::kIntList;
constexpr KeyType kStrList = KeyType::kStringList;
constexpr KeyType kMap = KeyType::kMap;
const char* const kGen = kCategoryGeneral;
const char* const kTrain = kCategoryTraining;
const char* const kEval = kCategoryEvaluation;
const char* const kData = kCategoryDataset;
const char* const kDist = kCategoryDistributed;
using evaluator::join_names;
using evaluator::ranking_metric_names;
using evaluator::value_metric_names;

std::vector<std::string> learner_choices() {
  std::vector<std::string> names;
  for (const LearnerName& l : learner_names()) names.push_back(l.name);
  return names;
}

std::vector<KeyDecl> make_declarations() {
  return {
      // ---- General ----
      Key("model", kStr, kGen)
          .null()
          .help("Model name (BPR, LightGCN, ...); usually given with --model"),
      Key("dataset", kStr, kGen)
          .null()
          .help("Dataset name; its files are <data_path>/<dataset>/<dataset>.<suffix>"),
      Key("gpu_id", kStr, kGen)
          .help("CUDA_VISIBLE_DEVICES value, kept for RecBole compatibility; `device` selects the "
                "device"),
      Key("use_gpu", kBool, kGen)
          .help("Kept for RecBole compatibility; does not select the device (see `device`)"),
      Key("device", kStr, kGen)
          .shape("auto, cpu, cuda or cuda:N")
          .check(check_device)
          .help("Where tensors live: auto = CUDA when available, else CPU"),
      Key("strict_device", kBool, kGen)
          .help("A CUDA device asked for but absent is an error instead of a warning and a CPU "
                "fallback"),
      Key("num_threads", kInt, kGen)
          .min(0)
          .help("CPU threads for recbole's own kernels (fused BPR training, CPU evaluation, "
                "model fits) and for BLAS; 0 = the machine's cores divided among the processes "
                "started on it"),
      Key("torch_num_threads", kInt, kGen)
          .min(0)
          .help("libtorch intra-op threads (generic autograd path); 0 keeps libtorch's default. "
                "1 by default: more made small ops far slower on small VMs"),
      Key("worker", kInt, kGen)
          .min(0)
          .help("Data-loading worker count (RecBole's DataLoader num_workers)"),
      Key("seed", kInt, kGen)
          .min(0)
          .help("Random seed for splitting, sampling and model initialisation"),
      Key("state", kStr, kGen)
          .choices({"DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"})
          .help("Log level"),
      Key("reproducibility", kBool, kGen).help("Prefer deterministic algorithms over faster ones"),
      Key("data_path", kStr, kGen).help("Folder that holds one folder per dataset"),
      Key("checkpoint_dir", kStr, kGen)
          .help("Folder for model checkpoints (and saved datasets/dataloaders)"),
      Key("checkpoint_keep", kInt, kGen)
          .min(0)
          .help("Resume checkpoints kept per run (the newest; one is written after every epoch "
                "and on a stop signal); 0 = remove them when the run completes"),
      Key("resume", kStr, kGen)
          .null()
          .help("Continue a stopped run: the path of its resume checkpoint (the log of the "
                "stopped run names it), or `latest` for the newest of this model and dataset in "
                "checkpoint_dir (none: a new run starts)"),
      Key("log_dir", kStr, kGen).help("Folder for log files (<log_dir>/<model>/...)"),
      Key("result_file", kStr, kGen)
          .null()
          .help("When set, the final results are written there as JSON"),
      Key("report", kStr, kGen)
          .null()
          .help("When set, an HTML report of the run is written there (curves per epoch, results, "
                "timing, dataset, configuration; also for a stopped run)"),
      Key("show_progress", kBool, kGen).help("Show progress bars for training and evaluation"),
      Key("save_dataset", kBool, kGen)
          .shape("false")
          .check(off_only("false (saving the filtered dataset is not supported)"))
          .help("RecBole: save the filtered dataset; not supported, so it must stay false"),
      Key("dataset_save_path", kStr, kGen)
          .null()
          .check(check_no_path)
          .help("RecBole: path of a saved dataset; not supported, so it must stay null"),
      Key("save_dataloaders", kBool, kGen)
          .shape("false")
          .check(off_only("false (saving the split dataloaders is not supported)"))
          .help("RecBole: save the split dataloaders; not supported, so it must stay false"),
      Key("dataloaders_save_path", kStr, kGen)
          .null()
          .check(check_no_path)
          .help("RecBole: path of saved dataloaders; not supported, so it must stay null"),
      Key("log_wandb", kBool, kGen)
          .shape("false")
          .check(check_wandb_off)
          .help("Weights & Biases logging; not supported, so it must stay false"),
      Key("wandb_project", kStr, kGen)
          .help("Weights & Biases project (accepted for compatibility, unused)"),

      // ---- Training ----
      Key("epochs", kInt, kTrain).min(0).help("Maximum number of training epochs"),
      Key("train_batch_size", kInt, kTrain)
          .min(1)
          .help("Rows per training batch (including sampled negatives)"),
      Key("learner", kStr, kTrain)
          .choices(learner_choices())
          .help("Optimizer. sparse_adam: lazy Adam (torch's SparseAdam: only the rows a batch "
                "uses are updated; weight_decay ignored) on the fused BPR path, Adam without "
                "weight decay on the generic path"),
      Key("learning_rate", kFloat, kTrain).above(0).help("Optimizer learning rate"),
      Key("train_neg_sample_args", kMap, kTrain)
          .null()
          .shape("{distribution: uniform|popularity|none, sample_num: int >= 1, alpha: float, "
                 "dynamic: bool, candidate_num: int >= 0}")
          .check(check_train_neg_sample_args)
          .help("Negative sampling for training; keys left out take their default; null = no "
                "sampling; dynamic: true makes each negative the best-scored (by the model being "
                "trained) of candidate_num drawn candidates (every model that trains on sampled "
                "negatives)"),
      Key("eval_step", kInt, kTrain).help("Epochs between two validations; <= 0 = never validate"),
      Key("stopping_step", kInt, kTrain)
          .min(0)
          .help("Early stopping after this many validations without improvement (+1)"),
      Key("clip_grad_norm", kMap, kTrain)
          .null()
          .shape("{max_norm: float > 0, norm_type: float > 0}")
          .check(check_clip_grad_norm)
          .help("Clip the gradient norm before each optimizer step"),
      Key("weight_decay", kFloat, kTrain).min(0).help("L2 penalty of the optimizer"),
      Key("loss_decimal_place", kInt, kTrain).min(0).help("Decimals of the logged training loss"),
      Key("require_pow", kBool, kTrain).help("EmbLoss uses squared norms instead of plain norms"),
      Key("enable_amp", kBool, kTrain).help("Mixed precision (autocast) in training"),
      Key("enable_scaler", kBool, kTrain).help("Gradient scaling for mixed precision (CUDA only)"),
      Key("transform", kStr, kTrain)
          .null()
          .check(check_transform)
          .help("A transform of every training batch: mask_itemseq, BERT4Rec's masked items "
                "(BERT4Rec always draws them itself; other models read no masked columns, as "
                "in RecBole)"),
      Key("shuffle", kBool, kTrain).help("Shuffle the training interactions every epoch"),
      Key("fast_path", kBool, kTrain)
          .help("false: every model trains on its reference path (libtorch autograd over the "
                "composed expressions, libtorch's Adam) instead of its fast paths (a model's own "
                "epoch, closed-form steps, parts on the thread pool, the fused CPU functions, "
                "the fused Adam): slower, the same results up to float rounding"),
      Key("fast_bpr", kBool, kTrain)
          .help("Use the fused BPR training path (CPU, one process, learner adam, "
                "sparse_adam or sgd, no clip_grad_norm) when the configuration allows it"),

      // ---- Evaluation ----
      Key("eval_args", kMap, kEval)
          .shape("{split: {RS: [r,r,r]} | {LS: valid_and_test|valid_only|test_only}, order: RO|TO, "
                 "group_by: user|none, mode: full|labeled|uniN|popN or {valid: m, test: m}}")
          .check(check_eval_args)
          .help("Splitting, ordering, grouping and evaluation mode; keys left out take their "
                "default"),
      Key("repeatable", kBool, kEval)
          .help("Repeatable recommendation: no history is masked at evaluation. Sequential "
                "models need true (their preset sets it); other tasks need false"),
      Key("metrics", kStrList, kEval)
          .shape("list of metric names (" + join_names(ranking_metric_names()) +
                 "), or of value metric names (" + join_names(value_metric_names()) + ")")
          .check(check_metrics)
          .help("Metrics to compute (case-insensitive); a single name is a one-element list. "
                "Value metrics need eval_args mode labeled, uniN or popN (not full)"),
      Key("topk", kIntList, kEval)
          .min(1)
          .check(check_nonempty)
          .help("Cut-offs of the top-k metrics; a single int is a one-element list"),
      Key("valid_metric", kStr, kEval)
          .shape("<metric>@<k>, GAUC or a value metric")
          .check(check_valid_metric)
          .help("Metric used for early stopping and model selection"),
      Key("valid_metric_bigger", kBool, kEval)
          .derived()
          .help("Derived from valid_metric: false for metrics where smaller is better"),
      Key("eval_batch_size", kInt, kEval)
          .min(1)
          .help(
              "Evaluation batch size (users per batch = eval_batch_size // n_items in full mode)"),
      Key("metric_decimal_place", kInt, kEval).min(0).help("Decimals metrics are rounded to"),
      Key("tail_ratio", kFloat, kEval)
          .above(0)
          .help("TailPercentage: share of least popular items (< 1) or a count threshold (>= 1)"),
      Key("eval_memory_budget_mb", kInt, kEval)
          .min(1)
          .help("Upper bound in MiB of one block of scores during evaluation"),

      // ---- Dataset ----
      Key("field_separator", kStr, kData)
          .shape("one character")
          .check(check_separator)
          .help("Column separator of the atomic files"),
      Key("seq_separator", kStr, kData)
          .shape("one character")
          .check(check_separator)
          .help("Separator inside token_seq / float_seq cells"),
      Key("USER_ID_FIELD", kStr, kData).help("Name of the user id field"),
      Key("ITEM_ID_FIELD", kStr, kData).help("Name of the item id field"),
      Key("RATING_FIELD", kStr, kData).null().help("Name of the rating field"),
      Key("TIME_FIELD", kStr, kData)
          .null()
          .help("Name of the timestamp field (needed by order: TO)"),
      Key("MAX_ITEM_LIST_LENGTH", kInt, kData)
          .min(1)
          .help("Sequential models: the most recent items a sample's input keeps (older ones "
                "are cut); every item_seq is this wide, zero-padded on the right"),
      Key("seq_len", kMap, kData)
          .null()
          .shape("a map from field name to maximum length")
          .check(check_seq_len)
          .help("Truncate sequence fields to these lengths"),
      Key("LABEL_FIELD", kStr, kData).null().help("Name of the label field created by `threshold`"),
      Key("threshold", kMap, kData)
          .null()
          .shape("a one-key map {field: value}")
          .check(check_threshold)
          .help("Label = 1 when field >= value, else 0 (the field is then dropped)"),
      Key("numerical_features", kStrList, kData)
          .help("Float / float_seq fields that context models embed (value times a learned "
                "vector); other float fields are loaded but not model inputs"),
      Key("NEG_PREFIX", kStr, kData).help("Prefix of the negative-sample columns (neg_item_id)"),
      Key("load_col", kMap, kData)
          .null()
          .shape("a map from suffix to a list of columns or \"*\"")
          .check(check_column_map)
          .help("Columns to load per file suffix; a suffix left out is not loaded; null = "
                "everything"),
      Key("unload_col", kMap, kData)
          .null()
          .shape("a map from suffix to a list of columns or \"*\"")
          .check(check_column_map)
          .help("Columns not to load per file suffix"),
      Key("unused_col", kMap, kData)
          .null()
          .shape("a map from suffix to a list of columns or \"*\"")
          .check(check_column_map)
          .help("Columns loaded for preprocessing but dropped before splitting"),
      Key("additional_feat_suffix", kStrList, kData)
          .null()
          .check(off_only("[] (extra feature files are not supported)"))
          .help("RecBole: extra feature files <dataset>.<suffix>; not supported, so it must "
                "stay null"),
      Key("rm_dup_inter", kStr, kData)
          .null()
          .choices({"first", "last"})
          .help("Remove duplicate user-item interactions, keeping the first or the last"),
      Key("val_interval", kMap, kData)
          .null()
          .shape("a map from field to intervals or a list of values")
          .check(check_val_interval)
          .help("Keep rows whose field value lies in the intervals (float) or the list (token)"),
      Key("filter_inter_by_user_or_item", kBool, kData)
          .help("Drop interactions whose user / item is missing from a loaded .user / .item file"),
      Key("user_inter_num_interval", kStr, kData)
          .null()
          .shape(kIntervalShape)
          .check(check_interval)
          .help(
              "Keep users whose interaction count lies in the interval (k-core); null = no filter"),
      Key("item_inter_num_interval", kStr, kData)
          .null()
          .shape(kIntervalShape)
          .check(check_interval)
          .help(
              "Keep items whose interaction count lies in the interval (k-core); null = no filter"),
      Key("normalize_field", kStrList, kData).null().help("Float fields to min-max normalise"),
      Key("normalize_all", kBool, kData).null().help("Min-max normalise every float field"),
      Key("benchmark_filename", kStrList, kData)
          .null()
          .help("Suffixes of pre-split files <dataset>.<suffix>.inter used as train, valid, test"),
      // ---- Sequential field names (RecBole's sample.yaml) ----
      Key("ITEM_LIST_LENGTH_FIELD", kStr, kData)
          .help("Name of a sequential sample's length column (batches carry it as "
                "item_seq_len whatever its name)"),
      Key("LIST_SUFFIX", kStr, kData)
          .help("Suffix of a sequential sample's history columns (item_id + suffix)"),
      Key("POSITION_FIELD", kStr, kData)
          .help("Name of the position column of sequential models (positions are computed, not "
                "loaded)"),
      Key("discretization", kMap, kData)
          .null()
          .help("Bucket numerical features for context models: {field: {method: ED, bucket: k}} "
                "(k equal-width buckets) or {field: {method: LD}} (logarithmic); each field is "
                "one of numerical_features"),
      // ---- Knowledge graph (RecBole's sample.yaml; knowledge models) ----
      Key("HEAD_ENTITY_ID_FIELD", kStr, kData).help("Head entity column of the .kg file"),
      Key("TAIL_ENTITY_ID_FIELD", kStr, kData).help("Tail entity column of the .kg file"),
      Key("RELATION_ID_FIELD", kStr, kData).help("Relation column of the .kg file"),
      Key("ENTITY_ID_FIELD", kStr, kData)
          .help("Entity column of the .link file (item_id -> entity_id)"),
      Key("kg_reverse_r", kBool, kData)
          .null()
          .help("Add a reverse triple (t, r_r, h) for every KG triple, with its own relation id"),
      Key("entity_kg_num_interval", kStr, kData)
          .null()
          .shape(kIntervalShape)
          .check(check_interval)
          .help("Keep KG triples whose head and tail occur in a number of triples inside the "
                "interval (to a fixed point); null = no filter"),
      Key("relation_kg_num_interval", kStr, kData)
          .null()
          .shape(kIntervalShape)
          .check(check_interval)
          .help("Keep KG triples whose relation occurs in a number of triples inside the "
                "interval; null = no filter"),
      // ---- Id aliases and preloaded weights ----
      Key("alias_of_user_id", kStrList, kData)
          .null()
          .help("Token fields that hold user ids: remapped together with USER_ID_FIELD"),
      Key("alias_of_item_id", kStrList, kData)
          .null()
          .help("Token fields that hold item ids: remapped together with ITEM_ID_FIELD"),
      Key("alias_of_entity_id", kStrList, kData)
          .null()
          .help("Knowledge task: token fields of the .inter/.user/.item files that hold KG entity "
                "ids, remapped into the entity ids of HEAD_/TAIL_ENTITY_ID_FIELD (a linked "
                "entity is its item's id)"),
      Key("alias_of_relation_id", kStrList, kData)
          .null()
          .help("Knowledge task: token fields of the .inter/.user/.item files that hold KG "
                "relations, remapped into the relation ids of RELATION_ID_FIELD"),
      Key("preload_weight", kMap, kData)
          .null()
          .shape("a map {id field: value field}")
          .check(check_preload_weight)
          .help("{id field: value field} of one file: a [num ids, width] matrix of the float "
                "(float_seq) values by remapped id, handed to models; rows without a value are "
                "zeros"),
      Key("encoding", kStr, kData)
          .null()
          .check(check_utf8)
          .help("Text encoding of the atomic files: null or utf-8 (the only one supported)"),
      Key("download_url", kStr, kData)
          .null()
          .shape("a URL: http://, https:// or file:///absolute/path")
          .check(check_url)
          .help("URL of the dataset archive, instead of the one in datasets/registry.yaml"),
      Key("download_sha256", kStr, kData)
          .null()
          .shape("64 hexadecimal digits")
          .check(check_sha256)
          .help("Expected SHA-256 of the downloaded archive"),
      Key("download_timeout", kFloat, kData)
          .above(0)
          .max(86400)  // finite: the HTTP client's timeouts are integers of milliseconds
          .help("Seconds a download may stall before the attempt fails"),
      Key("download_retries", kInt, kData).min(0).help("Further attempts after a failed download"),

      // ---- Distributed ----
      Key("nproc", kInt, kDist).min(1).help("Processes to start on this node"),
      Key("world_size", kInt, kDist).min(-1).help("Processes over all nodes; -1 (or 0) = nproc"),
      Key("ip", kStr, kDist).help("Address of the rank-0 node"),
      Key("port", kInt, kDist).min(1).max(65535).help("Port of the rank-0 node"),
      Key("offset", kInt, kDist).min(0).help("Global rank of this node's first process"),
      Key("local_rank", kInt, kDist)
          .null()
          .min(0)
          .help("Rank of this process on its node; set by the launcher, not by hand"),
      Key("dist_backend", kStr, kDist)
          .choices({"auto", "gloo", "nccl"})
          .help("Collective backend: auto = nccl on CUDA, gloo on CPU"),
      Key("dist_timeout", kFloat, kDist)
          .above(0)
          .max(604800)  // a week; finite, since c10d and Gloo take integer milliseconds
          .help("Seconds a rendezvous or collective may wait before failing"),
      Key("socket_ifname", kStr, kDist)
          .null()
          .help("Network interface for Gloo (as GLOO_SOCKET_IFNAME); ~ = the route to ip"),
      Key("gradient_exchange", kStr, kDist)
          .choices({"auto", "dense", "sparse"})
          .help("Gradient averaging: dense all-reduce, sparse = only non-zero embedding rows, "
                "auto = sparse when it sends under half the bytes"),

  };
}

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1])});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

}  // namespace

const std::vector<KeyDecl>& declared_keys() {
  static const std::vector<KeyDecl> keys = make_declarations();
  return keys;
}

const KeyDecl* find_key(const std::string& name) {
  static const std::map<std::string, const KeyDecl*> index = [] {
    std::map<std::string, const KeyDecl*> m;
    for (const auto& k : declared_keys()) m.emplace(k.name, &k);
    return m;
  }();
  auto it = index.find(name);
  return it == index.end() ? nullptr : it->second;
}

std::string nearest_key(const std::string& name) {
  std::string best;
  size_t best_d = std::string::npos;
  auto consider = [&](const std::string& candidate) {
    size_t d = edit_distance(to_lower(name), to_lower(candidate));
    if (d < best_d) {
      best_d = d;
      best = candidate;
    }
  };
  for (const auto& k : declared_keys()) consider(k.name);
  for (const auto& [model, keys] : all_model_keys())
    for (const auto& k : keys) consider(k.name);
  size_t limit = std::max<size_t>(2, name.size() / 3);
  return best_d <= limit ? best : "";
}

}  // namespace recbole::config
