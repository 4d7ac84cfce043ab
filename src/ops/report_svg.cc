#include "ops/report_svg.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <utility>

#include "ops/report.h"

namespace sluice::detail {
namespace {

// The plot area inside a 760 x 260 viewBox: room on the left for tick
// labels and the rotated axis label, above for the legend, below for the
// time axis.
constexpr double kWidth = 760, kHeight = 260;
constexpr double kLeft = 64, kRight = 732, kTop = 36, kBottom = 214;
// The time axis spans at least this many seconds, so a run shorter than
// one sampling interval does not get ticks in microseconds.
constexpr double kMinSpan = 1;
// Above this many points, markers would blur into the line.
constexpr size_t kMaxMarkers = 50;

bool finite(double v) {
  return std::isfinite(v);
}

// Text on a segment: dark on light colours ("#rrggbb" by its luma), white
// otherwise.
bool is_light(const std::string& color) {
  unsigned r = 0, g = 0, b = 0;
  if (color.size() != 7 || std::sscanf(color.c_str(), "#%2x%2x%2x", &r, &g, &b) != 3) return false;
  return 0.299 * r + 0.587 * g + 0.114 * b > 170;
}

double max_finite(const std::vector<double>& v) {
  double m = 0;
  for (double x : v) {
    if (finite(x)) m = std::max(m, x);
  }
  return m;
}

// Legend entries side by side, wrapping onto more rows when they would run
// past the plot; widths estimated from the text (the system font's average
// advance at 12 px is about 6.6 units). Returns the markup and the rows.
std::pair<std::string, int> legend(const std::vector<ChartLine>& lines) {
  constexpr double kRowHeight = 17;
  std::string out;
  double x = kLeft, y = 20;
  int rows = 1;
  for (const ChartLine& l : lines) {
    double width = 23 + 6.6 * static_cast<double>(l.name.size()) + 18;
    if (x > kLeft && x + width > kRight + 18) {
      x = kLeft;
      y += kRowHeight;
      ++rows;
    }
    out += fmt::format(
        "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"{}\" "
        "stroke-width=\"2.5\"{}/>",
        x, y - 4, x + 18, y - 4, html_escape(l.color), l.dashed ? " stroke-dasharray=\"5 3\"" : "");
    out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" class=\"legend\">{}</text>", x + 23, y,
                       html_escape(l.name));
    x += width;
  }
  return {out, rows};
}

std::string axes(const LineChart& c, const Axis& xa, const Axis& ya) {
  std::string out;
  for (double v = 0; v <= ya.top + ya.step / 2; v += ya.step) {
    double y = kBottom - (kBottom - kTop) * v / ya.top;
    out += fmt::format(
        "<line class=\"grid\" x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\"/>"
        "<text class=\"tick\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>",
        kLeft, y, kRight, y, kLeft - 6, y + 4, format_tick(v, ya.step));
  }
  for (double v = 0; v <= xa.top + xa.step / 2; v += xa.step) {
    double x = kLeft + (kRight - kLeft) * v / xa.top;
    out += fmt::format(
        "<line class=\"axis\" x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\"/>"
        "<text class=\"tick\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>",
        x, kBottom, x, kBottom + 5, x, kBottom + 18, format_tick(v, xa.step));
  }
  out += fmt::format(
      "<line class=\"axis\" x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\"/>"
      "<line class=\"axis\" x1=\"{0}\" y1=\"{3}\" x2=\"{0}\" y2=\"{1}\"/>",
      kLeft, kBottom, kRight, kTop);
  out += fmt::format(
      "<text class=\"label\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">time since the "
      "start (s)</text>",
      (kLeft + kRight) / 2, kBottom + 38);
  out += fmt::format(
      "<text class=\"label\" transform=\"translate(16 {:.1f}) rotate(-90)\" "
      "text-anchor=\"middle\">{}</text>",
      (kTop + kBottom) / 2, html_escape(c.y_label));
  return out;
}

std::string line_path(const ChartLine& l, const std::vector<double>& xs,
                      const std::vector<double>& ys) {
  std::string d;
  bool pen_down = false;
  for (size_t i = 0; i < xs.size() && i < l.values.size(); ++i) {
    if (!finite(ys[i])) {
      pen_down = false;
      continue;
    }
    d += fmt::format("{}{:.1f} {:.1f}", pen_down ? " L" : (d.empty() ? "M" : " M"), xs[i], ys[i]);
    pen_down = true;
  }
  std::string out;
  if (!d.empty()) {
    out += fmt::format("<path class=\"line\" d=\"{}\" stroke=\"{}\"{}/>", d, html_escape(l.color),
                       l.dashed ? " stroke-dasharray=\"5 3\"" : "");
  }
  if (xs.size() <= kMaxMarkers) {
    for (size_t i = 0; i < xs.size() && i < l.values.size(); ++i) {
      if (!finite(ys[i])) continue;
      out += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"{}\" fill=\"{}\"/>", xs[i], ys[i],
                         xs.size() == 1 ? 4 : 2.5, html_escape(l.color));
    }
  }
  return out;
}

