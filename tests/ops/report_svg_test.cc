#include "ops/report_svg.h"

#include <gtest/gtest.h>

#include <cmath>
#include <regex>

namespace sluice::detail {
namespace {

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

TEST(NiceAxisTest, RoundStepsThatCoverTheMaximum) {
  struct Case {
    double max, top, step;
  } cases[] = {{7, 8, 2},        {100, 100, 20},  {0.37, 0.4, 0.1}, {1234, 1250, 250},
               {0.2, 0.2, 0.05}, {1e6, 1e6, 2e5}, {3, 3, 1},        {48.5, 50, 10}};
  for (const Case& c : cases) {
    Axis a = nice_axis(c.max);
    EXPECT_NEAR(a.top, c.top, 1e-9 * c.top) << c.max;
    EXPECT_NEAR(a.step, c.step, 1e-9 * c.step) << c.max;
    EXPECT_GE(a.top, c.max);
  }
  // Nothing to scale: a unit axis rather than a division by zero.
  for (double bad : {0.0, -5.0, double{NAN}, double{INFINITY}}) {
    EXPECT_EQ(nice_axis(bad).top, 1) << bad;
    EXPECT_EQ(nice_axis(bad).step, 0.2) << bad;
  }
}

TEST(FormatTickTest, AsManyDecimalsAsTheStepNeeds) {
  EXPECT_EQ(format_tick(1200, 200), "1200");
  EXPECT_EQ(format_tick(0.5, 0.25), "0.50");
  EXPECT_EQ(format_tick(0.3, 0.1), "0.3");
  EXPECT_EQ(format_tick(0, 0.05), "0.00");
  EXPECT_EQ(format_tick(2.5, 2.5), "2.5");
}

LineChart chart(size_t points) {
  LineChart c{"c1", "A <chart>", "images/s", " images/s", 0, {}};
  ChartLine a{"rate & more", "#4e79a7", {}};
  for (size_t i = 0; i < points; ++i) {
    c.x.push_back(0.5 * static_cast<double>(i + 1));
    a.values.push_back(100.0 * static_cast<double>(i + 1));
  }
  c.lines = {a};
  return c;
}

TEST(LineChartTest, AxesLegendTooltipsAndEscaping) {
  std::string svg = line_chart_svg(chart(4));
  EXPECT_EQ(svg.rfind("<svg class=\"chart\" id=\"c1\"", 0), 0u);
  EXPECT_NE(svg.find("aria-label=\"A &lt;chart&gt;\""), std::string::npos);
  EXPECT_NE(svg.find(">rate &amp; more</text>"), std::string::npos);
  EXPECT_NE(svg.find(">time since the start (s)</text>"), std::string::npos);
  EXPECT_NE(svg.find(">images/s</text>"), std::string::npos);
  // Values 100..400 over 0.5..2 s: y ticks 0..400 by 100, x ticks 0..2 by 0.5.
  EXPECT_NE(svg.find(">400</text>"), std::string::npos);
  EXPECT_NE(svg.find(">2.0</text>"), std::string::npos);
  EXPECT_EQ(count(svg, "<rect class=\"hit\""), 4u);
  EXPECT_NE(svg.find("<title>1.5 s\nrate &amp; more: 300 images/s</title>"), std::string::npos);
  EXPECT_EQ(count(svg, "<circle"), 4u);
  EXPECT_EQ(count(svg, "<path class=\"line\""), 1u);
  EXPECT_EQ(svg.substr(svg.size() - 6), "</svg>");
}

TEST(LineChartTest, GapsEmptyAndSinglePoints) {
  LineChart c = chart(5);
  c.lines[0].values[2] = NAN;
  std::string svg = line_chart_svg(c);
  std::smatch m;
  ASSERT_TRUE(std::regex_search(svg, m, std::regex("<path class=\"line\" d=\"([^\"]*)\"")));
  EXPECT_EQ(count(m[1].str(), "M"), 2u);  // the pen lifts over the gap
  EXPECT_EQ(count(svg, "<circle"), 4u);
  // One point: no line to draw, so a marker carries it.
  svg = line_chart_svg(chart(1));
  EXPECT_EQ(count(svg, "<circle"), 1u);
  EXPECT_NE(svg.find("r=\"4\""), std::string::npos);
  // No points: still a chart with axes, and nothing that is not a number.
  svg = line_chart_svg(chart(0));
  EXPECT_EQ(count(svg, "<rect class=\"hit\""), 0u);
  EXPECT_EQ(svg.find("nan"), std::string::npos);
  EXPECT_EQ(svg.find("inf"), std::string::npos);
  // Many points: markers would blur into the line.
  EXPECT_EQ(count(line_chart_svg(chart(200)), "<circle"), 0u);
}

TEST(LineChartTest, LongLegendsWrapAndPushThePlotDown) {
  LineChart c = chart(3);
  std::string one_row = line_chart_svg(c);
  EXPECT_NE(one_row.find("viewBox=\"0 0 760 260\""), std::string::npos);
  EXPECT_EQ(one_row.find("<g transform"), std::string::npos);
  for (int i = 0; i < 7; ++i) {
    c.lines.push_back(
        {"a rather long legend entry " + std::to_string(i), "#59a14f", c.lines[0].values});
  }
  std::string wrapped = line_chart_svg(c);
  // Eight entries of about 226 units (114 the first) where rows hold 686:
  // three, three and two; the plot moves down two rows of 17.
  EXPECT_NE(wrapped.find("viewBox=\"0 0 760 294\""), std::string::npos);
  EXPECT_NE(wrapped.find("<g transform=\"translate(0 34)\">"), std::string::npos);
  EXPECT_NE(wrapped.find("y=\"54.0\" class=\"legend\""), std::string::npos);
}

TEST(ShareBarsTest, WidthsFollowSharesAndLabelsAreEscaped) {
  std::vector<ShareBar> bars = {
      {"workers <all>", {{"de\"code", "#f28e2b", 0.25}, {"rest", "#e4e4e4", 0.75}}},
      {"consumer", {{"waiting", "#e15759", 1.5}}}};  // clamped to the bar
  std::string svg = share_bars_svg("s1", "Shares", bars);
  EXPECT_NE(svg.find(">workers &lt;all&gt;</text>"), std::string::npos);
  EXPECT_NE(svg.find("width=\"146.0\""), std::string::npos);  // 584 * 0.25
  EXPECT_NE(svg.find("width=\"438.0\""), std::string::npos);  // 584 * 0.75
  EXPECT_NE(svg.find("width=\"584.0\""), std::string::npos);  // 1.5 clamped
  EXPECT_NE(svg.find("<title>de&quot;code: 25.0 %</title>"), std::string::npos);
  EXPECT_NE(svg.find(">de&quot;code 25 %</text>"), std::string::npos);
  EXPECT_NE(svg.find("class=\"inbar dark\""), std::string::npos);  // light grey segment
}

}  // namespace
}  // namespace sluice::detail
