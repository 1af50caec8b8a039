#include "tasks/context/context_serving.h"

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "recbole/runtime/device_manager.h"
#include "recbole/utils/error.h"
#include "tasks/context/context_pipeline.h"

namespace recbole::serving {
namespace {

nlohmann::json schema_json(const data::FeatureSchema& schema) {
  nlohmann::json fields = nlohmann::json::array();
  for (const data::FeatureSpec& f : schema.fields)
    fields.push_back({{"name", f.name},
                      {"type", static_cast<int>(f.type)},
                      {"side", static_cast<int>(f.side)},
                      {"num", f.num},
                      {"seq_len", f.seq_len},
                      {"numerical", f.numerical},
                      {"discretised", f.discretised}});
  return {{"uid_field", schema.uid_field}, {"iid_field", schema.iid_field}, {"fields", fields}};
}

data::FeatureSchema schema_from_json(const nlohmann::json& j) {
  data::FeatureSchema schema;
  schema.uid_field = j.at("uid_field").get<std::string>();
  schema.iid_field = j.at("iid_field").get<std::string>();
  for (const nlohmann::json& f : j.at("fields")) {
    data::FeatureSpec spec;
    spec.name = f.at("name").get<std::string>();
    const int type = f.at("type").get<int>(), side = f.at("side").get<int>();
    if (type < static_cast<int>(data::FieldType::kToken) ||
        type > static_cast<int>(data::FieldType::kFloatSeq) || side < 0 || side > 2)
      throw Error("field " + spec.name + " has an unknown type or side");
    spec.type = static_cast<data::FieldType>(type);
    spec.side = static_cast<data::FeatureSide>(side);
    spec.num = f.at("num").get<int64_t>();
    spec.seq_len = f.at("seq_len").get<int64_t>();
    spec.numerical = f.at("numerical").get<bool>();
    spec.discretised = f.value("discretised", false);  // absent in checkpoints before it existed
    schema.fields.push_back(std::move(spec));
  }
  return schema;
}

// Columns are stored by position ("c0", "c1", ...) with their names beside them: a field name
// is not always a valid archive key (ml-100k's genres field is "class", a keyword of the
// serialised format).
void write_columns(torch::serialize::OutputArchive& archive, const char* key,
                   const std::vector<std::pair<std::string, torch::Tensor>>& columns) {
  torch::serialize::OutputArchive nested;
  nlohmann::json names = nlohmann::json::array();
  for (size_t i = 0; i < columns.size(); ++i) {
    names.push_back(columns[i].first);
    nested.write("c" + std::to_string(i), columns[i].second);
  }
  nested.write("names", c10::IValue(names.dump()));
  archive.write(key, nested);
}

class ContextServing : public TaskServing {
 public:
  ContextServing(data::FeatureSchema schema, tasks::FeatureColumns users,
                 tasks::FeatureColumns items)
      : schema_(std::move(schema)), users_(std::move(users)), items_(std::move(items)) {}

  models::ModelContext model_context(const config::Config& config, const ServingSection& section,
                                     const DeviceManager& device) const override {
    models::ModelContext ctx = TaskServing::model_context(config, section, device);
    // The model reads its fields from them; this object outlives it.
    ctx.parts.provide(schema_);
    ctx.parts.provide(item_columns_);
    return ctx;
  }

  // The users with their user-side feature columns: the model's full_sort_predict attaches
  // every item's.
  data::Batch user_batch(const std::vector<int64_t>& users) const override {
    data::Batch b = TaskServing::user_batch(users);
    tasks::add_user_features(schema_.uid_field, users_, b);
    return b;
  }

 private:
  data::FeatureSchema schema_;
  tasks::FeatureColumns users_, items_;
  models::ItemFeatureColumns item_columns_{items_.columns()};
};

SectionWriter prepare_context_section(const tasks::TaskPipeline& task) {
  const auto* ctx = dynamic_cast<const tasks::ContextPipeline*>(&task);
  if (ctx == nullptr) throw Error("context serving: the run's pipeline is not a context one");
  const std::string schema = schema_json(ctx->schema()).dump();
  // Copies that never change, held by the writer for every best-model checkpoint of the run.
  auto users = ctx->user_features().columns();
  auto items = ctx->item_features().columns();
  return [schema, users, items](torch::serialize::OutputArchive& archive) {
    archive.write("schema", c10::IValue(schema));
    write_columns(archive, "user", users);
    write_columns(archive, "item", items);
  };
}

// The columns of `side` named by the schema, each with `rows` rows.
tasks::FeatureColumns read_columns(torch::serialize::InputArchive& section, const char* key,
                                   const data::FeatureSchema& schema, data::FeatureSide side,
                                   int64_t rows, const std::string& damaged) {
  torch::serialize::InputArchive nested;
  c10::IValue names_value;
  if (!section.try_read(key, nested) || !nested.try_read("names", names_value) ||
      !names_value.isString())
    throw Error(damaged + " (no " + key + " columns)");
  std::map<std::string, size_t> position;
  try {
    const nlohmann::json names = nlohmann::json::parse(names_value.toStringRef());
    for (size_t i = 0; i < names.size(); ++i) position[names.at(i).get<std::string>()] = i;
  } catch (const std::exception& e) {
    throw Error(damaged + " (" + key + " column names: " + e.what() + ")");
  }
  tasks::FeatureColumns columns;
  for (const data::FeatureSpec& f : schema.fields) {
    if (f.side != side || !f.is_input() || f.name == schema.uid_field || f.name == schema.iid_field)
      continue;
    torch::Tensor t;
    const auto at = position.find(f.name);
    if (at == position.end() || !nested.try_read("c" + std::to_string(at->second), t) ||
        t.dim() < 1 || t.size(0) != rows)
      throw Error(damaged + " (column " + f.name + ")");
    columns.add(f.name, t.contiguous());
  }
  return columns;
}

std::unique_ptr<TaskServing> load_context_section(torch::serialize::InputArchive& section,
                                                  const ServingSection& common,
                                                  const std::string& path) {
  const std::string damaged = "checkpoint " + path + ": its context feature section is damaged";
  c10::IValue schema_value;
  if (!section.try_read("schema", schema_value) || !schema_value.isString())
    throw Error(damaged + " (no schema)");
  data::FeatureSchema schema;
  try {
    schema = schema_from_json(nlohmann::json::parse(schema_value.toStringRef()));
  } catch (const std::exception& e) {
    throw Error(damaged + " (" + e.what() + ")");
  }
  for (const data::FeatureSpec& f : schema.fields)
    if (f.side == data::FeatureSide::kInter && f.is_input())
      throw NotSupportedError(
          "checkpoint " + path + " is a " + common.model + " model reading the interaction field " +
          f.name +
          ", which a recommendation (a user and an item that never met) has no value for; "
          "train without it in load_col (or numerical_features) to serve the model");
  tasks::FeatureColumns users =
      read_columns(section, "user", schema, data::FeatureSide::kUser, common.n_users, damaged);
  tasks::FeatureColumns items =
      read_columns(section, "item", schema, data::FeatureSide::kItem, common.n_items, damaged);
  return std::make_unique<ContextServing>(std::move(schema), std::move(users), std::move(items));
}

}  // namespace

TaskServingHooks context_serving_hooks() { return {prepare_context_section, load_context_section}; }

}  // namespace recbole::serving
