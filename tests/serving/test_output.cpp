// The text forms shared by recbole_recommend and recbole_serve.
#include <catch2/catch.hpp>

#include <cstdlib>

#include <nlohmann/json.hpp>

#include "serving/output.h"

using recbole::serving::append_json_string;
using recbole::serving::append_score;

TEST_CASE("scores print as the shortest text that reads back as the same float", "[serving]") {
  for (float f : {0.0f, 1.0f, -2.5f, 0.1f, 3.14159274f, 1e-30f, 123456.789f, 0.06383f}) {
    std::string s;
    append_score(s, f);
    CHECK(std::strtof(s.c_str(), nullptr) == f);
    CHECK(static_cast<float>(nlohmann::json::parse(s).get<double>()) == f);
  }
  std::string inf;
  append_score(inf, -__builtin_inff());
  CHECK(inf == "null");
}

TEST_CASE("JSON strings stay valid JSON whatever the bytes", "[serving]") {
  const std::string cases[] = {"plain",
                               "quote\" back\\slash",
                               "tab\tnew\nline\r",
                               std::string("nul\0byte", 8),
                               "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80",
                               "bad \xff\xfe byte",
                               "cut \xe2\x82",
                               "overlong \xc0\xaf",
                               "surrogate \xed\xa0\x80",
                               "\x01\x1f"};
  for (const std::string& s : cases) {
    std::string out;
    append_json_string(out, s);
    INFO(out);
    const nlohmann::json j = nlohmann::json::parse(out, nullptr, false);
    REQUIRE_FALSE(j.is_discarded());
    if (s.find('\xff') == std::string::npos && s.find("\xe2\x82", 0) != 4 &&
        s.find("overlong") == std::string::npos && s.find("surrogate") == std::string::npos &&
        s.find("cut") == std::string::npos)
      CHECK(j.get<std::string>() == s);  // valid UTF-8 comes back unchanged
  }
}
