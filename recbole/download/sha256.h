#pragma once
// SHA-256 (FIPS 180-4), small and self-contained, to verify downloaded archives.
#include <cstddef>
#include <cstdint>
#include <string>

namespace recbole::data {

// Incremental SHA-256: update() any number of times, then hex_digest() once.
class Sha256 {
 public:
  Sha256();
  void update(const void* data, size_t size);
  void update(const std::string& bytes) { update(bytes.data(), bytes.size()); }
  // The digest as 64 lower-case hex digits. Finishes the hash: call it once.
  std::string hex_digest();

 private:
  void compress(const uint8_t* block);

  uint32_t state_[8];
  uint8_t buffer_[64];
  size_t buffered_ = 0;
  uint64_t total_bytes_ = 0;
};

// SHA-256 of a whole file as 64 lower-case hex digits. Throws recbole::DataError when the file
// cannot be read.
std::string sha256_file(const std::string& path);

// True when `text` is 64 hex digits (either case).
bool is_sha256_hex(const std::string& text);

}  // namespace recbole::data
