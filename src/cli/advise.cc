// sluice advise: which machine to rent, from your measured pipeline rate.
#include "ops/advise.h"

#include <fmt/format.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/file_util.h"
#include "cli/common.h"

namespace sluice::cli {
namespace {

struct AdviseCli {
  std::string bench, prices, catalog, gpus, counts = "1,2,4,8";
  std::string model = "resnet50", amp = "bf16", gpu;
  double step_time = 0;
  int batch = 256;
  int cores = 0;
  uint64_t images = 1'281'167;
};

Status load(AdviseCli& c, AdviseInput* in) {
  SLUICE_ASSIGN_OR_RETURN(std::string text, detail::read_file(c.bench, 64 << 20));
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.contains("images_per_second") || !j.contains("cpu_cores_busy")) {
    return data_loss_error(
        c.bench + ": not a `sluice bench --json` file (images_per_second, cpu_cores_busy)");
  }
  double ips = j["images_per_second"].get<double>(), busy = j["cpu_cores_busy"].get<double>();
  if (ips <= 0 || busy <= 0)
    return data_loss_error(c.bench + ": images_per_second and cpu_cores_busy must be above 0");
  in->cpu_images_per_core = ips / busy;
  if (!c.catalog.empty()) {
    SLUICE_ASSIGN_OR_RETURN(std::string cat, detail::read_file(c.catalog, 16 << 20));
    SLUICE_ASSIGN_OR_RETURN(in->catalog, parse_gpu_catalog(cat, c.catalog));
  } else {
    SLUICE_ASSIGN_OR_RETURN(in->catalog, builtin_gpu_catalog());
  }
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
  in->cores = c.cores;
  in->images = c.images;
  if (c.step_time > 0) {
    if (c.gpu.empty())
      return invalid_argument_error("--step-time needs --gpu (the GPU type it was measured on)");
    in->anchor_gpu = c.gpu;
    in->anchor_model = c.model;
    in->anchor_amp = c.amp;
    in->anchor_images_per_second = c.batch / c.step_time;
  }
  return Status();
}

int run(AdviseCli& c) {
  AdviseInput in;
  if (Status s = load(c, &in); !s.ok()) return report_error("advise", s);
  auto r = advise(in);
  if (!r.ok()) return report_error("advise", r.status());
  std::printf("input pipeline (from %s): %.0f images/s per CPU core\n\n", c.bench.c_str(),
              in.cpu_images_per_core);
  std::fputs(format_advise_text(*r).c_str(), stdout);
  return kExitOk;
}

}  // namespace

void register_advise(CLI::App& app, int* exit_code) {
  auto c = std::make_shared<AdviseCli>();
  CLI::App* sub = app.add_subcommand(
      "advise", "Which GPUs to rent, and how many cores to feed them, from your bench figures");
  sub->add_option("--bench", c->bench, "A `sluice bench --json` file measured on your data")
      ->required();
  sub->add_option("--model", c->model, "resnet50 | resnet18 | seed-cnn")->capture_default_str();
  sub->add_option("--amp", c->amp, "off | fp16 | bf16")->capture_default_str();
  sub->add_option("--step-time", c->step_time,
                  "A measured training step time in seconds (with --gpu and --batch)");
  sub->add_option("--gpu", c->gpu, "The GPU type --step-time was measured on");
  sub->add_option("--batch", c->batch, "Batch size of --step-time")->capture_default_str();
  sub->add_option("--cores", c->cores,
                  "CPU cores the machine gives the input pipeline (judges input-bound)");
  sub->add_option("--images", c->images, "Images per epoch")->capture_default_str();
  sub->add_option("--prices", c->prices, "Your prices per GPU-hour (see data/prices.example.json)");
  sub->add_option("--catalog", c->catalog,
                  "A GPU catalogue instead of the built-in one (data/gpus.json format)");
  sub->add_option("--gpus", c->gpus, "Only these GPU types, comma-separated");
  sub->add_option("--counts", c->counts, "GPU counts to consider")->capture_default_str();
  sub->callback([c, exit_code] { *exit_code = run(*c); });
}

}  // namespace sluice::cli
