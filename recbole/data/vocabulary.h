#pragma once
// Vocabulary: interns the token strings of one id space (user ids, item ids, or one other token
// field) and gives each distinct token a dense int32 id in order of first interning.
//
// Each distinct token is stored once; cells of a column hold only ids, so the parser never keeps
// a string per cell. Lookup is an open-addressing hash table over the stored tokens, except for
// canonical decimal tokens below kDirectLimit ("0", "17", not "017" or "+1"), the usual ids of
// real datasets, which are found through a direct array indexed by their value.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace recbole::data {

class Vocabulary {
 public:
  Vocabulary();

  // The id of `token`, adding it (with the next id) when it is new.
  int32_t intern(std::string_view token);

  // The id of `token`, or -1 when it was never interned.
  int32_t find(std::string_view token) const;

  // Appends `token` with the next id even if an equal token exists (lookups then find the first).
  // Used to build a remapped vocabulary whose id 0 is "[PAD]" whatever the raw tokens are.
  int32_t append(std::string token);

  // The token of `id`; id must be in [0, size()).
  const std::string& token(int32_t id) const { return tokens_[static_cast<size_t>(id)]; }

  int32_t size() const { return static_cast<int32_t>(tokens_.size()); }

  // Prepares room for `n` distinct tokens.
  void reserve(size_t n);

 private:
  static constexpr int64_t kDirectLimit = int64_t{1} << 22;
  // The value of a canonical decimal token below kDirectLimit, else -1.
  static int64_t direct_value(std::string_view token);
  // Records `id` for the direct value `v` (growing the array).
  void set_direct(int64_t v, int32_t id);

  // One hash-table entry. Tokens of up to 8 bytes are compared inside the slot (prefix + length),
  // so the common lookup touches one cache line; longer ones also compare the stored string.
  struct Slot {
    uint64_t prefix = 0;  // first 8 bytes of the token, zero-padded
    uint32_t meta = 0;    // high 24 bits of the hash | min(length, 255)
    int32_t id = -1;      // -1 = empty
  };
  static Slot make_key(std::string_view token, uint64_t h);
  void grow();
  // Slot where `token` (key `key`) lives or would be inserted.
  size_t probe(std::string_view token, const Slot& key, uint64_t h) const;

  std::vector<std::string> tokens_;
  std::vector<Slot> slots_;      // capacity is a power of two, load <= 1/2
  std::vector<int32_t> direct_;  // value -> id (-1 = absent) for direct tokens
  size_t hashed_ = 0;            // tokens stored in slots_
  size_t mask_ = 0;
};

// The hash used by Vocabulary (exposed for tests and other interning tables).
uint64_t hash_token(std::string_view token);

}  // namespace recbole::data
