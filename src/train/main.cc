// sluice-train: `sluice train` and `sluice extract` (the sluice binary hands
// these two commands to this one, so that only they load LibTorch).
//
// `--gpus N` / `--procs N` start N ranks of this same command on this
// machine (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT set for
// each), as torchrun would; under torchrun, srun or mpirun it runs as the
// rank the environment names.
#include <arpa/inet.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "base/file_util.h"
#include "sluice/pipeline_options.h"
#include "sluice/train.h"

namespace sluice {
namespace {

constexpr int kExitOk = 0, kExitFailure = 1, kExitUsage = 2, kExitInterrupted = 130;

std::atomic<bool> g_stop{false};

// The launcher's ranks, for its signal handler: a fixed array written before
// the handler can see it (count published last), entries zeroed once reaped.
constexpr int kMaxRanks = 256;
pid_t g_children[kMaxRanks];
std::atomic<int> g_child_count{0};

void on_stop_signal(int sig) {
  int n = g_child_count.load();
  if (n > 0) {
    // The launcher: each rank is in its own process group, so this is the
    // only copy of the signal they get. They stop together at one step.
    for (int i = 0; i < n; ++i) {
      if (g_children[i] > 0) ::kill(g_children[i], sig);
    }
    return;
  }
  if (g_stop.exchange(true)) {
    // A second Ctrl-C: stop now, without the checkpoint.
    ::signal(sig, SIG_DFL);
    ::raise(sig);
  }
  static const char msg[] =
      "\nsluice train: stopping after this step (checkpoint and logs are flushed; Ctrl-C again "
      "to stop at once)\n";
  (void)!::write(STDERR_FILENO, msg, sizeof(msg) - 1);
}

void install_stop_handler() {
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);
}

// A free TCP port on the loopback interface for the rendezvous.
int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return 29500;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof(a);
  int port = 29500;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
    port = ntohs(a.sin_port);
  }
  ::close(fd);
  return port;
}

// Waits for the `n` ranks of g_children. A rank that fails takes the
// others down at once (SIGKILL: they would wait for it in a collective, and
// a catchable signal only asks them to stop after a step they cannot
// finish). A rank that stopped on request (130) is not a failure: the
// others are stopping at the same step. Returns the first failure's code.
int wait_for_ranks(int n) {
  int result = kExitOk;
  for (int left = n; left > 0;) {
    int status = 0;
    pid_t pid = ::wait(&status);
    if (pid < 0) {
      if (errno == EINTR) continue;
      break;
    }
    --left;
    for (int i = 0; i < n; ++i) {
      if (g_children[i] == pid) g_children[i] = 0;
    }
    // A rank killed by a signal failed, whatever the signal: only a rank
    // that exited 130 itself stopped at the agreed step.
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (code == kExitOk) continue;
    if (WIFEXITED(status) && code == kExitInterrupted) {
      if (result == kExitOk) result = code;
      continue;
    }
    if (result == kExitOk || result == kExitInterrupted) {
      result = code;
      for (int i = 0; i < n; ++i) {
        if (g_children[i] > 0) ::kill(g_children[i], SIGKILL);
      }
    }
  }
  return result;
}

