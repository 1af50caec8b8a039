// ensure_dataset_files end to end against the local test server: the good case, every
// failure (the message names the cause; nothing is left under <data_path>/<name>/), the
// proxy variables, resuming across calls, and two processes asking at once.
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "download_fixtures.h"
#include "http_test_server.h"
#include "recbole/download/download.h"
#include "recbole/download/sha256.h"
#include "recbole/utils/error.h"
#include "tests/scoped_env.h"

using namespace recbole::testing;
using recbole::data::ensure_dataset_files;
namespace fs = std::filesystem;

namespace {

const std::string& ml100k_zip() {
  static const std::string zip = make_archive(ml100k_entries(), "zip");
  return zip;
}

void check_ml100k_files(const std::string& folder, const std::string& name) {
  CHECK(list_dir(folder) ==
        std::vector<std::string>{name + ".inter", name + ".item", name + ".user"});
  CHECK(read_file(folder + "/" + name + ".inter") == shared_ml100k_file("inter"));
  CHECK(read_file(folder + "/" + name + ".item") == shared_ml100k_file("item"));
  CHECK(read_file(folder + "/" + name + ".user") == shared_ml100k_file("user"));
}

// Runs ensure_dataset_files expecting a DataError; returns its message.
std::string failure(const std::string& name, const std::string& data_path, const std::string& url,
                    const std::string& sha = "",
                    recbole::data::DownloadOptions opts = quick_options()) {
  try {
    ensure_dataset_files(name, data_path, opts, url, sha);
  } catch (const recbole::DataError& e) {
    return e.what();
  }
  FAIL("ensure_dataset_files did not fail");
  return "";
}

}  // namespace

TEST_CASE("a good archive is downloaded, extracted and put in place", "[download][ensure]") {
  HttpTestServer server;
  server.set("/ml-100k.zip", Route{ml100k_zip()});
  TempDir tmp;
  const std::string data = tmp / "dataset";
  std::string folder =
      ensure_dataset_files("ml-100k", data, quick_options(), server.url("/ml-100k.zip"));
  CHECK(folder == data + "/ml-100k");
  check_ml100k_files(folder, "ml-100k");
  CHECK(list_dir(data) == std::vector<std::string>{"ml-100k"});  // no lock, no staging left
  // Present now: no second download.
  ensure_dataset_files("ml-100k", data, quick_options(), server.url("/ml-100k.zip"));
  CHECK(server.requests("/ml-100k.zip").size() == 1);
}

TEST_CASE("files are renamed to the dataset's name, and a wrapping folder is removed",
          "[download][ensure]") {
  HttpTestServer server;
  server.set("/ml-100k.zip", Route{ml100k_zip()});
  server.set("/ml-100k.tar.gz", Route{make_archive(ml100k_entries("ml-100k/"), "tar.gz")});
  TempDir tmp;
  check_ml100k_files(
      ensure_dataset_files("movies", tmp.path(), quick_options(), server.url("/ml-100k.zip")),
      "movies");
  check_ml100k_files(
      ensure_dataset_files("films", tmp.path(), quick_options(), server.url("/ml-100k.tar.gz")),
      "films");
  // An empty folder is replaced; a checksum given by the user is checked.
  fs::create_directories(tmp / "ml-100k");
  recbole::data::Sha256 hash;
  hash.update(ml100k_zip());
  std::string sha = hash.hex_digest();
  for (auto& c : sha) c = char(std::toupper(c));  // either case is accepted
  ensure_dataset_files("ml-100k", tmp.path(), quick_options(), server.url("/ml-100k.zip"), sha);
  check_ml100k_files(tmp / "ml-100k", "ml-100k");
}

TEST_CASE("a file:// URL works, as for an archive copied by hand", "[download][ensure]") {
  TempDir tmp;
  write_file(tmp / "ml-100k.zip", ml100k_zip());
  check_ml100k_files(ensure_dataset_files("ml-100k", tmp / "data", quick_options(),
                                          "file://" + (tmp / "ml-100k.zip")),
                     "ml-100k");
  CHECK(fs::exists(tmp / "ml-100k.zip"));  // the source archive is left alone
}

TEST_CASE("HTTP 404: the message names the URL, the cause and where to put files by hand",
          "[download][ensure]") {
  HttpTestServer server;
  TempDir tmp;
  std::string msg = failure("ml-100k", tmp.path(), server.url("/nope.zip"));
  CHECK_THAT(msg, Catch::Contains(server.url("/nope.zip")) && Catch::Contains("HTTP 404") &&
                      Catch::Contains("put ml-100k.inter") && Catch::Contains(tmp / "ml-100k/"));
  CHECK(list_dir(tmp.path()).empty());
}

