// sluice train DATA --ablation: the plain CLI runs sluice-train once per
// rung, reads each rung's --summary, and prints the table (and writes
// --json and --report). It needs no LibTorch itself.
#include "cli/train_ablation.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <thread>

#include "base/file_util.h"
#include "cli/bench_report.h"
#include "cli/common.h"
#include "ops/doctor.h"
#include "ops/report.h"

namespace sluice::cli {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

// What --ablation takes from the command line; everything else is passed
// to every rung as given.
struct LadderCli {
  std::string data;
  std::string split = "train";
  std::string raw, json_file, report_file, device, logdir, checkpoint_dir;
  int gpus = 0;             // --gpus: rung 4's count (default: every visible GPU)
  bool work_given = false;  // --epochs or --max-steps
  std::string work;         // in words, for the table's heading
  std::vector<std::string> pass;
};

// What each of sluice-train's train options takes ("flag", "value" or
// "values"), from `sluice-train train --list-options`: the ladder must
// tell DATA from an option's value, and a copy of the trainer's flags here
// would drift (a new flag read as taking a value swallows DATA).
Result<std::map<std::string, std::string>> trainer_options(const std::string& trainer) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return errno_error("pipe", "create", errno);
  pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(fds[1], STDOUT_FILENO);
    const char* argv[] = {trainer.c_str(), "train", "--list-options", nullptr};
    ::execvp(argv[0], const_cast<char* const*>(argv));
    ::_exit(127);
  }
  ::close(fds[1]);
  if (pid < 0) {
    ::close(fds[0]);
    return errno_error(trainer, "fork", errno);
  }
  std::string text;
  char buf[4096];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof(buf))) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    text.append(buf, static_cast<size_t>(n));
  }
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  std::map<std::string, std::string> out;
  for (size_t at = 0; at < text.size();) {
    size_t nl = text.find('\n', at);
    if (nl == std::string::npos) nl = text.size();
    const std::string line = text.substr(at, nl - at);
    at = nl + 1;
    const size_t sp = line.find(' ');
    if (sp != std::string::npos) out[line.substr(0, sp)] = line.substr(sp + 1);
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || !out.count("--epochs")) {
    return failed_precondition_error(fmt::format(
        "--ablation: {} does not list its options (is it this sluice's trainer? `sluice doctor` "
        "finds it)",
        trainer));
  }
  return out;
}

// Set per rung by the ladder, or meaningless across rungs.
const std::set<std::string>& ladder_owned() {
  static const std::set<std::string> s = {
      "--amp",         "--procs",     "--workers",    "--prefetch",  "--gpu-decode",
      "--gpu-augment", "--summary",   "--resume",     "--synthetic", "--val",
      "--no-val",      "--init-from", "--world-size", "--rank"};
  return s;
}

// The ladder's own options, which take a value.
const std::set<std::string>& ladder_options() {
  static const std::set<std::string> s = {"--raw", "--json", "--report"};
  return s;
}

// An option of the ladder's with its value: the ladder's own, those it
// reads (and passes on or splits per rung), and the rest passed to every rung.
Status take_value(const std::string& a, const std::string& value, LadderCli* c) {
  if (a == "--raw") {
    c->raw = value;
  } else if (a == "--json") {
    c->json_file = value;
  } else if (a == "--report") {
    c->report_file = value;
  } else if (a == "--device") {
    c->device = value;
  } else if (a == "--logdir") {
    c->logdir = value;
  } else if (a == "--checkpoint-dir") {
    c->checkpoint_dir = value;
  } else if (a == "--gpus") {
    char* end = nullptr;
    long n = std::strtol(value.c_str(), &end, 10);
    if (value.empty() || *end != '\0' || n < 1 || n > 256)
      return invalid_argument_error("--gpus: expected a number within 1..256, got '" + value + "'");
    c->gpus = static_cast<int>(n);
  } else {
    if (a == "--split") c->split = value;
    if (a == "--epochs" || a == "--max-steps") {
      c->work_given = true;
      c->work += (c->work.empty() ? "" : ", ") +
                 (a == "--epochs" ? value + " epoch(s)" : value + " steps at most");
    }
    c->pass.push_back(a);
    c->pass.push_back(value);
  }
  return Status();
}

