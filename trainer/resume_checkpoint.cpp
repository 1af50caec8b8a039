#include "trainer/resume_checkpoint.h"

#include "recbole/config/config_snapshot.h"

#include <algorithm>
#include <filesystem>
#include <map>

#include <torch/torch.h>
#include <yaml-cpp/yaml.h>
#include <nlohmann/json.hpp>

#include "recbole/config/config.h"
#include "recbole/runtime/checkpoint_file.h"
#include "recbole/utils/error.h"
#include "recbole/utils/logging.h"

namespace recbole::trainer {
namespace {

namespace fs = std::filesystem;

constexpr const char* kResumeTag = "-resume-";

std::map<std::string, std::string> parse_snapshot(const std::string& yaml) {
  std::map<std::string, std::string> values;
  const YAML::Node root = YAML::Load(yaml);
  for (const auto& kv : root) {
    YAML::Emitter out;
    out << YAML::Flow << kv.second;
    values[kv.first.as<std::string>()] = out.c_str();
  }
  return values;
}

}  // namespace

ResumeHeader read_resume_header(const std::string& path) {
  torch::serialize::InputArchive archive;
  try {
    load_checkpoint_archive(path, "resume checkpoint", archive);
  } catch (const Error& e) {
    throw Error(std::string(e.what()) +
                "; use an older resume checkpoint of the run, or start afresh");
  }
  c10::IValue meta;
  try {
    archive.read("resume_meta", meta);
  } catch (const std::exception&) {  // c10::Error: no such record
    throw Error("resume checkpoint " + path +
                " is not a resume checkpoint (a best-model checkpoint cannot be resumed); use a "
                "-resume- checkpoint of the run, or start afresh");
  }
  ResumeHeader h;
  try {
    const nlohmann::json j = nlohmann::json::parse(meta.toStringRef());
    h.format = j.at("format").get<int64_t>();
    if (h.format < kOldestResumeFormat || h.format > kResumeFormat)
      throw Error("resume checkpoint " + path + " has format " + std::to_string(h.format) +
                  "; this recbole-cpp reads formats " + std::to_string(kOldestResumeFormat) +
                  " to " + std::to_string(kResumeFormat) +
                  ": resume it with the version that wrote it, or start afresh");
    h.model = j.at("model").get<std::string>();
    h.dataset = j.at("dataset").get<std::string>();
    h.config_yaml = j.at("config").get<std::string>();
    h.world_size = j.at("world_size").get<int>();
    h.point.epoch = j.at("epoch").get<int64_t>();
    h.point.pass = j.at("pass").get<int64_t>();
    h.point.batch = j.at("batch").get<int64_t>();
    h.run = j.at("run").get<std::string>();
  } catch (const nlohmann::json::exception& e) {
    throw Error("resume checkpoint " + path + ": its header is damaged (" + e.what() + ")");
  } catch (const c10::Error&) {
    throw Error("resume checkpoint " + path + ": its header is damaged");
  }
  return h;
}

const std::vector<std::string>& keys_free_on_resume() {
  // Stopping, logging and output locations; thread counts (results do not depend on them);
  // where the data and the rendezvous are (they move with a requeued job). Everything else
  // changes what the run computes.
  static const std::vector<std::string> keys = {
      "epochs",      "stopping_step", "state",          "show_progress",    "log_dir",
      "result_file", "report",        "checkpoint_dir", "checkpoint_keep",  "resume",
      "data_path",   "num_threads",   "worker",         "gpu_id",           "ip",
      "port",        "socket_ifname", "dist_timeout",   "download_timeout", "download_retries"};
  return keys;
}

void check_resume_compatible(const ResumeHeader& header, const config::Config& config,
                             int world_size, const std::string& path) {
  const std::string where = config.source("resume");
  if (header.model != config.model() || header.dataset != config.dataset())
    throw ConfigError(where + ": resume: " + path + " is a run of " + header.model + " on " +
                      header.dataset + ", not of " + config.model() + " on " + config.dataset());
  if (header.world_size != world_size)
    throw ConfigError(where + ": resume: " + path + " was written by a run of " +
                      std::to_string(header.world_size) + " process(es); this run has " +
                      std::to_string(world_size) +
                      ": resume with the same number of processes (nproc / world_size)");
  const auto before = parse_snapshot(header.config_yaml);
  const auto now = parse_snapshot(config::config_snapshot(config));
  const auto& free = keys_free_on_resume();
  std::vector<std::string> keys;
  for (const auto& [k, v] : before) keys.push_back(k);
  for (const auto& [k, v] : now)
    if (!before.count(k)) keys.push_back(k);
  for (const std::string& key : keys) {
    if (std::find(free.begin(), free.end(), key) != free.end()) continue;
    const auto b = before.find(key), n = now.find(key);
    const std::string was = b == before.end() ? "(absent)" : b->second;
    const std::string is = n == now.end() ? "(absent)" : n->second;
    if (was == is) continue;
    std::string list;
    for (const std::string& f : free) list += (list.empty() ? "" : ", ") + f;
    throw ConfigError((n == now.end() ? where : config.source(key)) + ": " + key + " is " + is +
                      " but the run in " + path + " ran with " + was +
                      ": a resumed run must compute what the stopped one would have; only " + list +
                      " may change on resume");
  }
}

void snapshot_module(const torch::nn::Module& module, torch::serialize::OutputArchive& archive) {
  torch::NoGradGuard no_grad;
  for (const auto& p : module.named_parameters(/*recurse=*/false))
    archive.write(p.key(), p.value().detach().clone());
  for (const auto& b : module.named_buffers(/*recurse=*/false))
    archive.write(b.key(), b.value().clone(), /*is_buffer=*/true);
  for (const auto& child : module.named_children()) {
    torch::serialize::OutputArchive nested(archive.compilation_unit());
    snapshot_module(*child.value(), nested);
    archive.write(child.key(), nested);
  }
}

namespace {

void detach(torch::Tensor& t) {
  if (t.defined()) t = t.clone();
}

// Calls fix(state) when every param state of `optimizer` is a State.
template <typename State, typename Fix>
bool detach_states(torch::optim::Optimizer& optimizer, Fix fix) {
  for (auto& entry : optimizer.state())
    if (!dynamic_cast<State*>(entry.second.get())) return false;
  for (auto& entry : optimizer.state()) fix(static_cast<State&>(*entry.second));
  return true;
}

}  // namespace

void detach_optimizer_state(torch::optim::Optimizer& optimizer) {
  using namespace torch::optim;
  if (optimizer.state().empty()) return;
  auto adam_like = [](auto& s) {
    torch::Tensor a = s.exp_avg(), b = s.exp_avg_sq(), c = s.max_exp_avg_sq();
    detach(a), detach(b), detach(c);
    s.exp_avg(a).exp_avg_sq(b).max_exp_avg_sq(c);
  };
  if (detach_states<AdamParamState>(optimizer, adam_like)) return;
  if (detach_states<AdamWParamState>(optimizer, adam_like)) return;
  if (detach_states<SGDParamState>(optimizer, [](SGDParamState& s) {
        torch::Tensor m = s.momentum_buffer();
        detach(m);
        s.momentum_buffer(m);
      }))
    return;
  if (detach_states<AdagradParamState>(optimizer, [](AdagradParamState& s) {
        torch::Tensor m = s.sum();
        detach(m);
        s.sum(m);
      }))
    return;
  if (detach_states<RMSpropParamState>(optimizer, [](RMSpropParamState& s) {
        torch::Tensor a = s.square_avg(), b = s.momentum_buffer(), c = s.grad_avg();
        detach(a), detach(b), detach(c);
        s.square_avg(a).momentum_buffer(b).grad_avg(c);
      }))
    return;
  throw Error("resume checkpoint: no snapshot for this optimizer's state");
}

std::string resume_path(const std::string& run, const ResumePoint& point) {
  std::string name = run + kResumeTag + "e" + std::to_string(point.epoch);
  if (point.pass > 0) name += "-p" + std::to_string(point.pass);
  if (point.batch > 0) name += "-b" + std::to_string(point.batch);
  return name + ".pth";
}

std::vector<std::string> resume_files_of(const std::string& run) {
  const fs::path dir = fs::path(run).parent_path();
  const std::string prefix = fs::path(run).filename().string() + kResumeTag;
  std::vector<std::pair<fs::file_time_type, std::string>> found;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir.empty() ? "." : dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(prefix, 0) != 0 || entry.path().extension() != ".pth") continue;
    found.emplace_back(entry.last_write_time(ec), entry.path().string());
  }
  std::sort(found.begin(), found.end());
  std::vector<std::string> paths;
  for (auto& [t, p] : found) paths.push_back(p);
  return paths;
}