TEST_CASE("no network: a refused connection names the URL and the manual route",
          "[download][ensure]") {
  int port;
  {
    HttpTestServer closed;  // take a free port, then close it
    port = closed.port();
  }
  TempDir tmp;
  const std::string url = "http://127.0.0.1:" + std::to_string(port) + "/ml-1m.zip";
  std::string msg = failure("ml-1m", tmp.path(), url, "", quick_options(1));
  CHECK_THAT(msg, Catch::Contains(url) && Catch::Contains("onnect") &&
                      Catch::Contains("gave up after 2 attempts") &&
                      Catch::Contains("put ml-1m.inter"));
  CHECK(list_dir(tmp.path()).empty());
}

TEST_CASE("a body cut short fails, keeps the partial download outside the dataset folder",
          "[download][ensure]") {
  HttpTestServer server;
  Route route{ml100k_zip()};
  route.cut_at = int64_t(ml100k_zip().size() / 2);
  server.set("/ml-100k.zip", route);
  TempDir tmp;
  std::string msg =
      failure("ml-100k", tmp.path(), server.url("/ml-100k.zip"), "", quick_options(1));
  CHECK_THAT(msg, Catch::Contains("closed before the end") && Catch::Contains("is kept in"));
  CHECK_FALSE(fs::exists(tmp / "ml-100k"));
  CHECK(list_dir(tmp.path()) == std::vector<std::string>{".ml-100k.download"});
  auto reqs = server.requests("/ml-100k.zip");
  REQUIRE(reqs.size() == 2);
  CHECK(reqs[1].range == "bytes=" + std::to_string(route.cut_at) + "-");
}

TEST_CASE("an interrupted download resumes on the next call with only the missing bytes",
          "[download][ensure]") {
  HttpTestServer server;
  const int64_t size = int64_t(ml100k_zip().size());
  Route route{ml100k_zip()};
  route.cut_at = size * 2 / 5;
  route.cut_times = 1;
  server.set("/ml-100k.zip", route);
  TempDir tmp;
  failure("ml-100k", tmp.path(), server.url("/ml-100k.zip"));
  check_ml100k_files(
      ensure_dataset_files("ml-100k", tmp.path(), quick_options(), server.url("/ml-100k.zip")),
      "ml-100k");
  auto reqs = server.requests("/ml-100k.zip");
  REQUIRE(reqs.size() == 2);
  CHECK(reqs[0].body_bytes == route.cut_at);
  CHECK(reqs[1].range == "bytes=" + std::to_string(route.cut_at) + "-");
  CHECK(reqs[1].body_bytes == size - route.cut_at);
  CHECK(list_dir(tmp.path()) == std::vector<std::string>{"ml-100k"});
}

TEST_CASE("a checksum mismatch fails and leaves nothing behind", "[download][ensure]") {
  HttpTestServer server;
  server.set("/ml-100k.zip", Route{ml100k_zip()});
  TempDir tmp;
  const std::string wrong(64, '0');
  std::string msg = failure("ml-100k", tmp.path(), server.url("/ml-100k.zip"), wrong);
  CHECK_THAT(msg, Catch::Contains("checksum mismatch") && Catch::Contains(wrong) &&
                      Catch::Contains("download_sha256"));
  CHECK(list_dir(tmp.path()).empty());
  CHECK_THROWS_AS(ensure_dataset_files("ml-100k", tmp.path(), quick_options(),
                                       server.url("/ml-100k.zip"), "abc"),
                  recbole::ConfigError);
}

TEST_CASE("archives with a ../ entry or a symlink are refused and leave nothing behind",
          "[download][ensure]") {
  HttpTestServer server;
  auto slip = ml100k_entries();
  slip.push_back({"../escaped.inter", "x"});
  server.set("/slip.zip", Route{make_archive(slip, "zip")});
  auto linked = ml100k_entries();
  linked.push_back({"ml-100k.kg", "", ArchiveEntry::Kind::kSymlink, "/etc/passwd"});
  server.set("/link.zip", Route{make_archive(linked, "zip")});
  TempDir tmp;
  const std::string data = tmp / "data";
  std::string msg = failure("slip", data, server.url("/slip.zip"));
  CHECK_THAT(msg, Catch::Contains("../escaped.inter") && Catch::Contains("'..'"));
  msg = failure("link", data, server.url("/link.zip"));
  CHECK_THAT(msg, Catch::Contains("ml-100k.kg") && Catch::Contains("symbolic link"));
  CHECK(list_dir(data).empty());
  CHECK(list_dir(tmp.path()) == std::vector<std::string>{"data"});  // nothing escaped
}

