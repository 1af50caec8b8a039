#include "trainer/resume_state.h"

#include "recbole/evaluator/metric_values.h"
#include "recbole/runtime/checkpoint_file.h"
#include "recbole/utils/error.h"
#include "trainer/best_model.h"
#include "trainer/trainer.h"

namespace recbole::trainer {
namespace {

// Format 1's metric values: [[name, value], ...].
evaluator::MetricValues metric_pairs_from_json(const nlohmann::ordered_json& j) {
  evaluator::MetricValues values;
  for (const auto& kv : j) values.emplace_back(kv.at(0).get<std::string>(), kv.at(1).get<double>());
  return values;
}

nlohmann::ordered_json optional_json(const std::optional<double>& v) {
  return v ? nlohmann::ordered_json(*v) : nlohmann::ordered_json(nullptr);
}

std::optional<double> optional_from_json(const nlohmann::ordered_json& j) {
  if (j.is_null()) return std::nullopt;
  return j.get<double>();
}

}  // namespace

nlohmann::ordered_json resume_meta_json(const ResumeHeader& header, const LoopState& loop,
                                        const FitResult& result, size_t optimizers,
                                        size_t best_tensors) {
  return {
      {"format", kResumeFormat},
      {"model", header.model},
      {"dataset", header.dataset},
      {"config", header.config_yaml},
      {"world_size", header.world_size},
      {"epoch", header.point.epoch},
      {"pass", header.point.pass},
      {"batch", header.point.batch},
      {"run", header.run},
      {"epoch_loss", loop.epoch_loss},
      {"epoch_seconds", loop.epoch_seconds},
      {"best_score", optional_json(loop.best_score)},
      {"cur_step", loop.cur_step},
      {"best_valid_score", optional_json(result.best_valid_score)},
      {"best_valid_result", evaluator::metric_values_to_json(result.best_valid_result)},
      {"epochs_run", result.epochs_run},
      {"best_epoch", result.best_epoch},
      {"train_seconds", result.train_seconds},
      {"eval_seconds", result.eval_seconds},
      {"checkpoint_path", result.checkpoint_path},
      {"history", history_to_json(result.history)},
      {"optimizers", optimizers},
      {"best_tensors", best_tensors},
  };
}

LoopState read_resume_meta(const nlohmann::ordered_json& meta, FitResult& result) {
  LoopState loop;
  loop.epoch_loss = meta.at("epoch_loss").get<double>();
  loop.epoch_seconds = meta.at("epoch_seconds").get<double>();
  loop.best_score = optional_from_json(meta.at("best_score"));
  loop.cur_step = meta.at("cur_step").get<int64_t>();
  result = FitResult();
  result.best_valid_score = optional_from_json(meta.at("best_valid_score"));
  const nlohmann::ordered_json& best = meta.at("best_valid_result");
  result.best_valid_result = meta.at("format").get<int64_t>() == 1
                                 ? metric_pairs_from_json(best)
                                 : evaluator::metric_values_from_json(best);
  result.epochs_run = meta.at("epochs_run").get<int64_t>();
  result.best_epoch = meta.at("best_epoch").get<int64_t>();
  result.train_seconds = meta.at("train_seconds").get<std::vector<double>>();
  result.eval_seconds = meta.at("eval_seconds").get<std::vector<double>>();
  result.checkpoint_path = meta.at("checkpoint_path").get<std::string>();
  result.history = history_from_json(meta.at("history"));
  return loop;
}

std::shared_ptr<torch::serialize::OutputArchive> resume_archive(const ResumeHeader& header,
                                                                const LoopState& loop,
                                                                const FitResult& result,
                                                                const ResumeParts& parts) {
  auto archive_ptr = std::make_shared<torch::serialize::OutputArchive>();
  torch::serialize::OutputArchive& archive = *archive_ptr;
  const std::vector<torch::Tensor>& best = parts.best.tensors();
  const nlohmann::ordered_json meta =
      resume_meta_json(header, loop, result, parts.optimizers.size(), best.size());
  archive.write("resume_meta", c10::IValue(meta.dump()));
  torch::serialize::OutputArchive model;
  snapshot_module(parts.model, model);
  archive.write("model", model);
  torch::serialize::OutputArchive model_training;
  parts.model.save_training_state(model_training);
  archive.write("model_training_state", model_training);
  for (size_t k = 0; k < parts.optimizers.size(); ++k) {
    torch::serialize::OutputArchive optimizer;
    parts.optimizers[k]->save(optimizer);
    detach_optimizer_state(*parts.optimizers[k]);
    archive.write("optimizer_" + std::to_string(k), optimizer);
  }
  if (parts.fast_epoch) {
    torch::serialize::OutputArchive fast;
    parts.fast_epoch->save(fast);
    archive.write("fast_epoch", fast);
  }
  const std::vector<torch::Tensor> generators = parts.device.generator_states();
  for (size_t k = 0; k < generators.size(); ++k)
    archive.write("generator_" + std::to_string(k), generators[k]);
  // The copies BestModel keeps are never changed afterwards (keep() makes new ones).
  for (size_t k = 0; k < best.size(); ++k) archive.write("best_" + std::to_string(k), best[k]);
  return archive_ptr;
}

LoopState read_resume_state(const std::string& path, const ResumeParts& parts, FitResult& result) {
  torch::serialize::InputArchive archive;
  load_checkpoint_archive(path, "resume checkpoint", archive, parts.device.device());
  c10::IValue meta_value;
  archive.read("resume_meta", meta_value);
  // ordered_json: the metric values come back in the order they were written.
  const nlohmann::ordered_json meta = nlohmann::ordered_json::parse(meta_value.toStringRef());
  auto sub = [&](const std::string& key) {
    torch::serialize::InputArchive a;
    archive.read(key, a);
    return a;
  };
  const std::string& name = parts.model.name();
  const size_t optimizers = meta.at("optimizers").get<size_t>();
  if (optimizers != parts.optimizers.size() || meta.at("optimizers").is_null())
    throw Error("resume checkpoint " + path + " holds " + std::to_string(optimizers) +
                " optimizer(s); this run of " + name + " has " +
                std::to_string(parts.optimizers.size()) + " (fast_bpr or the learner changed?)");
  try {
    torch::serialize::InputArchive model = sub("model");
    parts.model.load(model);
    torch::serialize::InputArchive model_training = sub("model_training_state");
    parts.model.load_training_state(model_training);
    for (size_t k = 0; k < optimizers; ++k) {
      torch::serialize::InputArchive optimizer = sub("optimizer_" + std::to_string(k));
      parts.optimizers[k]->load(optimizer);
    }
    if (parts.fast_epoch) {
      torch::serialize::InputArchive fast = sub("fast_epoch");
      parts.fast_epoch->load(fast);
    }
    std::vector<torch::Tensor> generators;
    for (size_t k = 0; k < parts.device.generator_states().size(); ++k) {
      torch::Tensor g;
      archive.read("generator_" + std::to_string(k), g);
      generators.push_back(DeviceManager::to_host(g));
    }
    parts.device.set_generator_states(generators);
    std::vector<torch::Tensor> best;
    const size_t best_tensors = meta.at("best_tensors").get<size_t>();
    for (size_t k = 0; k < best_tensors; ++k) {
      torch::Tensor t;
      archive.read("best_" + std::to_string(k), t);
      best.push_back(t);
    }
    parts.best.restore(std::move(best));
  } catch (const c10::Error& e) {
    throw Error("resume checkpoint " + path + " does not fit this " + name +
                " (another model size or dataset?): " + e.what_without_backtrace());
  }
  return read_resume_meta(meta, result);
}

}  // namespace recbole::trainer
