// train(): the pipeline feeding a LibTorch model, data parallel over c10d,
// with autocast, loss scaling, schedules, TensorBoard scalars and
// checkpoints that resume exactly.
#include <ATen/autocast_mode.h>
#include <fmt/format.h>
#include <torch/nn/functional/loss.h>
#include <torch/optim.h>

#include <chrono>
#include <filesystem>
#include <optional>

#include "base/enum_names.h"
#include "base/file_util.h"
#include "pipeline/run_status.h"
#include "sluice/gpu_monitor.h"
#include "sluice/telemetry.h"
#include "sluice/train.h"
#include "train/checkpoint.h"
#include "train/distributed.h"
#include "train/models.h"
#include "train/optim.h"
#include "train/scaler.h"
#include "train/support.h"

namespace sluice {

namespace {
constexpr detail::EnumName<Amp> kAmps[] = {
    {Amp::kOff, "off"},       {Amp::kOff, "fp32", true},
    {Amp::kBFloat16, "bf16"}, {Amp::kBFloat16, "bfloat16", true},
    {Amp::kFloat16, "fp16"},  {Amp::kFloat16, "float16", true}};
}  // namespace

Result<Amp> parse_amp(std::string_view name) {
  return detail::parse_enum_name(name, kAmps, "--amp: unknown value");
}

std::string_view amp_name(Amp amp) {
  return detail::enum_name(amp, kAmps);
}

namespace {

using Clock = std::chrono::steady_clock;
using training::Communicator;
using training::GradientBuckets;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

Status check_options(const TrainOptions& o) {
  const auto& models = training::model_names();
  if (std::find(models.begin(), models.end(), o.model) == models.end()) {
    return invalid_argument_error("--model: unknown model '" + o.model +
                                  "' (expected seed-cnn, resnet18 or resnet50)");
  }
  SLUICE_ASSIGN_OR_RETURN(training::OptimizerKind optimizer,
                          training::parse_optimizer(o.optimizer));
  SLUICE_RETURN_IF_ERROR(training::parse_schedule(o.schedule).status());
  if (o.epochs < 1) return invalid_argument_error("--epochs must be at least 1");
  if (!(o.lr > 0)) return invalid_argument_error("--lr must be positive");
  if (o.warmup_epochs < 0 || o.warmup_epochs > o.epochs) {
    return invalid_argument_error("--warmup must be between 0 and --epochs");
  }
  if (o.step_size < 1) return invalid_argument_error("--step-size must be at least 1");
  if (o.checkpoint_every < 0) return invalid_argument_error("--checkpoint-every must be >= 0");
  if (o.log_every < 1) return invalid_argument_error("--log-every must be at least 1");
  if (!(o.bucket_mb > 0)) return invalid_argument_error("--bucket-mb must be positive");
  if (o.label_smoothing < 0 || o.label_smoothing >= 1) {
    return invalid_argument_error("--label-smoothing must be in [0, 1)");
  }
  if (o.clip_grad_norm < 0) return invalid_argument_error("--clip-grad-norm must be >= 0");
  if (o.nesterov && (optimizer != training::OptimizerKind::kSgd || !(o.momentum > 0))) {
    return invalid_argument_error("--nesterov needs --optimizer sgd and a positive --momentum");
  }
  if (o.resume && !o.init_from.empty()) {
    return invalid_argument_error("give --resume or --init-from, not both");
  }
  if (o.resume && o.checkpoint_dir.empty()) {
    return invalid_argument_error("--resume needs --checkpoint-dir");
  }
  return Status();
}

// What one step adds up over ranks (GradientBuckets' extra values).
enum Extra : int64_t { kLossSum, kCorrect, kSeen, kStop, kExtraCount };

struct Running {
  double loss_sum = 0, correct = 0, seen = 0;
  double wait = 0, busy = 0;  // rank 0's seconds waiting for data / in steps
  void add(const torch::Tensor& reduced, double waited, double step_seconds) {
    auto a = reduced.accessor<float, 1>();
    loss_sum += a[kLossSum];
    correct += a[kCorrect];
    seen += a[kSeen];
    wait += waited;
    busy += step_seconds;
  }
  double loss() const { return loss_sum / std::max(1.0, seen); }
  double accuracy() const { return correct / std::max(1.0, seen); }
  double wait_share() const { return wait / std::max(1e-9, busy); }
};

// One step's data: a pipeline batch (held until the step is done with its
// memory) or the synthetic batch.
struct StepInput {
  std::optional<Batch> held;
  torch::Tensor x, y;
};

class Trainer {
 public:
  explicit Trainer(const TrainOptions& o) : o_(o) {}

  Result<TrainSummary> run();