// Starts `n` ranks of this command and waits for them. The first rank to
// fail takes the others down (they would wait on it in a collective).
int launch_ranks(int n, char** argv) {
  if (n > kMaxRanks) {
    std::fprintf(stderr, "sluice train: at most %d ranks on one machine\n", kMaxRanks);
    return kExitUsage;
  }
  std::string port = std::to_string(free_port());
  // Each rank gets its share of the cores for LibTorch's threads, unless
  // the user said otherwise.
  long cores = std::max(1L, ::sysconf(_SC_NPROCESSORS_ONLN));
  std::string threads = std::to_string(std::max(1L, cores / n));
  // No signal handling while the array fills: a Ctrl-C now waits a moment.
  sigset_t block, old;
  sigemptyset(&block);
  sigaddset(&block, SIGINT);
  sigaddset(&block, SIGTERM);
  ::sigprocmask(SIG_BLOCK, &block, &old);
  install_stop_handler();
  pid_t launcher = ::getpid();
  for (int r = 0; r < n; ++r) {
    pid_t pid = ::fork();
    if (pid < 0) {
      std::perror("sluice train: fork");
      for (int i = 0; i < r; ++i) ::kill(g_children[i], SIGKILL);
      return kExitFailure;
    }
    if (pid == 0) {
      // Its own process group: the terminal's Ctrl-C reaches the launcher
      // only, which passes it on once. Dies with the launcher.
      ::setpgid(0, 0);
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != launcher) ::_exit(kExitFailure);
      // Ignored until the rank installs its own handler (first thing in
      // main): a Ctrl-C while LibTorch loads must not kill one rank alone.
      ::signal(SIGINT, SIG_IGN);
      ::signal(SIGTERM, SIG_IGN);
      ::sigprocmask(SIG_SETMASK, &old, nullptr);
      ::setenv("RANK", std::to_string(r).c_str(), 1);
      ::setenv("LOCAL_RANK", std::to_string(r).c_str(), 1);
      ::setenv("WORLD_SIZE", std::to_string(n).c_str(), 1);
      ::setenv("LOCAL_WORLD_SIZE", std::to_string(n).c_str(), 1);
      ::setenv("MASTER_ADDR", "127.0.0.1", 1);
      ::setenv("MASTER_PORT", port.c_str(), 1);
      ::setenv("OMP_NUM_THREADS", threads.c_str(), 0);
      ::execv("/proc/self/exe", argv);
      std::perror("sluice train: exec");
      ::_exit(127);
    }
    g_children[r] = pid;
  }
  g_child_count.store(n);
  ::sigprocmask(SIG_SETMASK, &old, nullptr);

  return wait_for_ranks(n);
}

// The pipeline's options by name, from the shared table (pipeline_option_specs()).
void add_pipeline_options(CLI::App* sub, std::map<std::string, std::string>* values,
                          const std::map<std::string, std::string>& defaults) {
  for (const OptionSpec& spec : pipeline_option_specs()) {
    // The process group sets these; the trainer's --device is the pipeline's.
    if (spec.name == "rank" || spec.name == "world_size" || spec.name == "device") continue;
    auto d = defaults.find(spec.name);
    std::string def = d != defaults.end() ? d->second : spec.default_value;
    std::string help = spec.help + (def.empty() ? "" : " [" + def + "]");
    sub->add_option_function<std::string>(
        spec.flag, [values, name = spec.name](const std::string& v) { (*values)[name] = v; }, help);
  }
}

Status apply_options(const std::map<std::string, std::string>& values,
                     const std::map<std::string, std::string>& defaults, PipelineOptions* p) {
  std::map<std::string, std::string> all = defaults;
  for (const auto& [k, v] : values) all[k] = v;
  for (const OptionSpec& spec : pipeline_option_specs()) {
    auto it = all.find(spec.name);
    if (it == all.end()) continue;
    Status s = spec.set(it->second, p);
    if (!s.ok()) {
      return invalid_argument_error(spec.flag + " " +
                                    std::string(s.message()).substr(spec.name.size() + 2));
    }
  }
  return Status();
}

int report(const char* command, const Status& s) {
  std::string who;
  if (const char* r = std::getenv("RANK"); r != nullptr && std::getenv("WORLD_SIZE") != nullptr &&
                                           std::string(std::getenv("WORLD_SIZE")) != "1") {
    who = std::string("rank ") + r + ": ";
  }
  std::fprintf(stderr, "sluice %s: %s%s\n", command, who.c_str(), std::string(s.message()).c_str());
  return s.code() == StatusCode::kInvalidArgument ? kExitUsage : kExitFailure;
}

struct TrainCli {
  std::string data;
  std::vector<std::string> val;
  std::map<std::string, std::string> values;
  TrainOptions o;
  std::string amp = "off";
  int gpus = 0, procs = 0;
  bool pad = false;
  bool no_val = false;
  std::string summary_file;
  // Shown by --help; `sluice train` runs the ladder before this binary sees them.
  bool ablation = false;
  std::string raw, json_file, report_file;
};

