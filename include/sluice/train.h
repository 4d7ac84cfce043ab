// Training and feature extraction on LibTorch, fed by the pipeline.
//
// Built only where LibTorch is found (the sluice_train library and the
// sluice-train executable behind `sluice train` / `sluice extract`); the
// rest of sluice never loads LibTorch. No LibTorch type appears here.
//
// Data parallel: every process runs train() with its rank from the
// environment (dist_env_from_environment: torchrun, srun, mpirun or
// `sluice train --gpus N` / `--procs N`). Each rank's pipeline reads its own
// part of every epoch; gradients are averaged over c10d (Gloo on CPUs, NCCL
// on GPUs); only rank 0 prints, logs and writes checkpoints.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "sluice/pipeline.h"
#include "sluice/status.h"

namespace sluice {

enum class Amp { kOff, kBFloat16, kFloat16 };
Result<Amp> parse_amp(std::string_view name);  // off | bf16 | fp16
std::string_view amp_name(Amp amp);

struct TrainOptions {
  // The training data and how it is read: sources, split, batch size per
  // rank, image size, augmentation, order, seed, workers... rank and
  // world_size are set from the process group.
  PipelineOptions pipeline;
  // Held-out data, read with eval augmentation after every epoch; empty:
  // none. With a dataset folder as the training source and no --val, its
  // "val" split is used when it has one.
  std::vector<std::string> val_sources;
  std::string val_split = "val";
  bool validate = true;            // false: no held-out data, not even the dataset's val split
  std::string model = "resnet18";  // seed-cnn | resnet18 | resnet50
  int epochs = 10;
  double lr = 0.1;
  std::string optimizer = "sgd";  // sgd | adam | adamw
  double momentum = 0.9;
  double weight_decay = 5e-4;
  std::string schedule = "cosine";  // cosine | step | constant
  double warmup_epochs = 0;         // linear warm-up from lr/10, in epochs
  int step_size = 30;               // schedule step: epochs between decays
  double step_gamma = 0.1;          // ... and the factor
  Amp amp = Amp::kOff;
  std::string device = "cpu";    // cpu | cuda | cuda:N (N defaults to LOCAL_RANK)
  std::string logdir;            // TensorBoard scalars (rank 0)
  std::string checkpoint_dir;    // last.pt every epoch (rank 0)
  std::string status_file;       // live status for `sluice top`, twice a second (rank 0)
  int64_t checkpoint_every = 0;  // also every N steps (0: epochs only)
  bool resume = false;           // continue from checkpoint_dir/last.pt
  int64_t max_steps = -1;        // stop (with a checkpoint) after N steps in all
  int threads = 0;               // LibTorch's intra-op threads (0: its default)
  int log_every = 20;            // steps between progress lines and step scalars
  // Feed one random batch, made once on the device, instead of the data:
  // the compute-only ceiling the pipeline is measured against.
  bool synthetic_data = false;
  // Gradients are all-reduced in buckets of about this many MB, each sent
  // as soon as backward has filled it (DistributedDataParallel's bucket_cap_mb).
  double bucket_mb = 25;
  double label_smoothing = 0;  // cross-entropy's, 0..1
  bool nesterov = false;       // SGD's Nesterov momentum
  double clip_grad_norm = 0;   // clip the gradients' global norm to this (0: no clipping)
  bool decay_all = false;      // weight decay on biases and BatchNorm too (default: weights only)
  std::string init_from;       // start from another checkpoint's weights (fine-tuning)
  bool quiet = false;
  // Set from a signal handler (Ctrl-C): train() stops after the current
  // step, on every rank, with a checkpoint.
  std::atomic<bool>* stop = nullptr;
};

struct EpochSummary {
  int epoch = 0;
  int64_t steps = 0;
  double loss = 0, accuracy = 0;           // train, over all ranks
  double val_loss = 0, val_accuracy = -1;  // -1: no held-out data
  double images_per_second = 0;            // all ranks
  double data_wait_share = 0;              // of rank 0's step time
  double seconds = 0;
  double lr = 0;
  double gpu_utilisation = -1;  // mean of NVML's samples (-1: no GPU or no NVML)
};

struct TrainSummary {
  std::vector<EpochSummary> epochs;
  int64_t steps = 0;
  bool stopped = false;    // by max_steps or a stop request, before the end
  std::string checkpoint;  // the last one written ("" without checkpoint_dir)
  std::string event_file;  // TensorBoard ("" without logdir)

  // This run as a whole, from its first step to its last (setup and
  // validation excluded; a resumed run counts from where it resumed): what
  // `sluice-train train --summary` writes and the ablation ladder compares.
  // An epoch that max_steps cut short is in these figures, not in `epochs`.
  int64_t steps_run = 0;
  double seconds = 0;            // rank 0's wall time over the steps
  double images = 0;             // trained on, all ranks
  double data_wait_share = 0;    // of rank 0's step time, waiting for batches
  double cpu_cores_busy = 0;     // CPU time of every rank's process / seconds
  double gpu_busy_percent = -1;  // mean NVML utilisation of the ranks' GPUs (-1: none)
  int world_size = 1;
  std::string device;              // rank 0's, e.g. "cpu" or "cuda:0"
  std::string gpu;                 // its GPU as the driver names it, "cpu", or "" (unknown)
  uint64_t batches_per_epoch = 0;  // a rank's
  std::string pipeline_tuning;     // rank 0's PipelineStats::tuning
  std::string gpu_decode;          // and its gpu_decode ("" off a GPU)
};

Result<TrainSummary> train(const TrainOptions& options);

// "LibTorch 1.13.0, CPU only" or "LibTorch 2.5.1, CUDA 12040": what this
// trainer was built with (for `sluice doctor`).
std::string torch_build_info();

struct ExtractOptions {
  // Read in storage order, eval augmentation, nothing dropped. The image
  // size and normalisation are the checkpoint's (what the model learnt on).
  PipelineOptions pipeline;
  std::string weights;   // a checkpoint written by train()
  std::string out;       // FEATURES.npy; also FEATURES.labels.npy, .keys.npy, .ids.npy
  std::string layer;     // "" = the penultimate layer
  bool float16 = false;  // store features as float16
  Amp amp = Amp::kOff;
  std::string device = "cpu";
  int threads = 0;
  bool quiet = false;
};

struct ExtractSummary {
  uint64_t rows = 0;
  int64_t dim = 0;
  std::string layer;
  std::string features_path, labels_path, keys_path, ids_path;
  double images_per_second = 0;
};

Result<ExtractSummary> extract(const ExtractOptions& options);

}  // namespace sluice
