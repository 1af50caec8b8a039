#include "run/report/svg_chart.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace recbole::report {
namespace {

constexpr double kWidth = 640;
constexpr double kHeight = 320;
constexpr double kCharWidth = 7;  // a 12px sans-serif character, on average, for layout
constexpr double kTitleHeight = 26;
constexpr double kLegendRow = 18;
constexpr double kRight = 20;
constexpr double kBottom = 48;  // tick labels and the axis label

// Colour-blind-safe (Okabe–Ito), dark enough for thin lines on white.
constexpr const char* kPalette[] = {"#0072b2", "#d55e00", "#009e73", "#cc79a7",
                                    "#e69f00", "#56b4e9", "#7f6b00", "#555555"};
constexpr size_t kPaletteSize = sizeof kPalette / sizeof kPalette[0];

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

// A tick label for value v on an axis whose ticks are `step` apart.
std::string tick_text(double v, double step) {
  if (std::fabs(v) < step * 1e-9) v = 0;  // -0.000 from rounding
  const int decimals = std::max(0, static_cast<int>(-std::floor(std::log10(step) + 1e-9)));
  char buf[32];
  if (std::fabs(v) >= 1e6 || (decimals > 6 && v != 0))
    std::snprintf(buf, sizeof buf, "%.3g", v);
  else
    std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::string log_tick_text(double exponent) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", std::pow(10.0, exponent));
  return buf;
}

double text_width(const std::string& s) {
  // UTF-8 continuation bytes are not characters.
  double n = 0;
  for (unsigned char c : s)
    if ((c & 0xC0) != 0x80) ++n;
  return n * kCharWidth;
}

// `s` cut to at most `width` pixels, with an ellipsis when cut.
std::string fit_text(const std::string& s, double width) {
  if (text_width(s) <= width) return s;
  const size_t keep = static_cast<size_t>(std::max(1.0, width / kCharWidth - 1));
  std::string out;
  size_t chars = 0;
  for (size_t k = 0; k < s.size(); ++k) {
    const auto c = static_cast<unsigned char>(s[k]);
    if ((c & 0xC0) != 0x80 && chars++ == keep) break;
    out += s[k];
  }
  return out + "\xE2\x80\xA6";
}

double nice_step(double raw) {
  const double p = std::pow(10.0, std::floor(std::log10(raw)));
  const double f = raw / p;
  return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * p;
}

// A linear or log10 axis from data values to pixels.
struct Axis {
  double lo = 0, hi = 1;    // in axis units (log10 of the value on a log axis)
  double from = 0, to = 1;  // pixels
  bool log = false;
  bool categorical = false;   // labels share the width of one slot per category
  std::vector<double> ticks;  // in axis units
  std::vector<std::string> labels;
  double px(double v) const {
    const double a = log ? std::log10(v) : v;
    return from + (a - lo) / (hi - lo) * (to - from);
  }
};

// Ticks and bounds for data in [lo, hi]: the bounds widen to the ticks around the data.
Axis linear_axis(double lo, double hi, bool integer, int max_ticks) {
  Axis a;
  if (!(hi > lo)) {  // one value: a small range around it
    const double pad = integer ? 0.5 : (lo == 0 ? 1 : std::fabs(lo) * 0.1);
    lo -= pad;
    hi += pad;
  }
  double step = nice_step((hi - lo) / std::max(1, max_ticks - 1));
  if (integer) step = std::max(step, 1.0);
  a.lo = integer ? lo : std::floor(lo / step + 1e-9) * step;
  a.hi = integer ? hi : std::ceil(hi / step - 1e-9) * step;
  for (double t = std::ceil(a.lo / step - 1e-9) * step; t <= a.hi + step * 1e-9; t += step) {
    a.ticks.push_back(t);
    a.labels.push_back(tick_text(t, step));
  }
  return a;
}

Axis log_axis(double lo, double hi) {
  Axis a;
  a.log = true;
  a.lo = std::floor(std::log10(lo) + 1e-9);
  a.hi = std::ceil(std::log10(hi) - 1e-9);
  if (a.hi <= a.lo) a.hi = a.lo + 1;
  const double span = a.hi - a.lo;
  const double every = std::ceil(span / 8);  // at most ~8 decade labels
  for (double e = a.lo; e <= a.hi + 1e-9; e += every) {
    a.ticks.push_back(e);
    a.labels.push_back(log_tick_text(e));
  }
  return a;
}

Axis category_axis(const std::vector<std::string>& categories) {
  Axis a;
  a.categorical = true;
  a.lo = -0.5;
  a.hi = static_cast<double>(categories.size()) - 0.5;
  for (size_t k = 0; k < categories.size(); ++k) {
    a.ticks.push_back(static_cast<double>(k));
    a.labels.push_back(categories[k]);
  }
  return a;
}

class Svg {
 public:
  explicit Svg(const std::string& title) {
    out_ = "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart\" viewBox=\"0 0 " +
           num(kWidth) + " " + num(kHeight) + "\" width=\"" + num(kWidth) + "\" height=\"" +
           num(kHeight) + "\" role=\"img\" aria-label=\"" + html_escape(title) +
           "\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" font-size=\"12\">\n";
    out_ += "<title>" + html_escape(title) + "</title>\n";
    text(kWidth / 2, 18, title, "middle", "class=\"title\" font-size=\"14\" font-weight=\"bold\"");
  }
  void raw(const std::string& s) { out_ += s; }
  void text(double x, double y, const std::string& s, const char* anchor,
            const std::string& attrs = "") {
    out_ += "<text x=\"" + num(x) + "\" y=\"" + num(y) + "\" text-anchor=\"" + anchor + "\"" +
            (attrs.empty() ? "" : " " + attrs) + ">" + html_escape(s) + "</text>\n";
  }
  void line(double x1, double y1, double x2, double y2, const std::string& attrs) {
    out_ += "<line x1=\"" + num(x1) + "\" y1=\"" + num(y1) + "\" x2=\"" + num(x2) + "\" y2=\"" +
            num(y2) + "\" " + attrs + "/>\n";
  }
  std::string done() { return out_ + "</svg>\n"; }

