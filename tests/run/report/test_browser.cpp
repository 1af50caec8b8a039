// The reports as a browser shows them: each is rendered from its fixture, loaded in headless
// Chromium, and a probe script added to the test's copy (the reports themselves have none)
// measures the SVG elements Chromium drew. Hidden from the default run ([.browser]): CTest runs
// it as "report:browser" (tests/CMakeLists.txt), which it reports as skipped when no Chromium
// is installed (`bash tools/install_deps.sh --browser`; RECBOLE_CHROMIUM names another binary).
#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "report_test_util.h"
#include "run/report/html_report.h"

using nlohmann::json;
using recbole::report::test::fixture;
namespace fs = std::filesystem;

namespace {

// For every chart: what Chromium drew (sizes in CSS pixels), and the texts that leave the chart
// or overlap another text.
constexpr const char* kProbe = R"(<pre id="probe"></pre>
<script>
(function () {
  function rect(e) { return e.getBoundingClientRect(); }
  function overlap(a, b) {
    var w = Math.min(a.right, b.right) - Math.max(a.left, b.left);
    var h = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
    return w > 1 && h > 1;
  }
  var charts = [];
  document.querySelectorAll('svg.chart').forEach(function (svg) {
    var box = rect(svg);
    var texts = Array.from(svg.querySelectorAll('text')).map(rect);
    var outside = texts.filter(function (t) {
      return t.left < box.left - 1 || t.right > box.right + 1 || t.top < box.top - 1 ||
             t.bottom > box.bottom + 1;
    }).length;
    var overlapping = 0;
    for (var i = 0; i < texts.length; ++i)
      for (var j = i + 1; j < texts.length; ++j) overlapping += overlap(texts[i], texts[j]);
    charts.push({
      width: box.width, height: box.height,
      polylines: Array.from(svg.querySelectorAll('polyline.series')).map(function (p) {
        return {n: p.points.numberOfItems, w: p.getBBox().width + p.getBBox().height};
      }),
      points: Array.from(svg.querySelectorAll('circle.point')).filter(function (c) {
        return rect(c).width > 0;
      }).length,
      best: svg.querySelectorAll('circle.point.best').length,
      bars: Array.from(svg.querySelectorAll('rect.bar')).map(function (b) { return rect(b).height; }),
      error_bars: Array.from(svg.querySelectorAll('path.error-bar')).map(function (e) {
        return e.getTotalLength();
      }),
      markers: svg.querySelectorAll('line.marker').length,
      no_data: svg.querySelectorAll('text.no-data').length,
      texts_outside: outside, texts_overlapping: overlapping
    });
  });
  document.getElementById('probe').textContent =
      'PROBE' + JSON.stringify({charts: charts, scripts: document.scripts.length}) + 'EBORP';
})();
</script>
)";

// RECBOLE_CHROMIUM when set (a path that is not executable: none), else the first browser of
// Debian's names on PATH.
std::string find_chromium() {
  if (const char* env = std::getenv("RECBOLE_CHROMIUM")) return ::access(env, X_OK) == 0 ? env : "";
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/bin";
  for (const char* name : {"chromium", "chromium-browser", "google-chrome", "chrome"}) {
    size_t start = 0;
    while (start <= dirs.size()) {
      const size_t end = std::min(dirs.find(':', start), dirs.size());
      const std::string candidate = dirs.substr(start, end - start) + "/" + name;
      if (end > start && ::access(candidate.c_str(), X_OK) == 0) return candidate;
      start = end + 1;
    }
  }
  return "";
}

std::string run(const std::string& command) {
  std::string out;
  if (std::FILE* p = ::popen(command.c_str(), "r")) {
    char buf[65536];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    ::pclose(p);
  }
  return out;
}

