// Prints the Markdown reference of every configuration key (docs/config-keys.md):
//   gen_config_docs > docs/config-keys.md
#include <exception>
#include <iostream>

#include "recbole/config/config_keys.h"
#include "tool_flags.h"

int main(int argc, char** argv) {
  if (recbole::tools::answer_help_or_version(
          argc, argv, "gen_config_docs",
          "usage: gen_config_docs > docs/config-keys.md\n\n"
          "Prints the Markdown reference of every configuration key.\n"
          "  --version  print the version\n"))
    return 0;
  if (argc > 1) {
    std::cerr << "gen_config_docs: takes no arguments, got \"" << argv[1] << "\" (see --help)\n";
    return 1;
  }
  try {
    std::cout << recbole::config::keys_reference_markdown();
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "gen_config_docs: " << e.what() << "\n";
    return 1;
  }
}