 private:
  std::string out_;
};

std::string no_data(const std::string& title) {
  Svg svg(title);
  svg.text(kWidth / 2, kHeight / 2, "no data", "middle",
           "class=\"no-data\" fill=\"#777\" font-size=\"16\"");
  return svg.done();
}

// Legend entries in rows that fit the width; returns the height used.
double legend(Svg& svg, const std::vector<std::string>& names, double top) {
  double x = 16, y = top;
  for (size_t k = 0; k < names.size(); ++k) {
    const double w = 22 + std::min(text_width(names[k]), 200.0) + 16;
    if (x + w > kWidth - 8 && x > 16) {
      x = 16;
      y += kLegendRow;
    }
    svg.line(x, y - 4, x + 16, y - 4,
             std::string("stroke=\"") + kPalette[k % kPaletteSize] + "\" stroke-width=\"3\"");
    svg.text(x + 22, y, fit_text(names[k], 200), "start", "class=\"legend\"");
    x += w;
  }
  return y - top + kLegendRow;
}

// The frame, grid, ticks and axis labels; x ticks are labelled under the plot.
void axes(Svg& svg, const Axis& x, const Axis& y, const std::string& x_label,
          const std::string& y_label, double top, double left, bool x_grid) {
  const double bottom = kHeight - kBottom;
  const double right = kWidth - kRight;
  for (size_t k = 0; k < y.ticks.size(); ++k) {
    const double py = y.from + (y.ticks[k] - y.lo) / (y.hi - y.lo) * (y.to - y.from);
    svg.line(left, py, right, py, "class=\"grid\" stroke=\"#e4e4e4\"");
    svg.text(left - 6, py + 4, y.labels[k], "end", "class=\"tick\" fill=\"#333\"");
  }
  // Category labels share the slot width; numeric ones are thinned out when they would touch.
  double last_end = -1e9;
  const double slot = (right - left) / (x.hi - x.lo);
  for (size_t k = 0; k < x.ticks.size(); ++k) {
    const double px = x.from + (x.ticks[k] - x.lo) / (x.hi - x.lo) * (x.to - x.from);
    if (x_grid) svg.line(px, top, px, bottom, "class=\"grid\" stroke=\"#e4e4e4\"");
    svg.line(px, bottom, px, bottom + 4, "stroke=\"#333\"");
    const std::string label =
        x.categorical ? fit_text(x.labels[k], std::max(slot - 4, 3 * kCharWidth)) : x.labels[k];
    const double w = text_width(label);
    if (px - w / 2 < last_end + 6) continue;
    last_end = px + w / 2;
    svg.text(px, bottom + 17, label, "middle", "class=\"tick\" fill=\"#333\"");
  }
  svg.raw("<rect class=\"frame\" x=\"" + num(left) + "\" y=\"" + num(top) + "\" width=\"" +
          num(right - left) + "\" height=\"" + num(bottom - top) +
          "\" fill=\"none\" stroke=\"#333\"/>\n");
  if (!x_label.empty())
    svg.text((left + right) / 2, kHeight - 8, x_label, "middle", "class=\"axis-label\"");
  if (!y_label.empty())
    svg.raw("<text class=\"axis-label\" text-anchor=\"middle\" transform=\"translate(14," +
            num((top + bottom) / 2) + ") rotate(-90)\">" + html_escape(y_label) + "</text>\n");
}

// The left margin that fits the widest y tick label and the y axis label.
double left_margin(const Axis& y) {
  double widest = 0;
  for (const auto& l : y.labels) widest = std::max(widest, text_width(l));
  return std::max(48.0, widest + 30);
}

void place_y(Axis& y, double top) {
  y.from = kHeight - kBottom;
  y.to = top;
}

std::string points_attr(const std::vector<std::pair<double, double>>& pts) {
  std::string s;
  for (const auto& [x, y] : pts) {
    if (!s.empty()) s += ' ';
    s += num(x) + "," + num(y);
  }
  return s;
}

}  // namespace

