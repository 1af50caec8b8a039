#pragma once
// Charts as inline SVG text, for the HTML reports (html_report.h): a line chart (values per
// epoch), a bar chart with error bars (mean ± sd per model) and a scatter plot (a score against
// one parameter). Each returns one <svg> element with a fixed viewBox that scales to its
// container; every text in it is escaped. Non-finite values (NaN, ±inf) are left out; a chart
// with nothing left to draw says "no data".
//
// The elements carry classes, so that a test (or a style sheet) can find them:
//   line chart:  one <polyline class="series"> per series with a point per value, and a
//                <circle class="point"> per value when the series has a single one;
//                <line class="marker"> for the marked x (the best epoch)
//   bar chart:   one <rect class="bar"> per bar, one <path class="error-bar"> per error bar
//   scatter:     one <circle class="point"> per point (class "point best" for the highlighted)
#include <optional>
#include <string>
#include <vector>

namespace recbole::report {

// `text` with & < > " ' replaced by entities: safe in HTML and SVG text and attributes.
std::string html_escape(const std::string& text);

struct Series {
  std::string name;
  std::vector<double> x;  // as many as y
  std::vector<double> y;
};

struct LineChart {
  std::string title;
  std::string x_label;
  std::string y_label;
  std::vector<Series> series;
  std::optional<double> marker_x;  // a vertical line there (the best epoch), labelled:
  std::string marker_label;
  bool integer_x = true;  // x ticks at whole numbers (epochs)
};

struct Bar {
  std::string label;
  double value = 0;
  std::optional<double> error;  // drawn as value ± error
};

struct BarChart {
  std::string title;
  std::string y_label;
  std::vector<Bar> bars;
  int decimals = -1;  // of the value written above each bar; -1: 4 significant digits
};

struct ScatterPlot {
  std::string title;
  std::string x_label;
  std::string y_label;
  std::vector<double> x;  // as many as y; with categories: an index into them
  std::vector<double> y;
  bool log_x = false;                   // a log10 axis (loguniform parameters); x <= 0 is left out
  std::vector<std::string> categories;  // non-empty: a categorical x axis with these labels
  std::optional<size_t> highlight;      // the index of the point to mark (the best trial)
};

std::string line_chart(const LineChart& chart);
std::string bar_chart(const BarChart& chart);
std::string scatter_plot(const ScatterPlot& plot);

// Up to 10 ticks covering [lo, hi] at 1, 2 or 5 times a power of ten (lo < hi). For the tests.
std::vector<double> nice_ticks(double lo, double hi, int max_ticks = 7);

}  // namespace recbole::report
