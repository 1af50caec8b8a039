#pragma once
// Helpers shared by the pipeline tests.
#include <functional>
#include <string>

#include "recbole/utils/error.h"

namespace recbole::testing {

// ../shared/datasets (RecBole's test datasets and ml-100k).
inline std::string shared_datasets() { return std::string(RECBOLE_SHARED_DIR) + "/datasets"; }

// The message of the recbole::Error that f() throws; "" when it throws none.
inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const recbole::Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace recbole::testing