 private:
  Status setup();
  Status open_data();
  Status build_model();
  Status open_outputs();
  void print_start() const;
  Status agree_on_start();
  Status resume();
  Result<bool> train_epoch(int epoch);  // false: stopped
  Result<uint64_t> begin_epoch(int epoch);
  Result<std::optional<StepInput>> next_input(uint64_t done);
  torch::Tensor train_step(StepInput& in, double lr);
  bool account(const torch::Tensor& reduced, double waited, double step_seconds, double lr,
               int epoch);
  void log_interval(int epoch, uint64_t done, double lr, bool line);
  Status stop_inside_epoch(int epoch, uint64_t done);
  Status finish_epoch(int epoch, double seconds, double seen_at_start);
  void log_epoch(const EpochSummary& e);
  Status validate(EpochSummary* e);
  Status run_validation(EpochSummary* e);
  void write_status(bool done);
  void sample_gpu();
  void finish_run_figures();
  void sync_buffers();
  Status init_from(int classes, int image_size);
  Status checkpoint(int epoch, uint64_t batches_done);
  Status write_checkpoint(int epoch, uint64_t batches_done);
  training::CheckpointMeta meta(int epoch, uint64_t batches_done) const;
  bool leader() const { return comm_->rank() == 0; }
  // Runs f (validation, a checkpoint) with its time kept out of the run's figures.
  template <typename F>
  Status aside(F f) {
    auto t0 = Clock::now();
    auto cpu0 = sample_process();
    Status s = f();
    auto cpu1 = sample_process();
    run_aside_ += seconds_since(t0);
    if (cpu0.ok() && cpu1.ok()) run_cpu_aside_ += cpu1->cpu_seconds - cpu0->cpu_seconds;
    return s;
  }
  // To TensorBoard and, with the same step and wall time, to train.jsonl
  // beside it: one line per scalar, named by its tag.
  void log_scalar(const std::string& tag, double v, int64_t step) {
    double wall = wall_time();
    if (jsonl_) log_failed(jsonl_->write(step, wall, {{tag, v}}));
    if (tb_) log_failed(tb_->add_scalar(tag, static_cast<float>(v), step, wall));
  }
  // The logs are not worth a run: when one cannot be written (a full disk),
  // say so once, naming the file and the reason, stop writing both, and
  // train on. The checkpoint is what a run must not lose.
  void log_failed(const Status& s) {
    if (s.ok()) return;
    std::fprintf(stderr, "sluice train: warning: %s; the logs stop here (%s), training goes on\n",
                 std::string(s.message()).c_str(), o_.logdir.c_str());
    if (tb_) tb_->close().ignore();
    if (jsonl_) jsonl_->close().ignore();
    tb_.reset();
    jsonl_.reset();
  }
  static double wall_time() {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
        .count();
  }

