// The explicit list of shipped models (see register_builtin_models in model.h). A new model adds
// one line here; tests/models checks that every registered model passes the model contract.
#include <mutex>

#include "models/model.h"

namespace recbole::models {

void register_bpr();
void register_random();
void register_pop();
void register_itemknn();
void register_ease();
void register_admmslim();
void register_slimelastic();

void register_builtin_models() {
  static std::once_flag once;
  std::call_once(once, [] {
    register_bpr();
    register_random();
    register_pop();
    register_itemknn();
    register_ease();
    register_admmslim();
    register_slimelastic();
  });
}

}  // namespace recbole::models