TEST_CASE("an archive without the .inter file is refused", "[download][ensure]") {
  HttpTestServer server;
  server.set("/other.zip", Route{make_archive({{"readme.txt", "hi"}}, "zip")});
  TempDir tmp;
  std::string msg = failure("other", tmp.path(), server.url("/other.zip"));
  CHECK_THAT(msg, Catch::Contains("no other.inter") && Catch::Contains("readme.txt"));
  CHECK(list_dir(tmp.path()).empty());
}

TEST_CASE("a stalled server fails after the timeout and leaves nothing in the dataset folder",
          "[download][ensure]") {
  HttpTestServer server;
  Route route{ml100k_zip()};
  route.stall_at = 1000;
  server.set("/ml-100k.zip", route);
  TempDir tmp;
  auto t0 = std::chrono::steady_clock::now();
  std::string msg = failure("ml-100k", tmp.path(), server.url("/ml-100k.zip"));
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK_THAT(msg, Catch::Contains("timed out"));
  CHECK(took < 5.0);
  CHECK_FALSE(fs::exists(tmp / "ml-100k"));
}

TEST_CASE("unknown names and occupied folders are reported, not downloaded", "[download][ensure]") {
  TempDir tmp;
  CHECK_THROWS_WITH(ensure_dataset_files("no-such-set", tmp.path(), quick_options()),
                    Catch::Contains("no-such-set.inter: not found") && Catch::Contains("ml-1m") &&
                        Catch::Contains("download_url"));
  fs::create_directories(tmp / "ml-1m");
  write_file(tmp / "ml-1m/ml-1m.item", "mine");
  CHECK_THROWS_WITH(ensure_dataset_files("ml-1m", tmp.path(), quick_options()),
                    Catch::Contains("exists but has no ml-1m.inter"));
  CHECK(list_dir(tmp / "ml-1m") == std::vector<std::string>{"ml-1m.item"});
  CHECK_THROWS_AS(ensure_dataset_files("../up", tmp.path(), quick_options()), recbole::ConfigError);
  // Files put there by hand are used as they are.
  write_file(tmp / "ml-1m/ml-1m.inter", "user_id:token\titem_id:token\n");
  CHECK(ensure_dataset_files("ml-1m", tmp.path(), quick_options()) == tmp / "ml-1m");
}

TEST_CASE("the proxy variables are honoured", "[download][ensure]") {
  HttpTestServer proxy;
  proxy.set("/ml-100k.zip", Route{ml100k_zip()});
  ScopedEnv http_proxy("http_proxy", proxy.url("").c_str());
  ScopedEnv no_proxy("no_proxy", nullptr);
  ScopedEnv no_proxy_upper("NO_PROXY", nullptr);
  TempDir tmp;
  check_ml100k_files(ensure_dataset_files("ml-100k", tmp.path(), quick_options(),
                                          "http://datasets.example.invalid/ml-100k.zip"),
                     "ml-100k");
  auto reqs = proxy.requests("/ml-100k.zip");
  REQUIRE(reqs.size() == 1);
  CHECK(reqs[0].target == "http://datasets.example.invalid/ml-100k.zip");
}

TEST_CASE("two processes asking at once: one downloads, the other waits and reuses",
          "[download][ensure][fork]") {
  TempDir tmp;
  // Fork before any thread exists (the server's threads start after), then release both
  // children at the same moment through their pipes.
  int pipes[2][2];
  pid_t pids[2];
  for (int i = 0; i < 2; ++i) {
    REQUIRE(pipe(pipes[i]) == 0);
    pids[i] = fork();
    REQUIRE(pids[i] >= 0);
    if (pids[i] == 0) {
      close(pipes[i][1]);
      int port = 0;
      if (read(pipes[i][0], &port, sizeof(port)) != sizeof(port)) _exit(3);
      try {
        ensure_dataset_files("ml-100k", tmp.path(), quick_options(),
                             "http://127.0.0.1:" + std::to_string(port) + "/ml-100k.zip");
        _exit(0);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "child %d: %s\n", i, e.what());
        _exit(1);
      }
    }
    close(pipes[i][0]);
  }
  HttpTestServer server;
  Route route{ml100k_zip()};
  route.chunk_delay_ms = 10;  // a download that lasts a while, so the two overlap
  server.set("/ml-100k.zip", route);
  int port = server.port();
  for (auto& p : pipes) {
    REQUIRE(write(p[1], &port, sizeof(port)) == sizeof(port));
    close(p[1]);
  }
  for (pid_t pid : pids) {
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
  }
  CHECK(server.requests("/ml-100k.zip").size() == 1);
  CHECK(server.body_bytes("/ml-100k.zip") == int64_t(ml100k_zip().size()));
  check_ml100k_files(tmp / "ml-100k", "ml-100k");
  CHECK(list_dir(tmp.path()) == std::vector<std::string>{"ml-100k"});
}
