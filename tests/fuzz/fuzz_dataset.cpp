// Fuzz target: the whole data pipeline (recbole/data/dataset.h, split.h, sequence_store.h) on
// arbitrary atomic files — the .inter, .user, .item, .kg and .link of one dataset — under the
// options of each task family's preset: filters, remapping, feature columns, thresholds,
// normalisation, the knowledge graph and its link, the split, the sequences.
//
// The first input byte picks the task and its options; the rest holds the files in that order,
// separated by NUL bytes (a file missing from the input is absent from the folder, so the
// missing-file paths are reached too). Bad input must be a recbole::Error; anything else
// (another exception, a crash, a hang, a sanitizer report) is a finding.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "recbole/data/dataset.h"
#include "recbole/data/dataset_options.h"
#include "recbole/data/sequence_store.h"
#include "recbole/data/split.h"
#include "recbole/utils/error.h"
#include "recbole/utils/logging.h"
#include "tests/fuzz/fuzz_input.h"

namespace {

using recbole::data::DatasetOptions;

enum class Task { kGeneral, kSequential, kContext, kKnowledge };

const char* const kSuffixes[] = {"inter", "user", "item", "kg", "link"};

// The options of one task, as its preset and a user's YAML would set them (mode's bits 2–7
// turn the optional ones on).
DatasetOptions options_for(Task task, uint8_t mode) {
  DatasetOptions o;
  o.dataset = "fz";
  o.data_path = recbole::fuzz::scratch_dir().string();
  const bool all_columns = mode & 0x20;
  switch (task) {
    case Task::kGeneral:
      o.load_col = std::map<std::string, std::vector<std::string>>{
          {"inter", {"user_id", "item_id", "rating", "timestamp"}}};
      if (mode & 0x04) o.rm_dup_inter = "first";
      break;
    case Task::kSequential:
      o.load_col = std::map<std::string, std::vector<std::string>>{
          {"inter", {"user_id", "item_id", "timestamp"}}};
      o.eval_args.order = "TO";
      o.eval_args.split = recbole::data::EvalArgs::SplitKind::kLeaveOneOut;
      break;
    case Task::kContext:
      o.load_col = std::map<std::string, std::vector<std::string>>{
          {"inter", {"user_id", "item_id", "rating", "timestamp"}},
          {"user", {"user_id", "age", "gender", "occupation"}},
          {"item", {"item_id", "release_year", "class", "item_vec"}}};
      o.eval_args.group_by = "none";
      o.eval_args.valid_mode = o.eval_args.test_mode = "labeled";
      o.normalize_all = mode & 0x04;
      if (mode & 0x40) o.preload_weight = {{"item_id", "item_vec"}};
      break;
    case Task::kKnowledge:
      o.load_col = std::map<std::string, std::vector<std::string>>{
          {"inter", {"user_id", "item_id"}},
          {"kg", {"head_id", "relation_id", "tail_id"}},
          {"link", {"item_id", "entity_id"}}};
      o.kg.reverse_relations = mode & 0x04;
      if (mode & 0x08) o.kg.entity_interval = o.kg.relation_interval = "[2,inf)";
      break;
  }
  if (all_columns && task != Task::kKnowledge) o.load_col.reset();
  if (mode & 0x08) {
    o.user_inter_num_interval = "[2,inf)";
    o.item_inter_num_interval = "[1,inf)";
  }
  if (mode & 0x10) o.threshold = std::make_pair(std::string("rating"), 4.0);
  if (mode & 0x80) {
    recbole::data::ValueFilter f;
    f.field = "rating";
    f.interval = "[3,inf)";
    o.val_interval.push_back(f);
  }
  return o;
}

// Writes the NUL-separated parts of [data, data + size) as fz.inter, fz.user, ... and removes
// the files of the parts the input lacks (a previous input's).
void write_files(const uint8_t* data, size_t size) {
  const std::filesystem::path dir = recbole::fuzz::scratch_dir() / "fz";
  std::filesystem::create_directories(dir);
  size_t begin = 0;
  for (size_t part = 0; part < std::size(kSuffixes); ++part) {
    const std::string name = std::string("fz/fz.") + kSuffixes[part];
    if (begin > size) {
      std::filesystem::remove(recbole::fuzz::scratch_dir() / name);
      continue;
    }
    size_t end = begin;
    while (end < size && data[end] != 0) ++end;
    recbole::fuzz::write_scratch_file(name, data + begin, end - begin);
    begin = end + 1;
  }
}

}  // namespace

// NOLINTNEXTLINE(readability-identifier-naming): the name libFuzzer calls
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  // The pipeline logs what it drops and sorts; at every input that is only noise (and time).
  static const bool quiet = (recbole::log::set_level(recbole::log::Level::kError), true);
  (void)quiet;
  const uint8_t mode = data[0];
  const Task task = static_cast<Task>(mode & 3);
  write_files(data + 1, size - 1);
  const DatasetOptions options = options_for(task, mode);
  try {
    const recbole::data::Dataset dataset = recbole::data::Dataset::load(options);
    if (task == Task::kSequential)
      recbole::data::SequenceStore::build(dataset, options, /*max_len=*/3);
    else
      recbole::data::split_dataset(dataset, options);
  } catch (const recbole::Error&) {
  }
  return 0;
}
