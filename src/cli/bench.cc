// sluice bench DATA: run the input pipeline flat out and say where the time
// goes. Also the digest (reproducibility checks), state save/restore, the
// decode ceiling and plan floor, the ablation ladder, and the HTML report.
#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>
#include <tuple>

#include "base/file_util.h"
#include "cli/bench_report.h"
#include "cli/common.h"
#include "ops/doctor.h"
#include "ops/report.h"
#include "pipeline/run_status.h"
#include "pipeline/stats_json.h"
#include "sluice/gpu_monitor.h"
#include "sluice/pipeline.h"
#include "sluice/pipeline_options.h"
#include "sluice/record.h"
#include "sluice/telemetry.h"

namespace sluice::cli {
namespace {

using json = nlohmann::ordered_json;
using Clock = std::chrono::steady_clock;

struct BenchCli {
  std::string data;
  PipelineOptions p;
  // Pipeline options as typed, by name (pipeline_option_specs()).
  std::vector<std::pair<std::string, std::string>> given;
  std::map<std::string, std::string> values;
  int epochs = 1;
  int64_t max_batches = -1;
  bool pad = false;
  bool digest = false, ceiling = false, ablation = false, quiet = false;
  std::string json_file, logdir, state_in, state_out, raw_dir, trace_file, status_file;
  std::string report_file;
};

// A 64-bit digest of a batch: two CRC32Cs (different seeds) over the image
// bytes then the labels. Equal digests mean identical batches. A batch on
// a GPU is copied back to `host` first.
Result<uint64_t> batch_digest(const Batch& b, std::vector<uint8_t>* host) {
  const void* data = b.data();
  if (b.device() >= 0) {
    host->resize(b.bytes());
    SLUICE_RETURN_IF_ERROR(b.copy_to_host(host->data()));
    data = host->data();
  }
  std::string_view images(static_cast<const char*>(data), b.bytes());
  std::string_view labels(reinterpret_cast<const char*>(b.labels()), b.size() * sizeof(int64_t));
  uint32_t lo = crc32c_extend(crc32c(images), labels);
  uint32_t hi = crc32c_extend(crc32c_extend(0x9e3779b9u, images), labels);
  return (uint64_t{hi} << 32) | lo;
}

struct RunResult {
  uint64_t images = 0, batches = 0, image_bytes_out = 0;
  double seconds = 0, cpu_seconds = 0;
  PipelineStats stats;
  std::vector<SampleEvent> events;
  PipelineState state;
  uint64_t digest_all = 0;
  bool digest_any = false;
  std::vector<TraceSpan> spans;
  double gpu_busy_percent = -1;  // on a GPU, where NVML answers
};

// Chrome's trace event format (chrome://tracing, Perfetto): one track per
// worker plus the consumer, a complete event ("X") per span, in us.
Status write_trace(const std::string& path, const std::vector<TraceSpan>& spans, int workers) {
  json events = json::array();
  for (int w = 0; w < workers; ++w) {
    events.push_back({{"name", "thread_name"},
                      {"ph", "M"},
                      {"pid", 1},
                      {"tid", w},
                      {"args", {{"name", fmt::format("worker {}", w)}}}});
  }
  events.push_back({{"name", "thread_name"},
                    {"ph", "M"},
                    {"pid", 1},
                    {"tid", 1000},
                    {"args", {{"name", "consumer"}}}});
  uint64_t t0 = UINT64_MAX;
  for (const TraceSpan& s : spans) t0 = std::min(t0, s.start_ns);
  for (const TraceSpan& s : spans) {
    events.push_back({{"name", s.name},
                      {"cat", s.track < 0 ? "consumer" : "sample"},
                      {"ph", "X"},
                      {"pid", 1},
                      {"tid", s.track < 0 ? 1000 : s.track},
                      {"ts", (s.start_ns - t0) / 1e3},
                      {"dur", (s.end_ns - s.start_ns) / 1e3},
                      {"args", {{s.track < 0 ? "batch" : "sample", s.sample}}}});
  }
  json doc = {{"traceEvents", events}, {"displayTimeUnit", "ms"}};
  return detail::write_file_atomic(path, doc.dump() + "\n");
}

Result<PipelineState> read_state(const std::string& path) {
  SLUICE_ASSIGN_OR_RETURN(std::string text, detail::read_file(path, 1 << 20));
  return parse_pipeline_state(text, path);
}

// The GPUs the status file reports (NVML), opened once when --status is given.
const GpuMonitor* g_status_gpus = nullptr;

// The live status `sluice top` shows (pipeline/run_status.h).
void update_status(RunStatusWriter& w, const Pipeline& pipe, double wall, uint64_t images,
                   uint64_t batches, double cpu_seconds, bool done) {
  if (!w.due(done)) return;
  RunStatus run;
  run.seconds = wall;
  run.images = images;
  run.batches = batches;
  run.cpu_cores_busy = wall > 0 ? cpu_seconds / wall : 0;
  run.done = done;
  if (g_status_gpus != nullptr) {
    run.gpu_names = g_status_gpus->names();
    run.gpu_samples = g_status_gpus->sample();
  }
  if (Status s = w.write(run, pipe.stats()); !s.ok()) {
    std::fprintf(stderr, "sluice bench: warning: %s; no more status updates\n",
                 std::string(s.message()).c_str());
  }
}

// One sample of the run's figures, to both logs: the JSON line first, so a
// reader that finds a step in the (flushed) event file also finds its line.
// Both carry the same Unix wall time, which TensorBoard's wall_time means.
Status log_figures(TensorBoardWriter* tb, JsonLinesWriter* jsonl, int64_t step,
                   const std::map<std::string, double>& figures) {
  double wall = unix_seconds();
  if (jsonl) SLUICE_RETURN_IF_ERROR(jsonl->write(step, wall, figures));
  if (!tb) return Status();
  for (const auto& [name, value] : figures) {
    SLUICE_RETURN_IF_ERROR(tb->add_scalar("bench/" + name, static_cast<float>(value), step, wall));
  }
  return tb->flush();
}

// On a GPU: its busy share while the pipeline runs, sampled from NVML five
// times a second on a thread of its own (where NVML answers).
class GpuBusySampler {
 public:
  explicit GpuBusySampler(int device) {
    if (device < 0) return;
    auto g = GpuMonitor::open();
    if (!g.ok()) return;
    gpu_ = std::move(g).value();
    thread_ = std::jthread([this, dev = static_cast<size_t>(device)](std::stop_token st) {
      while (!st.stop_requested()) {
        auto now = gpu_->sample();
        if (dev < now.size() && now[dev].utilization >= 0) {
          sum_ = sum_ + now[dev].utilization;
          ++n_;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
      }
    });
  }
  // Stops sampling; the mean busy percent, or -1 without samples.
  double finish() {
    if (!thread_.joinable()) return -1;
    thread_.request_stop();
    thread_.join();
    return n_ > 0 ? sum_ / n_ : -1;
  }

 private:
  std::unique_ptr<GpuMonitor> gpu_;
  std::atomic<double> sum_{0};
  std::atomic<int> n_{0};
  std::jthread thread_;  // last: joined before the rest goes
};

// --digest: one line per batch, and the running digest of them all.
struct Digests {
  uint32_t lo = 0, hi = 0x9e3779b9u;
  std::vector<uint8_t> host;
  Status add(const Batch& b, RunResult* r) {
    SLUICE_ASSIGN_OR_RETURN(uint64_t d, batch_digest(b, &host));
    std::printf("digest %llu %llu %016llx\n", static_cast<unsigned long long>(b.epoch()),
                static_cast<unsigned long long>(b.index()), static_cast<unsigned long long>(d));
    std::string_view dv(reinterpret_cast<const char*>(&d), sizeof(d));
    lo = crc32c_extend(lo, dv);
    hi = crc32c_extend(hi, dv);
    r->digest_any = true;
    return Status();
  }
};

// Once a second, the run's figures to --logdir.
Status log_progress(TensorBoardWriter* tb, JsonLinesWriter* jsonl, const Pipeline& pipe,
                    const RunResult& r, double wall, double cpu_seconds, double rate) {
  PipelineStats now = pipe.stats();
  return log_figures(tb, jsonl, static_cast<int64_t>(r.batches),
                     {{"images_per_second", rate},
                      {"consumer_wait_share", wall > 0 ? now.consumer_wait_seconds / wall : 0},
                      {"cpu_cores_busy", wall > 0 ? cpu_seconds / wall : 0},
                      {"workers_active", now.active_workers}});
}

Result<RunResult> run_pipeline(const PipelineOptions& po, int epochs, int64_t max_batches,
                               std::optional<PipelineState> start, bool digest,
                               TensorBoardWriter* tb, JsonLinesWriter* jsonl = nullptr,
                               const std::string& status_path = "",
                               SeriesRecorder* recorder = nullptr) {
  SLUICE_ASSIGN_OR_RETURN(auto pipe, Pipeline::create(po));
  RunResult r;
  PipelineState s = start.value_or(PipelineState{0, 0});
  SLUICE_RETURN_IF_ERROR(pipe->restore(s));
  auto cpu0 = sample_process();
  const auto t0 = Clock::now();
  auto since_start = [&] { return std::chrono::duration<double>(Clock::now() - t0).count(); };
  auto cpu_since_start = [&] {
    auto cpu = sample_process();
    return cpu.ok() && cpu0.ok() ? cpu->cpu_seconds - cpu0->cpu_seconds : 0.0;
  };
  if (recorder) recorder->start(pipe->stats());
  auto last_log = t0;
  RunStatusWriter status(status_path, "bench");
  uint64_t images_at_log = 0;
  Digests digests;
  GpuBusySampler gpu(po.device);
  const uint64_t limit = max_batches >= 0 ? static_cast<uint64_t>(max_batches) : UINT64_MAX;
  for (uint64_t epoch = s.epoch; epoch < static_cast<uint64_t>(epochs) && r.batches < limit;
       ++epoch) {
    if (epoch != s.epoch) SLUICE_RETURN_IF_ERROR(pipe->set_epoch(epoch));
    while (r.batches < limit) {
      auto b = pipe->next();
      if (b.status().code() == StatusCode::kOutOfRange) break;
      if (!b.ok()) return b.status();
      r.images += b->size();
      r.image_bytes_out += b->bytes();
      ++r.batches;
      if (recorder) recorder->poll(*pipe, r.images);
      if (digest) SLUICE_RETURN_IF_ERROR(digests.add(*b, &r));
      if (status.due(false)) {
        update_status(status, *pipe, since_start(), r.images, r.batches, cpu_since_start(), false);
      }
      if (tb && Clock::now() - last_log > std::chrono::seconds(1)) {
        double secs = std::chrono::duration<double>(Clock::now() - last_log).count();
        SLUICE_RETURN_IF_ERROR(log_progress(tb, jsonl, *pipe, r, since_start(), cpu_since_start(),
                                            (r.images - images_at_log) / secs));
        images_at_log = r.images;
        last_log = Clock::now();
      }
    }
  }
  r.seconds = since_start();
  r.gpu_busy_percent = gpu.finish();
  r.cpu_seconds = cpu_since_start();
  r.stats = pipe->stats();
  if (recorder) recorder->finish(r.stats, r.images);
  r.events = pipe->events();
  update_status(status, *pipe, r.seconds, r.images, r.batches, r.cpu_seconds, true);
  if (po.trace) r.spans = pipe->trace();
  r.state = pipe->state();
  r.digest_all = (uint64_t{digests.hi} << 32) | digests.lo;
  return r;
}

Status parse_options(BenchCli& c) {
  PipelineOptions& p = c.p;
  p.sources = {c.data};
  for (const OptionSpec& spec : pipeline_option_specs()) {
    auto it = c.values.find(spec.name);
    if (it == c.values.end()) continue;
    Status s = spec.set(it->second, &p);
    if (!s.ok())
      return invalid_argument_error(spec.flag + " " +
                                    std::string(s.message()).substr(spec.name.size() + 2));
  }
  if (c.pad) p.drop_last = false;
  p.trace = !c.trace_file.empty();
  if (c.epochs < 1) return invalid_argument_error("--epochs must be at least 1");
  return Status();
}

// On a device: where augmentation and decoding ran, and what it cost.
void print_device_summary(const RunResult& r) {
  const PipelineStats& st = r.stats;
  std::printf(
      "device: cuda:%d, augmentation on the %s; host-to-device %.1f MB at %.1f GB/s (device "
      "time), kernel %.2f ms a batch%s\n",
      st.device, st.gpu_augment.c_str(), st.h2d_bytes / 1e6,
      st.h2d_seconds > 0 ? st.h2d_bytes / st.h2d_seconds / 1e9 : 0.0,
      r.batches > 0 ? 1e3 * st.kernel_seconds / r.batches : 0.0,
      r.gpu_busy_percent >= 0 ? fmt::format(", GPU busy {:.0f} %", r.gpu_busy_percent).c_str()
                              : ", GPU busy n/a (no NVML)");
  auto rate = [&](uint64_t n) { return r.seconds > 0 ? n / r.seconds : 0.0; };
  std::printf(
      "decode tiers: hardware %llu (%.0f images/s), CUDA %llu (%.0f images/s), CPU %llu "
      "(%.0f images/s); %llu redone on another tier; GPU decoding: %s\n",
      static_cast<unsigned long long>(st.decoded_hardware), rate(st.decoded_hardware),
      static_cast<unsigned long long>(st.decoded_cuda), rate(st.decoded_cuda),
      static_cast<unsigned long long>(st.decoded_cpu), rate(st.decoded_cpu),
      static_cast<unsigned long long>(st.gpu_decode_fallbacks), st.gpu_decode.c_str());
  if (st.gpu_decode_allocations > 0) {
    std::printf(
        "GPU decode memory: %llu allocations, %llu of them replacing a buffer; strict "
        "bitstream checks %s\n",
        static_cast<unsigned long long>(st.gpu_decode_allocations),
        static_cast<unsigned long long>(st.gpu_decode_reallocations),
        st.gpu_decode_strict ? "on" : "off (the library refused the flag)");
  }
  for (const std::string& why : st.nvjpeg_refused)
    std::printf("nvJPEG passed over: %s\n", why.c_str());
}

void print_summary(const BenchCli& c, const RunResult& r, const Verdict& v, uint64_t peak_rss) {
  const PipelineStats& st = r.stats;
  double ips = r.seconds > 0 ? r.images / r.seconds : 0;
  uint64_t read_bytes = 0;
  for (const StageSnapshot& s : st.stages) {
    if (s.name == "read") read_bytes = s.bytes;
  }
  std::printf(
      "%llu images in %llu batches, %.2f s: %.0f images/s, %.1f MB/s of encoded images read, %.1f "
      "MB/s of batches\n",
      static_cast<unsigned long long>(r.images), static_cast<unsigned long long>(r.batches),
      r.seconds, ips, r.seconds > 0 ? read_bytes / r.seconds / 1e6 : 0,
      r.seconds > 0 ? r.image_bytes_out / r.seconds / 1e6 : 0);
  std::printf("engine: %s\n", st.tuning.c_str());
  std::printf("stages (busy share of %d workers):", st.workers);
  double idle = 0;
  for (const StageSnapshot& s : st.stages) {
    if (s.name == "idle") idle = s.wait_ns / 1e9;
    if (!is_worker_stage(s.name)) continue;
    std::printf("  %s %.0f %%", s.name.c_str(), 100 * busy_share(s, r.seconds, r.stats.workers));
  }
  std::printf(
      "\nwaiting: the consumer waited %.0f %% of the time for batches; workers waited %.0f %% of "
      "theirs "
      "for a free slot\n",
      r.seconds > 0 ? 100 * st.consumer_wait_seconds / r.seconds : 0.0,
      r.seconds > 0 ? 100 * idle / (r.seconds * st.workers) : 0.0);
  int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::printf("CPU: %.2f cores busy of %d (%.0f %%); peak RSS %.0f MB (memory budget %.0f MB)\n",
              r.seconds > 0 ? r.cpu_seconds / r.seconds : 0, cores,
              r.seconds > 0 ? 100 * r.cpu_seconds / r.seconds / cores : 0, peak_rss / 1e6,
              c.p.memory_budget / 1e6);
  if (st.device >= 0) print_device_summary(r);
  if (!r.events.empty()) {
    std::printf("bad samples: %zu (first: %s)\n", r.events.size(),
                r.events.front().to_string().c_str());
  }
  std::printf("verdict: %s\n", v.text.c_str());
}

// The ladder users climb, each rung for the same number of batches.
int run_ablation(const BenchCli& c, std::vector<AblationRow>* rows) {
  LadderSources src = find_ladder_sources(c.data, c.p.split, c.raw_dir);
  struct Rung {
    const char* name;
    bool use_raw;
    int workers, prefetch;
    bool crop;
  };
  const Rung rungs[] = {
      {"1 raw ImageFolder, one worker, no prefetch", true, 1, 1, false},
      {"2 raw files, parallel workers", true, 0, 0, false},
      {"3 shards, parallel, prefetch", false, 0, 0, false},
      {"4 + reduced-scale crop decode", false, 0, 0, true},
  };
  int64_t batches = c.max_batches > 0 ? c.max_batches : 10;
  std::printf("ablation: %lld batches of %d per rung, %dx%d\n", static_cast<long long>(batches),
              c.p.batch_size, c.p.sample.width, c.p.sample.height);
  std::printf("%-44s %12s %10s %8s\n", "rung", "images/s", "vs rung 1", "cores");
  double base = 0;
  for (const Rung& g : rungs) {
    PipelineOptions po = c.p;
    if (g.use_raw) {
      if (src.raw.empty()) {
        std::printf("%-44s %12s   (%s)\n", g.name, "-", src.no_raw.c_str());
        rows->push_back({g.name, 0, 0, src.no_raw});
        continue;
      }
      po.sources = {src.raw};
    } else if (!src.shards) {
      std::printf("%-44s %12s   (DATA is not a shard dataset)\n", g.name, "-");
      rows->push_back({g.name, 0, 0, "DATA is not a shard dataset"});
      continue;
    }
    po.workers = g.workers;
    po.prefetch = g.prefetch;
    po.crop_decode = g.crop;
    auto r = run_pipeline(po, 1000, batches, std::nullopt, false, nullptr);
    if (!r.ok()) return report_error("bench", r.status());
    double ips = r->seconds > 0 ? r->images / r->seconds : 0;
    double cores = r->seconds > 0 ? r->cpu_seconds / r->seconds : 0;
    if (base == 0) base = ips;
    std::printf("%-44s %12.0f %9.2fx %8.2f\n", g.name, ips, base > 0 ? ips / base : 0, cores);
    rows->push_back({g.name, ips, cores, ""});
  }
  return kExitOk;
}

// The figures of a run, as --json writes them and the report reads them.
json summary_json(const BenchCli& c, const RunResult& r, const Verdict& v, uint64_t peak,
                  const std::optional<ReferenceResult>& full,
                  const std::optional<ReferenceResult>& floor) {
  json j;
  j["format"] = "sluice bench 1";
  j["images_per_second"] = r.seconds > 0 ? r.images / r.seconds : 0;
  j["images"] = r.images;
  j["batches"] = r.batches;
  j["seconds"] = r.seconds;
  j["mb_per_second"] = r.seconds > 0 ? r.image_bytes_out / r.seconds / 1e6 : 0;
  j["workers"] = r.stats.workers;
  j["prefetch"] = r.stats.prefetch;
  j["tuning"] = r.stats.tuning;
  j["cpu_cores_busy"] = r.seconds > 0 ? r.cpu_seconds / r.seconds : 0;
  j["cores"] = std::max(1u, std::thread::hardware_concurrency());
  j["peak_rss_bytes"] = peak;
  j["memory_budget_bytes"] = c.p.memory_budget;
  j["consumer_wait_share"] = r.seconds > 0 ? r.stats.consumer_wait_seconds / r.seconds : 0;
  j["stages"] = stages_json(r.stats, r.seconds);
  j["bad_samples"] = r.events.size();
  j["verdict"] = v.text;
  j["verdict_kind"] = v.kind;
  j["bottleneck"] = v.bottleneck;
  if (r.stats.device >= 0) j["device"] = device_json(r.stats, r.seconds, r.gpu_busy_percent);
  if (r.stats.remote) j["remote"] = remote_json(r.stats);
  if (full) j["ceiling_images_per_second"] = full->images_per_second;
  if (floor) j["plan_floor_images_per_second"] = floor->images_per_second;
  json options = json::object();
  for (const OptionSpec& spec : pipeline_option_specs()) {
    auto it = c.values.find(spec.name);
    options[spec.name] = it != c.values.end() ? it->second : spec.default_value;
  }
  j["options"] = options;
  return j;
}

// The page, after the run: doctor examines the machine now rather than
// before, so its probes cannot disturb the measurement.
Status write_report(const BenchCli& c, const json& summary, const SeriesRecorder& recorder,
                    const GpuMonitor* gpu, const std::string& gpu_note,
                    const std::vector<AblationRow>& ablation) {
  ReportInput in;
  in.data = c.data;
  in.command_line = joined_command_line();
  in.generated_at = utc_now();
  in.version = SLUICE_VERSION;
  // Replace, not throw: option values are as typed, and may not be UTF-8.
  in.bench_json = summary.dump(-1, ' ', false, json::error_handler_t::replace);
  in.doctor_json = format_doctor_json(run_doctor({}));
  in.series = recorder.samples();
  if (gpu) in.gpu_names = gpu->names();
  in.gpu_note = gpu_note;
  in.ablation = ablation;
  SLUICE_ASSIGN_OR_RETURN(std::string page, render_report_html(in));
  return detail::write_file_atomic(c.report_file, page);
}

// What the usual run writes besides its summary: the logs (--logdir), the
// GPU monitor (--report, --status) and the report's time series.
struct BenchOutputs {
  std::unique_ptr<TensorBoardWriter> tb;
  std::unique_ptr<JsonLinesWriter> jsonl;
  std::unique_ptr<GpuMonitor> gpu;
  std::string gpu_note;  // why there is no monitor
  std::optional<SeriesRecorder> recorder;
};

Status open_outputs(const BenchCli& c, BenchOutputs* out) {
  if (!c.logdir.empty()) {
    SLUICE_ASSIGN_OR_RETURN(out->tb, TensorBoardWriter::create(c.logdir));
    SLUICE_ASSIGN_OR_RETURN(
        out->jsonl,
        JsonLinesWriter::create((std::filesystem::path(c.logdir) / "bench.jsonl").string()));
  }
  if (!c.report_file.empty() || !c.status_file.empty()) {
    auto g = GpuMonitor::open();
    if (g.ok()) {
      out->gpu = std::move(g).value();
    } else {
      out->gpu_note = std::string(g.status().message());
    }
    g_status_gpus = out->gpu.get();
  }
  if (!c.report_file.empty()) out->recorder.emplace(out->gpu.get());
  return Status();
}

// --ceiling: libjpeg-turbo decoding every pixel, and only the decode calls
// of sluice's plan, on as many threads, over as many images.
Status measure_ceiling(const BenchCli& c, const RunResult& r, std::optional<ReferenceResult>* full,
                       std::optional<ReferenceResult>* floor) {
  const double ips = r.seconds > 0 ? r.images / r.seconds : 0;
  const uint64_t n = std::max<uint64_t>(r.images, 256);
  SLUICE_ASSIGN_OR_RETURN(
      ReferenceResult a,
      measure_decode_reference(c.p, DecodeReference::kFullDecode, n, r.stats.workers));
  SLUICE_ASSIGN_OR_RETURN(
      ReferenceResult b,
      measure_decode_reference(c.p, DecodeReference::kPlanFloor, n, r.stats.workers));
  std::printf(
      "ceiling: libjpeg-turbo decoding every pixel of %llu of these images on %d threads: %.0f "
      "images/s "
      "(sluice %.2fx)\n",
      static_cast<unsigned long long>(a.images), r.stats.workers, a.images_per_second,
      a.images_per_second > 0 ? ips / a.images_per_second : 0);
  std::printf(
      "plan floor: only the decode calls sluice's plan makes: %.0f images/s (sluice's overhead "
      "above it: "
      "%.1f %%)\n",
      b.images_per_second, ips > 0 ? 100 * (b.images_per_second / ips - 1) : 0);
  *full = a;
  *floor = b;
  return Status();
}

// The usual run: the pipeline for --epochs, its summary and every file asked for.
Status bench(const BenchCli& c, const std::vector<AblationRow>& ablation) {
  std::optional<PipelineState> start;
  if (!c.state_in.empty()) {
    SLUICE_ASSIGN_OR_RETURN(start, read_state(c.state_in));
  }
  BenchOutputs out;
  SLUICE_RETURN_IF_ERROR(open_outputs(c, &out));
  SLUICE_ASSIGN_OR_RETURN(RunResult r, run_pipeline(c.p, c.epochs, c.max_batches, start, c.digest,
                                                    out.tb.get(), out.jsonl.get(), c.status_file,
                                                    out.recorder ? &*out.recorder : nullptr));
  if (c.digest && r.digest_any)
    std::printf("digest all %016llx\n", static_cast<unsigned long long>(r.digest_all));
  auto proc = sample_process();
  const uint64_t peak = proc.ok() ? proc->peak_rss_bytes : 0;
  const Verdict v = bottleneck_verdict(verdict_input(r.stats, r.seconds));
  if (!c.quiet) print_summary(c, r, v, peak);
  std::optional<ReferenceResult> full, floor;
  if (c.ceiling) SLUICE_RETURN_IF_ERROR(measure_ceiling(c, r, &full, &floor));
  if (out.tb) {
    const double ips = r.seconds > 0 ? r.images / r.seconds : 0;
    log_figures(out.tb.get(), out.jsonl.get(), static_cast<int64_t>(r.batches),
                {{"images_per_second_total", ips}})
        .ignore();
    out.tb->close().ignore();
  }
  if (!c.trace_file.empty())
    SLUICE_RETURN_IF_ERROR(write_trace(c.trace_file, r.spans, r.stats.workers));
  if (!c.state_out.empty()) {
    SLUICE_RETURN_IF_ERROR(detail::write_file_atomic(c.state_out, format_pipeline_state(r.state)));
  }
  json summary = summary_json(c, r, v, peak, full, floor);
  if (!c.json_file.empty()) {
    SLUICE_RETURN_IF_ERROR(detail::write_file_atomic(c.json_file, summary.dump(2) + "\n"));
  }
  if (!c.report_file.empty()) {
    SLUICE_RETURN_IF_ERROR(
        write_report(c, summary, *out.recorder, out.gpu.get(), out.gpu_note, ablation));
    if (!c.quiet) std::printf("report: %s\n", c.report_file.c_str());
  }
  return Status();
}

int run(BenchCli& c) {
  if (Status s = parse_options(c); !s.ok()) return report_error("bench", s);
  if (!c.report_file.empty()) {
    if (Status s = check_report_path(c.report_file); !s.ok()) return report_error("bench", s);
  }
  // With --report, the ladder's rows go into the page and the usual run
  // follows (its time series is the page's subject); without, the ladder
  // is all.
  std::vector<AblationRow> ablation;
  if (c.ablation) {
    int rc = run_ablation(c, &ablation);
    if (rc != kExitOk || c.report_file.empty()) return rc;
  }
  Status s = bench(c, ablation);
  return s.ok() ? kExitOk : report_error("bench", s);
}

}  // namespace

void register_bench(CLI::App& app, int* exit_code) {
  auto c = std::make_shared<BenchCli>();
  CLI::App* sub =
      app.add_subcommand("bench", "Run the input pipeline flat out and report where the time goes");
  sub->add_option("data", c->data,
                  "Dataset folder (dataset.json), record files, or an ImageFolder tree")
      ->required();
  for (const OptionSpec& spec : pipeline_option_specs()) {
    std::string help =
        spec.help + (spec.default_value.empty() ? "" : " [" + spec.default_value + "]");
    sub->add_option_function<std::string>(
        spec.flag, [c, name = spec.name](const std::string& v) { c->values[name] = v; }, help);
  }
  sub->add_option("--epochs", c->epochs, "Epochs to run")->capture_default_str();
  sub->add_option("--batches", c->max_batches, "Stop after N batches (all epochs together)");
  sub->add_flag("--pad", c->pad, "Pad the epoch (wrap around) instead of dropping the remainder");
  sub->add_option("--json", c->json_file, "Write the figures as JSON");
  sub->add_option("--logdir", c->logdir, "Write TensorBoard scalars here");
  sub->add_flag("--digest", c->digest, "Print a digest per batch and of all batches");
  sub->add_option("--state-in", c->state_in, "Start from a saved pipeline state");
  sub->add_option("--state-out", c->state_out, "Write the pipeline state at the end");
  sub->add_option("--status", c->status_file,
                  "Keep a live status file for `sluice top` (twice a second)");
  sub->add_option("--trace", c->trace_file,
                  "Write a Chrome/Perfetto trace: a track per worker, a span per sample stage");
  sub->add_option("--report", c->report_file,
                  "Write a self-contained HTML page: throughput, stage shares, CPU/GPU use and "
                  "queue depth over time, the verdict, the machine");
  sub->add_flag("--ceiling", c->ceiling, "Also time the full-decode ceiling and the plan floor");
  sub->add_flag("--ablation", c->ablation,
                "Print the ladder: raw files, parallel, shards, crop decode (with --report, the "
                "usual run follows and the page has both)");
  sub->add_option("--raw", c->raw_dir,
                  "Image folder for the ablation's raw rungs (default: dataset.json's source)");
  sub->add_flag("-q,--quiet", c->quiet, "Only digests and files, no summary");
  sub->callback([c, exit_code] { *exit_code = run(*c); });
}

}  // namespace sluice::cli
