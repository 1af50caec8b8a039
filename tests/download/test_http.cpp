// http_download against the local test server: resume, retries, stalls, sizes.
#include <catch2/catch.hpp>

#include <filesystem>

#include "download_fixtures.h"
#include "http_test_server.h"
#include "recbole/download/http.h"
#include "recbole/utils/clock.h"
#include "recbole/utils/error.h"

using namespace recbole::testing;
using recbole::data::http_download;

namespace {

std::string pattern_bytes(size_t n, int seed) {
  std::string s(n, '\0');
  uint32_t x = uint32_t(seed) * 2654435761u + 1;
  for (auto& c : s) {
    x = x * 1664525u + 1013904223u;
    c = char(x >> 24);
  }
  return s;
}

}  // namespace

TEST_CASE("http_download resumes an interrupted download, fetching only the missing bytes",
          "[download][http]") {
  HttpTestServer server;
  const std::string body = pattern_bytes(300000, 1);
  Route route;
  route.body = body;
  route.etag = "\"v1\"";
  route.cut_at = 120000;
  route.cut_times = 1;
  server.set("/d.zip", route);
  TempDir tmp;
  const std::string part = tmp / "d.zip.part";

  // First call: the body is cut short and no retry is allowed; the partial file stays.
  CHECK_THROWS_WITH(http_download(server.url("/d.zip"), part, -1, quick_options(0), "d.zip"),
                    Catch::Contains("closed before the end"));
  REQUIRE(std::filesystem::file_size(part) == 120000);

  // Second call: one Range request for the rest.
  auto stats = http_download(server.url("/d.zip"), part, -1, quick_options(0), "d.zip");
  CHECK(read_file(part) == body);
  auto reqs = server.requests("/d.zip");
  REQUIRE(reqs.size() == 2);
  CHECK(reqs[1].range == "bytes=120000-");
  CHECK(reqs[1].body_bytes == int64_t(body.size()) - 120000);
  CHECK(server.body_bytes("/d.zip") == int64_t(body.size()));  // no byte fetched twice
  CHECK(stats.resumed_from == 120000);
  CHECK(stats.bytes_fetched == int64_t(body.size()) - 120000);
}

TEST_CASE("http_download resumes within one call when a retry is allowed", "[download][http]") {
  HttpTestServer server;
  const std::string body = pattern_bytes(200000, 2);
  Route route;
  route.body = body;
  route.cut_at = 70000;
  route.cut_times = 1;
  server.set("/d.zip", route);
  TempDir tmp;
  auto stats = http_download(server.url("/d.zip"), tmp / "p", -1, quick_options(1), "d.zip");
  CHECK(read_file(tmp / "p") == body);
  CHECK(stats.attempts == 2);
  CHECK(server.body_bytes("/d.zip") == int64_t(body.size()));
}

