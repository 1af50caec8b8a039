// recbole_recommend and recbole_serve as processes: the same answers for the same checkpoint;
// bad requests never crash or stall the server; reloads; graceful shutdown.
#include <catch2/catch.hpp>

#include <poll.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "serving/recommender.h"
#include "tests/serving/http_test_client.h"
#include "tests/serving/serving_test_util.h"

using recbole::testing::http_get;
using recbole::testing::http_post;
using recbole::testing::raw_request;
using recbole::testing::ServerProcess;
using recbole::testing::TempDir;
using recbole::testing::train_checkpoint;
using recbole::testing::url_encode;

namespace {

const std::string kTools = RECBOLE_TOOLS_DIR;
const std::string kServe = kTools + "/recbole_serve";
const std::string kRecommend = kTools + "/recbole_recommend";

// Longer waits when the server runs under valgrind.
double slow() { return std::getenv("RECBOLE_SERVE_WRAPPER") ? 20.0 : 1.0; }

struct Run {
  int status = -1;
  std::string out;
};

// Runs a command (stderr to `err_file`), returns its exit status and stdout.
Run run(const std::string& command, const std::string& err_file) {
  Run r;
  FILE* p = ::popen((command + " 2>" + err_file).c_str(), "r");
  REQUIRE(p != nullptr);
  char buf[65536];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int st = ::pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// TSV → user → [(item, score text)].
std::map<std::string, std::vector<std::pair<std::string, std::string>>> parse_tsv(
    const std::string& text) {
  std::map<std::string, std::vector<std::pair<std::string, std::string>>> out;
  std::istringstream in(text);
  std::string line;
  std::getline(in, line);
  CHECK(line == "user\trank\titem\tscore");
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string user, rank, item, score;
    std::getline(f, user, '\t');
    std::getline(f, rank, '\t');
    std::getline(f, item, '\t');
    std::getline(f, score, '\t');
    auto& list = out[user];
    CHECK(std::stoi(rank) == static_cast<int>(list.size()) + 1);
    list.emplace_back(item, score);
  }
  return out;
}

// The JSON items of the server against the TSV lines of recbole_recommend: same tokens, and the
// same float32 scores (both print the shortest text that reads back as the float).
void check_same(const nlohmann::json& items,
                const std::vector<std::pair<std::string, std::string>>& expected) {
  REQUIRE(items.size() == expected.size());
  for (size_t j = 0; j < expected.size(); ++j) {
    CHECK(items[j]["item"].get<std::string>() == expected[j].first);
    CHECK(static_cast<float>(items[j]["score"].get<double>()) ==
          std::strtof(expected[j].second.c_str(), nullptr));
  }
}

}  // namespace

