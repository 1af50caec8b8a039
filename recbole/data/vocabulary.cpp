#include "recbole/data/vocabulary.h"

#include <algorithm>
#include <cstring>

namespace recbole::data {

uint64_t hash_token(std::string_view token) {
  // Multiply-xorshift over 8-byte words: tokens are short (ids, words), so one or two rounds.
  const char* p = token.data();
  size_t n = token.size();
  uint64_t h = 0x9E3779B97F4A7C15ull ^ (static_cast<uint64_t>(n) * 0xFF51AFD7ED558CCDull);
  while (n >= 8) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    h = (h ^ v) * 0xBF58476D1CE4E5B9ull;
    h ^= h >> 31;
    p += 8;
    n -= 8;
  }
  if (n > 0) {
    uint64_t v = 0;
    std::memcpy(&v, p, n);
    h = (h ^ v) * 0x94D049BB133111EBull;
    h ^= h >> 29;
  }
  h *= 0xBF58476D1CE4E5B9ull;
  h ^= h >> 32;
  return h;
}

Vocabulary::Vocabulary() {
  slots_.assign(64, Slot{});
  mask_ = 63;
}

int64_t Vocabulary::direct_value(std::string_view token) {
  const size_t n = token.size();
  if (n == 0 || n > 7 || (token[0] == '0' && n > 1)) return -1;
  int64_t v = 0;
  for (char c : token) {
    if (c < '0' || c > '9') return -1;
    v = v * 10 + (c - '0');
  }
  return v < kDirectLimit ? v : -1;
}

void Vocabulary::set_direct(int64_t v, int32_t id) {
  if (static_cast<size_t>(v) >= direct_.size()) {
    size_t size = std::max<size_t>(1024, direct_.size());
    while (size <= static_cast<size_t>(v)) size *= 2;
    direct_.resize(size, -1);
  }
  direct_[static_cast<size_t>(v)] = id;
}

Vocabulary::Slot Vocabulary::make_key(std::string_view token, uint64_t h) {
  Slot key;
  std::memcpy(&key.prefix, token.data(), std::min<size_t>(token.size(), 8));
  key.meta = (static_cast<uint32_t>(h >> 32) & 0xFFFFFF00u) |
             static_cast<uint32_t>(std::min<size_t>(token.size(), 255));
  return key;
}

void Vocabulary::reserve(size_t n) { tokens_.reserve(n); }

size_t Vocabulary::probe(std::string_view token, const Slot& key, uint64_t h) const {
  size_t slot = static_cast<size_t>(h) & mask_;
  while (true) {
    const Slot& s = slots_[slot];
    if (s.id < 0) return slot;
    if (s.meta == key.meta && s.prefix == key.prefix) {
      if (token.size() <= 8) return slot;  // prefix and length say it all
      const std::string& t = tokens_[static_cast<size_t>(s.id)];
      if (t.size() == token.size() && std::memcmp(t.data(), token.data(), t.size()) == 0) {
        return slot;
      }
    }
    slot = (slot + 1) & mask_;
  }
}

void Vocabulary::grow() {
  const size_t capacity = slots_.size() * 2;
  slots_.assign(capacity, Slot{});
  mask_ = capacity - 1;
  for (size_t id = 0; id < tokens_.size(); ++id) {
    if (direct_value(tokens_[id]) >= 0) continue;  // lives in the direct array
    // Re-insert only the first of equal tokens (append may have added duplicates).
    const uint64_t h = hash_token(tokens_[id]);
    Slot key = make_key(tokens_[id], h);
    const size_t slot = probe(tokens_[id], key, h);
    if (slots_[slot].id < 0) {
      key.id = static_cast<int32_t>(id);
      slots_[slot] = key;
    }
  }
}

int32_t Vocabulary::find(std::string_view token) const {
  const int64_t v = direct_value(token);
  if (v >= 0) return static_cast<size_t>(v) < direct_.size() ? direct_[static_cast<size_t>(v)] : -1;
  const uint64_t h = hash_token(token);
  return slots_[probe(token, make_key(token, h), h)].id;
}

int32_t Vocabulary::intern(std::string_view token) {
  const int64_t v = direct_value(token);
  if (v >= 0) {
    if (static_cast<size_t>(v) < direct_.size() && direct_[static_cast<size_t>(v)] >= 0) {
      return direct_[static_cast<size_t>(v)];
    }
    const int32_t id = static_cast<int32_t>(tokens_.size());
    tokens_.emplace_back(token);
    set_direct(v, id);
    return id;
  }
  const uint64_t h = hash_token(token);
  Slot key = make_key(token, h);
  const size_t slot = probe(token, key, h);
  if (slots_[slot].id >= 0) return slots_[slot].id;
  const int32_t id = static_cast<int32_t>(tokens_.size());
  tokens_.emplace_back(token);
  key.id = id;
  slots_[slot] = key;
  if (++hashed_ * 2 > slots_.size()) grow();
  return id;
}

int32_t Vocabulary::append(std::string token) {
  const int64_t v = direct_value(token);
  if (v >= 0) {
    const int32_t id = static_cast<int32_t>(tokens_.size());
    if (static_cast<size_t>(v) >= direct_.size() || direct_[static_cast<size_t>(v)] < 0) {
      set_direct(v, id);
    }
    tokens_.push_back(std::move(token));
    return id;
  }
  const uint64_t h = hash_token(token);
  Slot key = make_key(token, h);
  const size_t slot = probe(token, key, h);
  const int32_t id = static_cast<int32_t>(tokens_.size());
  if (slots_[slot].id < 0) {
    key.id = id;
    slots_[slot] = key;
    ++hashed_;
  }
  tokens_.push_back(std::move(token));
  if (hashed_ * 2 > slots_.size()) grow();
  return id;
}

}  // namespace recbole::data