TEST_CASE("http_download restarts when the server ignores the range or the file changed",
          "[download][http]") {
  TempDir tmp;
  SECTION("server without Range support") {
    HttpTestServer server;
    Route route;
    route.body = pattern_bytes(100000, 3);
    route.ranges = false;
    route.cut_at = 30000;
    route.cut_times = 1;
    server.set("/d.zip", route);
    auto stats = http_download(server.url("/d.zip"), tmp / "p", -1, quick_options(1), "d.zip");
    CHECK(read_file(tmp / "p") == route.body);
    CHECK(stats.bytes_fetched == 30000 + 100000);
  }
  SECTION("If-Range: a new version is fetched whole, not spliced onto the old prefix") {
    HttpTestServer server;
    Route route;
    route.body = pattern_bytes(100000, 4);
    route.etag = "\"old\"";
    route.cut_at = 40000;
    server.set("/d.zip", route);
    CHECK_THROWS(http_download(server.url("/d.zip"), tmp / "p", -1, quick_options(0), "d"));
    route.body = pattern_bytes(100000, 5);
    route.etag = "\"new\"";
    route.cut_at = -1;
    server.set("/d.zip", route);
    http_download(server.url("/d.zip"), tmp / "p", -1, quick_options(0), "d");
    CHECK(read_file(tmp / "p") == route.body);
    CHECK(server.requests("/d.zip").back().body_bytes == 100000);
  }
  SECTION("a partial file from another URL is not resumed") {
    HttpTestServer server;
    Route first;
    first.body = pattern_bytes(50000, 10);
    first.cut_at = 20000;
    server.set("/a/d.zip", first);
    Route second;
    second.body = pattern_bytes(50000, 11);
    server.set("/b/d.zip", second);
    CHECK_THROWS(http_download(server.url("/a/d.zip"), tmp / "p", -1, quick_options(0), "d"));
    auto stats = http_download(server.url("/b/d.zip"), tmp / "p", -1, quick_options(0), "d");
    CHECK(stats.resumed_from == 0);
    CHECK(server.requests("/b/d.zip").at(0).range.empty());
    CHECK(read_file(tmp / "p") == second.body);
  }
  SECTION("a complete partial file is not fetched again") {
    HttpTestServer server;
    Route route;
    route.body = pattern_bytes(5000, 6);
    server.set("/d.zip", route);
    write_file(tmp / "p", route.body);
    http_download(server.url("/d.zip"), tmp / "p", -1, quick_options(0), "d");  // 416 -> done
    CHECK(read_file(tmp / "p") == route.body);
    CHECK(server.body_bytes("/d.zip") == 0);
  }
}

TEST_CASE("http_download retries transient errors with back-off, not permanent ones",
          "[download][http]") {
  HttpTestServer server;
  TempDir tmp;
  Route flaky;
  flaky.body = pattern_bytes(1000, 7);
  flaky.status = 503;
  flaky.status_times = 2;
  server.set("/flaky.zip", flaky);
  auto stats = http_download(server.url("/flaky.zip"), tmp / "a", -1, quick_options(3), "f");
  CHECK(stats.attempts == 3);
  CHECK(read_file(tmp / "a") == flaky.body);

  flaky.status_times = 1 << 30;
  server.set("/down.zip", flaky);
  CHECK_THROWS_WITH(http_download(server.url("/down.zip"), tmp / "b", -1, quick_options(2), "f"),
                    Catch::Contains("HTTP 503") && Catch::Contains("gave up after 3 attempts"));
  CHECK(server.requests("/down.zip").size() == 3);
  CHECK_FALSE(std::filesystem::exists(tmp / "b"));  // nothing was received: nothing kept

  CHECK_THROWS_WITH(http_download(server.url("/missing.zip"), tmp / "c", -1, quick_options(3), "f"),
                    Catch::Contains("HTTP 404 Not Found"));
  CHECK(server.requests("/missing.zip").size() == 1);
  CHECK_FALSE(std::filesystem::exists(tmp / "c"));
}

TEST_CASE("http_download gives up on a stalled server after the timeout", "[download][http]") {
  HttpTestServer server;
  TempDir tmp;
  Route route;
  route.body = pattern_bytes(50000, 8);
  route.stall_at = 10000;
  server.set("/stall.zip", route);
  route.stall_before_headers = true;
  server.set("/silent.zip", route);
  for (const char* path : {"/stall.zip", "/silent.zip"}) {
    auto t0 = recbole::Clock::now();
    CHECK_THROWS_WITH(http_download(server.url(path), tmp / "p", -1, quick_options(0), "s"),
                      Catch::Contains("timed out"));
    double took = recbole::seconds_since(t0);
    CHECK(took >= 0.9);
    CHECK(took < 5.0);
  }
}

TEST_CASE("http_download stops when the server announces an unexpected size", "[download][http]") {
  HttpTestServer server;
  TempDir tmp;
  Route route;
  route.body = pattern_bytes(4000, 9);
  server.set("/d.zip", route);
  CHECK_THROWS_WITH(
      http_download(server.url("/d.zip"), tmp / "p", 3999, quick_options(2), "d"),
      Catch::Contains("size mismatch") && Catch::Contains("4000") && Catch::Contains("3999"));
  CHECK(server.requests("/d.zip").size() == 1);
  CHECK_FALSE(std::filesystem::exists(tmp / "p"));
}
