// The HTTP service in-process (serving/http_service.h): started on a free loopback port in a
// thread of the test, called with httplib::Client, stopped. recbole_serve as a process (signals,
// overload, malformed bytes on the wire) is tests/serving/test_tools.cpp.
#include <catch2/catch.hpp>

// Built with cpp-httplib only (tests/CMakeLists.txt defines RECBOLE_WITH_CPPHTTPLIB), as the
// service is; without it this file holds no test.
#ifdef RECBOLE_WITH_CPPHTTPLIB

#include <chrono>
#include <fstream>
#include <future>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "recbole/utils/error.h"
#include "recbole/utils/thread_pool.h"
#include "serving/http_service.h"
#include "serving/recommender.h"
#include "tests/serving/serving_test_util.h"

using recbole::Recommender;
using recbole::serving::HttpService;
using recbole::serving::HttpServiceOptions;
using recbole::testing::TempDir;
using recbole::testing::train_checkpoint;

namespace {

HttpServiceOptions loopback_options(const std::string& checkpoint, const TempDir& dir) {
  HttpServiceOptions o;
  o.checkpoint = checkpoint;
  o.host = "127.0.0.1";
  o.port = 0;
  o.threads = 4;
  o.max_k = 50;
  o.access_log = dir / "access.log";
  return o;
}

// A service listening in a thread of the test, on a port bound before the thread starts (so a
// client may connect at once); stopped and joined on destruction, also when a check throws.
class InProcessService {
 public:
  explicit InProcessService(const HttpServiceOptions& options)
      : blas_(1), service_(options), port_(service_.bind()) {
    listening_ = std::async(std::launch::async, [this] { return service_.listen(); });
  }
  ~InProcessService() {
    if (listening_.valid()) {
      service_.stop();
      listening_.wait();
    }
  }
  // Stops the service; listen()'s result.
  bool stop() {
    service_.stop();
    return listening_.get();
  }
  HttpService& service() { return service_; }
  int port() const { return port_; }
  httplib::Client client() const {
    httplib::Client c("127.0.0.1", port_);
    c.set_connection_timeout(10);
    c.set_read_timeout(30);
    return c;
  }