// --summary: the run's figures for programs (the ablation ladder), written
// whole or not at all. Epoch times are those of whole epochs; with
// --max-steps cutting the first one short, epoch_seconds_projected
// stretches the steps run to a whole epoch.
Status write_summary(const std::string& path, const TrainCli& c, const TrainSummary& r) {
  using json = nlohmann::ordered_json;
  auto or_null = [](double v) { return v >= 0 ? json(v) : json(nullptr); };
  json j;
  j["format"] = "sluice train summary 1";
  j["data"] = c.o.pipeline.sources;
  j["split"] = c.o.pipeline.split;
  j["model"] = c.o.model;
  j["device"] = r.device;
  j["gpu"] = r.gpu.empty() ? json(nullptr) : json(r.gpu);
  j["world_size"] = r.world_size;
  j["amp"] = std::string(amp_name(c.o.amp));
  j["batch_size"] = c.o.pipeline.batch_size;
  j["steps"] = r.steps_run;
  j["batches_per_epoch"] = r.batches_per_epoch;
  j["images"] = r.images;
  j["seconds"] = r.seconds;
  j["images_per_second"] = r.seconds > 0 ? r.images / r.seconds : 0;
  j["epochs_completed"] = r.epochs.size();
  j["epoch_seconds"] = r.epochs.empty() ? json(nullptr)
                                        : json{{"first", r.epochs.front().seconds},
                                               {"last", r.epochs.back().seconds}};
  j["epoch_seconds_projected"] = r.steps_run > 0
                                     ? json(r.seconds / static_cast<double>(r.steps_run) *
                                            static_cast<double>(r.batches_per_epoch))
                                     : json(nullptr);
  j["data_wait_share"] = r.data_wait_share;
  j["cpu_cores_busy"] = r.cpu_cores_busy;
  j["gpu_busy_percent"] = or_null(r.gpu_busy_percent);
  j["pipeline"] = r.pipeline_tuning;
  j["gpu_decode"] = r.gpu_decode;
  j["stopped"] = r.stopped;
  return detail::write_file_atomic(path,
                                   j.dump(2, ' ', false, json::error_handler_t::replace) + "\n");
}

// Training defaults differ from bench's where a trainer needs them to: a
// smaller batch, and samples that fail to decode are skipped with a warning.
const std::map<std::string, std::string>& train_defaults() {
  static const std::map<std::string, std::string> d = {{"batch_size", "64"}};
  return d;
}

int run_train(TrainCli& c, char** argv) {
  if (c.ablation || !c.raw.empty() || !c.json_file.empty() || !c.report_file.empty()) {
    return report("train", invalid_argument_error(
                               "--ablation, --raw, --json and --report are the ladder's: run "
                               "`sluice train DATA --ablation ...`, which starts sluice-train "
                               "once per rung"));
  }
  int ranks = std::max(c.gpus, c.procs);
  if (c.gpus > 0 && c.procs > 0) {
    return report("train", invalid_argument_error("give --gpus or --procs, not both"));
  }
  if (c.gpus > 0 && c.o.device == "cpu") c.o.device = "cuda";
  if (ranks > 1 && c.o.device.rfind("cuda:", 0) == 0) {
    return report("train", invalid_argument_error(
                               "--device " + c.o.device +
                               " would put every rank on one GPU: give --device cuda (each rank "
                               "takes the GPU of its LOCAL_RANK)"));
  }
  if (ranks > 1 && std::getenv("RANK") == nullptr) return launch_ranks(ranks, argv);

  c.o.pipeline.sources = {c.data};
  if (Status s = apply_options(c.values, train_defaults(), &c.o.pipeline); !s.ok()) {
    return report("train", s);
  }
  if (c.pad) c.o.pipeline.drop_last = false;
  c.o.val_sources = c.val;
  c.o.validate = !c.no_val;
  if (c.no_val && !c.val.empty()) {
    return report("train", invalid_argument_error("give --val or --no-val, not both"));
  }
  auto amp = parse_amp(c.amp);
  if (!amp.ok()) return report("train", amp.status());
  c.o.amp = *amp;
  c.o.stop = &g_stop;
  install_stop_handler();
  auto r = train(c.o);
  if (!r.ok()) return report("train", r.status());
  bool leader = std::getenv("RANK") == nullptr || std::string(std::getenv("RANK")) == "0";
  if (leader && !c.o.quiet) {
    if (!r->epochs.empty()) {
      const EpochSummary& e = r->epochs.back();
      if (e.val_accuracy >= 0) {
        std::printf("held-out accuracy: %.1f%% (loss %.4f) after %d epoch%s\n",
                    100 * e.val_accuracy, e.val_loss, e.epoch, e.epoch == 1 ? "" : "s");
      }
    }
    if (!r->event_file.empty())
      std::printf("TensorBoard: tensorboard --logdir %s\n", c.o.logdir.c_str());
    if (!r->checkpoint.empty()) std::printf("checkpoint: %s\n", r->checkpoint.c_str());
  }
  if (leader && !c.summary_file.empty()) {
    if (Status s = write_summary(c.summary_file, c, *r); !s.ok()) return report("train", s);
  }
  if (g_stop.load()) return kExitInterrupted;
  return kExitOk;
}