TEST_CASE("recbole_recommend and recbole_serve give identical answers for one checkpoint",
          "[serving][tool]") {
  for (const char* name : {"BPR", "EASE", "MultiVAE", "ItemKNN"}) {
    INFO(name);
    TempDir dir(std::string("recbole_serving_same_") + name);
    const std::string checkpoint = train_checkpoint(name, dir);
    const auto rec = recbole::Recommender::load(checkpoint);

    // Every user, streamed to a file.
    const Run all =
        run(kRecommend + " --checkpoint=" + checkpoint +
                " --all_users --topk=10 --progress=false --output=" + (dir / "recs.tsv"),
            dir / "err.txt");
    INFO(read_file(dir / "err.txt"));
    REQUIRE(all.status == 0);
    const auto expected = parse_tsv(read_file(dir / "recs.tsv"));
    CHECK(static_cast<int64_t>(expected.size()) == rec->n_users() - 1);

    // --users prints the same lines as --all_users for those users.
    const std::string u1 = rec->user_token(1), u2 = rec->user_token(2);
    const Run some = run(kRecommend + " --checkpoint=" + checkpoint + " --users=" + u1 + "," + u2 +
                             ",not-a-user --topk=10",
                         dir / "err2.txt");
    CHECK(some.status == 0);
    CHECK_THAT(read_file(dir / "err2.txt"), Catch::Contains("unknown user \"not-a-user\""));
    const auto two = parse_tsv(some.out);
    CHECK(two.size() == 2);
    CHECK(two.at(u1) == expected.at(u1));
    CHECK(two.at(u2) == expected.at(u2));

    ServerProcess server(kServe,
                         {"--checkpoint=" + checkpoint, "--access_log=" + (dir / "access.log")},
                         dir.path.string(), 120 * slow());
    for (const auto& [user, list] : expected) {
      const auto reply = http_get(server.port(), "/recommend?user=" + url_encode(user) + "&k=10");
      REQUIRE(reply.status == 200);
      const nlohmann::json j = nlohmann::json::parse(reply.body);
      CHECK(j["user"] == user);
      check_same(j["items"], list);
    }
    // POST with several users: the same lists.
    nlohmann::json users = nlohmann::json::array();
    for (const auto& [user, list] : expected) users.push_back(user);
    const auto batch = http_post(server.port(), "/recommend",
                                 nlohmann::json({{"users", users}, {"k", 10}}).dump());
    REQUIRE(batch.status == 200);
    const nlohmann::json b = nlohmann::json::parse(batch.body);
    REQUIRE(b["results"].size() == expected.size());
    for (const auto& r : b["results"]) check_same(r["items"], expected.at(r["user"]));
    CHECK(b["unknown_users"].empty());

    // An item history: recbole_recommend --history and POST {"history"} agree.
    if (rec->can_recommend_from_history()) {
      const std::string i1 = rec->item_token(1), i2 = rec->item_token(3);
      const Run h = run(
          kRecommend + " --checkpoint=" + checkpoint + " --history=" + i1 + "," + i2 + " --topk=7",
          dir / "err3.txt");
      REQUIRE(h.status == 0);
      const auto hist = parse_tsv(h.out);
      const auto reply = http_post(server.port(), "/recommend",
                                   nlohmann::json({{"history", {i1, i2}}, {"k", 7}}).dump());
      REQUIRE(reply.status == 200);
      check_same(nlohmann::json::parse(reply.body)["items"], hist.at("-"));
    }
    server.signal(SIGTERM);
    CHECK(server.wait_exit(30 * slow()) == 0);
    // One access-log line per request answered.
    const std::string log = read_file(dir / "access.log");
    CHECK(static_cast<size_t>(std::count(log.begin(), log.end(), '\n')) >= expected.size() + 1);
    CHECK_THAT(log, Catch::Contains("\"GET /recommend?user=") && Catch::Contains("\" 200 "));
  }
}