Status parse(const std::vector<std::string>& args, const std::map<std::string, std::string>& known,
             LadderCli* c) {
  for (size_t i = 0; i < args.size(); ++i) {
    std::string a = args[i], value;
    bool has_value = false;
    if (a.rfind("--", 0) == 0 && a.find('=') != std::string::npos) {
      value = a.substr(a.find('=') + 1);
      a = a.substr(0, a.find('='));
      has_value = true;
    }
    if (a.empty() || a[0] != '-') {
      if (!c->data.empty())
        return invalid_argument_error("--ablation: one DATA only (got " + c->data + " and " + a +
                                      ")");
      c->data = a;
      continue;
    }
    if (a == "--ablation") continue;
    if (a == "-h" || a == "--help")
      return invalid_argument_error("--ablation: see `sluice train --help`");
    if (ladder_owned().count(a))
      return invalid_argument_error(a +
                                    ": set per rung by --ablation (or meaningless across "
                                    "rungs); leave it out");
    const auto it = known.find(a);
    if (it == known.end() && !ladder_options().count(a)) {
      return invalid_argument_error(a + ": not an option of sluice train");
    }
    if (it != known.end() && it->second == "flag") {
      c->pass.push_back(a);
      continue;
    }
    if (!has_value) {
      if (i + 1 >= args.size()) return invalid_argument_error(a + ": needs a value");
      value = args[++i];
    }
    SLUICE_RETURN_IF_ERROR(take_value(a, value, c));
  }
  if (c->data.empty()) return invalid_argument_error("--ablation: give DATA");
  if (!c->work_given) c->work = "1 epoch";
  return Status();
}

// GPUs this process may use: NVML's, narrowed by CUDA_VISIBLE_DEVICES.
int visible_gpus(const DoctorReport& d) {
  int n = static_cast<int>(d.gpus.size());
  const char* cvd = std::getenv("CUDA_VISIBLE_DEVICES");
  if (cvd == nullptr) return n;
  std::string v = cvd;
  if (v.empty() || v[0] == '-') return 0;
  int listed = 1 + static_cast<int>(std::count(v.begin(), v.end(), ','));
  return std::min(n, listed);
}

struct Rung {
  int number = 0;
  std::string name;
  std::string data;                // DATA or the raw folder
  std::vector<std::string> flags;  // this rung's own
  std::string skipped;
  std::string note;
};

