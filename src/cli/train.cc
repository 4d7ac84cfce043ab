// sluice train / sluice extract: handed to sluice-train, the executable
// that links LibTorch, so that every other command starts without loading
// it. sluice-train is looked for next to this binary, then on PATH.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "cli/common.h"
#include "cli/train_ablation.h"

namespace sluice::cli {
namespace {

namespace fs = std::filesystem;

}  // namespace

std::string find_trainer() {
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    fs::path beside = self.parent_path() / "sluice-train";
    if (::access(beside.c_str(), X_OK) == 0) return beside.string();
    // The build tree: build/<preset>/src/cli/sluice -> build/<preset>/src/train/sluice-train
    fs::path tree = self.parent_path().parent_path() / "train" / "sluice-train";
    if (::access(tree.c_str(), X_OK) == 0) return tree.string();
  }
  return "sluice-train";  // PATH
}

namespace {

int hand_over(const std::string& command, const std::vector<std::string>& rest) {
  std::string trainer = find_trainer();
  std::vector<std::string> args = {trainer, command};
  args.insert(args.end(), rest.begin(), rest.end());
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  ::execvp(trainer.c_str(), argv.data());
  int err = errno;
  std::fprintf(stderr,
               "sluice %s: cannot run %s (%s). This sluice was built without LibTorch: install "
               "libtorch-dev and libgloo-dev (Debian) or PyTorch, then rebuild (README: "
               "Training).\n",
               command.c_str(), trainer.c_str(), std::strerror(err));
  return kExitFailure;
}

void add(CLI::App& app, const std::string& name, const std::string& help, int* exit_code) {
  CLI::App* sub = app.add_subcommand(name, help);
  sub->allow_extras();
  sub->prefix_command();
  sub->set_help_flag();  // --help goes to sluice-train too
  sub->callback([sub, name, exit_code] {
    std::vector<std::string> rest = sub->remaining();
    // The ladder runs sluice-train once per rung, so it lives on this side.
    bool ladder =
        name == "train" && std::find(rest.begin(), rest.end(), "--ablation") != rest.end();
    *exit_code = ladder ? run_train_ablation(rest) : hand_over(name, rest);
  });
}

}  // namespace

void register_train(CLI::App& app, int* exit_code) {
  add(app, "train", "Train an image classifier (LibTorch; `sluice train --help`)", exit_code);
  add(app, "extract", "Write a trained model's features (LibTorch; `sluice extract --help`)",
      exit_code);
}

}  // namespace sluice::cli
