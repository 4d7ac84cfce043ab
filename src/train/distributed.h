// Data parallelism on LibTorch's c10d: a process group (Gloo on CPUs, NCCL
// on GPUs) set up from the launcher's environment, and gradients all-reduced
// in buckets while backward is still running.
#pragma once

#include <torch/types.h>
#include <torch/version.h>
#if TORCH_VERSION_MAJOR >= 2
#include <torch/csrc/distributed/c10d/Backend.hpp>
#endif

#include <memory>
#include <string>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <vector>

#include "sluice/status.h"

namespace sluice::training {

// Where this process stands: from RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR,
// MASTER_PORT (torchrun, `sluice train --gpus N`), else SLURM_PROCID /
// SLURM_NTASKS / SLURM_LOCALID (srun) or OMPI_COMM_WORLD_RANK / _SIZE /
// _LOCAL_RANK (mpirun). No variables: one process.
struct DistEnv {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
};
Result<DistEnv> dist_env_from_environment();

// What Gloo's and NCCL's process groups derive from: ProcessGroup in
// LibTorch 1.x, Backend since 2.0 (same collectives).
#if TORCH_VERSION_MAJOR >= 2
using CollectiveGroup = c10d::Backend;
#else
using CollectiveGroup = c10d::ProcessGroup;
#endif

class Communicator {
 public:
  // World size 1 needs no group (and opens no socket).
  static Result<std::unique_ptr<Communicator>> create(const DistEnv& env, bool cuda);

  int rank() const { return env_.rank; }
  int world_size() const { return env_.world_size; }
  bool distributed() const { return env_.world_size > 1; }
  const c10::intrusive_ptr<CollectiveGroup>& group() const { return group_; }

  // Every rank ends with rank 0's values.
  void broadcast(std::vector<torch::Tensor> tensors);
  // Sum over ranks, in place.
  void all_reduce_sum(torch::Tensor& t);
  // Largest over ranks, in place.
  void all_reduce_max(torch::Tensor& t);
  void barrier();

 private:
  DistEnv env_;
  c10::intrusive_ptr<CollectiveGroup> group_;
};

// Averages gradients over ranks the way DistributedDataParallel does:
// parameters in reverse order (the order backward produces their
// gradients) packed into buckets of about `bucket_bytes`; a hook on each
// parameter copies its gradient into its bucket, and a full bucket's
// all-reduce starts at once, in bucket order on every rank (collectives must
// match). finish() waits, divides by the samples of all ranks and writes
// the grads.
//
// `extra` values ride with the last bucket: a few float32 numbers every rank
// contributes per step (loss sum, correct count, a stop request) summed
// across ranks at no extra round trip.
class GradientBuckets {
 public:
  GradientBuckets(std::vector<torch::Tensor> params, Communicator* comm,
                  size_t bucket_bytes = size_t{25} << 20);

  // Before backward: this step's extra values (1-D float32, fixed length).
  void begin(const torch::Tensor& extra);
  // After backward: every param.grad() is the sum over ranks divided by
  // the summed extra value at `count_index` (the samples of all ranks, when
  // each rank's loss is a sum over its samples; 0 leaves the sums). Returns
  // the extra values summed over ranks.
  torch::Tensor finish(int64_t count_index);

  size_t buckets() const { return buckets_.size(); }

 private:
  struct Bucket {
    std::vector<size_t> params;  // indices into params_
    std::vector<int64_t> offsets;
    torch::Tensor flat;
    size_t pending = 0;
    c10::intrusive_ptr<c10d::Work> work;
  };
  void on_grad(size_t param, const torch::Tensor& grad);
  void launch_ready();

  std::vector<torch::Tensor> params_;
  std::vector<std::pair<size_t, int64_t>> where_;  // param -> (bucket, offset)
  std::vector<bool> seen_;
  Communicator* comm_;
  std::vector<Bucket> buckets_;
  size_t next_ = 0;  // the next bucket to launch
  int64_t extra_size_ = 0;
  torch::Tensor extra_;  // one process: nothing to reduce
};

}  // namespace sluice::training