struct ExtractCli {
  std::string data;
  std::map<std::string, std::string> values;
  ExtractOptions o;
  std::string amp = "off";
  std::string dtype = "float32";
};

int run_extract(ExtractCli& c) {
  c.o.pipeline.sources = {c.data};
  if (Status s = apply_options(c.values, train_defaults(), &c.o.pipeline); !s.ok()) {
    return report("extract", s);
  }
  if (c.dtype != "float32" && c.dtype != "float16") {
    return report("extract", invalid_argument_error("--features: expected float32 or float16"));
  }
  c.o.float16 = c.dtype == "float16";
  auto amp = parse_amp(c.amp);
  if (!amp.ok()) return report("extract", amp.status());
  c.o.amp = *amp;
  auto r = extract(c.o);
  if (!r.ok()) return report("extract", r.status());
  if (!c.o.quiet) {
    std::printf("%llu rows of %lld %s features (%s layer), %.0f images/s\n",
                static_cast<unsigned long long>(r->rows), static_cast<long long>(r->dim),
                c.o.float16 ? "float16" : "float32", r->layer.c_str(), r->images_per_second);
    std::printf("features: %s\nlabels:   %s\nkeys:     %s\nids:      %s\n",
                r->features_path.c_str(), r->labels_path.c_str(), r->keys_path.c_str(),
                r->ids_path.c_str());
  }
  return kExitOk;
}

// The recipe: model, epochs, optimiser, schedule, precision.
void add_recipe_options(CLI::App* cmd, TrainCli* t) {
  TrainOptions& o = t->o;
  cmd->add_option("--model", o.model, "seed-cnn | resnet18 | resnet50")->capture_default_str();
  cmd->add_option("--epochs", o.epochs, "Epochs")->capture_default_str();
  cmd->add_option("--lr", o.lr, "Peak learning rate")->capture_default_str();
  cmd->add_option("--optimizer", o.optimizer, "sgd | adam | adamw")->capture_default_str();
  cmd->add_option("--momentum", o.momentum, "SGD momentum")->capture_default_str();
  cmd->add_option("--weight-decay", o.weight_decay, "Weight decay")->capture_default_str();
  cmd->add_option("--schedule", o.schedule, "cosine | step | constant")->capture_default_str();
  cmd->add_option("--warmup", o.warmup_epochs, "Linear warm-up, in epochs")->capture_default_str();
  cmd->add_option("--step-size", o.step_size, "Schedule step: epochs between decays")
      ->capture_default_str();
  cmd->add_option("--step-gamma", o.step_gamma, "Schedule step: the decay factor")
      ->capture_default_str();
  cmd->add_option("--amp", t->amp, "Mixed precision: off | bf16 | fp16 (fp16: CUDA)")
      ->capture_default_str();
}