// One invisible band per point, as wide as halfway to its neighbours: the
// browser's own tooltip (<title>) shows every line's value there.
std::string hover_bands(const LineChart& c, const std::vector<double>& xs) {
  std::string out;
  for (size_t i = 0; i < xs.size(); ++i) {
    double left = i == 0 ? kLeft : (xs[i - 1] + xs[i]) / 2;
    double right = i + 1 == xs.size() ? kRight : (xs[i] + xs[i + 1]) / 2;
    std::string tip = fmt::format("{:.1f} s", c.x[i]);
    for (const ChartLine& l : c.lines) {
      if (i >= l.values.size() || !finite(l.values[i])) continue;
      tip += fmt::format("\n{}: {:.{}f}{}", l.name, l.values[i], c.decimals, c.unit);
    }
    out += fmt::format(
        "<rect class=\"hit\" x=\"{:.1f}\" y=\"{}\" width=\"{:.1f}\" height=\"{}\"><title>{}</title>"
        "</rect>",
        left, kTop, std::max(right - left, 1.0), kBottom - kTop, html_escape(tip));
  }
  return out;
}

}  // namespace

Axis nice_axis(double max, int ticks) {
  if (!(max > 0) || !finite(max)) return Axis{1, 0.2};
  double raw = max / std::max(ticks, 1);
  double p = std::pow(10.0, std::floor(std::log10(raw)));
  double step = 10 * p;
  for (double m : {1.0, 2.0, 2.5, 5.0}) {
    if (m * p >= raw * (1 - 1e-9)) {
      step = m * p;
      break;
    }
  }
  double top = std::ceil(max / step * (1 - 1e-12)) * step;
  return Axis{std::max(top, step), step};
}

std::string format_tick(double v, double step) {
  int decimals = 0;
  while (decimals < 6) {
    double scaled = step * std::pow(10.0, decimals);
    if (std::abs(scaled - std::round(scaled)) < 1e-6 * std::max(1.0, scaled)) break;
    ++decimals;
  }
  return fmt::format("{:.{}f}", v, decimals);
}

std::string line_chart_svg(const LineChart& c) {
  double x_max = std::max(kMinSpan, c.x.empty() ? 0 : c.x.back());
  double y_max = c.y_top;
  for (const ChartLine& l : c.lines) y_max = std::max(y_max, max_finite(l.values));
  Axis xa = nice_axis(x_max), ya = nice_axis(y_max);
  std::vector<double> xs(c.x.size());
  for (size_t i = 0; i < xs.size(); ++i) xs[i] = kLeft + (kRight - kLeft) * c.x[i] / xa.top;
  auto [legend_svg, legend_rows] = legend(c.lines);
  // Extra legend rows push the plot down rather than overlap it.
  double shift = 17.0 * (legend_rows - 1);
  std::string out = fmt::format(
      "<svg class=\"chart\" id=\"{}\" viewBox=\"0 0 {} {}\" role=\"img\" aria-label=\"{}\">",
      html_escape(c.id), kWidth, kHeight + shift, html_escape(c.title));
  out += legend_svg;
  if (shift > 0) out += fmt::format("<g transform=\"translate(0 {})\">", shift);
  out += axes(c, xa, ya);
  for (const ChartLine& l : c.lines) {
    std::vector<double> ys(xs.size());
    for (size_t i = 0; i < ys.size(); ++i) {
      double v = i < l.values.size() ? l.values[i] : NAN;
      ys[i] = finite(v) ? kBottom - (kBottom - kTop) * v / ya.top : NAN;
    }
    out += line_path(l, xs, ys);
  }
  out += hover_bands(c, xs);
  if (shift > 0) out += "</g>";
  out += "</svg>";
  return out;
}

std::string share_bars_svg(const std::string& id, const std::string& title,
                           const std::vector<ShareBar>& bars) {
  constexpr double kLabel = 150, kBarLeft = 160, kBarRight = 744, kBar = 24, kLegendLine = 17;
  std::string body;
  double y = 10;
  for (const ShareBar& b : bars) {
    body +=
        fmt::format("<text class=\"barlabel\" x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>",
                    kLabel, y + kBar / 2 + 4, html_escape(b.label));
    double x = kBarLeft, lx = kBarLeft, ly = y + kBar + 18;
    for (const BarSegment& s : b.segments) {
      double share = std::clamp(finite(s.share) ? s.share : 0.0, 0.0, 1.0);
      double w = (kBarRight - kBarLeft) * share;
      std::string pct = fmt::format("{:.0f} %", 100 * share);
      body += fmt::format(
          "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{}\" fill=\"{}\">"
          "<title>{}: {:.1f} %</title></rect>",
          x, y, w, kBar, html_escape(s.color), html_escape(s.name), 100 * share);
      if (w > 40) {
        body += fmt::format(
            "<text class=\"inbar{}\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>",
            is_light(s.color) ? " dark" : "", x + w / 2, y + kBar / 2 + 4, pct);
      }
      x += w;
      // Legend items wrap onto a new line rather than run off the page.
      std::string item = s.name + " " + pct;
      double item_width = 14 + 6.6 * static_cast<double>(item.size()) + 16;
      if (lx > kBarLeft && lx + item_width > kBarRight + 16) {
        lx = kBarLeft;
        ly += kLegendLine;
      }
      body += fmt::format(
          "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"10\" height=\"10\" fill=\"{}\"/>"
          "<text class=\"legend\" x=\"{:.1f}\" y=\"{:.1f}\">{}</text>",
          lx, ly - 9, html_escape(s.color), lx + 14, ly, html_escape(item));
      lx += item_width;
    }
    body += fmt::format("<rect class=\"frame\" x=\"{}\" y=\"{:.1f}\" width=\"{}\" height=\"{}\"/>",
                        kBarLeft, y, kBarRight - kBarLeft, kBar);
    y = ly + 20;
  }
  return fmt::format(
             "<svg class=\"chart\" id=\"{}\" viewBox=\"0 0 {} {:.0f}\" role=\"img\" "
             "aria-label=\"{}\">",
             html_escape(id), kWidth, y, html_escape(title)) +
         body + "</svg>";
}

}  // namespace sluice::detail
