// sluice doctor: is this machine set up right for a long job?
#include "sluice/doctor.h"

#include <cstdio>

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
  DoctorReport report = run_doctor(c.options);
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
                                       : "LibTorch in this build");
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