  TrainOptions o_;
  torch::Device device_{torch::kCPU};
  std::unique_ptr<Communicator> comm_;
  std::unique_ptr<Pipeline> pipe_, val_;
  std::shared_ptr<training::ClassifierImpl> model_;
  std::vector<torch::Tensor> params_;
  std::unique_ptr<torch::optim::Optimizer> opt_;
  training::LrSchedule schedule_;
  training::LossScaler scaler_;
  std::unique_ptr<GradientBuckets> buckets_;
  std::unique_ptr<TensorBoardWriter> tb_;
  std::unique_ptr<JsonLinesWriter> jsonl_;
  training::AutocastScope::Mode autocast_{};
  int64_t step_ = 0;
  int start_epoch_ = 0;
  PipelineState resume_state_;
  bool resume_mid_epoch_ = false;
  Running resume_running_;
  Running running_;  // this epoch so far
  // The interval between step lines and step scalars.
  Running interval_;
  Clock::time_point interval_start_;
  Result<ProcessSample> interval_cpu_ = ProcessSample{};
  torch::Tensor synthetic_x_, synthetic_y_;
  double gpu_sum_ = 0;  // GPU utilisation samples this epoch (NVML)
  int gpu_samples_ = 0;
  // The run's figures (TrainSummary): from the first step on, every rank
  // samples its own GPU; rank 0's wait and step times.
  Clock::time_point loop_start_, gpu_last_;
  double loop_cpu0_ = 0;
  int64_t loop_step0_ = 0;
  double run_wait_ = 0, run_busy_ = 0;
  // Wall and CPU seconds in validation and checkpoints: not the run's figures.
  double run_aside_ = 0, run_cpu_aside_ = 0;
  double run_gpu_sum_ = 0, run_gpu_samples_ = 0;
  Clock::time_point run_start_ = Clock::now();
  Result<ProcessSample> cpu_at_start_ = sample_process();
  RunStatusWriter status_{o_.status_file, "train"};
  double total_images_ = 0;  // all ranks, this run
  int epoch_now_ = 0;
  double last_loss_ = 0, last_accuracy_ = 0, last_lr_ = 0;
  TrainSummary summary_;
};

Status Trainer::setup() {
  SLUICE_RETURN_IF_ERROR(check_options(o_));
  SLUICE_ASSIGN_OR_RETURN(training::DistEnv env, training::dist_env_from_environment());
  SLUICE_ASSIGN_OR_RETURN(device_, training::parse_device(o_.device, env.local_rank));
  SLUICE_ASSIGN_OR_RETURN(autocast_, training::autocast_mode(o_.amp, device_));
  if (o_.threads > 0) torch::set_num_threads(o_.threads);
  SLUICE_ASSIGN_OR_RETURN(comm_, Communicator::create(env, device_.is_cuda()));
  SLUICE_RETURN_IF_ERROR(open_data());
  SLUICE_RETURN_IF_ERROR(build_model());
  SLUICE_RETURN_IF_ERROR(open_outputs());
  print_start();
  if (o_.resume) SLUICE_RETURN_IF_ERROR(resume());
  return agree_on_start();
}

// This rank's share of the training data (and the held-out data).
Status Trainer::open_data() {
  PipelineOptions p = o_.pipeline;
  p.rank = comm_->rank();
  p.world_size = comm_->world_size();
  // On a GPU the pipeline delivers there: pinned ring, its own copy stream.
  p.device = device_.is_cuda() ? device_.index() : -1;
  SLUICE_ASSIGN_OR_RETURN(pipe_, Pipeline::create(p));
  if (pipe_->batches_per_epoch() == 0) {
    return invalid_argument_error(fmt::format(
        "{} records over {} rank(s) make no full batch of {}: lower --batch or keep the last "
        "batch (--pad)",
        pipe_->records(), p.world_size, p.batch_size));
  }
  if (pipe_->classes().empty()) {
    return invalid_argument_error(
        "the training data names no classes (dataset.json or an ImageFolder tree gives them)");
  }
  SLUICE_ASSIGN_OR_RETURN(val_, training::open_val_pipeline(o_, p));
  return Status();
}

// The model, its optimiser, schedule and loss scaler; the weights of
// --init-from; the synthetic batch of --synthetic-data.
Status Trainer::build_model() {
  const PipelineOptions& p = pipe_->options();
  const int classes = static_cast<int>(pipe_->classes().size());
  torch::manual_seed(o_.pipeline.seed);
  SLUICE_ASSIGN_OR_RETURN(model_, training::make_model(o_.model, classes, p.sample.width));
  model_->to(device_);
  params_ = model_->parameters();
  SLUICE_ASSIGN_OR_RETURN(training::OptimizerKind kind, training::parse_optimizer(o_.optimizer));
  opt_ = training::make_optimizer(kind, o_, params_);
  SLUICE_ASSIGN_OR_RETURN(schedule_, training::LrSchedule::create(o_));
  // The loss is a sum over the batch, so the gradients are batch-size times
  // a mean loss's: start the scale that much lower than GradScaler's 2^16.
  training::LossScalerOptions so;
  so.init_scale = std::max(1.0, 65536.0 / std::max(1, p.batch_size));
  scaler_ = training::LossScaler(o_.amp == Amp::kFloat16, so);
  if (!o_.init_from.empty()) SLUICE_RETURN_IF_ERROR(init_from(classes, p.sample.width));
  if (o_.synthetic_data) {
    torch::manual_seed(o_.pipeline.seed + 1);
    synthetic_x_ = torch::randn({p.batch_size, 3, p.sample.height, p.sample.width},
                                torch::TensorOptions().device(device_));
    synthetic_y_ = torch::randint(classes, {p.batch_size},
                                  torch::TensorOptions().dtype(torch::kLong).device(device_));
  }
  return Status();
}

// Rank 0's logs and checkpoint folder.
Status Trainer::open_outputs() {
  if (!leader()) return Status();
  if (!o_.logdir.empty()) {
    SLUICE_ASSIGN_OR_RETURN(tb_, TensorBoardWriter::create(o_.logdir));
    summary_.event_file = tb_->path();
    // Appended: a resumed run adds a second event file, and its lines here.
    SLUICE_ASSIGN_OR_RETURN(
        jsonl_, JsonLinesWriter::create((std::filesystem::path(o_.logdir) / "train.jsonl").string(),
                                        /*append=*/true));
  }
  if (!o_.checkpoint_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(o_.checkpoint_dir, ec);
    if (ec) return errno_error(o_.checkpoint_dir, "cannot create", ec.value());
    // A run killed while writing a checkpoint left "last.pt.tmp-PID".
    const std::string last = (std::filesystem::path(o_.checkpoint_dir) / "last.pt").string();
    if (int n = detail::remove_dead_temporaries_of(last); n > 0 && !o_.quiet) {
      std::printf("train: removed %d unfinished checkpoint file%s of a killed run\n", n,
                  n == 1 ? "" : "s");
    }
  }
  return Status();
}

void Trainer::print_start() const {
  if (!leader() || o_.quiet) return;
  const PipelineOptions& p = pipe_->options();
  std::printf(
      "train: %s on %s, %zu classes, %dx%d, %llu samples a rank x %d rank%s, batch %d, "
      "amp %s, %s lr %g (%s)\n",
      o_.model.c_str(), device_.str().c_str(), pipe_->classes().size(), p.sample.width,
      p.sample.height, static_cast<unsigned long long>(pipe_->samples_per_epoch()),
      comm_->world_size(), comm_->world_size() > 1 ? "s" : "", p.batch_size,
      std::string(amp_name(o_.amp)).c_str(), o_.optimizer.c_str(), o_.lr, o_.schedule.c_str());
  std::fflush(stdout);
}

// Every rank must stand at the same place, with rank 0's weights, before
// the first collective of a step.
Status Trainer::agree_on_start() {
  if (comm_->distributed()) {
    // A checkpoint folder that only some ranks can read would misalign
    // every collective that follows.
    torch::Tensor where =
        torch::tensor({static_cast<double>(step_), static_cast<double>(start_epoch_),
                       static_cast<double>(resume_mid_epoch_ ? resume_state_.batches : 0)},
                      torch::kDouble);
    torch::Tensor lo = (-where).to(device_), hi = where.to(device_);
    comm_->all_reduce_max(lo);
    comm_->all_reduce_max(hi);
    if (!torch::equal((-lo).cpu(), hi.cpu())) {
      return failed_precondition_error(fmt::format(
          "rank {}: the ranks resumed from different places (step {} here); --checkpoint-dir "
          "must be a folder every rank reads",
          comm_->rank(), step_));
    }
  }
  // Weights and buffers (BN statistics).
  std::vector<torch::Tensor> state = params_;
  for (auto& b : model_->buffers()) {
    if (b.is_floating_point()) state.push_back(b);
  }
  comm_->broadcast(state);
  buckets_ = std::make_unique<GradientBuckets>(
      params_, comm_.get(), static_cast<size_t>(std::max(1.0, o_.bucket_mb * (1 << 20))));
  return Status();
}

training::CheckpointMeta Trainer::meta(int epoch, uint64_t batches_done) const {
  const PipelineOptions& p = o_.pipeline;
  training::CheckpointMeta m;
  m.model = o_.model;
  m.classes = pipe_->classes();
  m.image_size = {p.sample.width, p.sample.height};
  m.mean = {p.sample.mean[0], p.sample.mean[1], p.sample.mean[2]};
  m.std = {p.sample.std[0], p.sample.std[1], p.sample.std[2]};
  m.epoch = epoch;
  m.batches_done = batches_done;
  m.batches_per_epoch = pipe_->batches_per_epoch();
  m.step = step_;
  m.world_size = comm_->world_size();
  m.seed = p.seed;
  m.batch_size = p.batch_size;
  m.order = std::string(order_name(p.order));
  m.records = pipe_->records();
  m.amp = std::string(amp_name(o_.amp));
  m.optimizer = o_.optimizer;
  m.epochs = o_.epochs;
  m.running = {running_.loss_sum, running_.correct, running_.seen, running_.wait, running_.busy};
  return m;
}

Status Trainer::checkpoint(int epoch, uint64_t batches_done) {
  if (o_.checkpoint_dir.empty()) return Status();
  return aside([&] { return write_checkpoint(epoch, batches_done); });
}

Status Trainer::write_checkpoint(int epoch, uint64_t batches_done) {
  sync_buffers();  // every rank calls this at the same step
  if (!leader()) return Status();
  std::string path = (std::filesystem::path(o_.checkpoint_dir) / "last.pt").string();
  SLUICE_RETURN_IF_ERROR(
      training::write_checkpoint(path, meta(epoch, batches_done), *model_, opt_.get(), &scaler_));
  summary_.checkpoint = path;
  return Status();
}

Status Trainer::resume() {
  std::string path = (std::filesystem::path(o_.checkpoint_dir) / "last.pt").string();
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    // Nothing to resume from: a first run with --resume starts fresh, so
    // that one command line serves both (as schedulers restart jobs).
    if (leader() && !o_.quiet) std::printf("train: no %s yet, starting fresh\n", path.c_str());
    return Status();
  }
  SLUICE_ASSIGN_OR_RETURN(training::CheckpointMeta m, training::read_checkpoint_meta(path));
  if (m.model != o_.model) {
    return invalid_argument_error(fmt::format("{} holds a {} model, not {}", path,
                                              m.model.empty() ? "?" : m.model, o_.model));
  }
  if (m.classes != pipe_->classes()) {
    return invalid_argument_error(path + " was trained on other classes than this data has");
  }
  SLUICE_RETURN_IF_ERROR(
      training::read_checkpoint(path, *model_, opt_.get(), &scaler_, /*rng=*/true, device_));
  step_ = m.step;
  const int epoch = m.epoch;
  const uint64_t done = m.batches_done;
  if (done >= pipe_->batches_per_epoch()) {
    start_epoch_ = epoch + 1;
  } else if (done == 0) {
    start_epoch_ = epoch;  // nothing of it consumed: any plan may start it
  } else {
    if (m.world_size != comm_->world_size()) {
      return failed_precondition_error(fmt::format(
          "{} stopped inside epoch {} with {} ranks; resume it with {} ranks (or from an "
          "epoch's end)",
          path, epoch + 1, m.world_size, m.world_size));
    }
    // Inside an epoch, "done batches" only means something for the same plan.
    const PipelineOptions& p = o_.pipeline;
    auto check = [&](const char* key, const auto& then, const auto& now) -> Status {
      if (!then || *then == now) return Status();
      return failed_precondition_error(
          fmt::format("{} stopped inside epoch {} with {} {}, not {}: resume with the same data "
                      "and options (or from an epoch's end)",
                      path, epoch + 1, key, *then, now));
    };
    SLUICE_RETURN_IF_ERROR(check("seed", m.seed, p.seed));
    SLUICE_RETURN_IF_ERROR(check("batch_size", m.batch_size, p.batch_size));
    SLUICE_RETURN_IF_ERROR(check("order", m.order, std::string(order_name(p.order))));
    SLUICE_RETURN_IF_ERROR(check("records", m.records, pipe_->records()));
    start_epoch_ = epoch;
    resume_mid_epoch_ = true;
    resume_state_ = PipelineState{static_cast<uint64_t>(epoch), done};
    if (m.running) {
      const auto& r = *m.running;
      resume_running_ = {r[0], r[1], r[2], r[3], r[4]};
    }
  }
  if (leader() && !o_.quiet) {
    std::printf("train: resumed from %s at epoch %d, batch %llu (step %lld)\n", path.c_str(),
                start_epoch_ + 1, static_cast<unsigned long long>(resume_mid_epoch_ ? done : 0),
                static_cast<long long>(step_));
  }
  return Status();
}

Result<bool> Trainer::train_epoch(int epoch) {
  SLUICE_ASSIGN_OR_RETURN(uint64_t done, begin_epoch(epoch));
  const uint64_t per_epoch = pipe_->batches_per_epoch();
  const auto t_epoch = Clock::now();
  const double seen_at_start = running_.seen;
  for (;;) {
    if (o_.max_steps >= 0 && step_ >= o_.max_steps) {
      // Already there (a resumed run): stop before another step.
      SLUICE_RETURN_IF_ERROR(checkpoint(epoch, done));
      summary_.stopped = true;
      return false;
    }
    const auto t0 = Clock::now();
    SLUICE_ASSIGN_OR_RETURN(std::optional<StepInput> in, next_input(done));
    if (!in) break;
    const double waited = seconds_since(t0);
    const double lr = schedule_.at(epoch + static_cast<double>(done) / per_epoch);
    torch::Tensor reduced = train_step(*in, lr);
    ++done;
    ++step_;
    const bool stop = account(reduced, waited, seconds_since(t0), lr, epoch);
    write_status(/*done=*/false);
    const bool last_step = o_.max_steps >= 0 && step_ >= o_.max_steps;
    const bool line = step_ % o_.log_every == 0 || stop || last_step;
    if (leader() && (line || done == per_epoch)) log_interval(epoch, done, lr, line);
    if (o_.checkpoint_every > 0 && step_ % o_.checkpoint_every == 0 && done < per_epoch) {
      SLUICE_RETURN_IF_ERROR(checkpoint(epoch, done));
    }
    if (stop || last_step) {
      if (done < per_epoch) {
        SLUICE_RETURN_IF_ERROR(stop_inside_epoch(epoch, done));
        return false;
      }
      summary_.stopped = true;  // at the epoch's end: finished below, then stop
      break;
    }
  }
  SLUICE_RETURN_IF_ERROR(finish_epoch(epoch, seconds_since(t_epoch), seen_at_start));
  return !summary_.stopped;
}

// Positions the pipeline (a resumed run: where the checkpoint stopped) and
// returns the batches of this epoch already done.
Result<uint64_t> Trainer::begin_epoch(int epoch) {
  model_->train();
  running_ = Running();
  uint64_t done = 0;
  if (resume_mid_epoch_) {
    SLUICE_RETURN_IF_ERROR(pipe_->restore(resume_state_));
    done = resume_state_.batches;
    running_ = resume_running_;
    resume_mid_epoch_ = false;
  } else {
    SLUICE_RETURN_IF_ERROR(pipe_->set_epoch(static_cast<uint64_t>(epoch)));
  }
  interval_ = Running();
  interval_start_ = Clock::now();
  interval_cpu_ = sample_process();
  return done;
}

// The next batch; nullopt at the epoch's end.
Result<std::optional<StepInput>> Trainer::next_input(uint64_t done) {
  StepInput in;
  if (o_.synthetic_data) {
    // The compute-only ceiling: one batch made once, on the device.
    if (done >= pipe_->batches_per_epoch()) return std::optional<StepInput>();
    in.x = synthetic_x_;
    in.y = synthetic_y_;
    return std::optional<StepInput>(std::move(in));
  }
  auto batch = pipe_->next();
  if (batch.status().code() == StatusCode::kOutOfRange) return std::optional<StepInput>();
  if (!batch.ok()) return batch.status();
  in.held.emplace(std::move(*batch));
  in.x = training::batch_images(*in.held, pipe_->options().sample, device_);
  in.y = training::batch_labels(*in.held, device_);
  return std::optional<StepInput>(std::move(in));
}

// Forward, backward, the gradients averaged over ranks, the optimiser's
// step; returns the step's figures summed over ranks (Extra, on the CPU).
torch::Tensor Trainer::train_step(StepInput& in, double lr) {
  for (auto& group : opt_->param_groups()) group.options().set_lr(lr);
  opt_->zero_grad();
  // The loss summed over this rank's samples; GradientBuckets divides the
  // gradients by the samples of all ranks, so short batches (skipped bad
  // samples, a padded epoch's last one) weigh what they hold, and an empty
  // one still takes part in the collectives.
  const int64_t n = in.x.size(0);
  auto on_device = torch::TensorOptions().device(device_);
  torch::Tensor loss_sum = torch::zeros({}, on_device);
  torch::Tensor correct = torch::zeros({}, on_device);
  if (n > 0) {
    training::AutocastScope autocast(autocast_);
    torch::Tensor logits = model_->forward(in.x);
    loss_sum = torch::nn::functional::cross_entropy(logits, in.y,
                                                    torch::nn::functional::CrossEntropyFuncOptions()
                                                        .reduction(torch::kSum)
                                                        .label_smoothing(o_.label_smoothing));
    correct = logits.argmax(1).eq(in.y).sum();
  }
  const bool stop_here = o_.stop != nullptr && o_.stop->load();
  torch::Tensor extra =
      torch::stack({loss_sum.detach().to(torch::kFloat), correct.to(torch::kFloat),
                    torch::full({}, static_cast<float>(n), on_device),
                    torch::full({}, stop_here ? 1.0f : 0.0f, on_device)});
  buckets_->begin(extra);
  if (n > 0) scaler_.scale_loss(loss_sum).backward();
  torch::Tensor reduced = buckets_->finish(kSeen).to(torch::kCPU);
  if (reduced.accessor<float, 1>()[kSeen] > 0 && scaler_.unscale_and_update(params_)) {
    // Clipped after unscaling, on the averaged gradients: the same on every rank.
    if (o_.clip_grad_norm > 0) torch::nn::utils::clip_grad_norm_(params_, o_.clip_grad_norm);
    opt_->step();
  }
  at::autocast::clear_cache();
  if (in.held) in.held->release();
  return reduced;
}

// Adds a step to the epoch's, the interval's and the run's figures;
// returns whether a rank was asked to stop.
bool Trainer::account(const torch::Tensor& reduced, double waited, double step_seconds, double lr,
                      int epoch) {
  running_.add(reduced, waited, step_seconds);
  interval_.add(reduced, waited, step_seconds);
  run_wait_ += waited;
  run_busy_ += step_seconds;
  sample_gpu();
  auto a = reduced.accessor<float, 1>();
  last_loss_ = a[kLossSum] / std::max(1.0f, a[kSeen]);
  last_accuracy_ = a[kCorrect] / std::max(1.0f, a[kSeen]);
  last_lr_ = lr;
  epoch_now_ = epoch;
  total_images_ += a[kSeen];
  return a[kStop] > 0;
}

// The interval's step scalars (rank 0) and, when `line`, its progress line.
void Trainer::log_interval(int epoch, uint64_t done, double lr, bool line) {
  const double secs = seconds_since(interval_start_);
  auto cpu = sample_process();
  const double cores = (cpu.ok() && interval_cpu_.ok() && secs > 0)
                           ? (cpu->cpu_seconds - interval_cpu_->cpu_seconds) / secs
                           : 0;
  const double rate = interval_.seen / std::max(1e-9, secs);
  log_scalar("train/loss", interval_.loss(), step_);
  log_scalar("train/accuracy", interval_.accuracy(), step_);
  log_scalar("train/lr", lr, step_);
  log_scalar("train/images_per_second", rate, step_);
  log_scalar("train/data_wait_share", interval_.wait_share(), step_);
  log_scalar("train/process_cpu_cores", cores, step_);
  if (scaler_.enabled()) log_scalar("train/loss_scale", scaler_.scale(), step_);
  double gpu = -1;
  training::log_gpu_scalars(device_, [&](const std::string& tag, double v) {
    log_scalar(tag, v, step_);
    if (tag == "gpu/utilisation") gpu = v;
  });
  if (gpu >= 0) {
    gpu_sum_ += gpu;
    ++gpu_samples_;
  }
  if (!o_.quiet && line) {
    std::fprintf(stderr,
                 "  epoch %d  step %lld  batch %llu/%llu  loss %.4f  acc %.1f%%  %.0f img/s  "
                 "data wait %.1f%%  lr %.4g%s\n",
                 epoch + 1, static_cast<long long>(step_), static_cast<unsigned long long>(done),
                 static_cast<unsigned long long>(pipe_->batches_per_epoch()), interval_.loss(),
                 100 * interval_.accuracy(), rate, 100 * interval_.wait_share(), lr,
                 gpu >= 0 ? fmt::format("  gpu {:.0f}%", 100 * gpu).c_str() : "");
  }
  interval_ = Running();
  interval_start_ = Clock::now();
  interval_cpu_ = cpu;
}

// --max-steps or a stop request inside an epoch: a checkpoint that resumes
// at the next batch.
Status Trainer::stop_inside_epoch(int epoch, uint64_t done) {
  SLUICE_RETURN_IF_ERROR(checkpoint(epoch, done));
  summary_.stopped = true;
  if (leader() && !o_.quiet) {
    std::printf("train: stopped at epoch %d, batch %llu (step %lld)%s%s\n", epoch + 1,
                static_cast<unsigned long long>(done), static_cast<long long>(step_),
                summary_.checkpoint.empty() ? "" : "; checkpoint ", summary_.checkpoint.c_str());
  }
  return Status();
}

// The epoch's figures, validation, logs and checkpoint.
Status Trainer::finish_epoch(int epoch, double seconds, double seen_at_start) {
  EpochSummary e;
  e.epoch = epoch + 1;
  e.steps = step_;
  e.seconds = seconds;
  e.loss = running_.loss();
  e.accuracy = running_.accuracy();
  e.images_per_second = (running_.seen - seen_at_start) / std::max(1e-9, e.seconds);
  e.data_wait_share = running_.wait_share();
  e.lr = last_lr_;  // the epoch's last step's
  e.gpu_utilisation = gpu_samples_ > 0 ? gpu_sum_ / gpu_samples_ : -1;
  gpu_sum_ = 0;
  gpu_samples_ = 0;
  SLUICE_RETURN_IF_ERROR(validate(&e));
  summary_.epochs.push_back(e);
  if (leader()) log_epoch(e);
  SLUICE_RETURN_IF_ERROR(checkpoint(epoch, pipe_->batches_per_epoch()));
  if (summary_.stopped && leader() && !o_.quiet) {
    std::printf("train: stopped at the end of epoch %d (step %lld)%s%s\n", epoch + 1,
                static_cast<long long>(step_), summary_.checkpoint.empty() ? "" : "; checkpoint ",
                summary_.checkpoint.c_str());
  }
  return Status();
}

// Rank 0: the epoch's scalars and its line.
void Trainer::log_epoch(const EpochSummary& e) {
  log_scalar("epoch/loss", e.loss, e.epoch);
  log_scalar("epoch/accuracy", e.accuracy, e.epoch);
  log_scalar("epoch/images_per_second", e.images_per_second, e.epoch);
  log_scalar("epoch/data_wait_share", e.data_wait_share, e.epoch);
  if (e.val_accuracy >= 0) {
    log_scalar("epoch/val_loss", e.val_loss, e.epoch);
    log_scalar("epoch/val_accuracy", e.val_accuracy, e.epoch);
  }
  if (tb_) log_failed(tb_->flush());
  if (o_.quiet) return;
  const std::string val = e.val_accuracy >= 0 ? fmt::format("  val loss {:.4f} acc {:.1f}%",
                                                            e.val_loss, 100 * e.val_accuracy)
                                              : "";
  const std::string gpu =
      e.gpu_utilisation >= 0 ? fmt::format("  gpu busy {:.0f}%", 100 * e.gpu_utilisation) : "";
  std::printf("epoch %d/%d  loss %.4f  acc %.1f%%%s  %.0f img/s  data wait %.1f%%%s  %.1f s\n",
              e.epoch, o_.epochs, e.loss, 100 * e.accuracy, val.c_str(), e.images_per_second,
              100 * e.data_wait_share, gpu.c_str(), e.seconds);
  std::fflush(stdout);
}

// Fine-tuning: the weights of another run's checkpoint, by name, wherever
// the shapes agree (a head for another number of classes starts fresh).
Status Trainer::init_from(int classes, int image_size) {
  SLUICE_ASSIGN_OR_RETURN(training::CheckpointMeta m, training::read_checkpoint_meta(o_.init_from));
  if (m.model != o_.model) {
    return invalid_argument_error(fmt::format("--init-from {} holds a {} model, not {}",
                                              o_.init_from, m.model.empty() ? "?" : m.model,
                                              o_.model));
  }
  auto theirs_classes = static_cast<int>(m.classes.size());
  // Built as it was trained (seed-cnn's dense layer depends on the size).
  const int theirs_size = m.image_size ? (*m.image_size)[0] : image_size;
  SLUICE_ASSIGN_OR_RETURN(auto theirs, training::make_model(o_.model, theirs_classes, theirs_size));
  // Other classes (even as many): the output layer starts fresh.
  const bool same_classes = m.classes == pipe_->classes();
  const std::string head = o_.model == "seed-cnn" ? "fc2." : "fc.";
  SLUICE_RETURN_IF_ERROR(
      training::read_checkpoint(o_.init_from, *theirs, nullptr, nullptr, false, torch::kCPU));
  torch::NoGradGuard no_grad;
  auto src_params = theirs->named_parameters();
  auto src_buffers = theirs->named_buffers();
  int copied = 0, skipped = 0;
  auto copy = [&](const std::string& name, torch::Tensor& dst,
                  const torch::OrderedDict<std::string, torch::Tensor>& src) {
    const torch::Tensor* t = src.find(name);
    const bool is_head = name.rfind(head, 0) == 0;
    if (t != nullptr && t->sizes() == dst.sizes() && (same_classes || !is_head)) {
      dst.copy_(*t);
      ++copied;
    } else {
      ++skipped;
    }
  };
  for (auto& item : model_->named_parameters()) copy(item.key(), item.value(), src_params);
  for (auto& item : model_->named_buffers()) copy(item.key(), item.value(), src_buffers);
  if (leader() && !o_.quiet) {
    std::printf(
        "train: initialised from %s: %d tensors copied, %d left as initialised (%d "
        "classes there, %d here)\n",
        o_.init_from.c_str(), copied, skipped, theirs_classes, classes);
  }
  return Status();
}

// BatchNorm's running statistics differ per rank (each saw its own
// samples); rank 0's go to every rank before they are used or saved, as
// DistributedDataParallel's broadcast_buffers does.
void Trainer::sync_buffers() {
  std::vector<torch::Tensor> buffers;
  for (auto& b : model_->buffers()) {
    if (b.is_floating_point()) buffers.push_back(b);
  }
  comm_->broadcast(buffers);
}

Status Trainer::validate(EpochSummary* e) {
  return aside([&] { return run_validation(e); });
}

Status Trainer::run_validation(EpochSummary* e) {
  sync_buffers();
  if (!val_) return Status();
  torch::NoGradGuard no_grad;
  model_->eval();
  SLUICE_RETURN_IF_ERROR(val_->set_epoch(0));
  double loss_sum = 0, correct = 0, seen = 0;
  for (;;) {
    auto batch = val_->next();
    if (batch.status().code() == StatusCode::kOutOfRange) break;
    if (!batch.ok()) return batch.status();
    torch::Tensor x = training::batch_images(*batch, val_->options().sample, device_);
    torch::Tensor y = training::batch_labels(*batch, device_);
    training::AutocastScope autocast(autocast_);
    torch::Tensor logits = model_->forward(x);
    loss_sum +=
        torch::nn::functional::cross_entropy(
            logits, y, torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum))
            .item<double>();
    correct += logits.argmax(1).eq(y).sum().item<double>();
    seen += static_cast<double>(batch->size());
  }
  at::autocast::clear_cache();
  torch::Tensor sums = torch::tensor({loss_sum, correct, seen}, torch::kDouble).to(device_);
  comm_->all_reduce_sum(sums);
  sums = sums.cpu();
  double n = std::max(1.0, sums[2].item<double>());
  e->val_loss = sums[0].item<double>() / n;
  e->val_accuracy = sums[1].item<double>() / n;
  model_->train();
  return Status();
}

