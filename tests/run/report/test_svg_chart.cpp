#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "report_test_util.h"
#include "run/report/svg_chart.h"

using namespace recbole::report;
using recbole::report::test::count;
using recbole::report::test::polyline_sizes;

TEST_CASE("html_escape replaces the five special characters", "[report]") {
  CHECK(html_escape("a<b & \"c\" 'd'>") == "a&lt;b &amp; &quot;c&quot; &#39;d&#39;&gt;");
  CHECK(html_escape("plain") == "plain");
}

TEST_CASE("line chart: a polyline per series with a point per value, and the marker", "[report]") {
  LineChart chart;
  chart.title = "Validation";
  chart.series = {{"recall@10", {0, 1, 2, 3, 4}, {0.1, 0.2, 0.25, 0.27, 0.26}},
                  {"ndcg@10", {1, 3}, {0.3, 0.33}}};
  chart.marker_x = 3;
  chart.marker_label = "best epoch 3";
  const std::string svg = line_chart(chart);
  CHECK(polyline_sizes(svg) == std::vector<size_t>{5, 2});
  CHECK(count(svg, "class=\"marker\"") == 1);
  CHECK(count(svg, "best epoch 3") >= 1);
  CHECK(count(svg, "<svg") == 1);
  CHECK(count(svg, "</svg>") == 1);
  CHECK(count(svg, "no data") == 0);
  // Both series are named in the legend.
  CHECK(count(svg, ">recall@10</text>") == 1);
  CHECK(count(svg, ">ndcg@10</text>") == 1);
}

TEST_CASE("line chart: non-finite values are left out, a single value gets a dot", "[report]") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  LineChart chart;
  chart.series = {{"loss", {0, 1, 2, 3}, {5, nan, 3, std::numeric_limits<double>::infinity()}},
                  {"one", {7}, {1}}};
  const std::string svg = line_chart(chart);
  CHECK(polyline_sizes(svg) == std::vector<size_t>{2, 1});
  CHECK(count(svg, "<circle class=\"point\"") == 1);
  CHECK(svg.find("nan") == std::string::npos);
  CHECK(svg.find("inf") == std::string::npos);
}

TEST_CASE("line chart: a marker outside the data is not drawn", "[report]") {
  LineChart chart;
  chart.series = {{"loss", {0, 1, 2}, {3, 2, 1}}};
  chart.marker_x = 40;
  chart.marker_label = "best";
  CHECK(count(line_chart(chart), "class=\"marker\"") == 0);
}

TEST_CASE("charts with no data say so", "[report]") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  LineChart empty_line;
  empty_line.title = "Training loss";
  LineChart all_nan;
  all_nan.series = {{"loss", {0, 1}, {nan, nan}}};
  BarChart empty_bars;
  ScatterPlot empty_scatter;
  ScatterPlot log_nonpositive;
  log_nonpositive.log_x = true;
  log_nonpositive.x = {0, -1};
  log_nonpositive.y = {0.3, 0.4};
  for (const std::string& svg : {line_chart(empty_line), line_chart(all_nan), bar_chart(empty_bars),
                                 scatter_plot(empty_scatter), scatter_plot(log_nonpositive)}) {
    CHECK(count(svg, "no data") == 1);
    CHECK(count(svg, "<polyline") == 0);
    CHECK(count(svg, "<circle") == 0);
    CHECK(count(svg, "<rect class=\"bar\"") == 0);
    CHECK(count(svg, "</svg>") == 1);
  }
  CHECK(count(line_chart(empty_line), ">Training loss</text>") == 1);
}

TEST_CASE("bar chart: a bar per value and an error bar per error", "[report]") {
  BarChart chart;
  chart.title = "recall@10";
  chart.bars = {{"BPR", 0.2, 0.01}, {"LightGCN", 0.23, 0.02}, {"Pop", 0.11, std::nullopt}};
  const std::string svg = bar_chart(chart);
  CHECK(count(svg, "<rect class=\"bar\"") == 3);
  CHECK(count(svg, "<path class=\"error-bar\"") == 2);
  CHECK(count(svg, "data-label=\"LightGCN\"") == 1);
}

TEST_CASE("bar chart: bars of negative values grow down from zero", "[report]") {
  BarChart chart;
  chart.bars = {{"a", -1, 0.5}, {"b", 2, std::nullopt}};
  const std::string svg = bar_chart(chart);
  CHECK(count(svg, "<rect class=\"bar\"") == 2);
  CHECK(count(svg, "height=\"-") == 0);  // heights are never negative
}

TEST_CASE("scatter plot: a circle per finite point, the highlighted one marked", "[report]") {
  ScatterPlot plot;
  plot.x = {0.001, 0.01, 0.1, 0.0001, 0.05};
  plot.y = {0.3, 0.35, std::nan(""), 0.2, 0.31};
  plot.log_x = true;
  plot.highlight = 1;
  const std::string svg = scatter_plot(plot);
  CHECK(count(svg, "<circle class=\"point") == 4);
  CHECK(count(svg, "<circle class=\"point best\"") == 1);
  // Decade ticks on the log axis.
  CHECK(count(svg, ">0.001</text>") == 1);
  CHECK(count(svg, ">0.1</text>") == 1);
}

TEST_CASE("scatter plot: categories label the x axis, in their order", "[report]") {
  ScatterPlot plot;
  plot.categories = {"32", "64", "128"};
  plot.x = {0, 2, 1, 2, 5};  // 5 is no category: left out
  plot.y = {0.1, 0.2, 0.3, 0.4, 0.5};
  const std::string svg = scatter_plot(plot);
  CHECK(count(svg, "<circle class=\"point") == 4);
  const size_t a = svg.find(">32</text>"), b = svg.find(">64</text>"), c = svg.find(">128</text>");
  REQUIRE(a != std::string::npos);
  REQUIRE(b != std::string::npos);
  REQUIRE(c != std::string::npos);
  CHECK(a < b);
  CHECK(b < c);
}

TEST_CASE("every text in a chart is escaped", "[report]") {
  const std::string evil = "<b>&\"x\"";
  LineChart line;
  line.title = evil;
  line.x_label = evil;
  line.y_label = evil;
  line.series = {{evil, {0, 1}, {1, 2}}};
  line.marker_x = 1;
  line.marker_label = evil;
  BarChart bars;
  bars.title = evil;
  bars.y_label = evil;
  bars.bars = {{evil, 1, 0.1}};
  ScatterPlot scatter;
  scatter.title = evil;
  scatter.x_label = evil;
  scatter.categories = {evil};
  scatter.x = {0};
  scatter.y = {1};
  for (const std::string& svg : {line_chart(line), bar_chart(bars), scatter_plot(scatter)}) {
    CHECK(svg.find("<b>") == std::string::npos);
    CHECK(svg.find("\"x\"") == std::string::npos);
    CHECK(count(svg, "&lt;b&gt;&amp;&quot;x&quot;") >= 2);
  }
}

TEST_CASE("nice_ticks covers the range at 1, 2 or 5 times a power of ten", "[report]") {
  const std::vector<double> t = nice_ticks(0.18, 0.27);
  REQUIRE(t.size() >= 3);
  CHECK(t.front() <= 0.18 + 1e-12);
  CHECK(t.back() >= 0.27 - 1e-12);
  const double step = t[1] - t[0];
  const double mantissa = step / std::pow(10.0, std::floor(std::log10(step)));
  CHECK((std::abs(mantissa - 1) < 1e-6 || std::abs(mantissa - 2) < 1e-6 ||
         std::abs(mantissa - 5) < 1e-6));
  CHECK(t.size() <= 10);
}
