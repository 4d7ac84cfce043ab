// Shared pieces of the sluice command line: exit codes, error printing and
// the progress display. Each subcommand lives in its own file and registers
// itself through a register_* function.
#pragma once

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdint>
#include <string>

#include "sluice/status.h"

namespace sluice::cli {

// Exit statuses: 0 success; 1 the run failed (bad data, I/O); 2 bad usage.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;

// Prints "sluice CMD: message" to stderr and returns the exit status for it.
int report_error(const std::string& command, const Status& status);

// The command line as typed, for manifests.
std::string joined_command_line();
void set_command_line(int argc, char** argv);

// "2025-12-02 14:03 UTC", for reports.
std::string utc_now();

// A progress display on stderr: a bar redrawn in place on a terminal, a
// plain line every `plain_interval` otherwise (logs, CI).
class Progress {
 public:
  Progress(std::string label, std::string unit, bool quiet = false);
  // Reports `done` of `total` after `seconds`; rate-limited internally.
  void update(uint64_t done, uint64_t total, double seconds, bool final = false);

 private:
  std::string label_;
  std::string unit_;
  bool quiet_;
  bool tty_;
  std::chrono::steady_clock::time_point last_;
  bool drawn_ = false;
};

// Where an ablation ladder (bench's, train's) finds its data: the image
// folder for the raw-file rungs, and whether DATA is a shard dataset.
struct LadderSources {
  bool shards = false;  // DATA is records: a dataset folder (dataset.json) or record files
  std::string raw;      // the image folder; empty: none known
  std::string no_raw;   // why not, when raw is empty
};
// The image folder is `raw_flag` (--raw) when given, else the folder
// dataset.json says `split` was converted from, else DATA itself when it is
// an image folder rather than shards.
LadderSources find_ladder_sources(const std::string& data, const std::string& split,
                                  const std::string& raw_flag);

void register_synth(CLI::App& app, int* exit_code);
void register_convert(CLI::App& app, int* exit_code);
void register_inspect(CLI::App& app, int* exit_code);
void register_bench(CLI::App& app, int* exit_code);
void register_doctor(CLI::App& app, int* exit_code);
void register_advise(CLI::App& app, int* exit_code);
void register_top(CLI::App& app, int* exit_code);
void register_train(CLI::App& app, int* exit_code);

// sluice-train (LibTorch's half of sluice): beside this binary, in the build
// tree, else "sluice-train" for PATH.
std::string find_trainer();

}  // namespace sluice::cli