void remove_temporary_files(const std::string& run) {
  if (run.empty()) return;
  const fs::path dir = fs::path(run).parent_path();
  const std::string prefix = fs::path(run).filename().string();
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir.empty() ? "." : dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind(prefix, 0) == 0 && name.find(".pth.tmp-") != std::string::npos)
      fs::remove(e.path(), ec);
  }
}

std::string resolve_resume(const config::Config& config) {
  if (config.is_null("resume")) return "";
  const std::string value = config.get_string("resume");
  if (value != "latest") {
    if (!fs::exists(value))
      throw ConfigError(config.source("resume") + ": resume: \"" + value +
                        "\" does not exist; expected the path of a resume checkpoint (the log "
                        "of a stopped run names it) or `latest`");
    return value;
  }
  // Newest first; the first of this model and dataset wins.
  const fs::path dir(config.get_string("checkpoint_dir"));
  const std::string prefix = config.model() + "-";
  std::vector<std::pair<fs::file_time_type, std::string>> found;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(prefix, 0) != 0 || name.find(kResumeTag) == std::string::npos ||
        entry.path().extension() != ".pth")
      continue;
    found.emplace_back(entry.last_write_time(ec), entry.path().string());
  }
  std::sort(found.rbegin(), found.rend());
  for (const auto& [t, path] : found) {
    try {
      if (read_resume_header(path).dataset == config.dataset()) return path;
    } catch (const Error& e) {
      log::warning("resume: latest: skipping " + path + ": " + e.what());
    }
  }
  log::info("resume: latest: no resume checkpoint of " + config.model() + " on " +
            config.dataset() + " in " + dir.string() + "; starting a new run");
  return "";
}

}  // namespace recbole::trainer
