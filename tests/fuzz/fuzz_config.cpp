// Fuzz target: the config parser (recbole/config/config.h): a user YAML file and `--key=value`
// command-line tokens, through parse_command_line and Config::build.
// Input: the bytes up to the first NUL are the YAML file; the rest, split at NULs, are the
// command-line tokens after argv[0]. Bad input must be a recbole::Error (ConfigError);
// anything else (another exception, yaml-cpp's own exceptions included, a crash, a hang, a
// sanitizer report) is a finding.
//
// The model registry lives in the libtorch area; instead of linking it, this target declares one
// model's keys itself (FuzzModel: an int with a bound, a float, a string with choices, a list),
// which reaches the same model-key paths of the config at no libtorch cost.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "recbole/config/config.h"
#include "recbole/config/model_keys.h"
#include "recbole/utils/error.h"
#include "tests/fuzz/fuzz_input.h"

namespace {

void declare_fuzz_model() {
  using recbole::config::Key;
  using recbole::config::KeyType;
  recbole::config::register_model_keys("FuzzModel",
                                       {Key("embedding_size", KeyType::kInt).min(1),
                                        Key("reg_weight", KeyType::kFloat).min(0).null(),
                                        Key("mode", KeyType::kString).choices({"mean", "sum"}),
                                        Key("layers", KeyType::kIntList).min(1)});
}

}  // namespace

// NOLINTNEXTLINE(readability-identifier-naming): the name libFuzzer calls
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool declared = (declare_fuzz_model(), true);
  (void)declared;
  const std::string input(reinterpret_cast<const char*>(data), size);
  const size_t yaml_end = std::min(input.find('\0'), input.size());
  std::vector<std::string> tokens{"recbole_run"};
  for (size_t pos = yaml_end; pos < input.size();) {
    const size_t next = std::min(input.find('\0', pos + 1), input.size());
    tokens.push_back(input.substr(pos + 1, next - pos - 1));
    pos = next;
  }
  // Bounded: a command line is short, and each token costs a Config key lookup.
  if (tokens.size() > 64) return 0;
  std::vector<const char*> argv;
  for (const std::string& t : tokens) argv.push_back(t.c_str());
  const std::string yaml_path = recbole::fuzz::write_scratch_file(
      "config.yaml", reinterpret_cast<const uint8_t*>(input.data()), yaml_end);
  try {
    recbole::config::ConfigSources sources = recbole::config::parse_command_line(
        static_cast<int>(argv.size()), argv.data(), {"dump_split"}, nullptr);
    sources.config_files.insert(sources.config_files.begin(), yaml_path);
    sources.default_model = "FuzzModel";
    sources.default_dataset = "ml-100k";
    const recbole::config::Config config = recbole::config::Config::build(sources);
    config.dump();
  } catch (const recbole::Error&) {
  }
  return 0;
}