// Where it runs, what it writes, when it stops.
void add_run_options(CLI::App* cmd, TrainCli* t) {
  TrainOptions& o = t->o;
  cmd->add_option("--device", o.device, "cpu | cuda | cuda:N")->capture_default_str();
  cmd->add_option("--gpus", t->gpus, "Start one rank per GPU on this machine (NCCL)");
  cmd->add_option("--procs", t->procs, "Start N ranks on this machine (Gloo on CPUs)");
  cmd->add_option("--val", t->val, "Held-out data (default: the dataset's val split)");
  cmd->add_flag("--no-val", t->no_val, "No held-out data, not even the dataset's val split");
  cmd->add_option("--summary", t->summary_file,
                  "Write the run's figures as JSON at the end: images/s, epoch time, data "
                  "wait share, CPU cores and GPU busy (rank 0; what --ablation reads)");
  cmd->add_option("--logdir", o.logdir, "TensorBoard scalars here (rank 0)");
  cmd->add_option("--checkpoint-dir", o.checkpoint_dir, "Write last.pt here every epoch (rank 0)");
  cmd->add_option("--status", o.status_file, "Keep a live status file for `sluice top` (rank 0)");
  cmd->add_option("--checkpoint-every", o.checkpoint_every, "Also every N steps");
  cmd->add_flag("--resume", o.resume, "Continue from --checkpoint-dir's last.pt");
  cmd->add_option("--max-steps", o.max_steps, "Stop after N steps in all, with a checkpoint");
  cmd->add_option("--threads", o.threads, "LibTorch's threads (default: its own)");
  cmd->add_option("--log-every", o.log_every, "Steps between progress lines")
      ->capture_default_str();
}

// How a step is taken and from which weights; the data's last batch;
// --synthetic and --quiet. (After add_run_options: --help keeps its order.)
void add_step_options(CLI::App* cmd, TrainCli* t) {
  TrainOptions& o = t->o;
  cmd->add_option("--label-smoothing", o.label_smoothing, "Cross-entropy label smoothing")
      ->capture_default_str();
  cmd->add_flag("--nesterov", o.nesterov, "Nesterov momentum (SGD)");
  cmd->add_option("--clip-grad-norm", o.clip_grad_norm,
                  "Clip the gradients' global norm (0: no clipping)")
      ->capture_default_str();
  cmd->add_flag("--decay-all", o.decay_all,
                "Weight decay on biases and BatchNorm too (default: weights only)");
  cmd->add_option("--init-from", o.init_from,
                  "Start from another checkpoint's weights (fine-tuning; a head for other "
                  "classes starts fresh)");
  cmd->add_option("--bucket-mb", o.bucket_mb,
                  "All-reduce gradients in buckets of about this many MB")
      ->capture_default_str();
  cmd->add_flag("--synthetic", o.synthetic_data,
                "Train on one random batch made on the device (the compute-only ceiling)");
  cmd->add_flag("--pad", t->pad, "Keep the last partial batch (pad the epoch)");
  cmd->add_flag("-q,--quiet", o.quiet, "Only errors");
}

// The ladder's options: `sluice train --ablation` runs it, not sluice-train.
void add_ladder_options(CLI::App* cmd, TrainCli* t) {
  CLI::Option_group* ladder = cmd->add_option_group(
      "Ablation ladder",
      "`sluice train DATA --ablation`: the ladder of the original team, one fresh process per "
      "rung, each for --epochs (default 1) or --max-steps: (1) raw image files, one worker, no "
      "prefetch, fp32; (2) shards, parallel decode, prefetch; (3) + bf16; (4) + every local GPU; "
      "(5) + GPU decode. Prints epoch time, images/s, speed-up, GPU busy, CPU busy and data wait "
      "per rung; rungs this machine cannot run are skipped with the reason. Other options pass "
      "through to every rung; --amp, --workers, --prefetch, --procs, --gpu-decode and "
      "--gpu-augment are the ladder's");
  ladder->add_flag("--ablation", t->ablation, "Run the ladder");
  ladder->add_option("--raw", t->raw,
                     "Image folder for rung 1 (default: dataset.json's source for the split)");
  ladder->add_option("--json", t->json_file, "Write the rows, with each rung's summary, as JSON");
  ladder->add_option("--report", t->report_file, "Write the ladder as a self-contained HTML page");
}

