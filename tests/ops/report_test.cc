#include "ops/report.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <regex>

namespace sluice {
namespace {

using json = nlohmann::ordered_json;

bool has(const std::string& page, const std::string& what) {
  return page.find(what) != std::string::npos;
}

// A summary as `sluice bench --json` writes it, with a hostile stage name.
json bench_summary() {
  json stages = json::object();
  stages["read"] = {{"busy_seconds", 0.2}, {"wait_seconds", 0.0}};
  stages["de<co>&\"de\""] = {{"busy_seconds", 2.4}, {"wait_seconds", 0.0}};
  stages["augment"] = {{"busy_seconds", 0.8}, {"wait_seconds", 0.0}};
  stages["batch"] = {{"busy_seconds", 0.0}, {"wait_seconds", 1.0}};
  stages["idle"] = {{"busy_seconds", 0.0}, {"wait_seconds", 0.4}};
  return {{"images_per_second", 1234.6},
          {"images", 2469},
          {"batches", 40},
          {"seconds", 2.0},
          {"mb_per_second", 12.5},
          {"workers", 2},
          {"prefetch", 4},
          {"tuning", "2 workers <fixed>"},
          {"cpu_cores_busy", 1.9},
          {"cores", 2},
          {"peak_rss_bytes", 250e6},
          {"memory_budget_bytes", 2147483648.0},
          {"consumer_wait_share", 0.5},
          {"stages", stages},
          {"bad_samples", 0},
          {"verdict", "input-bound: the consumer waited 50 % of the time; decode is 60 % busy"},
          {"verdict_kind", "input-bound"},
          {"options", {{"batch", "64"}, {"order", "<global>"}}}};
}

json doctor_report() {
  return {
      {"checks",
       {{{"area", "cpu"}, {"level", "warn"}, {"detail", "2 cores"}, {"fix", "more cores"}},
        {{"area", "library"}, {"level", "ok"}, {"detail", "libjpeg-turbo 2.1.5"}, {"fix", ""}}}},
      {"cpu", {{"model", "<script>alert(1)</script> CPU"}, {"cores", 2}, {"simd", "AVX2"}}},
      {"memory", {{"total_bytes", 8e9}, {"available_bytes", 6e9}}},
      {"gpu", {{"nvml", ""}, {"driver", ""}, {"cuda_driver", "none"}, {"devices", json::array()}}},
      {"cuda", {{"runtime", "none"}, {"library", ""}, {"nccl", 0}, {"cuda_build", false}}}};
}

ReportSample sample(double end, uint64_t images, double ready) {
  ReportSample s;
  s.end_seconds = end;
  s.interval_seconds = 0.5;
  s.images = images;
  s.process_cpu_seconds = 0.9;
  s.machine_busy_ticks = 90;
  s.machine_total_ticks = 100;
  s.stages = {{"read", 0.05, 0},
              {"de<co>&\"de\"", 0.6, 0},
              {"augment", 0.2, 0},
              {"batch", 0, 0.25},
              {"idle", 0, 0.1}};
  s.workers = 2;
  s.ready_batches = ready;
  s.prefetch = 4;
  return s;
}

ReportInput input(size_t samples) {
  ReportInput in;
  in.data = "shards/<b>&\"x\"";
  in.command_line = "sluice bench 'shards/<b>' --report r.html";
  in.generated_at = "2025-12-02 14:03 UTC";
  in.version = "0.1.0";
  in.bench_json = bench_summary().dump();
  in.doctor_json = doctor_report().dump();
  for (size_t i = 0; i < samples; ++i)
    in.series.push_back(sample(0.5 * static_cast<double>(i + 1), 600 + 10 * i, 1.5));
  in.gpu_note = "no NVIDIA driver found (libnvidia-ml.so.1 did not load)";
  return in;
}

std::string render(const ReportInput& in) {
  auto page = render_report_html(in);
  EXPECT_TRUE(page.ok()) << page.status().message();
  return page.ok() ? *page : "";
}

TEST(HtmlEscapeTest, EveryMarkupCharacter) {
  EXPECT_EQ(html_escape("<a href=\"x\">'&'</a>"),
            "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;");
  EXPECT_EQ(html_escape("plain é ü"), "plain é ü");
}

TEST(ReportTest, TextFromTheRunIsEscapedEverywhere) {
  std::string page = render(input(4));
  for (const char* raw : {"<b>", "<co>", "<script>alert", "<fixed>", "<global>"})
    EXPECT_FALSE(has(page, raw)) << raw;
  EXPECT_TRUE(has(page, "shards/&lt;b&gt;&amp;&quot;x&quot;"));
  EXPECT_TRUE(has(page, "<title>sluice bench report: shards/&lt;b&gt;&amp;&quot;x&quot;</title>"));
  EXPECT_TRUE(has(page, "de&lt;co&gt;&amp;&quot;de&quot;"));
  EXPECT_TRUE(has(page, "&lt;script&gt;alert(1)&lt;/script&gt; CPU"));
  EXPECT_TRUE(has(page, "2 workers &lt;fixed&gt;"));
  // The page's own scripts are the only ones: the error hook and the ready mark.
  EXPECT_EQ(std::regex_search(page, std::regex("<script>[^<]*alert")), false);
  size_t scripts = 0;
  for (size_t p = page.find("<script>"); p != std::string::npos; p = page.find("<script>", p + 1))
    ++scripts;
  EXPECT_EQ(scripts, 2u);
}

TEST(ReportTest, EveryChartAndSection) {
  std::string page = render(input(6));
  for (const char* id :
       {"chart-throughput", "chart-shares", "chart-stages", "chart-cpu", "chart-queue"}) {
    EXPECT_TRUE(has(page, std::string("<svg class=\"chart\" id=\"") + id + "\"")) << id;
  }
  for (const char* id : {"verdict", "summary", "throughput", "time", "cpu", "gpu", "queue",
                         "ablation", "machine", "options"}) {
    EXPECT_TRUE(has(page, std::string("<section id=\"") + id + "\"")) << id;
  }
  EXPECT_TRUE(has(page, "<!DOCTYPE html>"));
  EXPECT_TRUE(has(page, "class=\"verdict input-bound\""));
  EXPECT_TRUE(has(page, "input-bound: the consumer waited 50 %"));
  EXPECT_TRUE(has(page, ">1,235</div><div class=\"k\">images/s<"));
  // Throughput of the third sample: 620 images in 0.5 s.
  EXPECT_TRUE(has(page, "<title>1.5 s\nimages/s over the interval: 1240 images/s"));
  // CPU: 0.9 s of CPU in 0.5 s on 2 cores is 90 %; the machine was 90 % busy.
  EXPECT_TRUE(has(page, "sluice (this process): 90.0 %"));
  EXPECT_TRUE(has(page, "whole machine: 90.0 %"));
  // Stage shares over time: 0.6 s of decode in 0.5 s on 2 workers is 60 %.
  EXPECT_TRUE(has(page, "de&lt;co&gt;&amp;&quot;de&quot;: 60 %"));
  EXPECT_TRUE(has(page, "ready batches (waiting for the consumer): 1.5 batches"));
  // Totals: decode 2.4 s of 2 s x 2 workers is 60 %; the slot wait 10 %;
  // read 5 % + augment 20 %: 5 % unaccounted. The consumer waited half.
  EXPECT_TRUE(has(page, "<title>de&lt;co&gt;&amp;&quot;de&quot;: 60.0 %</title>"));
  EXPECT_TRUE(has(page, "<title>waiting for a free slot: 10.0 %</title>"));
  EXPECT_TRUE(has(page, "<title>unaccounted: 5.0 %</title>"));
  EXPECT_TRUE(has(page, "<title>waiting for batches: 50.0 %</title>"));
  // Without GPU samples the page says why instead of drawing an empty chart.
  EXPECT_FALSE(has(page, "id=\"chart-gpu\""));
  EXPECT_TRUE(has(page, "No GPU: no NVIDIA driver found (libnvidia-ml.so.1 did not load)."));
  // The machine, from doctor.
  EXPECT_TRUE(has(page, "<dd>AVX2</dd>"));
  EXPECT_TRUE(has(page, "<dt>library</dt><dd>libjpeg-turbo 2.1.5</dd>"));
  EXPECT_TRUE(has(page, "<span class=\"level warn\">warn</span>"));
  EXPECT_TRUE(has(page, "fix: more cores"));
  EXPECT_TRUE(has(page, "<code>order</code></td><td><code>&lt;global&gt;</code>"));
}

TEST(ReportTest, GpuChartWhenSampled) {
  ReportInput in = input(3);
  in.gpu_names = {"GPU 0: NVIDIA <H200>"};
  for (ReportSample& s : in.series)
    s.gpus = {{75, 30'000'000'000, 150'000'000'000}, {-1, 0, 0}};  // GPU 1 says nothing
  std::string page = render(in);
  EXPECT_FALSE(has(page, "GPU 1 busy: "));
  EXPECT_FALSE(has(page, "GPU 1 memory: "));
  EXPECT_TRUE(has(page, "<svg class=\"chart\" id=\"chart-gpu\""));
  EXPECT_TRUE(has(page, "GPU 0: NVIDIA &lt;H200&gt; busy: 75 %"));
  EXPECT_TRUE(has(page, "GPU 0: NVIDIA &lt;H200&gt; memory: 20 %"));
  EXPECT_FALSE(has(page, "No GPU:"));
}

TEST(ReportTest, OneSampleAndNoSamples) {
  std::string one = render(input(1));
  EXPECT_TRUE(has(one, "One sample only: the run took 0.50 s."));
  EXPECT_TRUE(has(one, "<svg class=\"chart\" id=\"chart-throughput\""));
  EXPECT_TRUE(has(one, "r=\"4\""));  // the lone point is drawn as a marker
  std::string none = render(input(0));
  EXPECT_TRUE(has(none, "No samples: the run ended before the first one."));
  EXPECT_TRUE(has(none, "<svg class=\"chart\" id=\"chart-queue\""));
  EXPECT_FALSE(has(none, "nan"));
}

TEST(ReportTest, NothingToFetch) {
  ReportInput in = input(5);
  in.ablation = {{"1 raw", 100, 1, ""}, {"2 parallel", 250, 2, ""}};
  for (const std::string& page : {render(in), render(input(0))}) {
    EXPECT_FALSE(has(page, "http://"));
    EXPECT_FALSE(has(page, "https://"));
    EXPECT_FALSE(
        std::regex_search(page, std::regex("(src|href|xlink:href)\\s*=", std::regex::icase)));
    EXPECT_FALSE(has(page, "@import"));
    EXPECT_FALSE(has(page, "url("));
    EXPECT_TRUE(has(page, "Content-Security-Policy\" content=\"default-src 'none';"));
    // The error hook comes before anything else can fail.
    EXPECT_LT(page.find("data-page-error"), page.find("<style>"));
    EXPECT_TRUE(has(page, "setAttribute('data-ready','1')"));
  }
}

TEST(ReportTest, AblationTable) {
  ReportInput in = input(2);
  EXPECT_TRUE(has(render(in), "Not run: <code>sluice bench DATA --ablation --report FILE</code>"));
  in.ablation = {{"1 raw <ImageFolder>", 0, 0, "no image folder: give --raw DIR"},
                 {"2 raw, parallel", 400, 1.8, ""},
                 {"3 shards", 1000, 1.9, ""}};
  std::string page = render(in);
  EXPECT_TRUE(has(page,
                  "<td>1 raw &lt;ImageFolder&gt;</td><td class=\"num\">&ndash;</td>"
                  "<td colspan=\"3\">no image folder: give --raw DIR</td>"));
  // Speed-ups are against the first rung that ran; bars against the fastest.
  EXPECT_TRUE(has(page,
                  "<td>3 shards</td><td class=\"num\">1,000</td><td class=\"num\">2.50x"
                  "</td><td class=\"num\">1.90</td>"));
  EXPECT_TRUE(has(page, "style=\"width:40.0%\""));
  EXPECT_TRUE(has(page, "style=\"width:100.0%\""));
}

TEST(ReportTest, MissingMachineAndBadDocuments) {
  ReportInput in = input(2);
  in.doctor_json.clear();
  EXPECT_TRUE(has(render(in), "Not examined (see <code>sluice doctor</code>)."));
  in.bench_json = "{";
  EXPECT_EQ(render_report_html(in).status().code(), StatusCode::kInvalidArgument);
  json b = bench_summary();
  b.erase("stages");
  in.bench_json = b.dump();
  auto r = render_report_html(in);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "bench JSON: no object 'stages'");
  in.bench_json = bench_summary().dump();
  in.doctor_json = "[1, 2]";
  EXPECT_EQ(render_report_html(in).status().message(), "doctor JSON: not a JSON object");
}

// `sluice train --ablation`: no bench run, a ladder with training figures.
TEST(ReportTest, TrainingLadderAlone) {
  ReportInput in;
  in.title = "sluice train ablation";
  in.data = "shards";
  in.doctor_json = doctor_report().dump();
  in.ablation_note = "1 epoch per rung <on cpu>";
  AblationRow raw{"1 raw <files>", 100, 0.9, ""};
  raw.epoch_seconds = 12.34;
  raw.data_wait_share = 0.42;
  raw.cpu_busy_percent = 45;
  raw.note = "image folder <x>";
  AblationRow shards{"2 shards", 250, 1.8, ""};
  shards.epoch_seconds = 4.9;
  shards.epoch_projected = true;
  shards.data_wait_share = 0.05;
  shards.cpu_busy_percent = 90;
  shards.gpu_busy_percent = 71.6;
  AblationRow gpus{"4 + all local GPUs", 0, 0, "one GPU"};
  in.ablation = {raw, shards, gpus};
  std::string page = render(in);
  EXPECT_TRUE(has(page, "<title>sluice train ablation: shards</title>"));
  EXPECT_TRUE(has(page, "<p class=\"note\">1 epoch per rung &lt;on cpu&gt;</p>"));
  EXPECT_TRUE(has(page, "<th class=\"num\">GPU busy</th>"));
  EXPECT_TRUE(has(page,
                  "<tr><td>1 raw &lt;files&gt;<div class=\"note\">image folder &lt;x&gt;</div></td>"
                  "<td class=\"num\">12.3 s</td><td class=\"num\">100</td><td "
                  "class=\"num\">1.00x</td><td class=\"num\">n/a</td><td class=\"num\">45 % "
                  "(0.90 cores)</td><td class=\"num\">42 %</td>"));
  EXPECT_TRUE(has(page,
                  "<td class=\"num\">~4.9 s</td><td class=\"num\">250</td><td "
                  "class=\"num\">2.50x</td><td class=\"num\">72 %</td>"));
  EXPECT_TRUE(has(page,
                  "<tr class=\"skipped\"><td>4 + all local GPUs</td><td class=\"num\">&ndash;</td>"
                  "<td colspan=\"6\">one GPU</td></tr>"));
  EXPECT_TRUE(has(page, "<section id=\"machine\""));
  for (const char* id : {"verdict", "summary", "throughput", "time", "cpu", "gpu", "queue"})
    EXPECT_FALSE(has(page, std::string("<section id=\"") + id + "\"")) << id;
  EXPECT_TRUE(has(page, "setAttribute('data-ready','1')"));
  in.ablation.clear();
  EXPECT_EQ(render_report_html(in).status().message(),
            "report: neither a bench run nor ablation rows");
}

TEST(ReportSeriesTest, MergeAddsAndWeighs) {
  ReportSample a = sample(0.5, 100, 1.0), b = sample(2.0, 300, 4.0);
  b.interval_seconds = 1.5;
  b.stages.push_back({"extra", 0.1, 0.2});
  a.gpus = {{20, 100, 1000}, {-1, 0, 0}};
  b.gpus = {{60, 500, 1000}, {30, 0, 0}};
  ReportSample m = merge_samples(a, b);
  EXPECT_EQ(m.end_seconds, 2.0);
  EXPECT_EQ(m.interval_seconds, 2.0);
  EXPECT_EQ(m.images, 400u);
  EXPECT_DOUBLE_EQ(m.process_cpu_seconds, 1.8);
  EXPECT_EQ(m.machine_busy_ticks, 180u);
  EXPECT_EQ(m.machine_total_ticks, 200u);
  EXPECT_DOUBLE_EQ(m.ready_batches, (1.0 * 0.5 + 4.0 * 1.5) / 2.0);
  ASSERT_EQ(m.stages.size(), 6u);
  EXPECT_EQ(m.stages[1].name, "de<co>&\"de\"");
  EXPECT_DOUBLE_EQ(m.stages[1].busy_seconds, 1.2);
  EXPECT_DOUBLE_EQ(m.stages[5].wait_seconds, 0.2);
  EXPECT_DOUBLE_EQ(m.gpus[0].utilization, 50);
  EXPECT_EQ(m.gpus[0].memory_used_bytes, 400u);
  EXPECT_DOUBLE_EQ(m.gpus[1].utilization, 30);  // unknown does not drag the average
}

TEST(ReportSeriesTest, StaysBoundedAndKeepsTotals) {
  ReportSeries s(8);
  uint64_t images = 0;
  for (int i = 1; i <= 37; ++i) {
    s.add(sample(0.5 * i, static_cast<uint64_t>(i), 0));
    images += static_cast<uint64_t>(i);
    ASSERT_LE(s.samples().size(), 8u) << i;
  }
  // 37 samples, at most 8 points: pairs after 8 samples, fours after 16,
  // eights after 32.
  EXPECT_EQ(s.stride(), 8u);
  std::vector<ReportSample> pts = s.samples();
  uint64_t total = 0;
  double seconds = 0;
  for (const ReportSample& p : pts) {
    total += p.images;
    seconds += p.interval_seconds;
  }
  EXPECT_EQ(total, images);
  EXPECT_DOUBLE_EQ(seconds, 37 * 0.5);
  EXPECT_DOUBLE_EQ(pts.back().end_seconds, 18.5);
  for (size_t i = 0; i + 2 < pts.size(); ++i)  // evenly spaced, the last aside
    EXPECT_DOUBLE_EQ(pts[i + 1].end_seconds - pts[i].end_seconds, 4.0);
}

}  // namespace
}  // namespace sluice
