// A program of another project, linked against an installed recbole-cpp: lists the registered
// models (every shipped model must be there, though this program names none) and trains Pop
// through the C++ API. It includes no libtorch header, so that it compiles in about a second.
//   consumer DATA_PATH DATASET
#include <iostream>

#include "recbole/config/model_keys.h"
#include "recbole/utils/error.h"
#include "recbole/version.h"
#include "run/run_recbole.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: consumer DATA_PATH DATASET\n";
    return 2;
  }
  try {
    std::cout << "recbole-cpp " << recbole::kVersion << "\n";
    const auto models = recbole::config::all_model_keys();
    std::cout << "models: " << models.size() << " (";
    for (size_t i = 0; i < models.size(); ++i) std::cout << (i ? " " : "") << models[i].first;
    std::cout << ")\n";
    const recbole::RunResult r = recbole::run_recbole(
        "Pop", argv[2], /*config_files=*/{},
        /*overrides=*/{{"data_path", argv[1]}, {"epochs", "1"}, {"show_progress", "false"}});
    std::cout << r.to_json().dump() << "\n";
    return 0;
  } catch (const recbole::Error& e) {
    std::cerr << "consumer: error: " << e.what() << "\n";
    return 1;
  }
}