// Loads `html` (with the probe) in headless Chromium and returns what the probe measured.
json probe(const std::string& chromium, const fs::path& dir, const std::string& name,
           const std::string& html) {
  const size_t body = html.rfind("</body>");
  REQUIRE(body != std::string::npos);
  const fs::path page = dir / (name + ".html");
  std::ofstream(page) << html.substr(0, body) << kProbe << html.substr(body);
  const std::string command =
      "timeout 120 '" + chromium +
      "' --headless --no-sandbox --disable-gpu --disable-quic --no-first-run "
      "--disable-background-networking --disable-component-update --disable-sync "
      "--user-data-dir='" +
      (dir / ("profile-" + name)).string() + "' --window-size=1200,1600 --dump-dom 'file://" +
      page.string() + "' 2>'" + (dir / (name + ".stderr")).string() + "'";
  const std::string dom = run(command);
  const size_t a = dom.find("PROBE"), b = dom.find("EBORP");
  INFO(command);
  INFO("DOM: " << dom.substr(0, 2000));
  REQUIRE(a != std::string::npos);
  REQUIRE(b != std::string::npos);
  return json::parse(dom.substr(a + 5, b - a - 5));
}

// Every chart has a size, and no text leaves it or overlaps another.
void check_layout(const json& result) {
  CHECK(result["scripts"] == 1);  // the probe's: the report has none
  for (const json& c : result["charts"]) {
    CHECK(c["width"].get<double>() > 200);
    CHECK(c["height"].get<double>() > 100);
    CHECK(c["texts_outside"] == 0);
    CHECK(c["texts_overlapping"] == 0);
  }
}

}  // namespace

TEST_CASE("browser: Chromium draws the charts of the three reports", "[.browser]") {
  const std::string chromium = find_chromium();
  if (chromium.empty()) {
    // tests/CMakeLists.txt marks the test skipped on this line.
    std::printf(
        "chromium not found: skipping the browser test "
        "(bash tools/install_deps.sh --browser)\n");
    return;
  }
  char tmpl[] = "/tmp/recbole-report-browser-XXXXXX";
  REQUIRE(::mkdtemp(tmpl) != nullptr);
  const fs::path dir = tmpl;

  SECTION("run report: a polyline per series with a point per epoch, the best epoch marked") {
    const json run = fixture("run.json");
    const json result = probe(chromium, dir, "run", recbole::report::render_run_report(run));
    check_layout(result);
    const json& charts = result["charts"];
    REQUIRE(charts.size() == 2);
    const size_t epochs = run["history"].size();
    REQUIRE(charts[0]["polylines"].size() == 1);
    CHECK(charts[0]["polylines"][0]["n"] == epochs);
    CHECK(charts[1]["polylines"].size() == run["history"][0]["valid_result"].size());
    for (const json& p : charts[1]["polylines"]) {
      CHECK(p["n"] == epochs);
      CHECK(p["w"].get<double>() > 10);
    }
    CHECK(charts[0]["markers"] == 1);
    CHECK(charts[1]["markers"] == 1);
  }

  SECTION("search report: a drawn point per scored trial in each scatter") {
    const json search = fixture("search.json");
    const json result =
        probe(chromium, dir, "search", recbole::report::render_search_report(search));
    check_layout(result);
    size_t scored = 0;
    for (const json& t : search["trials"]) scored += t["valid_score"].is_number();
    REQUIRE(result["charts"].size() == search["params"].size());
    for (const json& c : result["charts"]) {
      CHECK(c["points"] == scored);
      CHECK(c["best"] == 1);
      CHECK(c["no_data"] == 0);
    }
  }

  SECTION("comparison report: a bar per model and an error bar per sd, in each chart") {
    const json comparison = fixture("compare.json");
    const json result =
        probe(chromium, dir, "compare", recbole::report::render_compare_report(comparison));
    check_layout(result);
    REQUIRE(result["charts"].size() == comparison["metrics"].size());
    const size_t models = comparison["models"].size();
    for (const json& c : result["charts"]) {
      REQUIRE(c["bars"].size() == models);
      for (const json& h : c["bars"]) CHECK(h.get<double>() > 1);
      REQUIRE(c["error_bars"].size() == models);
      for (const json& e : c["error_bars"]) CHECK(e.get<double>() > 0);
    }
  }

  SECTION("fitted once: both charts say no data") {
    const json result = probe(chromium, dir, "fit_once",
                              recbole::report::render_run_report(fixture("run_fit_once.json")));
    check_layout(result);
    for (const json& c : result["charts"]) {
      CHECK(c["no_data"] == 1);
      CHECK(c["polylines"].empty());
    }
  }
  std::error_code ec;
  fs::remove_all(dir, ec);
}
