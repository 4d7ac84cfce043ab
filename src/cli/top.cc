// sluice top STATUS: a live view of a running job, from the status file it
// keeps (`sluice bench --status FILE`), redrawn in place.
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "cli/common.h"

namespace sluice::cli {
namespace {

using json = nlohmann::json;

struct TopCli {
  std::string status;
  double interval = 0.5;
  double wait = 30;
  bool once = false;
};

std::optional<json> read_status(const std::string& path) {
  std::ifstream f(path);
  if (!f) return std::nullopt;
  std::stringstream s;
  s << f.rdbuf();
  json j = json::parse(s.str(), nullptr, false);
  if (j.is_discarded() || !j.is_object()) return std::nullopt;
  return j;
}

std::string bar(double share, int width = 30) {
  int n = static_cast<int>(std::clamp(share, 0.0, 1.0) * width + 0.5);
  std::string out;
  for (int i = 0; i < width; ++i) out += i < n ? "#" : ".";
  return out;
}

std::string render(const std::string& path, const json& j) {
  double age =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count() -
      j.value("time", 0.0);
  std::string out =
      fmt::format("sluice top  {}  ({}, updated {:.1f} s ago)\n\n", path,
                  j.value("done", false) ? "finished" : "running", std::max(0.0, age));
  if (j.value("job", std::string()) == "train") {
    out += fmt::format(
        "training    epoch {} of {}  step {}  loss {:.4f}  accuracy {:.1f} %  lr {:.4g}\n",
        j.value("epoch", 0), j.value("epochs", 0), j.value("step", 0), j.value("loss", 0.0),
        100 * j.value("accuracy", 0.0), j.value("lr", 0.0));
  }
  out += fmt::format("throughput  {:>8.0f} images/s   {} images, {} batches in {:.1f} s\n",
                     j.value("images_per_second", 0.0), j.value("images", 0), j.value("batches", 0),
                     j.value("seconds", 0.0));
  double wait = j.value("consumer_wait_share", 0.0);
  out += fmt::format("{} waited {:>3.0f} % {}\n",
                     j.value("job", std::string()) == "train" ? "data wait  " : "consumer   ",
                     100 * wait, bar(wait));
  out += "stages      busy share of the workers\n";
  if (j.contains("stages") && j["stages"].is_object()) {
    for (const auto& [name, v] : j["stages"].items()) {
      double share = v.is_number() ? v.get<double>() : 0;
      out += fmt::format("  {:<9} {:>3.0f} % {}\n", name, 100 * share, bar(share));
    }
  }
  out += fmt::format("queue       {} of {} batch slots ready for the consumer\n",
                     j.value("ready_batches", 0), j.value("prefetch", 0));
  out += fmt::format("workers     {} of {} active\n", j.value("active_workers", 0),
                     j.value("workers", 0));
  out += fmt::format("CPU         {:.2f} cores busy   RSS {:.0f} MB\n",
                     j.value("cpu_cores_busy", 0.0), j.value("rss_bytes", 0.0) / 1e6);
  if (j.contains("gpus") && j["gpus"].is_array()) {
    for (const json& g : j["gpus"]) {
      if (!g.is_object()) continue;
      double util = g.value("utilization", -1.0);
      out += fmt::format("{:<11} busy {} {}  memory {:.1f} of {:.1f} GB\n",
                         g.value("name", std::string("GPU")).substr(0, 40),
                         util >= 0 ? fmt::format("{:>3.0f} %", util) : std::string("  ? %"),
                         bar(util / 100.0), g.value("memory_used_bytes", 0.0) / 1e9,
                         g.value("memory_total_bytes", 0.0) / 1e9);
    }
  }
  if (j.value("bad_samples", 0) > 0)
    out += fmt::format("bad samples {}\n", j.value("bad_samples", 0));
  out += fmt::format("verdict     {}\n", j.value("verdict", std::string("-")));
  return out;
}

int run(const TopCli& c) {
  if (c.interval <= 0)
    return report_error("top", invalid_argument_error("--interval must be above 0"));
  auto t0 = std::chrono::steady_clock::now();
  std::optional<json> j;
  while (!(j = read_status(c.status))) {
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() > c.wait) {
      return report_error(
          "top", not_found_error(c.status + ": no status file (start the job with --status FILE)"));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  bool tty = ::isatty(STDOUT_FILENO) != 0 && !c.once;
  for (;;) {
    std::string screen;
    bool done = false;
    try {  // a status file edited by hand may hold the wrong types
      screen = render(c.status, *j);
      done = j->value("done", false);
    } catch (const json::exception& e) {
      return report_error(
          "top", data_loss_error(c.status + ": not a sluice status file (" + e.what() + ")"));
    }
    if (tty) std::fputs("\x1b[H\x1b[J", stdout);  // home, clear: redraw in place
    std::fputs(screen.c_str(), stdout);
    std::fflush(stdout);
    if (c.once || done) return kExitOk;
    std::this_thread::sleep_for(std::chrono::duration<double>(c.interval));
    if (auto next = read_status(c.status)) j = next;  // keep the last good one
    if (!tty) std::fputs("\n", stdout);
  }
}

}  // namespace

void register_top(CLI::App& app, int* exit_code) {
  auto c = std::make_shared<TopCli>();
  CLI::App* sub = app.add_subcommand("top", "Live view of a running job from its status file");
  sub->add_option("status", c->status,
                  "The status file the job writes (sluice bench --status FILE)")
      ->required();
  sub->add_option("--interval", c->interval, "Seconds between refreshes")->capture_default_str();
  sub->add_option("--wait", c->wait, "Seconds to wait for the status file to appear")
      ->capture_default_str();
  sub->add_flag("--once", c->once, "Print the current status once and exit");
  sub->callback([c, exit_code] { *exit_code = run(*c); });
}

}  // namespace sluice::cli
