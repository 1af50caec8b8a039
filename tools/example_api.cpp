// The C++ API in one program: run an experiment and print its result as JSON.
//   example_api [data_path]   (default: ../shared/datasets)
#include <iostream>

#include "recbole/utils/error.h"
#include "run/run_recbole.h"
#include "tool_flags.h"

int main(int argc, char** argv) {
  if (recbole::tools::answer_help_or_version(
          argc, argv, "example_api",
          "usage: example_api [DATA_PATH]   (default: ../shared/datasets)\n\n"
          "Trains BPR on ml-100k for 5 epochs through the C++ API (recbole::run_recbole) and\n"
          "prints the result as JSON.\n  --version  print the version\n"))
    return 0;
  const std::string data_path = argc > 1 ? argv[1] : "../shared/datasets";
  try {
    recbole::RunResult r = recbole::run_recbole(
        "BPR", "ml-100k", /*config_files=*/{},
        /*overrides=*/{{"data_path", data_path}, {"epochs", "5"}, {"show_progress", "false"}});
    std::cout << r.to_json().dump(2) << "\n";
    return 0;
  } catch (const recbole::Error& e) {
    std::cerr << "example_api: error: " << e.what() << "\n";
    return 1;
  }
}