CLI::App* register_train(CLI::App& app, int* exit_code, char** argv) {
  auto t = std::make_shared<TrainCli>();
  CLI::App* cmd = app.add_subcommand("train", "Train an image classifier on a dataset");
  cmd->add_option("data", t->data, "Dataset folder, record files, or an ImageFolder tree")
      ->required();
  add_pipeline_options(cmd, &t->values, train_defaults());
  add_recipe_options(cmd, t.get());
  add_run_options(cmd, t.get());
  add_step_options(cmd, t.get());
  add_ladder_options(cmd, t.get());
  cmd->callback([t, exit_code, argv] { *exit_code = run_train(*t, argv); });
  return cmd;
}

void register_extract(CLI::App& app, int* exit_code) {
  auto e = std::make_shared<ExtractCli>();
  CLI::App* cmd =
      app.add_subcommand("extract", "Write a trained model's features for every sample");
  cmd->add_option("data", e->data, "Dataset folder, record files, or an ImageFolder tree")
      ->required();
  add_pipeline_options(cmd, &e->values, train_defaults());
  cmd->add_option("--weights", e->o.weights, "A checkpoint from sluice train")->required();
  cmd->add_option("--out", e->o.out, "FEATURES.npy (+ .labels.npy, .keys.npy)")->required();
  cmd->add_option("--layer", e->o.layer, "Layer (default: the penultimate)");
  cmd->add_option("--features", e->dtype, "float32 | float16")->capture_default_str();
  cmd->add_option("--amp", e->amp, "off | bf16 | fp16")->capture_default_str();
  cmd->add_option("--device", e->o.device, "cpu | cuda | cuda:N")->capture_default_str();
  cmd->add_option("--threads", e->o.threads, "LibTorch's threads");
  cmd->add_flag("-q,--quiet", e->o.quiet, "Only errors");
  cmd->callback([e, exit_code] { *exit_code = run_extract(*e); });
}

// `sluice-train train --list-options`: each option of train and what it
// takes ("flag", "value" or "values"), so that `sluice train --ablation`
// tells DATA from an option's value by this table instead of a copy.
void list_options(const CLI::App* cmd) {
  for (const CLI::Option* opt : cmd->get_options()) {
    if (!opt->nonpositional()) continue;
    const int most = opt->get_expected_max();
    const char* takes = most == 0 ? "flag" : most == 1 ? "value" : "values";
    for (const std::string& name : opt->get_lnames()) std::printf("--%s %s\n", name.c_str(), takes);
    for (const std::string& name : opt->get_snames()) std::printf("-%s %s\n", name.c_str(), takes);
  }
}

}  // namespace
}  // namespace sluice

int main(int argc, char** argv) {
  using namespace sluice;
  // A rank (RANK set by a launcher) stops with the others at one step from
  // its first instant; the launcher itself installs its handler when it forks.
  if (std::getenv("RANK") != nullptr) install_stop_handler();
  CLI::App app{"sluice-train: training and feature extraction on LibTorch, fed by sluice"};
  // Lazily: asking LibTorch about CUDA costs time, and only --version needs it.
  app.set_version_flag("--version", std::function<std::string()>([] {
                         return std::string("sluice-train ") + SLUICE_VERSION + ", " +
                                torch_build_info();
                       }));
  app.require_subcommand(1);
  int exit_code = kExitOk;
  CLI::App* train_cmd = register_train(app, &exit_code, argv);
  register_extract(app, &exit_code);
  if (argc == 3 && std::string_view(argv[1]) == "train" &&
      std::string_view(argv[2]) == "--list-options") {
    list_options(train_cmd);
    return 0;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& err) {
    int rc = app.exit(err);
    return rc == 0 ? 0 : kExitUsage;
  }
  return exit_code;
}