// The ladder for this machine: which rungs run, on what, and why not.
std::vector<Rung> plan_rungs(const LadderCli& c, const LadderSources& src,
                             const std::string& device, int gpus, const DoctorReport& d) {
  bool cuda = device != "cpu";
  // Rungs 1-4 keep decode and augmentation on the CPU workers, as the
  // team's loader had them; rung 5 is the step that moves them.
  std::vector<std::string> cpu_path = {"--device", device};
  if (cuda) {
    for (const char* f : {"--gpu-decode", "off", "--gpu-augment", "off"}) cpu_path.push_back(f);
  }
  auto with = [](std::vector<std::string> a, std::initializer_list<const char*> b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
  };
  std::string no_shards = "DATA is an image folder, not shards (`sluice convert` makes them)";
  std::vector<Rung> r(5);
  r[0] = {1,
          "raw image files, no prefetch, fp32",
          src.raw,
          with(cpu_path, {"--workers", "1", "--prefetch", "1", "--amp", "off"}),
          src.raw.empty() ? src.no_raw : "",
          "image folder " + src.raw};
  r[1] = {2,
          "shards + parallel decode + prefetch",
          c.data,
          with(cpu_path, {"--amp", "off"}),
          src.shards ? "" : no_shards,
          "shards " + c.data};
  r[2] = {3,
          "+ mixed precision (bf16)",
          c.data,
          with(cpu_path, {"--amp", "bf16"}),
          src.shards ? "" : no_shards,
          ""};
  std::string n = std::to_string(gpus);
  std::vector<std::string> all_gpus = {"--gpus", n};
  if (cuda) {
    for (const char* f : {"--gpu-decode", "off", "--gpu-augment", "off"}) all_gpus.push_back(f);
  }
  r[3] = {4, "+ all local GPUs", c.data, with(all_gpus, {"--amp", "bf16"}), "", ""};
  if (!cuda) {
    r[3].skipped = device == "cpu" && gpus == 0 ? "no GPU" : "--device cpu";
  } else if (gpus < 2) {
    r[3].skipped = "one GPU";
  } else if (!src.shards) {
    r[3].skipped = no_shards;
  } else {
    r[3].note = n + " GPUs, one rank each";
  }
  std::vector<std::string> gpu_decode = gpus >= 2 ? std::vector<std::string>{"--gpus", n}
                                                  : std::vector<std::string>{"--device", device};
  r[4] = {5,      "+ GPU decode",
          c.data, with(gpu_decode, {"--amp", "bf16", "--gpu-decode", "on", "--gpu-augment", "on"}),
          "",     ""};
  if (!cuda) {
    r[4].skipped = device == "cpu" && gpus == 0 ? "no GPU" : "--device cpu";
  } else if (d.nvjpeg_major == 0) {
    r[4].skipped = "no nvJPEG (`sluice doctor` says where it looked)";
  } else if (!src.shards) {
    r[4].skipped = no_shards;
  }
  return r;
}

struct ChildResult {
  int code = 0;
  // The child's last "sluice train: ..." line, else its last line (a
  // command-line parser's complaint, say).
  std::string error;
};

// Runs one rung, its output echoed to stderr line by line under a prefix so
// that stdout keeps only the table. Ctrl-C reaches the child from the
// terminal (same process group) and it stops after a step; the ladder
// ignores SIGINT meanwhile and sees exit 130.
ChildResult run_child(const std::vector<std::string>& args, const std::string& prefix) {
  ChildResult out;
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return {1, std::string("pipe: ") + std::strerror(errno)};
  struct sigaction ignore {
  }, old_int{};
  ignore.sa_handler = SIG_IGN;
  ::sigaction(SIGINT, &ignore, &old_int);
  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid == 0) {
    ::signal(SIGINT, SIG_DFL);
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);  // a rung stops, with its checkpoint, if the ladder dies
    if (::getppid() != parent) ::_exit(1);
    ::dup2(fds[1], STDOUT_FILENO);
    ::dup2(fds[1], STDERR_FILENO);
    std::vector<char*> argv;
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execvp(argv[0], argv.data());
    std::fprintf(stderr, "sluice train: cannot run %s (%s)\n", argv[0], std::strerror(errno));
    ::_exit(127);
  }
  ::close(fds[1]);
  if (pid < 0) {
    ::close(fds[0]);
    ::sigaction(SIGINT, &old_int, nullptr);
    return {1, std::string("fork: ") + std::strerror(errno)};
  }
  std::string pending, last;
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(fds[0], buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    pending.append(buf, static_cast<size_t>(n));
    for (size_t nl; (nl = pending.find('\n')) != std::string::npos;) {
      std::string line = pending.substr(0, nl);
      pending.erase(0, nl + 1);
      std::fprintf(stderr, "%s%s\n", prefix.c_str(), line.c_str());
      if (line.rfind("sluice ", 0) == 0 && line.find(": ") != std::string::npos)
        out.error = line.substr(line.find(": ") + 2);
      if (line.find_first_not_of(" \t\r") != std::string::npos) last = line;
    }
  }
  if (!pending.empty()) {
    std::fprintf(stderr, "%s%s\n", prefix.c_str(), pending.c_str());
    last = pending;
  }
  if (out.error.empty()) out.error = last;
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  ::sigaction(SIGINT, &old_int, nullptr);
  out.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return out;
}

