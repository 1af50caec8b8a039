#include "tasks/serving_section.h"

#include <cstring>
#include <ctime>

#include "recbole/config/config.h"
#include "recbole/config/config_snapshot.h"
#include "recbole/data/dataset.h"
#include "recbole/runtime/device_manager.h"
#include "recbole/utils/error.h"
#include "tasks/task_family.h"
#include "tasks/task_pipeline.h"

namespace recbole::serving {
namespace {

// The history as two CPU tensors that never change (copies: the matrix may go away).
struct HistoryTensors {
  torch::Tensor indptr, indices;
};

HistoryTensors history_tensors(const data::InteractionMatrix& m) {
  HistoryTensors h;
  h.indptr = torch::from_blob(const_cast<int64_t*>(m.indptr().data()),
                              {static_cast<int64_t>(m.indptr().size())}, torch::kInt64)
                 .clone();
  h.indices = torch::from_blob(const_cast<int32_t*>(m.indices().data()),
                               {static_cast<int64_t>(m.indices().size())}, torch::kInt32)
                  .clone();
  return h;
}

struct TokenTensors {
  torch::Tensor bytes, offsets;
};

TokenTensors token_tensors(const std::vector<std::string>& tokens) {
  int64_t total = 0;
  for (const std::string& t : tokens) total += static_cast<int64_t>(t.size());
  TokenTensors out;
  out.bytes = torch::empty({total}, torch::kUInt8);
  out.offsets = torch::empty({static_cast<int64_t>(tokens.size()) + 1}, torch::kInt64);
  auto* b = out.bytes.data_ptr<uint8_t>();
  auto* o = out.offsets.data_ptr<int64_t>();
  int64_t pos = 0;
  o[0] = 0;
  for (size_t k = 0; k < tokens.size(); ++k) {
    std::memcpy(b + pos, tokens[k].data(), tokens[k].size());
    pos += static_cast<int64_t>(tokens[k].size());
    o[k + 1] = pos;
  }
  return out;
}

void write_token_tensors(torch::serialize::OutputArchive& archive, const TokenTensors& t) {
  archive.write("bytes", t.bytes);
  archive.write("offsets", t.offsets);
}

}  // namespace

models::ModelContext TaskServing::model_context(const config::Config& config,
                                                const ServingSection& section,
                                                const DeviceManager& device) const {
  return models::ModelContext{config, section.n_users, section.n_items, section.history, device};
}

data::Batch TaskServing::user_batch(const std::vector<int64_t>& users) const {
  data::Batch b;
  b.users = data::id_tensor(users);
  return b;
}

data::Batch TaskServing::history_batch(const std::vector<int32_t>& history, int64_t n_items) const {
  data::Batch b;
  b.users = torch::zeros({1}, torch::kInt64);
  b.history = torch::zeros({1, n_items}, torch::kFloat32);
  float* h = b.history.data_ptr<float>();
  for (int32_t i : history) h[i] = 1.0f;
  return b;
}

torch::Tensor TaskServing::scores(models::Model& model, const data::Batch& batch,
                                  const DeviceManager& device) const {
  return model.full_sort_predict(device.place(batch));
}

void write_tokens(torch::serialize::OutputArchive& archive,
                  const std::vector<std::string>& tokens) {
  write_token_tensors(archive, token_tensors(tokens));
}

std::vector<std::string> read_tokens(torch::serialize::InputArchive& archive,
                                     const std::string& what) {
  torch::Tensor bytes, offsets;
  archive.read("bytes", bytes);
  archive.read("offsets", offsets);
  if (bytes.scalar_type() != torch::kUInt8 || offsets.scalar_type() != torch::kInt64 ||
      bytes.dim() != 1 || offsets.dim() != 1 || offsets.numel() < 1)
    throw Error(what + ": the token table has unexpected types or shapes");
  bytes = bytes.contiguous();
  offsets = offsets.contiguous();
  const auto* b = reinterpret_cast<const char*>(bytes.data_ptr<uint8_t>());
  const auto* o = offsets.data_ptr<int64_t>();
  const int64_t n = offsets.numel() - 1;
  std::vector<std::string> tokens;
  tokens.reserve(static_cast<size_t>(n));
  if (o[0] != 0) throw Error(what + ": the token table is damaged");
  for (int64_t k = 0; k < n; ++k) {
    if (o[k + 1] < o[k] || o[k + 1] > bytes.numel())
      throw Error(what + ": the token table is damaged");
    tokens.emplace_back(b + o[k], static_cast<size_t>(o[k + 1] - o[k]));
  }
  return tokens;
}

SectionWriter serving_section_writer(const config::Config& config, const std::string& task,
                                     std::vector<std::string> user_tokens,
                                     std::vector<std::string> item_tokens,
                                     const data::InteractionMatrix& history,
                                     SectionWriter task_section) {
  if (static_cast<int64_t>(user_tokens.size()) != history.n_users() ||
      static_cast<int64_t>(item_tokens.size()) != history.n_items())
    throw Error("serving section: " + std::to_string(user_tokens.size()) + " user and " +
                std::to_string(item_tokens.size()) + " item tokens for a history of " +
                std::to_string(history.n_users()) + " users and " +
                std::to_string(history.n_items()) + " items");
  nlohmann::json meta = {{"format", kServingFormat},
                         {"model", config.model()},
                         {"task", task},
                         {"dataset", config.dataset()},
                         {"n_users", history.n_users()},
                         {"n_items", history.n_items()},
                         {"interactions", history.nnz()},
                         {"config", config::config_snapshot(config)}};
  auto users = std::make_shared<const TokenTensors>(token_tensors(user_tokens));
  auto items = std::make_shared<const TokenTensors>(token_tensors(item_tokens));
  auto hist = std::make_shared<const HistoryTensors>(history_tensors(history));
  return [meta = std::move(meta), users, items, hist,
          task_section = std::move(task_section)](torch::serialize::OutputArchive& checkpoint) {
    nlohmann::json m = meta;
    m["written_at"] = static_cast<int64_t>(std::time(nullptr));
    torch::serialize::OutputArchive section;
    section.write("meta", c10::IValue(m.dump()));
    torch::serialize::OutputArchive u, i, h, t;
    write_token_tensors(u, *users);
    write_token_tensors(i, *items);
    h.write("indptr", hist->indptr);
    h.write("indices", hist->indices);
    if (task_section) task_section(t);
    section.write("user_tokens", u);
    section.write("item_tokens", i);
    section.write("history", h);
    section.write("task", t);
    checkpoint.write(kServingKey, section);
  };
}

SectionWriter serving_section_writer(const config::Config& config, const data::Dataset& dataset,
                                     const tasks::TaskPipeline& task, const DeviceManager& device) {
  const models::ModelDescriptor& descriptor = models::find_model(config.model());
  const models::ModelContext ctx = task.model_context(device);
  std::vector<std::string> users, items;
  users.reserve(static_cast<size_t>(ctx.n_users));
  items.reserve(static_cast<size_t>(ctx.n_items));
  for (int64_t u = 0; u < ctx.n_users; ++u) users.push_back(dataset.user_token(int32_t(u)));
  for (int64_t i = 0; i < ctx.n_items; ++i) items.push_back(dataset.item_token(int32_t(i)));
  const TaskServingHooks& hooks = tasks::find_family(descriptor.task).serving;
  SectionWriter task_section = hooks.prepare ? hooks.prepare(task) : SectionWriter{};
  return serving_section_writer(config, descriptor.task, std::move(users), std::move(items),
                                ctx.train, std::move(task_section));
}

ServingSection read_serving_section(torch::serialize::InputArchive& checkpoint,
                                    const std::string& path,
                                    torch::serialize::InputArchive* task_out) {
  const std::string name = "checkpoint " + path;
  torch::serialize::InputArchive section;
  if (!checkpoint.try_read(kServingKey, section))
    throw Error(name +
                " has no serving section (vocabularies, history, config): it was written by a "
                "recbole-cpp older than serving format " +
                std::to_string(kServingFormat) +
                ", or by a program that trained without recbole::run; train the model again "
                "with this version");
  ServingSection s;
  try {
    c10::IValue meta;
    if (!section.try_read("meta", meta) || !meta.isString())
      throw Error(name + ": its serving section has no meta record");
    try {
      s.meta = nlohmann::json::parse(meta.toStringRef());
    } catch (const nlohmann::json::exception& e) {
      throw Error(name + ": its serving meta record is not JSON (" + e.what() + ")");
    }
    if (!s.meta.is_object() || !s.meta.contains("format") ||
        !s.meta.at("format").is_number_integer())
      throw Error(name + ": its serving meta record has no format number");
    const int64_t format = s.meta.at("format").get<int64_t>();
    if (format != kServingFormat)
      throw Error(name + " has serving format " + std::to_string(format) + "; this recbole-cpp " +
                  (format > kServingFormat ? "is older and " : "") + "reads format " +
                  std::to_string(kServingFormat) +
                  (format > kServingFormat ? ": use the recbole-cpp that wrote it, or a newer one"
                                           : ": train the model again with this version"));
    try {
      s.model = s.meta.at("model").get<std::string>();
      s.task = s.meta.at("task").get<std::string>();
      s.dataset = s.meta.at("dataset").get<std::string>();
      s.n_users = s.meta.at("n_users").get<int64_t>();
      s.n_items = s.meta.at("n_items").get<int64_t>();
      s.config_yaml = s.meta.at("config").get<std::string>();
      s.written_at = s.meta.value("written_at", int64_t{0});
    } catch (const nlohmann::json::exception& e) {
      throw Error(name + ": its serving meta record lacks a field (" + e.what() + ")");
    }
    torch::serialize::InputArchive u, i, h;
    section.read("user_tokens", u);
    section.read("item_tokens", i);
    section.read("history", h);
    s.user_tokens = read_tokens(u, name + " (user tokens)");
    s.item_tokens = read_tokens(i, name + " (item tokens)");
    if (static_cast<int64_t>(s.user_tokens.size()) != s.n_users ||
        static_cast<int64_t>(s.item_tokens.size()) != s.n_items || s.n_users < 1 || s.n_items < 1)
      throw Error(name + ": its token tables do not match n_users / n_items");
    torch::Tensor indptr, indices;
    h.read("indptr", indptr);
    h.read("indices", indices);
    if (indptr.scalar_type() != torch::kInt64 || indices.scalar_type() != torch::kInt32 ||
        indptr.dim() != 1 || indices.dim() != 1 || indptr.numel() != s.n_users + 1)
      throw Error(name + ": its history has unexpected types or shapes");
    indptr = indptr.contiguous();
    indices = indices.contiguous();
    const auto* p = indptr.data_ptr<int64_t>();
    const auto* ix = indices.data_ptr<int32_t>();
    if (p[0] != 0 || p[s.n_users] != indices.numel())
      throw Error(name + ": its history is damaged");
    std::vector<int32_t> us, is;
    us.reserve(static_cast<size_t>(indices.numel()));
    is.reserve(static_cast<size_t>(indices.numel()));
    for (int64_t r = 0; r < s.n_users; ++r) {
      if (p[r + 1] < p[r]) throw Error(name + ": its history is damaged");
      for (int64_t k = p[r]; k < p[r + 1]; ++k) {
        if (ix[k] < 0 || ix[k] >= s.n_items) throw Error(name + ": its history is damaged");
        us.push_back(static_cast<int32_t>(r));
        is.push_back(ix[k]);
      }
    }
    s.history = data::InteractionMatrix(s.n_users, s.n_items, us, is);
    if (task_out != nullptr) section.read("task", *task_out);
  } catch (const c10::Error& e) {
    throw Error(name + ": its serving section cannot be read (" +
                std::string(e.what_without_backtrace()).substr(0, 200) + ")");
  }
  return s;
}

std::unique_ptr<TaskServing> load_task_serving(torch::serialize::InputArchive& task_section,
                                               const ServingSection& section,
                                               const std::string& path) {
  const tasks::TaskFamily* family = nullptr;
  try {
    family = &tasks::find_family(section.task);
  } catch (const ConfigError&) {
    throw Error("checkpoint " + path + " is of task \"" + section.task +
                "\", which this recbole-cpp does not know");
  }
  if (!family->serving.load)
    throw Error("checkpoint " + path + " is a model of the " + section.task +
                " task, whose serving this recbole-cpp does not provide yet (its family "
                "registers no serving hooks: tasks/task_family.h)");
  return family->serving.load(task_section, section, path);
}

}  // namespace recbole::serving
