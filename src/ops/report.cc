// The bench report page: sections in the order a reader asks their
// questions (how fast, why, on what), each drawn from the bench summary,
// the time series, the ablation rows and doctor's report.
#include "ops/report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "ops/report_sections.h"
#include "ops/report_svg.h"
#include "sluice/telemetry.h"

namespace sluice {
namespace {

using json = nlohmann::ordered_json;
using detail::ChartLine;
using detail::LineChart;

// Stage colours are fixed by name, so the same stage has the same colour in
// every chart of the page (and across reports).
std::string stage_color(const std::string& name, size_t i) {
  if (name == "read") return "#4e79a7";
  if (name == "decode") return "#f28e2b";
  if (name == "augment") return "#59a14f";
  static const char* const kOthers[] = {"#b07aa1", "#76b7b2", "#edc948", "#ff9da7", "#9c755f"};
  return kOthers[i % std::size(kOthers)];
}
constexpr const char* kSlotWaitColor = "#bab0ac";
constexpr const char* kUnaccountedColor = "#e4e4e4";
constexpr const char* kConsumerWaitColor = "#e15759";

double num(const json& j, const char* key, double fallback = 0) {
  auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : fallback;
}

std::string str(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

std::string e(std::string_view s) {
  return html_escape(s);
}

// 12,345 (the page is for reading, not for parsing).
std::string grouped(double v) {
  std::string digits = fmt::format("{:.0f}", std::abs(v));
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return (v < 0 ? "-" : "") + out;
}

std::string bytes_text(double b) {
  if (b >= 1e9) return fmt::format("{:.1f} GB", b / 1e9);
  return fmt::format("{:.0f} MB", b / 1e6);
}

Status check_bench(const json& b) {
  if (!b.is_object()) return invalid_argument_error("bench JSON: not an object");
  for (const char* key : {"images_per_second", "seconds"}) {
    if (!b.contains(key) || !b[key].is_number())
      return invalid_argument_error(fmt::format("bench JSON: no number '{}'", key));
  }
  if (!b.contains("verdict") || !b["verdict"].is_string())
    return invalid_argument_error("bench JSON: no string 'verdict'");
  if (!b.contains("stages") || !b["stages"].is_object())
    return invalid_argument_error("bench JSON: no object 'stages'");
  return Status();
}

std::string figure(const std::string& value, const std::string& label) {
  return fmt::format(
      "<div class=\"figure\"><div class=\"v\">{}</div><div class=\"k\">{}</div></div>", e(value),
      e(label));
}

std::string header(const ReportInput& in) {
  std::string out = fmt::format("<header><h1>{}</h1><p class=\"sub\">", e(in.title));
  out +=
      fmt::format("<span class=\"data\">{}</span>", e(in.data.empty() ? "(no dataset)" : in.data));
  if (!in.generated_at.empty()) out += fmt::format(" &middot; {}", e(in.generated_at));
  if (!in.version.empty()) out += fmt::format(" &middot; sluice {}", e(in.version));
  out += "</p>";
  if (!in.command_line.empty())
    out += fmt::format("<p class=\"cmd\"><code>{}</code></p>", e(in.command_line));
  return out + "</header>\n";
}

std::string verdict_section(const json& b) {
  std::string kind = str(b, "verdict_kind");
  std::string text = str(b, "verdict");
  if (kind.empty()) kind = text.substr(0, text.find(':'));
  std::string why =
      kind == "input-bound"
          ? "The consumer waited for batches: the input pipeline sets the pace. More cores or "
            "workers, smaller images at convert time (--max-side), or sequential JPEGs "
            "(--rewrite-progressive) raise it; the busiest stage says where to start."
      : kind == "consumer-bound"
          ? "Workers mostly waited for a free batch slot while the consumer never waited: the "
            "input pipeline has headroom, and the consumer sets the pace."
          : "Neither side waited long: the input pipeline keeps up with the consumer.";
  std::string cls = kind == "input-bound" || kind == "consumer-bound" ? kind : "balanced";
  return fmt::format(
      "<section id=\"verdict\" class=\"verdict {}\"><h2>Verdict</h2>"
      "<p class=\"verdict-text\">{}</p><p>{}</p></section>\n",
      cls, e(text), e(why));
}

std::string summary_section(const json& b, int cores) {
  std::string out = "<section id=\"summary\"><h2>Summary</h2><div class=\"figures\">";
  out += figure(grouped(num(b, "images_per_second")), "images/s");
  out += figure(grouped(num(b, "images")),
                fmt::format("images in {} batches", grouped(num(b, "batches"))));
  out += figure(fmt::format("{:.2f} s", num(b, "seconds")), "wall time");
  out += figure(fmt::format("{:.1f} MB/s", num(b, "mb_per_second")), "of batches out");
  double busy = num(b, "cpu_cores_busy");
  out += figure(fmt::format("{:.2f} of {}", busy, cores),
                fmt::format("CPU cores busy ({:.0f} %)", 100 * busy / std::max(cores, 1)));
  out += figure(bytes_text(num(b, "peak_rss_bytes")),
                fmt::format("peak RSS (budget {})", bytes_text(num(b, "memory_budget_bytes"))));
  out += figure(fmt::format("{:.0f} / {:.0f}", num(b, "workers"), num(b, "prefetch")),
                "workers / prefetch");
  out += figure(fmt::format("{:.0f} %", 100 * num(b, "consumer_wait_share")), "consumer waited");
  out += figure(grouped(num(b, "bad_samples")), "bad samples");
  double ceiling = num(b, "ceiling_images_per_second", -1);
  double floor = num(b, "plan_floor_images_per_second", -1);
  if (ceiling > 0) out += figure(grouped(ceiling), "images/s, full-decode ceiling");
  if (floor > 0) out += figure(grouped(floor), "images/s, plan floor");
  out += "</div>";
  if (std::string t = str(b, "tuning"); !t.empty())
    out += fmt::format("<p class=\"note\">Engine: {}</p>", e(t));
  return out + "</section>\n";
}

// One or no sample draws a point, not a curve: say why.
std::string series_note(const std::vector<ReportSample>& s) {
  if (s.empty()) return "<p class=\"note\">No samples: the run ended before the first one.</p>";
  if (s.size() == 1) {
    return fmt::format(
        "<p class=\"note\">One sample only: the run took {:.2f} s. Longer runs (--epochs, "
        "--batches) draw a curve.</p>",
        s.back().end_seconds);
  }
  return "";
}

std::vector<double> xs(const std::vector<ReportSample>& s) {
  std::vector<double> x;
  for (const ReportSample& p : s) x.push_back(p.end_seconds);
  return x;
}

double per_second(double v, const ReportSample& p) {
  return p.interval_seconds > 0 ? v / p.interval_seconds : NAN;
}

std::string throughput_section(const ReportInput& in, const json& b) {
  LineChart c{"chart-throughput", "Throughput over time", "images/s", " images/s", 0,
              xs(in.series)};
  ChartLine rate{"images/s over the interval", "#4e79a7", {}};
  ChartLine mean{"mean over the run", "#59636e", {}, true};
  for (const ReportSample& p : in.series) {
    rate.values.push_back(per_second(static_cast<double>(p.images), p));
    mean.values.push_back(num(b, "images_per_second"));
  }
  c.lines = {rate, mean};
  return "<section id=\"throughput\"><h2>Throughput over time</h2>" + detail::line_chart_svg(c) +
         series_note(in.series) + "</section>\n";
}

// Worker time: each worker stage's busy share, the wait for a free slot,
// and what no stage accounts for (hand-off, scheduling on busy cores).
detail::ShareBar worker_bar(const json& stages, double worker_seconds) {
  detail::ShareBar bar{"worker threads", {}};
  double sum = 0;
  size_t i = 0;
  for (const auto& [name, v] : stages.items()) {
    if (!is_worker_stage(name) || !v.is_object()) continue;
    double share = worker_seconds > 0 ? num(v, "busy_seconds") / worker_seconds : 0;
    bar.segments.push_back({name, stage_color(name, i++), share});
    sum += share;
  }
  double slot = 0;
  if (auto it = stages.find("idle"); it != stages.end() && it->is_object())
    slot = worker_seconds > 0 ? num(*it, "wait_seconds") / worker_seconds : 0;
  bar.segments.push_back({"waiting for a free slot", kSlotWaitColor, slot});
  sum += slot;
  // Timers overlap a little at stage edges; a sum over 1 is rounding.
  if (sum > 1) {
    for (auto& s : bar.segments) s.share /= sum;
  }
  bar.segments.push_back({"unaccounted", kUnaccountedColor, std::max(0.0, 1 - sum)});
  return bar;
}

std::string time_section(const ReportInput& in, const json& b) {
  double workers = std::max(1.0, num(b, "workers", 1));
  double wall = num(b, "seconds");
  double wait = std::clamp(num(b, "consumer_wait_share"), 0.0, 1.0);
  std::vector<detail::ShareBar> bars = {
      worker_bar(b["stages"], wall * workers),
      {"consumer",
       {{"waiting for batches", kConsumerWaitColor, wait}, {"working", "#59a14f", 1 - wait}}}};
  std::string out =
      "<section id=\"time\"><h2>Where the time goes</h2>"
      "<p class=\"note\">Shares of wall time: busy time summed over the worker threads, divided "
      "by wall time times workers; the consumer is the thread that takes batches (here, bench "
      "itself). Unaccounted is worker time in no stage: hand-offs, and waiting for a core "
      "(other processes, or more workers than cores).</p>" +
      detail::share_bars_svg("chart-shares", "Busy and waiting shares", bars);
  LineChart c{"chart-stages", "Stage busy share over time", "% of worker time", " %", 0,
              xs(in.series)};
  c.y_top = 100;
  std::vector<std::string> names;
  if (!in.series.empty()) {
    for (const StageDelta& s : in.series.front().stages) names.push_back(s.name);
  }
  size_t color = 0;
  for (const std::string& name : names) {
    bool worker = is_worker_stage(name);
    ChartLine l{worker           ? name
                : name == "idle" ? "waiting for a free slot"
                                 : "consumer waiting",
                worker           ? stage_color(name, color++)
                : name == "idle" ? "#8c8c8c"
                                 : kConsumerWaitColor,
                {},
                !worker};
    for (const ReportSample& p : in.series) {
      auto it = std::find_if(p.stages.begin(), p.stages.end(),
                             [&](const StageDelta& s) { return s.name == name; });
      double secs = it == p.stages.end() ? NAN : worker ? it->busy_seconds : it->wait_seconds;
      double per = name == "batch" ? 1 : std::max(p.workers, 1);
      l.values.push_back(100 * per_second(secs, p) / per);
    }
    c.lines.push_back(l);
  }
  out += "<h3>Over time</h3>" + detail::line_chart_svg(c) + series_note(in.series);
  return out + "</section>\n";
}

std::string cpu_section(const ReportInput& in, const json& b, int cores) {
  LineChart c{
      "chart-cpu",  "CPU utilisation over time", fmt::format("% of {} cores", cores), " %", 1,
      xs(in.series)};
  c.y_top = 100;
  ChartLine proc{"sluice (this process)", "#4e79a7", {}};
  ChartLine machine{"whole machine", "#9c755f", {}, true};
  for (const ReportSample& p : in.series) {
    proc.values.push_back(100 * per_second(p.process_cpu_seconds, p) / cores);
    machine.values.push_back(p.machine_total_ticks > 0
                                 ? 100.0 * static_cast<double>(p.machine_busy_ticks) /
                                       static_cast<double>(p.machine_total_ticks)
                                 : NAN);
  }
  c.lines = {proc, machine};
  return fmt::format(
             "<section id=\"cpu\"><h2>CPU utilisation</h2><p class=\"note\">sluice kept {:.2f} "
             "of {} cores busy over the run; the whole machine's line includes every other "
             "process.</p>",
             num(b, "cpu_cores_busy"), cores) +
         detail::line_chart_svg(c) + series_note(in.series) + "</section>\n";
}

std::string gpu_section(const ReportInput& in) {
  size_t n = 0;
  for (const ReportSample& p : in.series) n = std::max(n, p.gpus.size());
  std::string out = "<section id=\"gpu\"><h2>GPU utilisation</h2>";
  if (n == 0) {
    return out +
           fmt::format(
               "<p class=\"note nogpu\">No GPU: {}.</p>",
               e(in.gpu_note.empty() ? "no GPU was sampled during this run" : in.gpu_note)) +
           "</section>\n";
  }
  static const char* const kColors[] = {"#76b7b2", "#b07aa1", "#edc948", "#ff9da7", "#4e79a7"};
  LineChart c{"chart-gpu",  "GPU utilisation over time", "% busy, % of memory", " %", 0,
              xs(in.series)};
  c.y_top = 100;
  for (size_t g = 0; g < n; ++g) {
    std::string name = g < in.gpu_names.size() ? in.gpu_names[g] : fmt::format("GPU {}", g);
    std::string color = kColors[g % std::size(kColors)];
    ChartLine busy{name + " busy", color, {}}, mem{name + " memory", color, {}, true};
    for (const ReportSample& p : in.series) {
      bool have = g < p.gpus.size();
      busy.values.push_back(have && p.gpus[g].utilization >= 0 ? p.gpus[g].utilization : NAN);
      mem.values.push_back(have && p.gpus[g].memory_total_bytes > 0
                               ? 100.0 * static_cast<double>(p.gpus[g].memory_used_bytes) /
                                     static_cast<double>(p.gpus[g].memory_total_bytes)
                               : NAN);
    }
    c.lines.push_back(busy);
    c.lines.push_back(mem);
  }
  return out +
         "<p class=\"note\">Busy: the share of NVML's sample period in which a kernel ran. "
         "bench feeds no model, so this shows what else used the GPU.</p>" +
         detail::line_chart_svg(c) + series_note(in.series) + "</section>\n";
}

std::string queue_section(const ReportInput& in) {
  LineChart c{"chart-queue", "Queue depth over time", "batches", " batches", 1, xs(in.series)};
  ChartLine ready{"ready batches (waiting for the consumer)", "#4e79a7", {}};
  ChartLine cap{"ring capacity (prefetch)", "#59636e", {}, true};
  for (const ReportSample& p : in.series) {
    ready.values.push_back(p.ready_batches);
    cap.values.push_back(p.prefetch);
  }
  c.lines = {ready, cap};
  return "<section id=\"queue\"><h2>Queue depth</h2><p class=\"note\">An empty queue while the "
         "consumer waits means the workers are behind; a full one, that the consumer is.</p>" +
         detail::line_chart_svg(c) + series_note(in.series) + "</section>\n";
}

// The training ladder's table: epoch time, GPU and data wait beside the
// throughput. Speed-ups are against the first rung that ran, bars against
// the fastest.
std::string training_ablation_table(const std::vector<AblationRow>& rows) {
  double base = 0, best = 0;
  for (const AblationRow& r : rows) {
    if (!r.skipped.empty()) continue;
    if (base == 0) base = r.images_per_second;
    best = std::max(best, r.images_per_second);
  }
  auto pct = [](const std::optional<double>& v) {
    return v ? fmt::format("{:.0f} %", *v) : std::string("n/a");
  };
  std::string out =
      "<table class=\"ablation training\"><thead><tr><th>rung</th><th class=\"num\">epoch "
      "time</th><th class=\"num\">images/s</th><th class=\"num\">vs first</th><th "
      "class=\"num\">GPU busy</th><th class=\"num\">CPU busy</th><th class=\"num\">data "
      "wait</th><th class=\"barcell\"></th></tr></thead><tbody>";
  for (const AblationRow& r : rows) {
    std::string name = e(r.rung);
    if (!r.note.empty()) name += fmt::format("<div class=\"note\">{}</div>", e(r.note));
    if (!r.skipped.empty()) {
      out += fmt::format(
          "<tr class=\"skipped\"><td>{}</td><td class=\"num\">&ndash;</td><td colspan=\"6\">{}"
          "</td></tr>",
          name, e(r.skipped));
      continue;
    }
    std::string epoch =
        r.epoch_seconds ? fmt::format("{}{:.1f} s", r.epoch_projected ? "~" : "", *r.epoch_seconds)
                        : std::string("n/a");
    std::string cpu = r.cpu_busy_percent ? fmt::format("{:.0f} % ({:.2f} cores)",
                                                       *r.cpu_busy_percent, r.cpu_cores_busy)
                                         : fmt::format("{:.2f} cores", r.cpu_cores_busy);
    double width = best > 0 ? 100 * r.images_per_second / best : 0;
    out += fmt::format(
        "<tr><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td "
        "class=\"num\">{:.2f}x</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td "
        "class=\"num\">{}</td><td class=\"barcell\"><div class=\"hbar\" "
        "style=\"width:{:.1f}%\"></div></td></tr>",
        name, e(epoch), grouped(r.images_per_second), base > 0 ? r.images_per_second / base : 0,
        e(pct(r.gpu_busy_percent)), e(cpu),
        r.data_wait_share ? fmt::format("{:.0f} %", 100 * *r.data_wait_share) : "n/a", width);
  }
  return out + "</tbody></table>";
}

std::string ablation_section(const std::vector<AblationRow>& rows, const std::string& note) {
  std::string out = "<section id=\"ablation\"><h2>Ablation</h2>";
  if (!note.empty()) out += fmt::format("<p class=\"note\">{}</p>", e(note));
  bool training = std::any_of(rows.begin(), rows.end(),
                              [](const AblationRow& r) { return r.data_wait_share.has_value(); });
  if (training) return out + training_ablation_table(rows) + "</section>\n";
  if (rows.empty()) {
    return out +
           "<p class=\"note\">Not run: <code>sluice bench DATA --ablation --report FILE</code> "
           "adds the ladder from raw files to shards with crop decode.</p></section>\n";
  }
  double base = 0, best = 0;
  for (const AblationRow& r : rows) {
    if (!r.skipped.empty()) continue;
    if (base == 0) base = r.images_per_second;
    best = std::max(best, r.images_per_second);
  }
  out +=
      "<table class=\"ablation\"><thead><tr><th>rung</th><th class=\"num\">images/s</th>"
      "<th class=\"num\">vs first</th><th class=\"num\">CPU cores</th><th class=\"barcell\">"
      "</th></tr></thead><tbody>";
  for (const AblationRow& r : rows) {
    if (!r.skipped.empty()) {
      out += fmt::format(
          "<tr class=\"skipped\"><td>{}</td><td class=\"num\">&ndash;</td><td colspan=\"3\">{}"
          "</td></tr>",
          e(r.rung), e(r.skipped));
      continue;
    }
    double width = best > 0 ? 100 * r.images_per_second / best : 0;
    out += fmt::format(
        "<tr><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{:.2f}x</td><td "
        "class=\"num\">{:.2f}</td><td class=\"barcell\"><div class=\"hbar\" "
        "style=\"width:{:.1f}%\">"
        "</div></td></tr>",
        e(r.rung), grouped(r.images_per_second), base > 0 ? r.images_per_second / base : 0,
        r.cpu_cores_busy, width);
  }
  return out + "</tbody></table></section>\n";
}

}  // namespace

std::string html_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

Result<std::string> render_report_html(const ReportInput& in) {
  json d;
  if (!in.doctor_json.empty()) {
    d = json::parse(in.doctor_json, nullptr, false);
    if (d.is_discarded() || !d.is_object())
      return invalid_argument_error("doctor JSON: not a JSON object");
  }
  if (in.bench_json.empty()) {
    // A ladder alone (train --ablation): no run of the pipeline to chart.
    if (in.ablation.empty())
      return invalid_argument_error("report: neither a bench run nor ablation rows");
    std::string page = detail::report_head(in.title + (in.data.empty() ? "" : ": " + in.data));
    page += header(in);
    page += ablation_section(in.ablation, in.ablation_note);
    page += detail::machine_section(d);
    page += detail::report_tail(in.version);
    return page;
  }
  json b = json::parse(in.bench_json, nullptr, false);
  if (b.is_discarded()) return invalid_argument_error("bench JSON: not JSON");
  SLUICE_RETURN_IF_ERROR(check_bench(b));
  int cores = static_cast<int>(num(b, "cores", 0));
  if (cores <= 0 && d.is_object() && d.contains("cpu"))
    cores = static_cast<int>(num(d["cpu"], "cores", 0));
  cores = std::max(cores, 1);
  std::string page = detail::report_head(in.title + (in.data.empty() ? "" : ": " + in.data));
  page += header(in);
  page += verdict_section(b);
  page += summary_section(b, cores);
  page += throughput_section(in, b);
  page += time_section(in, b);
  page += cpu_section(in, b, cores);
  page += gpu_section(in);
  page += queue_section(in);
  page += ablation_section(in.ablation, in.ablation_note);
  page += detail::machine_section(d);
  page += detail::options_section(b.contains("options") ? b["options"] : json::object());
  page += detail::report_tail(in.version);
  return page;
}

}  // namespace sluice
