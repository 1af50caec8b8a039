#include "recbole/utils/process_exit.h"

#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "recbole/utils/logging.h"

namespace recbole {

void exit_process(int code) {
  log::set_file("");  // closes (and so flushes) the log file
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  std::_Exit(code);
}

}  // namespace recbole
