// Inline SVG charts for the bench report: line charts over time and
// stacked share bars, drawn as text so the page needs no charting library.
// Geometry is in SVG user units (a 760-wide viewBox that CSS scales).
#pragma once

#include <string>
#include <vector>

namespace sluice::detail {

struct ChartLine {
  std::string name;            // legend and tooltip
  std::string color;           // CSS colour
  std::vector<double> values;  // one per x; NaN leaves a gap
  bool dashed = false;
};

struct LineChart {
  std::string id;         // the <svg>'s id
  std::string title;      // its accessible name (aria-label)
  std::string y_label;    // axis label with the unit, e.g. "images/s"
  std::string unit;       // after values in tooltips, e.g. " images/s", " %"
  int decimals = 0;       // of values in tooltips
  std::vector<double> x;  // seconds since the start, ascending
  std::vector<ChartLine> lines;
  double y_top = 0;  // the axis reaches at least this (100 for shares)
};

// Axes with ticks, labels and grid, one path per line (markers when there
// are few points, so a one-sample run still shows its point), a legend,
// and a hover band per point whose tooltip lists every line's value.
std::string line_chart_svg(const LineChart& chart);

struct BarSegment {
  std::string name;
  std::string color;
  double share = 0;  // of the bar, 0..1
};
struct ShareBar {
  std::string label;  // left of the bar
  std::vector<BarSegment> segments;
};

// Horizontal 100 % bars, a legend with percentages under each.
std::string share_bars_svg(const std::string& id, const std::string& title,
                           const std::vector<ShareBar>& bars);

// A round axis over [0, max]: top >= max, top = step * k, step one of
// 1, 2, 2.5, 5 times a power of ten, about `ticks` steps.
struct Axis {
  double top = 1, step = 0.2;
};
Axis nice_axis(double max, int ticks = 5);

// `v` with as many decimals as `step` needs ("0.25", "1200").
std::string format_tick(double v, double step);

}  // namespace sluice::detail