std::string html_escape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::vector<double> nice_ticks(double lo, double hi, int max_ticks) {
  return linear_axis(lo, hi, false, max_ticks).ticks;
}

std::string line_chart(const LineChart& chart) {
  // The finite points of each series, and the data bounds over all of them.
  std::vector<std::vector<std::pair<double, double>>> data(chart.series.size());
  double x_lo = std::numeric_limits<double>::infinity(), x_hi = -x_lo;
  double y_lo = x_lo, y_hi = -x_lo;
  size_t n_points = 0;
  for (size_t s = 0; s < chart.series.size(); ++s) {
    const Series& series = chart.series[s];
    for (size_t k = 0; k < std::min(series.x.size(), series.y.size()); ++k) {
      const double x = series.x[k], y = series.y[k];
      if (!std::isfinite(x) || !std::isfinite(y)) continue;
      data[s].emplace_back(x, y);
      x_lo = std::min(x_lo, x), x_hi = std::max(x_hi, x);
      y_lo = std::min(y_lo, y), y_hi = std::max(y_hi, y);
      ++n_points;
    }
  }
  if (n_points == 0) return no_data(chart.title);

  Svg svg(chart.title);
  std::vector<std::string> names;
  for (const auto& s : chart.series) names.push_back(s.name);
  double top = kTitleHeight + 8;
  top += legend(svg, names, top + 6);
  // The marker's label gets a band of its own above the plot, where no curve passes.
  if (chart.marker_x) top += 14;
  Axis x = linear_axis(x_lo, x_hi, chart.integer_x, 8);
  Axis y = linear_axis(y_lo, y_hi, false, 6);
  const double left = left_margin(y);
  x.from = left;
  x.to = kWidth - kRight;
  place_y(y, top);
  axes(svg, x, y, chart.x_label, chart.y_label, top, left, /*x_grid=*/false);

  // The marker's line under the curves, its label over them.
  const bool marked = chart.marker_x && std::isfinite(*chart.marker_x) && *chart.marker_x >= x.lo &&
                      *chart.marker_x <= x.hi;
  const double marker_px = marked ? x.px(*chart.marker_x) : 0;
  if (marked)
    svg.line(marker_px, top, marker_px, kHeight - kBottom,
             "class=\"marker\" stroke=\"#b00020\" stroke-width=\"1.5\" stroke-dasharray=\"5,4\"");
  for (size_t s = 0; s < data.size(); ++s) {
    std::vector<std::pair<double, double>> px;
    for (const auto& [dx, dy] : data[s]) px.emplace_back(x.px(dx), y.px(dy));
    const char* colour = kPalette[s % kPaletteSize];
    svg.raw("<polyline class=\"series\" data-series=\"" + html_escape(chart.series[s].name) +
            "\" fill=\"none\" stroke=\"" + colour + "\" stroke-width=\"2\" points=\"" +
            points_attr(px) + "\"/>\n");
    // A single value draws no line: a dot shows it.
    if (px.size() == 1)
      svg.raw("<circle class=\"point\" cx=\"" + num(px[0].first) + "\" cy=\"" + num(px[0].second) +
              "\" r=\"4\" fill=\"" + colour + "\"/>\n");
  }
  if (marked) {
    // Centred on the line, moved in where it would leave the chart.
    const double half = text_width(chart.marker_label) / 2;
    const double cx = std::clamp(marker_px, half + 4, kWidth - half - 4);
    svg.text(cx, top - 4, chart.marker_label, "middle", "class=\"marker-label\" fill=\"#b00020\"");
  }
  return svg.done();
}

