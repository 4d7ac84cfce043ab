// sluice advise: which machine to rent, from your measured pipeline rate.
#include "ops/advise.h"

#include <fmt/format.h>

#include <cstdio>
#include <sstream>

#include "base/file_util.h"
#include "cli/common.h"
#include "ops/train_summary.h"

namespace sluice::cli {
namespace {

struct AdviseCli {
  std::vector<std::string> bench;
  std::string prices, catalog, gpus, counts = "1,2,4,8";
  std::string model = "resnet50", amp = "bf16", task = "train", framework = "pytorch", gpu,
              train_summary, disk;
  double step_time = 0, deadline = 0, disk_mbps = 0;
  int batch = 256, epochs = 100;
  int cores = 0;
  bool leave_one_out = false;
  uint64_t images = 1'281'167;
};

Status load_catalog(const AdviseCli& c, AdviseInput* in) {
  if (c.catalog.empty()) {
    SLUICE_ASSIGN_OR_RETURN(in->catalog, builtin_gpu_catalog());
    SLUICE_ASSIGN_OR_RETURN(in->measurements, builtin_measurements());
    return Status();
  }
  SLUICE_ASSIGN_OR_RETURN(std::string cat, detail::read_file(c.catalog, 16 << 20));
  SLUICE_ASSIGN_OR_RETURN(in->catalog, parse_gpu_catalog(cat, c.catalog));
  SLUICE_ASSIGN_OR_RETURN(in->measurements, parse_measurements(cat, c.catalog));
  return Status();
}

Status load_anchor(const AdviseCli& c, AdviseInput* in) {
  if (!c.train_summary.empty()) {
    SLUICE_ASSIGN_OR_RETURN(std::string text, detail::read_file(c.train_summary, 16 << 20));
    SLUICE_ASSIGN_OR_RETURN(TrainRun run, parse_train_summary(text, c.train_summary));
    // --gpu overrides the summary's own record of its GPU.
    std::string gpu = c.gpu.empty() ? catalogue_gpu(run.gpu) : c.gpu;
    if (gpu.empty()) {
      return invalid_argument_error(
          run.gpu.empty()
              ? "--train-summary needs --gpu (the GPU type it ran on): the summary does not "
                "name its GPU"
              : "--train-summary: the summary's GPU '" + run.gpu +
                    "' is no catalogue type; give --gpu");
    }
    in->anchor =
        UserAnchor{gpu, run.model, run.amp, run.world_size, run.images_per_second, c.train_summary};
  } else if (c.step_time > 0) {
    if (c.gpu.empty())
      return invalid_argument_error("--step-time needs --gpu (the GPU type it was measured on)");
    in->anchor = UserAnchor{c.gpu, c.model, c.amp, 1, c.batch / c.step_time, "--step-time"};
  }
  return Status();
}

Status load_disk(const AdviseCli& c, AdviseInput* in) {
  in->disk_mb_per_second = c.disk_mbps;
  if (c.disk.empty()) return Status();
  SLUICE_ASSIGN_OR_RETURN(std::string text, detail::read_file(c.disk, 16 << 20));
  SLUICE_ASSIGN_OR_RETURN(in->disk_mb_per_second, parse_disk_report(text, c.disk));
  return Status();
}

Status load(AdviseCli& c, AdviseInput* in) {
  if (c.bench.empty()) return invalid_argument_error("--bench FILE is required");
  std::vector<std::pair<double, double>> points;
  for (const std::string& b : c.bench) {
    SLUICE_ASSIGN_OR_RETURN(std::string text, detail::read_file(b, 64 << 20));
    SLUICE_ASSIGN_OR_RETURN(BenchPoint p, parse_bench_point(text, b));
    points.emplace_back(p.cores, p.images_per_second);
    if (p.image_bytes > 0) in->image_bytes = p.image_bytes;
  }
  SLUICE_ASSIGN_OR_RETURN(in->cpu, fit_cpu(points));
  SLUICE_RETURN_IF_ERROR(load_catalog(c, in));
  std::stringstream gs(c.gpus);
  for (std::string name; std::getline(gs, name, ',');) {
    if (!name.empty()) in->only.push_back(name);
  }
  if (!c.prices.empty()) {
    SLUICE_ASSIGN_OR_RETURN(std::string p, detail::read_file(c.prices, 16 << 20));
    SLUICE_ASSIGN_OR_RETURN(in->prices, parse_prices(p, c.prices));
  }
  in->counts.clear();
  std::stringstream cs(c.counts);
  for (std::string n; std::getline(cs, n, ',');) {
    int v = std::atoi(n.c_str());
    if (v < 1) return invalid_argument_error("--counts takes positive numbers, e.g. 1,2,4,8");
    in->counts.push_back(v);
  }
  in->model = c.model;
  in->amp = c.amp;
  in->task = c.task;
  in->framework = c.framework;
  in->cores = c.cores;
  in->images = c.images;
  in->epochs = c.epochs;
  in->batch = c.batch;
  in->deadline_hours = c.deadline;
  SLUICE_RETURN_IF_ERROR(load_disk(c, in));
  return load_anchor(c, in);
}

int run_leave_one_out(const AdviseCli& c) {
  AdviseInput in;
  if (Status s = load_catalog(c, &in); !s.ok()) return report_error("advise", s);
  // Both ways of hiding: the GPU entirely (the peak model), and the GPU in
  // one framework only (the framework-matched ratio where a family links it).
  for (Hide hide : {Hide::kHideGpu, Hide::kHideGpuInFramework}) {
    auto r = leave_one_out(in.catalog, in.measurements, hide);
    if (!r.ok()) return report_error("advise", r.status());
    if (hide == Hide::kHideGpuInFramework) std::fputs("\n", stdout);
    std::fputs(format_leave_one_out(*r).c_str(), stdout);
  }
  return kExitOk;
}

int run(AdviseCli& c) {
  if (c.leave_one_out) return run_leave_one_out(c);
  AdviseInput in;
  if (Status s = load(c, &in); !s.ok()) return report_error("advise", s);
  auto r = advise(in);
  if (!r.ok()) return report_error("advise", r.status());
  std::printf("input pipeline (from %zu bench file%s): %.0f images/s per CPU core\n\n",
              c.bench.size(), c.bench.size() > 1 ? "s" : "", in.cpu.per_core);
  std::fputs(format_advise_text(*r).c_str(), stdout);
  return kExitOk;
}

}  // namespace

void register_advise(CLI::App& app, int* exit_code) {
  auto c = std::make_shared<AdviseCli>();
  CLI::App* sub = app.add_subcommand(
      "advise", "Which GPUs to rent, and how many cores to feed them, from your bench figures");
  sub->add_option("--bench", c->bench,
                  "`sluice bench --json` files measured on your data; several (different "
                  "--workers) fit images/s per core");
  sub->add_option("--model", c->model, "resnet50 | resnet18 | seed-cnn")->capture_default_str();
  sub->add_option("--amp", c->amp, "off | fp16 | bf16 | int8 (int8: --task infer)")
      ->capture_default_str();
  sub->add_option("--task", c->task, "train | infer (feature extraction)")->capture_default_str();
  sub->add_option("--framework", c->framework,
                  "Whose figures: pytorch (sluice's trainer) | mxnet | tensorflow | tensorrt | any "
                  "(the first published figure, whatever its framework)")
      ->capture_default_str();
  sub->add_option(
      "--train-summary", c->train_summary,
      "A `sluice train --summary` file: re-anchor every figure on your run (its GPU from the "
      "summary, or --gpu)");
  sub->add_option("--step-time", c->step_time,
                  "A measured training step time in seconds (with --gpu and --batch)");
  sub->add_option("--gpu", c->gpu,
                  "The GPU type --step-time ran on (--train-summary: instead of the summary's "
                  "own 'gpu')");
  sub->add_option("--batch", c->batch, "Batch size per GPU (memory fit; --step-time's batch)")
      ->capture_default_str();
  sub->add_option("--cores", c->cores,
                  "CPU cores the machine gives the input pipeline (judges input-bound)");
  sub->add_option("--disk", c->disk,
                  "A `sluice doctor --data DIR --json` report: its read speed bounds the rows");
  sub->add_option("--disk-mbps", c->disk_mbps, "Disk read speed in MB/s, instead of --disk");
  sub->add_option("--images", c->images, "Images per epoch")->capture_default_str();
  sub->add_option("--epochs", c->epochs, "Epochs for the total cost and --deadline")
      ->capture_default_str();
  sub->add_option("--deadline", c->deadline,
                  "Hours for --epochs epochs: name the cheapest priced configuration meeting it");
  sub->add_option("--prices", c->prices, "Your prices per GPU-hour (see data/prices.example.json)");
  sub->add_option("--catalog", c->catalog,
                  "A GPU catalogue instead of the built-in one (data/gpus.json format)");
  sub->add_option("--gpus", c->gpus, "Only these GPU types, comma-separated");
  sub->add_option("--counts", c->counts, "GPU counts to consider")->capture_default_str();
  sub->add_flag("--leave-one-out", c->leave_one_out,
                "Estimate every published 1-GPU figure from the other GPUs' and print the error");
  sub->callback([c, exit_code] { *exit_code = run(*c); });
}

}  // namespace sluice::cli