double num(const json& j, const char* key, double fallback = 0) {
  auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : fallback;
}

// A rung's figures, from its --summary.
AblationRow row_from(const Rung& g, const json& s, int cores) {
  AblationRow row;
  row.rung = fmt::format("{} {}", g.number, g.name);
  row.images_per_second = num(s, "images_per_second");
  row.cpu_cores_busy = num(s, "cpu_cores_busy");
  row.cpu_busy_percent = 100 * row.cpu_cores_busy / std::max(1, cores);
  row.data_wait_share = num(s, "data_wait_share");
  if (auto it = s.find("gpu_busy_percent"); it != s.end() && it->is_number())
    row.gpu_busy_percent = it->get<double>();
  const json& epoch = s.contains("epoch_seconds") ? s["epoch_seconds"] : json();
  if (epoch.is_object()) {
    row.epoch_seconds = num(epoch, "last");
  } else if (s.contains("epoch_seconds_projected") && s["epoch_seconds_projected"].is_number()) {
    row.epoch_seconds = num(s, "epoch_seconds_projected");
    row.epoch_projected = true;
  }
  std::string note = g.note;
  if (std::string p = s.value("pipeline", ""); !p.empty()) note += (note.empty() ? "" : "; ") + p;
  if (std::string gd = s.value("gpu_decode", ""); g.number == 5 && !gd.empty())
    note += "; GPU decode: " + gd;
  row.note = note;
  return row;
}

constexpr const char* kRowFormat = "%-40s %11s %10s %9s %9s %9s %10s\n";

void print_row(const AblationRow& r, double base) {
  if (!r.skipped.empty()) {
    bool ran = r.skipped.rfind("failed", 0) == 0 || r.skipped == "interrupted";
    std::printf("%-40s (%s%s)\n", r.rung.c_str(), ran ? "" : "skipped: ", r.skipped.c_str());
    return;
  }
  std::string epoch =
      r.epoch_seconds ? fmt::format("{}{:.1f} s", r.epoch_projected ? "~" : "", *r.epoch_seconds)
                      : "n/a";
  std::string gpu = r.gpu_busy_percent ? fmt::format("{:.0f} %", *r.gpu_busy_percent) : "n/a";
  std::printf(kRowFormat, r.rung.c_str(), epoch.c_str(),
              fmt::format("{:.0f}", r.images_per_second).c_str(),
              fmt::format("{:.2f}x", base > 0 ? r.images_per_second / base : 0).c_str(),
              gpu.c_str(), fmt::format("{:.0f} %", r.cpu_busy_percent.value_or(0)).c_str(),
              fmt::format("{:.0f} %", 100 * r.data_wait_share.value_or(0)).c_str());
  std::fflush(stdout);
}

json row_json(const Rung& g, const AblationRow& r, const std::vector<std::string>& args,
              const json& summary, double base) {
  auto opt = [](const std::optional<double>& v) { return v ? json(*v) : json(nullptr); };
  json j;
  j["rung"] = g.number;
  j["name"] = g.name;
  j["skipped"] = r.skipped.empty() ? json(nullptr) : json(r.skipped);
  j["data"] = g.data;
  j["epoch_seconds"] = opt(r.epoch_seconds);
  j["epoch_projected"] = r.epoch_projected;
  j["images_per_second"] = r.skipped.empty() ? json(r.images_per_second) : json(nullptr);
  j["speedup"] = r.skipped.empty() && base > 0 ? json(r.images_per_second / base) : json(nullptr);
  j["gpu_busy_percent"] = opt(r.gpu_busy_percent);
  j["cpu_cores_busy"] = r.skipped.empty() ? json(r.cpu_cores_busy) : json(nullptr);
  j["cpu_busy_percent"] = opt(r.cpu_busy_percent);
  j["data_wait_share"] = opt(r.data_wait_share);
  j["args"] = args;
  j["summary"] = summary;
  return j;
}