 private:
  // The service sets BLAS to one thread for its requests; the tests after these keep theirs.
  recbole::BlasThreadsScope blas_;
  HttpService service_;
  int port_;
  std::future<bool> listening_;
};

nlohmann::json json_of(const httplib::Result& r) {
  REQUIRE(r);
  INFO(r->body);
  CHECK(r->get_header_value("Content-Type") == "application/json");
  const nlohmann::json j = nlohmann::json::parse(r->body, nullptr, false);
  REQUIRE_FALSE(j.is_discarded());
  return j;
}

// A JSON error {"error": ..., "status": N} answered with status N; its message.
std::string json_error_of(const httplib::Result& r, int status) {
  REQUIRE(r);
  INFO(r->body);
  CHECK(r->status == status);
  const nlohmann::json j = json_of(r);
  CHECK(j["status"] == status);
  REQUIRE(j["error"].is_string());
  return j["error"].get<std::string>();
}

// The service's items against the Recommender's own list: same tokens, same float scores.
void check_items(const nlohmann::json& items, const std::vector<recbole::Recommendation>& want) {
  REQUIRE(items.is_array());
  REQUIRE(items.size() == want.size());
  for (size_t j = 0; j < want.size(); ++j) {
    CHECK(items[j]["item"].get<std::string>() == want[j].item);
    CHECK(static_cast<float>(items[j]["score"].get<double>()) == want[j].score);
  }
}

std::string file_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

TEST_CASE("HttpService in-process: known and unknown users, /model, /health, bad requests",
          "[serving][http]") {
  // Trained once for every section.
  static const TempDir dir("recbole_http_service_bpr");
  static const std::string checkpoint = train_checkpoint("BPR", dir);
  const auto rec = Recommender::load(checkpoint);
  const std::string u1 = rec->user_token(1), u2 = rec->user_token(2);

  InProcessService running(loopback_options(checkpoint, dir));
  CHECK(running.port() > 0);
  CHECK(running.service().port() == running.port());
  httplib::Client cli = running.client();

  SECTION("GET /recommend: a known user's list is the Recommender's") {
    const auto r = cli.Get(("/recommend?user=" + u1 + "&k=5").c_str());
    REQUIRE(r);
    CHECK(r->status == 200);
    const nlohmann::json j = json_of(r);
    CHECK(j["user"] == u1);
    CHECK(j["k"] == 5);
    check_items(j["items"], rec->recommend(u1, 5));
    // exclude_history=false: the training items may come back, as the Recommender gives them.
    const auto all = cli.Get(("/recommend?user=" + u2 + "&k=7&exclude_history=false").c_str());
    check_items(json_of(all)["items"], rec->recommend(u2, 7, /*exclude_history=*/false));
  }

  SECTION("an unknown user: 404 for one, listed among several") {
    CHECK(json_error_of(cli.Get("/recommend?user=nobody"), 404) == "unknown user \"nobody\"");
    CHECK(json_error_of(cli.Post("/recommend", "{\"user\": \"nobody\"}", "application/json"),
                        404) == "unknown user \"nobody\"");
    const nlohmann::json body = {{"users", {u1, "nobody", u2}}, {"k", 3}};
    const auto r = cli.Post("/recommend", body.dump(), "application/json");
    REQUIRE(r);
    CHECK(r->status == 200);
    const nlohmann::json j = json_of(r);
    CHECK(j["k"] == 3);
    REQUIRE(j["results"].size() == 2);
    CHECK(j["results"][0]["user"] == u1);
    check_items(j["results"][0]["items"], rec->recommend(u1, 3));
    CHECK(j["results"][1]["user"] == u2);
    check_items(j["results"][1]["items"], rec->recommend(u2, 3));
    CHECK(j["unknown_users"] == nlohmann::json({"nobody"}));
  }

  SECTION("a history: BPR cannot recommend from one, and says so") {
    const std::string error = json_error_of(
        cli.Post("/recommend", "{\"history\": [\"1\", \"2\"], \"k\": 5}", "application/json"), 400);
    CHECK_THAT(error, Catch::StartsWith("BPR cannot recommend from an item history"));
  }

  SECTION("GET /model and GET /health describe what is served") {
    const auto r = cli.Get("/model");
    REQUIRE(r);
    CHECK(r->status == 200);
    const nlohmann::json m = json_of(r);
    CHECK(m["model"] == "BPR");
    CHECK(m["dataset"] == "serving_tiny");
    CHECK(m["users"] == rec->n_users() - 1);
    CHECK(m["items"] == rec->n_items() - 1);
    CHECK(m["checkpoint"] == checkpoint);
    CHECK(m["scorer"] == rec->info().scorer);
    CHECK(m["index"] == "exact");
    CHECK(m["recommends_from_history"] == false);
    CHECK(m["reloads"] == 0);
    CHECK(m["failed_reloads"] == 0);
    CHECK(m["limits"]["max_k"] == 50);
    CHECK(m["limits"]["threads"] == 4);
    const auto h = cli.Get("/health");
    REQUIRE(h);
    CHECK(h->status == 200);
    const nlohmann::json health = json_of(h);
    CHECK(health["status"] == "ok");
    CHECK(health["model"] == "BPR");
    CHECK(health["uptime_s"].is_number_integer());
  }

  SECTION("malformed requests: JSON errors with their status") {
    CHECK(json_error_of(cli.Post("/recommend", "{", "application/json"), 400) ==
          "the body is not valid JSON");
    CHECK(json_error_of(cli.Post("/recommend", "[1]", "application/json"), 400) ==
          "the body must be a JSON object: {\"users\": [...], \"k\": 10}");
    CHECK(json_error_of(
              cli.Post("/recommend", "{\"users\": [\"a\"], \"colour\": 1}", "application/json"),
              400) ==
          "unknown field \"colour\" (expected users, user, history, k, exclude_history)");
    CHECK(json_error_of(cli.Get(("/recommend?user=" + u1 + "&k=51").c_str()), 400) ==
          "k must be an integer in [1, 50], got \"51\"");
    CHECK(json_error_of(cli.Get("/recommend"), 400) ==
          "give exactly one user: /recommend?user=TOKEN&k=10");
    CHECK(json_error_of(cli.Get("/no/such/path"), 404) == "no such endpoint: GET /no/such/path");
    CHECK(json_error_of(cli.Post("/reload", "{\"checkpoint\": 5}", "application/json"), 400) ==
          "\"checkpoint\" must be a path");
  }

  // Whatever the section asked, the service still answers, then stops cleanly.
  const auto after = cli.Get(("/recommend?user=" + u1 + "&k=10").c_str());
  REQUIRE(after);
  CHECK(after->status == 200);
  CHECK(running.stop());
  CHECK_FALSE(running.client().Get("/health"));  // no longer listening
  CHECK(running.service().shed_count() == 0);
  // One access-log line per request answered.
  const std::string log = file_text(dir / "access.log");
  CHECK_THAT(log, Catch::Contains("\"GET /recommend?user=" + u1 + "&k=10\" 200 "));
}

TEST_CASE("HttpService in-process: recommends from a history (EASE) and reloads",
          "[serving][http]") {
  TempDir dir("recbole_http_service_ease");
  const std::string checkpoint = train_checkpoint("EASE", dir);
  const auto rec = Recommender::load(checkpoint);
  REQUIRE(rec->can_recommend_from_history());
  const std::string i1 = rec->item_token(1), i3 = rec->item_token(3);

  InProcessService running(loopback_options(checkpoint, dir));
  httplib::Client cli = running.client();

  const nlohmann::json body = {{"history", {i1, "no-such-item", i3}}, {"k", 6}};
  const auto r = cli.Post("/recommend", body.dump(), "application/json");
  REQUIRE(r);
  CHECK(r->status == 200);
  const nlohmann::json j = json_of(r);
  CHECK(j["k"] == 6);
  CHECK(j["history_size"] == 2);
  CHECK(j["unknown_items"] == nlohmann::json({"no-such-item"}));
  check_items(j["items"], rec->recommend_from_history({i1, i3}, 6));
  CHECK(json_of(cli.Get("/model"))["recommends_from_history"] == true);

  // A reload that fails leaves the model serving; one that loads is counted.
  CHECK_FALSE(running.service().reload(dir / "no-such.pth").empty());
  const std::string failed = json_error_of(
      cli.Post("/reload", nlohmann::json({{"checkpoint", dir / "no-such.pth"}}).dump(),
               "application/json"),
      400);
  CHECK_THAT(failed, Catch::StartsWith("reload failed, the old model keeps serving (" + checkpoint +
                                       "): "));
  const auto reloaded = cli.Post("/reload", "", "application/json");
  REQUIRE(reloaded);
  CHECK(reloaded->status == 200);
  const nlohmann::json m = json_of(reloaded);
  CHECK(m["model"] == "EASE");
  CHECK(m["reloads"] == 1);
  CHECK(m["failed_reloads"] == 2);
  check_items(json_of(cli.Post("/recommend", body.dump(), "application/json"))["items"],
              rec->recommend_from_history({i1, i3}, 6));
  CHECK(running.stop());
}

TEST_CASE(
    "HttpService: stop() before or as listen() starts and refuses an address not of this machine",
    "[serving][http]") {
  TempDir dir("recbole_http_service_stop");
  const std::string checkpoint = train_checkpoint("Pop", dir);
  HttpServiceOptions options = loopback_options(checkpoint, dir);
  recbole::BlasThreadsScope blas(1);

  // stop() before listen(): listen() returns at once.
  {
    HttpService service(options);
    service.stop();
    CHECK(service.listen());
    CHECK(service.port() > 0);  // listen() bound it
  }
  // stop() racing listen()'s start: it waits for the server to run, then stops it.
  for (int round = 0; round < 5; ++round) {
    HttpService service(options);
    service.bind();
    auto listening = std::async(std::launch::async, [&] { return service.listen(); });
    service.stop();
    REQUIRE(listening.wait_for(std::chrono::seconds(30)) == std::future_status::ready);
    CHECK(listening.get());
  }
  // An address that is not this machine's (TEST-NET-1), on a given port and on any port.
  // (A port in use is no error: cpp-httplib binds with SO_REUSEPORT.)
  options.host = "192.0.2.1";
  options.port = 8080;
  HttpService elsewhere(options);
  CHECK_THROWS_WITH(elsewhere.bind(),
                    "cannot listen on 192.0.2.1:8080 (in use, or not an address "
                    "of this machine)");
  options.port = 0;
  HttpService anywhere(options);
  CHECK_THROWS_WITH(anywhere.bind(), "cannot listen on 192.0.2.1 (any port)");
  CHECK(anywhere.port() == 0);
}

#endif  // RECBOLE_WITH_CPPHTTPLIB
