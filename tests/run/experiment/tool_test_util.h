#pragma once
// Helpers of the tests that run recbole_hyper and recbole_compare as processes.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/distributed/dist_test_util.h"

namespace recbole::testing {

inline const std::string kTools = RECBOLE_TOOLS_DIR;
inline const std::string kData = std::string(RECBOLE_SHARED_DIR) + "/datasets";

// Runs `tool` with `args`; its stdout and stderr go to `log`. Returns the exit status.
inline int run_tool(const std::string& tool, std::vector<std::string> args,
                    const std::string& log) {
  args.insert(args.begin(), kTools + "/" + tool);
  Proc p = start(args, {}, log);
  return wait_for(p, 240);
}

inline nlohmann::json read_json(const std::string& path) {
  return nlohmann::json::parse(slurp(path));
}

inline std::string write(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
  return path;
}

inline std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  return lines;
}

// The options every BPR run of these tests gets: ml-100k from the shared folder, few epochs.
inline std::vector<std::string> bpr_args(int epochs) {
  return {"--model=BPR", "--dataset=ml-100k", "--data_path=" + kData,
          "--epochs=" + std::to_string(epochs), "--show_progress=false"};
}

}  // namespace recbole::testing
