// sluice: the command-line tool. One file per subcommand (src/cli/*.cc).
#include <CLI/CLI.hpp>

#include "cli/common.h"

int main(int argc, char** argv) {
  sluice::cli::set_command_line(argc, argv);
  CLI::App app{
      "sluice: turns image folders into TFRecord shards and streams them, decoded and "
      "augmented, into training at the speed of the hardware."};
  app.set_version_flag("--version", "sluice " SLUICE_VERSION);
  app.require_subcommand(1);
  int exit_code = sluice::cli::kExitOk;
  sluice::cli::register_synth(app, &exit_code);
  sluice::cli::register_convert(app, &exit_code);
  sluice::cli::register_inspect(app, &exit_code);
  sluice::cli::register_bench(app, &exit_code);
  sluice::cli::register_doctor(app, &exit_code);
  sluice::cli::register_advise(app, &exit_code);
  sluice::cli::register_top(app, &exit_code);
  sluice::cli::register_train(app, &exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : sluice::cli::kExitUsage;
  }
  return exit_code;
}