TEST_CASE("bad requests never crash or stall recbole_serve", "[serving][tool]") {
  TempDir dir("recbole_serving_bad");
  const std::string checkpoint = train_checkpoint("BPR", dir);
  const auto rec = recbole::Recommender::load(checkpoint);
  const std::string user = rec->user_token(1);
  ServerProcess server(kServe,
                       {"--checkpoint=" + checkpoint, "--access_log=" + (dir / "access.log"),
                        "--max_body_bytes=65536", "--read_timeout=2", "--threads=64"},
                       dir.path.string(), 120 * slow());
  const int port = server.port();
  const double t = 30 * slow();
  auto status_of_get = [&](const std::string& target) { return http_get(port, target, t).status; };
  auto status_of_post = [&](const std::string& body) {
    return http_post(port, "/recommend", body, t).status;
  };
  auto is_json_error = [&](const recbole::testing::HttpReply& r, int status) {
    INFO(r.body);
    CHECK(r.status == status);
    const nlohmann::json j = nlohmann::json::parse(r.body, nullptr, false);
    REQUIRE_FALSE(j.is_discarded());
    CHECK(j["status"] == status);
    CHECK(j["error"].is_string());
  };

  SECTION("malformed queries, k limits, unknown users and paths") {
    CHECK(status_of_get("/recommend?user=" + user + "&k=10") == 200);
    is_json_error(http_get(port, "/recommend", t), 400);
    is_json_error(http_get(port, "/recommend?user=" + user + "&k=0", t), 400);
    is_json_error(http_get(port, "/recommend?user=" + user + "&k=-1", t), 400);
    is_json_error(http_get(port, "/recommend?user=" + user + "&k=1000000000", t), 400);
    is_json_error(http_get(port, "/recommend?user=" + user + "&k=1e9", t), 400);
    is_json_error(http_get(port, "/recommend?user=" + user + "&k=abc", t), 400);
    is_json_error(http_get(port, "/recommend?user=" + user + "&k=", t), 400);
    is_json_error(http_get(port, "/recommend?user=" + user + "&k=99999999999999999999999", t), 400);
    is_json_error(http_get(port, "/recommend?user=" + user + "&k=10&k=5", t), 400);
    is_json_error(http_get(port, "/recommend?user=" + user + "&user=" + rec->user_token(2), t),
                  400);
    is_json_error(http_get(port, "/recommend?user=" + user + "&exclude_history=maybe", t), 400);
    is_json_error(http_get(port, "/recommend?user=" + user + "&colour=blue", t), 400);
    is_json_error(http_get(port, "/recommend?user=nobody", t), 404);
    is_json_error(http_get(port, "/recommend?user=", t), 404);
    is_json_error(http_get(port, "/recommend?user=%ZZ%", t), 404);
    is_json_error(http_get(port, "/recommend?user=%00%01%FF", t), 404);
    is_json_error(http_get(port, "/recommend?=&&&=&user", t), 404);  // user given, empty
    is_json_error(http_get(port, "/no/such/path", t), 404);
    is_json_error(http_get(port, "/recommend?user=" + std::string(20000, 'x'), t), 414);
    CHECK(raw_request(port, "GARBAGE\r\n\r\n", t).status == 400);
    CHECK(raw_request(port, "GET / HTTP/9.9\r\n\r\n", t).status >= 400);
    CHECK(raw_request(port, "\r\n\r\n\r\n", t).status != 200);
    // A request that never ends: the read timeout closes it.
    CHECK(raw_request(port, "GET /recommend?user=" + user, 10 * slow()).status != 200);
  }

  SECTION("bad JSON, wrong types, huge and nested bodies") {
    CHECK(status_of_post("{\"users\": [\"" + user + "\"], \"k\": 5}") == 200);
    for (const std::string body : {"",
                                   "{",
                                   "}",
                                   "[]",
                                   "null",
                                   "42",
                                   "\"users\"",
                                   "{\"users\": \"x\"}",
                                   "{\"users\": [1.5]}",
                                   "{\"users\": [[\"a\"]]}",
                                   "{\"users\": [\"a\"], \"k\": \"10\"}",
                                   "{\"users\": [\"a\"], \"k\": 0}",
                                   "{\"users\": [\"a\"], \"k\": -1}",
                                   "{\"users\": [\"a\"], \"k\": 1e9}",
                                   "{\"users\": [\"a\"], \"k\": 1000000000}",
                                   "{\"users\": [\"a\"], \"k\": 10.5}",
                                   "{\"users\": [\"a\"], \"exclude_history\": 1}",
                                   "{\"users\": [\"a\"], \"history\": [\"b\"]}",
                                   "{\"user\": null}",
                                   "{\"bogus\": 1}",
                                   "{\"history\": [\"1\"]}",  // BPR cannot recommend from a history
                                   "\xff\xfe{\"users\": []}",
                                   "{\"users\": [\"a\"]} trailing"}) {
      INFO(body);
      is_json_error(http_post(port, "/recommend", body, t), 400);
    }
    // Too many users.
    nlohmann::json many = nlohmann::json::array();
    for (int i = 0; i < 1001; ++i) many.push_back(user);
    is_json_error(http_post(port, "/recommend", nlohmann::json({{"users", many}}).dump(), t), 400);
    // Deep nesting, within the size limit.
    is_json_error(
        http_post(port, "/recommend", std::string(30000, '[') + std::string(30000, ']'), t), 400);
    // Larger than --max_body_bytes: 413, without reading it all.
    is_json_error(http_post(port, "/recommend", std::string(200000, ' '), t), 413);
    const auto huge_declared = raw_request(
        port, "POST /recommend HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999\r\n\r\n{}", t);
    CHECK(huge_declared.status == 413);
    CHECK(
        raw_request(port, "POST /recommend HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n{}", t)
            .status >= 400);
    // Unknown users among known ones: listed, the others answered.
    const auto mixed =
        http_post(port, "/recommend",
                  nlohmann::json({{"users", {user, "nobody", "also-nobody"}}, {"k", 3}}).dump(), t);
    REQUIRE(mixed.status == 200);
    const nlohmann::json m = nlohmann::json::parse(mixed.body);
    CHECK(m["results"].size() == 1);
    CHECK(m["unknown_users"] == nlohmann::json({"nobody", "also-nobody"}));
    is_json_error(http_post(port, "/recommend", "{\"user\": \"nobody\"}", t), 404);
  }

  SECTION("1,000 concurrent connections") {
    constexpr int kConnections = 1000;
    std::vector<int> fds;
    std::vector<std::string> replies(kConnections);
    std::vector<size_t> sent(kConnections, 0);
    const std::string request = "GET /recommend?user=" + url_encode(user) +
                                "&k=10 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    for (int c = 0; c < kConnections; ++c) {
      fds.push_back(recbole::testing::connect_loopback(port, /*nonblocking=*/true));
      REQUIRE(fds.back() >= 0);
    }
    std::vector<bool> done(kConnections, false);
    int open = kConnections;
    const auto t0 = std::chrono::steady_clock::now();
    while (open > 0 &&
           std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() <
               60 * slow()) {
      std::vector<pollfd> p;
      std::vector<int> idx;
      for (int c = 0; c < kConnections; ++c)
        if (!done[c]) {
          p.push_back({fds[c], static_cast<short>(sent[c] < request.size() ? POLLOUT : POLLIN), 0});
          idx.push_back(c);
        }
      ::poll(p.data(), p.size(), 1000);
      for (size_t j = 0; j < p.size(); ++j) {
        const int c = idx[j];
        if (p[j].revents & POLLOUT) {
          const ssize_t n =
              ::send(fds[c], request.data() + sent[c], request.size() - sent[c], MSG_NOSIGNAL);
          if (n > 0) sent[c] += static_cast<size_t>(n);
        }
        if (p[j].revents & (POLLIN | POLLHUP | POLLERR)) {
          char buf[8192];
          const ssize_t n = ::recv(fds[c], buf, sizeof buf, 0);
          if (n > 0) {
            replies[c].append(buf, static_cast<size_t>(n));
          } else if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
            done[c] = true;
            --open;
          }
        }
      }
    }
    for (int fd : fds) ::close(fd);
    CHECK(open == 0);  // every connection was answered and closed within the time
    int ok = 0, shed = 0, other = 0;
    for (const std::string& r : replies) {
      const int status = recbole::testing::parse_reply(r).status;
      (status == 200 ? ok : status == 503 ? shed : other)++;
    }
    WARN("1,000 concurrent connections: "
         << ok << " answered 200, " << shed << " shed with 503, " << other << " other, in "
         << std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() << " s");
    CHECK(other == 0);
    CHECK(ok > 0);
  }

  SECTION("reload: a corrupt checkpoint leaves the old model serving, a good one replaces it") {
    const std::string corrupt = dir / "corrupt.pth";
    {
      std::ifstream in(checkpoint, std::ios::binary);
      std::string bytes((std::istreambuf_iterator<char>(in)), {});
      bytes[bytes.size() / 2] ^= 0x11;
      std::ofstream(corrupt, std::ios::binary) << bytes;
    }
    const auto bad =
        http_post(port, "/reload", nlohmann::json({{"checkpoint", corrupt}}).dump(), t);
    is_json_error(bad, 400);
    CHECK_THAT(bad.body, Catch::Contains("the old model keeps serving"));
    is_json_error(http_post(port, "/reload", "{\"checkpoint\": \"/no/such/file.pth\"}", t), 400);
    is_json_error(http_post(port, "/reload", "{\"checkpoint\": 5}", t), 400);
    CHECK(status_of_get("/recommend?user=" + user + "&k=10") == 200);
    const nlohmann::json before = nlohmann::json::parse(http_get(port, "/model", t).body);
    CHECK(before["checkpoint"] == checkpoint);
    CHECK(before["model"] == "BPR");
    // A good checkpoint of another model is swapped in.
    TempDir other("recbole_serving_reload_ease");
    const std::string ease = train_checkpoint("EASE", other);
    const auto good = http_post(port, "/reload", nlohmann::json({{"checkpoint", ease}}).dump(), t);
    REQUIRE(good.status == 200);
    CHECK(nlohmann::json::parse(good.body)["model"] == "EASE");
    CHECK(status_of_get("/recommend?user=" + user + "&k=10") == 200);
    // SIGHUP reloads the serving checkpoint; when it has become corrupt, EASE keeps serving.
    std::filesystem::copy_file(corrupt, ease, std::filesystem::copy_options::overwrite_existing);
    server.signal(SIGHUP);
    std::this_thread::sleep_for(std::chrono::milliseconds(static_cast<int>(1500 * slow())));
    const nlohmann::json after = nlohmann::json::parse(http_get(port, "/model", t).body);
    CHECK(after["model"] == "EASE");
    CHECK(after["failed_reloads"].get<int>() >= 3);
    CHECK(status_of_get("/recommend?user=" + user + "&k=10") == 200);
    CHECK(status_of_get("/health") == 200);
  }

  SECTION("SIGTERM: the request in flight is answered, then the server exits 0") {
    // A request in flight for sure: half its body is sent before SIGTERM, the rest after.
    nlohmann::json users = nlohmann::json::array();
    for (int32_t u = 1; u < rec->n_users(); ++u) users.push_back(rec->user_token(u));
    const std::string body = nlohmann::json({{"users", users}, {"k", 20}}).dump();
    const std::string head =
        "POST /recommend HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
        "Content-Length: " +
        std::to_string(body.size()) + "\r\n\r\n";
    const int fd = recbole::testing::connect_loopback(port);
    REQUIRE(fd >= 0);
    // A first, whole request on the connection: a worker then serves it (none waits in the
    // queue when the server stops).
    const std::string hello = "GET /health HTTP/1.1\r\nHost: x\r\n\r\n";
    REQUIRE(::send(fd, hello.data(), hello.size(), MSG_NOSIGNAL) ==
            static_cast<ssize_t>(hello.size()));
    {
      std::string got;
      char b[4096];
      while (got.find("}\n") == std::string::npos) {
        const ssize_t n = ::recv(fd, b, sizeof b, 0);
        REQUIRE(n > 0);
        got.append(b, static_cast<size_t>(n));
      }
      CHECK(recbole::testing::parse_reply(got).status == 200);
    }
    const std::string first = head + body.substr(0, body.size() / 2);
    const std::string rest = body.substr(body.size() / 2);
    REQUIRE(::send(fd, first.data(), first.size(), MSG_NOSIGNAL) ==
            static_cast<ssize_t>(first.size()));
    // Pauses well within the server's --read_timeout=2 (else it answers the cut request 400).
    std::this_thread::sleep_for(std::chrono::milliseconds(400));
    server.signal(SIGTERM);
    std::this_thread::sleep_for(std::chrono::milliseconds(400));
    // No new connection is accepted while the one in flight finishes.
    CHECK(http_get(port, "/health", 2).status == 0);
    REQUIRE(::send(fd, rest.data(), rest.size(), MSG_NOSIGNAL) ==
            static_cast<ssize_t>(rest.size()));
    std::string raw;
    char buf[65536];
    for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;)
      raw.append(buf, static_cast<size_t>(n));
    ::close(fd);
    const auto reply = recbole::testing::parse_reply(raw);
    CHECK(reply.status == 200);
    CHECK(nlohmann::json::parse(reply.body)["results"].size() == users.size());
    CHECK(server.wait_exit(30 * slow()) == 0);
    CHECK(http_get(port, "/health", 2).status == 0);  // no longer listening
    return;
  }

  // After every section the server is still up and answers.
  CHECK(server.alive());
  CHECK(status_of_get("/health") == 200);
  CHECK(status_of_get("/recommend?user=" + user + "&k=10") == 200);
  server.signal(SIGTERM);
  CHECK(server.wait_exit(30 * slow()) == 0);
  const std::string log = server.log();
  CHECK_THAT(log,
             !Catch::Contains("ERROR SUMMARY: ") || Catch::Contains("ERROR SUMMARY: 0 errors"));
  CHECK_THAT(log, !Catch::Contains("AddressSanitizer"));
}