// The status file `sluice top` draws (pipeline/run_status.h): bench's
// fields, plus where training is.
void Trainer::write_status(bool done) {
  if (!leader() || !status_.due(done)) return;
  RunStatus run;
  run.seconds = seconds_since(run_start_);
  run.images = static_cast<uint64_t>(total_images_);
  run.batches = static_cast<uint64_t>(step_);
  auto proc = sample_process();
  if (proc.ok() && cpu_at_start_.ok() && run.seconds > 0)
    run.cpu_cores_busy = (proc->cpu_seconds - cpu_at_start_->cpu_seconds) / run.seconds;
  run.done = done;
  if (const GpuMonitor* gpus = training::gpu_monitor()) {
    run.gpu_names = gpus->names();
    run.gpu_samples = gpus->sample();
  }
  run.training =
      RunStatus::Training{epoch_now_ + 1, o_.epochs, step_, last_loss_, last_accuracy_, last_lr_};
  if (Status s = status_.write(run, pipe_->stats()); !s.ok()) {
    std::fprintf(stderr, "sluice train: warning: %s; no more status updates, training goes on\n",
                 std::string(s.message()).c_str());
  }
}

// NVML's figure covers its last sample period (up to a second), so a
// sample every half second sees the whole run; the first comes half a
// second in, not from the idle GPU of setup.
void Trainer::sample_gpu() {
  if (!device_.is_cuda() || training::gpu_monitor() == nullptr) return;
  auto now = Clock::now();
  if (now - gpu_last_ < std::chrono::milliseconds(500)) return;
  gpu_last_ = now;
  std::vector<GpuSample> s = training::gpu_monitor()->sample();
  // NVML's numbering, as in log_gpu_scalars.
  auto i = static_cast<size_t>(device_.index());
  if (i < s.size() && s[i].utilization >= 0) {
    run_gpu_sum_ += s[i].utilization;
    run_gpu_samples_ += 1;
  }
}

