// sluice doctor: is this machine set up right for a long job?
#include "ops/doctor.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "cli/common.h"

namespace sluice::cli {
namespace {

struct DoctorCli {
  DoctorOptions options;
  std::vector<std::string> require;
  bool json = false;
};

int run(const DoctorCli& c) {
  for (const std::string& r : c.require) {
    if (r != "gpu" && r != "cuda-build" && r != "torch") {
      return report_error(
          "doctor",
          invalid_argument_error("--require takes gpu, cuda-build or torch, not '" + r + "'"));
    }
  }
  DoctorOptions options = c.options;
  options.trainer = find_trainer();
  if (options.trainer.find('/') == std::string::npos) {
    // On PATH, or nowhere.
    options.trainer.clear();
    if (const char* path = std::getenv("PATH")) {
      std::string dirs = path;
      for (size_t at = 0; at <= dirs.size();) {
        size_t end = dirs.find(':', at);
        if (end == std::string::npos) end = dirs.size();
        std::string candidate = dirs.substr(at, end - at) + "/sluice-train";
        if (end > at && ::access(candidate.c_str(), X_OK) == 0) {
          options.trainer = candidate;
          break;
        }
        at = end + 1;
      }
    }
  }
  DoctorReport report = run_doctor(options);
  std::fputs((c.json ? format_doctor_json(report) : format_doctor_text(report)).c_str(), stdout);
  int rc = kExitOk;
  for (const Check& ch : report.checks) {
    if (ch.level == "fail") rc = kExitFailure;
  }
  for (const std::string& r : c.require) {
    bool have = r == "gpu"          ? !report.gpus.empty()
                : r == "cuda-build" ? report.cuda_build
                                    : report.torch_build;
    if (!have) {
      std::fprintf(stderr, "sluice doctor: required capability missing: %s\n",
                   r == "gpu"          ? "a GPU (no NVIDIA driver or no device)"
                   : r == "cuda-build" ? "the CUDA build of sluice"
                                       : "LibTorch (sluice-train)");
      rc = kExitFailure;
    }
  }
  return rc;
}

}  // namespace

void register_doctor(CLI::App& app, int* exit_code) {
  auto c = std::make_shared<DoctorCli>();
  CLI::App* sub =
      app.add_subcommand("doctor", "Check this machine: CPU, memory, disk, libraries, GPUs, CUDA");
  sub->add_option("--data", c->options.data_dir,
                  "A data folder: free space and measured sequential read speed");
  sub->add_option("--require", c->require,
                  "Exit 1 unless present: gpu, cuda-build, torch (repeatable)");
  sub->add_flag("--json", c->json, "Print the report as JSON");
  sub->callback([c, exit_code] { *exit_code = run(*c); });
}

}  // namespace sluice::cli
