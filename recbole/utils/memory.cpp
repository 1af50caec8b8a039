#include "recbole/utils/memory.h"

#include <malloc.h>
#include <sys/resource.h>

#include <cstdio>
#include <cstring>

namespace recbole::memory {
namespace {

// Reads a "Key:   1234 kB" line of /proc/self/status; -1 when absent.
int64_t read_status_kb(const char* key) {
  std::FILE* f = std::fopen("/proc/self/status", "r");
  if (f == nullptr) return -1;
  char line[256];
  const size_t key_len = std::strlen(key);
  int64_t kb = -1;
  while (std::fgets(line, sizeof(line), f) != nullptr) {
    if (std::strncmp(line, key, key_len) == 0 && line[key_len] == ':') {
      long long value = 0;
      if (std::sscanf(line + key_len + 1, "%lld", &value) == 1) kb = value;
      break;
    }
  }
  std::fclose(f);
  return kb;
}

}  // namespace

int64_t peak_rss_bytes() {
  const int64_t kb = read_status_kb("VmHWM");
  if (kb >= 0) return kb * 1024;
  struct rusage usage {};
  if (getrusage(RUSAGE_SELF, &usage) != 0) return 0;
  return static_cast<int64_t>(usage.ru_maxrss) * 1024;  // kilobytes on Linux
}

int64_t current_rss_bytes() {
  const int64_t kb = read_status_kb("VmRSS");
  return kb >= 0 ? kb * 1024 : 0;
}

void keep_freed_buffers_mapped() {
#if defined(__GLIBC__)
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 128 << 20);
#endif
}

}  // namespace recbole::memory