// Every rank calls this at the same point: CPU time and GPU samples are
// summed over ranks, a collective like the epoch's validation.
void Trainer::finish_run_figures() {
  TrainSummary& r = summary_;
  r.steps_run = step_ - loop_step0_;
  r.seconds = std::max(0.0, seconds_since(loop_start_) - run_aside_);
  r.images = total_images_;
  r.data_wait_share = run_wait_ / std::max(1e-9, run_busy_);
  auto cpu = sample_process();
  double cpu_seconds = cpu.ok() ? cpu->cpu_seconds - loop_cpu0_ - run_cpu_aside_ : 0;
  double gpu_sum = run_gpu_sum_, gpu_samples = run_gpu_samples_;
  if (comm_->distributed()) {
    torch::Tensor t = torch::tensor({cpu_seconds, gpu_sum, gpu_samples}, torch::kDouble);
    t = t.to(device_);
    comm_->all_reduce_sum(t);
    t = t.cpu();
    cpu_seconds = t[0].item<double>();
    gpu_sum = t[1].item<double>();
    gpu_samples = t[2].item<double>();
  }
  r.cpu_cores_busy = cpu_seconds / std::max(1e-9, r.seconds);
  r.gpu_busy_percent = gpu_samples > 0 ? gpu_sum / gpu_samples : -1;
  r.world_size = comm_->world_size();
  r.device = device_.str();
  // NVML's numbering, as in sample_gpu; its names read "GPU 0: NVIDIA H100 ...".
  r.gpu = device_.is_cuda() ? "" : "cpu";
  if (const GpuMonitor* gpus = training::gpu_monitor(); gpus && device_.is_cuda()) {
    const auto i = static_cast<size_t>(device_.index());
    if (i < gpus->names().size()) {
      const std::string& n = gpus->names()[i];
      const size_t colon = n.find(": ");
      r.gpu = colon == std::string::npos ? n : n.substr(colon + 2);
    }
  }
  r.batches_per_epoch = pipe_->batches_per_epoch();
  PipelineStats st = pipe_->stats();
  r.pipeline_tuning = st.tuning;
  r.gpu_decode = st.gpu_decode;
}

Result<TrainSummary> Trainer::run() {
  SLUICE_RETURN_IF_ERROR(setup());
  loop_start_ = gpu_last_ = Clock::now();
  if (auto cpu = sample_process(); cpu.ok()) loop_cpu0_ = cpu->cpu_seconds;
  loop_step0_ = step_;
  for (int epoch = start_epoch_; epoch < o_.epochs; ++epoch) {
    SLUICE_ASSIGN_OR_RETURN(bool go_on, train_epoch(epoch));
    if (!go_on) break;
  }
  summary_.steps = step_;
  finish_run_figures();
  write_status(/*done=*/true);
  if (tb_) log_failed(tb_->close());
  if (jsonl_) log_failed(jsonl_->close());
  return summary_;
}

}  // namespace

Result<TrainSummary> train(const TrainOptions& options) {
  return training::guarded([&]() -> Result<TrainSummary> {
    Trainer t(options);
    return t.run();
  });
}

}  // namespace sluice
