#include "serving/output.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>

namespace recbole::serving {

void append_score(std::string& out, float score) {
  if (!std::isfinite(score)) {
    out += "null";
    return;
  }
  char buf[32];
  const auto res = std::to_chars(buf, buf + sizeof buf, score);
  out.append(buf, res.ptr);
}

namespace {

// The length of the valid UTF-8 sequence starting at s[i] (1 to 4), or 0 when it is not one
// (a stray continuation byte, a bad lead byte, an overlong form, a surrogate, a cut sequence).
size_t utf8_length(const std::string& s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  size_t n;
  uint32_t cp;
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
    cp = c & 0x1F;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    cp = c & 0x0F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    cp = c & 0x07;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((b(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b(i + k) & 0x3F);
  }
  if ((n == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) ||
      (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)))
    return 0;
  return n;
}

}  // namespace

void append_json_string(std::string& out, const std::string& s) {
  out += '"';
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (static_cast<unsigned char>(c) >= 0x80) {
      // Valid UTF-8 as is; any other byte (a token or a request echoed in an error) as U+FFFD,
      // so that the document stays valid JSON.
      const size_t n = utf8_length(s, i);
      if (n == 0) {
        out += "\\ufffd";
      } else {
        out.append(s, i, n);
        i += n - 1;
      }
      continue;
    }
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
          out += buf;
        } else {
          out += c;
        }
    }
  }
  out += '"';
}

void append_tsv(std::string& out, const std::string& user,
                const std::vector<Recommendation>& items) {
  for (size_t r = 0; r < items.size(); ++r) {
    out += user;
    out += '\t';
    out += std::to_string(r + 1);
    out += '\t';
    out += items[r].item;
    out += '\t';
    append_score(out, items[r].score);
    out += '\n';
  }
}

void append_json_items(std::string& out, const std::vector<Recommendation>& items) {
  out += '[';
  for (size_t r = 0; r < items.size(); ++r) {
    if (r > 0) out += ',';
    out += "{\"item\":";
    append_json_string(out, items[r].item);
    out += ",\"score\":";
    append_score(out, items[r].score);
    out += '}';
  }
  out += ']';
}

}  // namespace recbole::serving
