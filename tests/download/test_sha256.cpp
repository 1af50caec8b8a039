// SHA-256 against the FIPS 180-4 test vectors, and streaming in odd pieces.
#include <catch2/catch.hpp>

#include "download_fixtures.h"
#include "recbole/download/sha256.h"
#include "recbole/utils/error.h"

using recbole::data::Sha256;

namespace {
std::string sha(const std::string& bytes) {
  Sha256 h;
  h.update(bytes);
  return h.hex_digest();
}
}  // namespace

TEST_CASE("sha256 matches the standard test vectors", "[download][sha256]") {
  CHECK(sha("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(sha("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(sha("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  CHECK(sha(std::string(1000000, 'a')) ==
        "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  // 55, 56 and 64 bytes: the padding edge cases.
  CHECK(sha(std::string(55, 'x')) != sha(std::string(56, 'x')));
  CHECK(sha(std::string(64, 'a')) ==
        "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb");
}

TEST_CASE("sha256 gives the same digest however the input is split", "[download][sha256]") {
  const std::string data = recbole::testing::shared_ml100k_file("item");
  const std::string whole = sha(data);
  for (size_t piece : {1, 3, 63, 64, 65, 1000, 65536}) {
    Sha256 h;
    for (size_t pos = 0; pos < data.size(); pos += piece)
      h.update(data.data() + pos, std::min(piece, data.size() - pos));
    CHECK(h.hex_digest() == whole);
  }
  recbole::testing::TempDir dir;
  recbole::testing::write_file(dir / "f", data);
  CHECK(recbole::data::sha256_file(dir / "f") == whole);
  CHECK_THROWS_AS(recbole::data::sha256_file(dir / "missing"), recbole::DataError);
  CHECK(recbole::data::is_sha256_hex(whole));
  CHECK_FALSE(recbole::data::is_sha256_hex(whole.substr(1)));
  CHECK_FALSE(recbole::data::is_sha256_hex(std::string(63, 'a') + "g"));
}