Status write_ladder_report(const LadderCli& c, const DoctorReport& d,
                           const std::vector<AblationRow>& rows, const std::string& note) {
  ReportInput in;
  in.title = "sluice train ablation";
  in.data = c.data;
  in.command_line = joined_command_line();
  in.generated_at = utc_now();
  in.version = SLUICE_VERSION;
  in.doctor_json = format_doctor_json(d);
  in.ablation = rows;
  in.ablation_note = note;
  SLUICE_ASSIGN_OR_RETURN(std::string page, render_report_html(in));
  return detail::write_file_atomic(c.report_file, page);
}

// Per-rung subfolders, so that rungs do not resume or append to each other.
void add_per_rung_folders(const LadderCli& c, int rung, std::vector<std::string>* args) {
  if (!c.logdir.empty()) {
    args->push_back("--logdir");
    args->push_back((fs::path(c.logdir) / fmt::format("rung-{}", rung)).string());
  }
  if (!c.checkpoint_dir.empty()) {
    args->push_back("--checkpoint-dir");
    args->push_back((fs::path(c.checkpoint_dir) / fmt::format("rung-{}", rung)).string());
  }
}

int usage(const Status& s) {
  std::fprintf(stderr, "sluice train: %s\n", std::string(s.message()).c_str());
  return kExitUsage;
}

}  // namespace

namespace {

// What the ladder found out about this machine before the first rung.
struct Ladder {
  std::string trainer;
  DoctorReport doctor;
  int gpus = 0;
  std::string device;
  LadderSources src;
  std::vector<Rung> rungs;
  int cores = 1;
  std::string setting;  // "1 epoch per rung, on cuda (16 cores)"
};

Ladder plan_ladder(const LadderCli& c) {
  Ladder l;
  l.trainer = find_trainer();
  DoctorOptions dopt;
  dopt.trainer = l.trainer;
  l.doctor = run_doctor(dopt);
  l.gpus = c.gpus > 0 ? c.gpus : visible_gpus(l.doctor);
  l.device = !c.device.empty() ? c.device : visible_gpus(l.doctor) > 0 ? "cuda" : "cpu";
  l.src = find_ladder_sources(c.data, c.split, c.raw);
  l.rungs = plan_rungs(c, l.src, l.device, l.gpus, l.doctor);
  l.cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  l.setting = fmt::format("{} per rung, on {} ({} cores)", c.work, l.device, l.cores);
  return l;
}

// One rung's command line: the passed options, its own, its folders, and
// the summary it writes for the ladder.
std::vector<std::string> rung_args(const LadderCli& c, const Ladder& l, const Rung& g,
                                   const std::string& summary_path) {
  std::vector<std::string> a = {l.trainer, "train", g.data};
  a.insert(a.end(), c.pass.begin(), c.pass.end());
  if (!c.work_given) a.insert(a.end(), {"--epochs", "1"});
  a.insert(a.end(), g.flags.begin(), g.flags.end());
  add_per_rung_folders(c, g.number, &a);
  a.insert(a.end(), {"--no-val", "--summary", summary_path});
  return a;
}

// Runs rung g (unless it is skipped or the ladder was interrupted) into
// its row and summary; *rc becomes 130 on Ctrl-C, 2 on a usage error (the
// same arguments would fail every rung), 1 on another failure.
AblationRow run_rung(const Rung& g, const std::vector<std::string>& args,
                     const std::string& summary_path, int cores, json* summary, int* rc) {
  AblationRow row;
  row.rung = fmt::format("{} {}", g.number, g.name);
  if (!g.skipped.empty() || *rc == 130) {
    row.skipped = *rc == 130 ? "interrupted" : g.skipped;
    return row;
  }
  ChildResult r = run_child(args, fmt::format("[rung {}] ", g.number));
  auto text = detail::read_file(summary_path, 1 << 20);
  if (text.ok()) *summary = json::parse(*text, nullptr, false);
  if (r.code == 0 && text.ok() && summary->is_object()) return row_from(g, *summary, cores);
  if (r.code == 130) {
    row.skipped = "interrupted";
    *rc = 130;
    return row;
  }
  row.skipped =
      fmt::format("failed (exit {}): {}", r.code, r.error.empty() ? "no summary written" : r.error);
  if (r.code == kExitUsage) *rc = kExitUsage;
  if (*rc == kExitOk) *rc = kExitFailure;
  return row;
}

Status write_ladder_json(const LadderCli& c, const Ladder& l, const json& rows) {
  json doc = {{"format", "sluice train ablation 1"},
              {"data", c.data},
              {"raw", l.src.raw},
              {"device", l.device},
              {"gpus", l.gpus},
              {"cores", l.cores},
              {"work", c.work},
              {"command_line", joined_command_line()},
              {"rungs", rows}};
  return detail::write_file_atomic(c.json_file,
                                   doc.dump(2, ' ', false, json::error_handler_t::replace) + "\n");
}

}  // namespace