std::string bar_chart(const BarChart& chart) {
  std::vector<const Bar*> bars;
  double lo = 0, hi = 0;  // bars grow from zero
  for (const Bar& b : chart.bars) {
    if (!std::isfinite(b.value)) continue;
    bars.push_back(&b);
    const double e = b.error && std::isfinite(*b.error) ? std::fabs(*b.error) : 0;
    lo = std::min(lo, b.value - e);
    hi = std::max(hi, b.value + e);
  }
  if (bars.empty()) return no_data(chart.title);

  Svg svg(chart.title);
  const double top = kTitleHeight + 14;
  std::vector<std::string> labels;
  for (const Bar* b : bars) labels.push_back(b->label);
  Axis x = category_axis(labels);
  Axis y = linear_axis(lo, hi, false, 6);
  const double left = left_margin(y);
  x.from = left;
  x.to = kWidth - kRight;
  place_y(y, top);
  axes(svg, x, y, "", chart.y_label, top, left, /*x_grid=*/false);

  const double slot = (x.to - x.from) / static_cast<double>(bars.size());
  const double width = std::min(slot * 0.6, 80.0);
  for (size_t k = 0; k < bars.size(); ++k) {
    const Bar& b = *bars[k];
    const double cx = x.px(static_cast<double>(k));
    const double y0 = y.px(0), y1 = y.px(b.value);
    svg.raw("<rect class=\"bar\" data-label=\"" + html_escape(b.label) + "\" x=\"" +
            num(cx - width / 2) + "\" y=\"" + num(std::min(y0, y1)) + "\" width=\"" + num(width) +
            "\" height=\"" + num(std::fabs(y1 - y0)) + "\" fill=\"" + kPalette[k % kPaletteSize] +
            "\" fill-opacity=\"0.85\"/>\n");
    double label_y = std::min(y0, y1);
    if (b.error && std::isfinite(*b.error)) {
      const double e = std::fabs(*b.error);
      const double ya = y.px(b.value + e), yb = y.px(b.value - e);
      const double cap = std::min(width / 4, 8.0);
      svg.raw("<path class=\"error-bar\" d=\"M" + num(cx) + "," + num(ya) + "V" + num(yb) + "M" +
              num(cx - cap) + "," + num(ya) + "H" + num(cx + cap) + "M" + num(cx - cap) + "," +
              num(yb) + "H" + num(cx + cap) +
              "\" stroke=\"#222\" stroke-width=\"1.5\" "
              "fill=\"none\"/>\n");
      label_y = std::min(label_y, ya);
    }
    char value[32];
    if (chart.decimals >= 0)
      std::snprintf(value, sizeof value, "%.*f", chart.decimals, b.value);
    else
      std::snprintf(value, sizeof value, "%.4g", b.value);
    if (slot >= 44)
      svg.text(cx, label_y - 5, value, "middle", "class=\"value\" font-size=\"11\" fill=\"#333\"");
  }
  return svg.done();
}

std::string scatter_plot(const ScatterPlot& plot) {
  const bool categorical = !plot.categories.empty();
  std::vector<size_t> shown;
  double x_lo = std::numeric_limits<double>::infinity(), x_hi = -x_lo;
  double y_lo = x_lo, y_hi = -x_lo;
  for (size_t k = 0; k < std::min(plot.x.size(), plot.y.size()); ++k) {
    const double x = plot.x[k], y = plot.y[k];
    if (!std::isfinite(x) || !std::isfinite(y)) continue;
    if (plot.log_x && !categorical && x <= 0) continue;
    if (categorical && (x < 0 || x >= static_cast<double>(plot.categories.size()))) continue;
    shown.push_back(k);
    x_lo = std::min(x_lo, x), x_hi = std::max(x_hi, x);
    y_lo = std::min(y_lo, y), y_hi = std::max(y_hi, y);
  }
  if (shown.empty()) return no_data(plot.title);

  Svg svg(plot.title);
  const double top = kTitleHeight + 14;
  Axis x = categorical  ? category_axis(plot.categories)
           : plot.log_x ? log_axis(x_lo, x_hi)
                        : linear_axis(x_lo, x_hi, false, 7);
  Axis y = linear_axis(y_lo, y_hi, false, 6);
  const double left = left_margin(y);
  // Room on both sides, so that points at the ends are not cut by the frame.
  x.from = left + 10;
  x.to = kWidth - kRight - 10;
  place_y(y, top);
  axes(svg, x, y, plot.x_label + (plot.log_x && !categorical ? " (log scale)" : ""), plot.y_label,
       top, left, /*x_grid=*/true);
  for (size_t k : shown) {
    const bool best = plot.highlight && *plot.highlight == k;
    if (best) continue;  // drawn last, on top
    svg.raw("<circle class=\"point\" cx=\"" + num(x.px(plot.x[k])) + "\" cy=\"" +
            num(y.px(plot.y[k])) + "\" r=\"4.5\" fill=\"" + kPalette[0] +
            "\" fill-opacity=\"0.7\"/>\n");
  }
  for (size_t k : shown)
    if (plot.highlight && *plot.highlight == k)
      svg.raw("<circle class=\"point best\" cx=\"" + num(x.px(plot.x[k])) + "\" cy=\"" +
              num(y.px(plot.y[k])) + "\" r=\"6.5\" fill=\"" + kPalette[1] +
              "\" stroke=\"#222\" stroke-width=\"1.5\"/>\n");
  return svg.done();
}

}  // namespace recbole::report
