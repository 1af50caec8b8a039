// Prints the Markdown reference of every configuration key (docs/config-keys.md):
//   gen_config_docs > docs/config-keys.md
#include <exception>
#include <iostream>

#include "recbole/config/config_keys.h"

int main() {
  try {
    std::cout << recbole::config::keys_reference_markdown();
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "gen_config_docs: " << e.what() << "\n";
    return 1;
  }
}