int run_train_ablation(const std::vector<std::string>& args) {
  LadderCli c;
  auto known = trainer_options(find_trainer());
  if (!known.ok()) return report_error("train", known.status());
  if (Status s = parse(args, *known, &c); !s.ok()) return usage(s);
  // Before the rungs, which may take hours: fail now on a path that cannot be written.
  for (auto [flag, path] : {std::pair{"--report", c.report_file}, {"--json", c.json_file}}) {
    if (path.empty()) continue;
    if (Status s = check_report_path(path, flag); !s.ok()) return report_error("train", s);
  }
  const Ladder l = plan_ladder(c);
  std::error_code ec;
  fs::path tmp = fs::temp_directory_path(ec) / fmt::format("sluice-ablation-{}", ::getpid());
  fs::create_directories(tmp, ec);
  if (ec) return report_error("train", errno_error(tmp.string(), "cannot create", ec.value()));

  std::printf("ablation: %s, each rung a fresh sluice-train\n", l.setting.c_str());
  std::printf(kRowFormat, "rung", "epoch time", "images/s", "speed-up", "GPU busy", "CPU busy",
              "data wait");
  std::fflush(stdout);
  std::vector<AblationRow> rows;
  json rows_json = json::array();
  double base = 0;
  int rc = kExitOk;
  for (const Rung& g : l.rungs) {
    std::string summary_path = (tmp / fmt::format("rung-{}.json", g.number)).string();
    std::vector<std::string> a = rung_args(c, l, g, summary_path);
    json summary;
    AblationRow row = run_rung(g, a, summary_path, l.cores, &summary, &rc);
    if (row.skipped.empty() && base == 0) base = row.images_per_second;
    rows.push_back(row);
    rows_json.push_back(row_json(g, row, a, summary, base));
    print_row(row, base);
    if (rc == kExitUsage) break;
  }
  fs::remove_all(tmp, ec);

  std::string note = fmt::format(
      "{}, each rung a fresh sluice-train process. Speed-ups are against the first rung that "
      "ran. Epoch times marked ~ are stretched from the steps run to a whole epoch. GPU busy is "
      "NVML's mean utilisation of the GPUs used; CPU busy is the trainer's CPU time over wall "
      "time, as a share of the machine's cores; data wait is the share of step time spent "
      "waiting for batches.",
      l.setting);
  if (!c.json_file.empty()) {
    if (Status s = write_ladder_json(c, l, rows_json); !s.ok()) return report_error("train", s);
  }
  if (!c.report_file.empty()) {
    if (Status s = write_ladder_report(c, l.doctor, rows, note); !s.ok())
      return report_error("train", s);
    std::printf("report: %s\n", c.report_file.c_str());
  }
  return rc;
}

}  // namespace sluice::cli
