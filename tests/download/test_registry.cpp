// datasets/registry.yaml lookups, the user's own URL, and the download lock.
#include <catch2/catch.hpp>

#include <atomic>
#include <filesystem>
#include <thread>

#include "download_fixtures.h"
#include "recbole/download/download.h"
#include "recbole/download/lock.h"
#include "recbole/utils/error.h"

using recbole::data::find_dataset_source;

TEST_CASE("the registry knows RecBole's MovieLens archives", "[download][registry]") {
  for (const char* name : {"ml-100k", "ml-1m", "ml-10m", "ml-20m"}) {
    auto s = find_dataset_source(name);
    REQUIRE(s);
    CHECK(s->url == std::string("https://recbole.s3-accelerate.amazonaws.com/ProcessedDatasets/"
                                "MovieLens/") +
                        name + ".zip");
    CHECK(s->archive_stem == name);
    CHECK(s->origin == "datasets/registry.yaml");
    CHECK(s->sha256.empty());  // not published: not guessed
    CHECK(s->size == -1);
  }
  auto names = recbole::data::registered_dataset_names();
  CHECK(std::is_sorted(names.begin(), names.end()));
  CHECK(names.size() >= 4);
  CHECK_FALSE(find_dataset_source("no-such-set"));
}

TEST_CASE("the user's download_url and download_sha256 take precedence", "[download][registry]") {
  const std::string sha(64, 'A');
  auto s = find_dataset_source("mine", "https://example.org/files/my-set.tar.gz?token=1", sha);
  REQUIRE(s);
  CHECK(s->url == "https://example.org/files/my-set.tar.gz?token=1");
  CHECK(s->archive_stem == "my-set");
  CHECK(s->sha256 == std::string(64, 'a'));
  CHECK(s->origin == "download_url");
  auto pinned = find_dataset_source("ml-1m", "", sha);
  REQUIRE(pinned);
  CHECK(pinned->url.find("ml-1m.zip") != std::string::npos);
  CHECK(pinned->sha256 == std::string(64, 'a'));
  CHECK_THROWS_WITH(find_dataset_source("ml-1m", "", "1234"),
                    Catch::Contains("download_sha256") && Catch::Contains("1234"));
  CHECK_THROWS_AS(find_dataset_source("a/b"), recbole::ConfigError);
}

TEST_CASE("the download lock excludes a second holder until released", "[download][lock]") {
  recbole::testing::TempDir tmp;
  const std::string path = tmp / ".x.lock";
  std::atomic<bool> second_has_it{false};
  std::thread second;
  {
    recbole::data::DownloadLock first(path);
    CHECK_FALSE(first.waited());
    second = std::thread([&] {
      recbole::data::DownloadLock again(path);
      CHECK(again.waited());
      second_has_it = true;
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    CHECK_FALSE(second_has_it);
  }
  second.join();
  CHECK(second_has_it);
  CHECK_FALSE(std::filesystem::exists(path));  // removed by its last holder
}
