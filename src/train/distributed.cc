#include "train/distributed.h"

#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#ifdef SLUICE_WITH_GLOO
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#endif
#ifdef USE_C10D_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include <fmt/format.h>

#include <charconv>
#include <cstdlib>

namespace sluice::training {
namespace {

// The first of `names` that is set, parsed as an int; `fallback` if none.
Result<int> env_int(std::initializer_list<const char*> names, int fallback, bool* found) {
  for (const char* name : names) {
    const char* v = std::getenv(name);
    if (v == nullptr || *v == '\0') continue;
    int out = 0;
    auto [end, ec] = std::from_chars(v, v + std::strlen(v), out);
    if (ec != std::errc() || *end != '\0' || out < 0) {
      return invalid_argument_error(fmt::format("{}='{}' is not a non-negative integer", name, v));
    }
    *found = true;
    return out;
  }
  return fallback;
}

[[maybe_unused]] bool is_loopback(const std::string& addr) {
  return addr == "localhost" || addr.rfind("127.", 0) == 0 || addr == "::1";
}

}  // namespace

Result<DistEnv> dist_env_from_environment() {
  DistEnv e;
  // One launcher's variables, never a mix: torchrun's (and ours) first;
  // Slurm's only inside a job step (srun), since an sbatch script sees
  // SLURM_NTASKS for ranks that no one started; then Open MPI's.
  bool found = false;
  const char* rank = "RANK";
  const char* size = "WORLD_SIZE";
  const char* local = "LOCAL_RANK";
  if (std::getenv("RANK") == nullptr) {
    if (std::getenv("SLURM_STEP_ID") != nullptr && std::getenv("SLURM_PROCID") != nullptr) {
      rank = "SLURM_PROCID";
      size = "SLURM_NTASKS";
      local = "SLURM_LOCALID";
    } else if (std::getenv("OMPI_COMM_WORLD_RANK") != nullptr) {
      rank = "OMPI_COMM_WORLD_RANK";
      size = "OMPI_COMM_WORLD_SIZE";
      local = "OMPI_COMM_WORLD_LOCAL_RANK";
    }
  }
  SLUICE_ASSIGN_OR_RETURN(e.rank, env_int({rank}, 0, &found));
  SLUICE_ASSIGN_OR_RETURN(e.world_size, env_int({size}, 1, &found));
  SLUICE_ASSIGN_OR_RETURN(e.local_rank, env_int({local}, 0, &found));
  SLUICE_ASSIGN_OR_RETURN(e.master_port, env_int({"MASTER_PORT"}, 29500, &found));
  const char* addr = std::getenv("MASTER_ADDR");
  if (addr != nullptr && *addr != '\0') e.master_addr = addr;
  if (e.world_size < 1) return invalid_argument_error("WORLD_SIZE must be at least 1");
  if (e.rank >= e.world_size) {
    return invalid_argument_error(
        fmt::format("rank {} is outside a world of {} processes", e.rank, e.world_size));
  }
  if (e.master_port < 1 || e.master_port > 65535) {
    return invalid_argument_error(fmt::format("MASTER_PORT {} is not a port", e.master_port));
  }
  // Several processes and no rendezvous address: only one machine can work.
  if (e.world_size > 1 && (addr == nullptr || *addr == '\0') && e.local_rank != e.rank) {
    return invalid_argument_error(
        "ranks span machines (LOCAL_RANK != RANK) but MASTER_ADDR is not set: export "
        "MASTER_ADDR (rank 0's host) and MASTER_PORT");
  }
  return e;
}

Result<std::unique_ptr<Communicator>> Communicator::create(const DistEnv& env, bool cuda) {
  auto c = std::unique_ptr<Communicator>(new Communicator());
  c->env_ = env;
  if (env.world_size == 1) return c;
#ifndef SLUICE_WITH_GLOO
  if (!cuda) {
    return failed_precondition_error(
        "this sluice-train was built without Gloo's headers (pip's PyTorch ships none): data "
        "parallel on CPUs needs them (Debian: libgloo-dev); on GPUs use --device cuda (NCCL)");
  }
#endif
  try {
    c10d::TCPStoreOptions so;
    so.port = static_cast<uint16_t>(env.master_port);
    so.isServer = env.rank == 0;
    so.numWorkers = static_cast<size_t>(env.world_size);
    so.waitWorkers = true;
    so.timeout = std::chrono::minutes(5);
    auto store = c10::make_intrusive<c10d::TCPStore>(env.master_addr, so);
    if (cuda) {
#ifdef USE_C10D_NCCL
      auto opts = c10d::ProcessGroupNCCL::Options::create();
      c->group_ =
          c10::make_intrusive<c10d::ProcessGroupNCCL>(store, env.rank, env.world_size, opts);
      return c;
#else
      return failed_precondition_error(
          "this LibTorch was built without NCCL: data parallel on GPUs needs a CUDA build of "
          "LibTorch (see README: Training on GPUs)");
#endif
    }
#ifdef SLUICE_WITH_GLOO
    auto opts = c10d::ProcessGroupGloo::Options::create(std::chrono::minutes(30));
    if (const char* ifname = std::getenv("GLOO_SOCKET_IFNAME"); ifname != nullptr && *ifname) {
      opts->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(ifname));
    } else if (is_loopback(env.master_addr)) {
      opts->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
    } else {
      opts->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
    }
    c->group_ = c10::make_intrusive<c10d::ProcessGroupGloo>(store, env.rank, env.world_size, opts);
#endif
  } catch (const std::exception& e) {
    return failed_precondition_error(
        fmt::format("rank {} of {}: cannot join the process group at {}:{}: {}", env.rank,
                    env.world_size, env.master_addr, env.master_port, e.what()));
  }
  return c;
}

void Communicator::broadcast(std::vector<torch::Tensor> tensors) {
  if (!distributed() || tensors.empty()) return;
  // One flat buffer: one collective instead of one per tensor.
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> flat_parts;
  for (auto& t : tensors) flat_parts.push_back(t.detach().reshape(-1).to(torch::kFloat));
  std::vector<torch::Tensor> flat{torch::cat(flat_parts)};
  group_->broadcast(flat)->wait();
  int64_t at = 0;
  for (auto& t : tensors) {
    int64_t n = t.numel();
    t.detach().copy_(flat[0].narrow(0, at, n).view_as(t));
    at += n;
  }
}

void Communicator::all_reduce_sum(torch::Tensor& t) {
  if (!distributed()) return;
  std::vector<torch::Tensor> v{t};
  group_->allreduce(v)->wait();
}

void Communicator::all_reduce_max(torch::Tensor& t) {
  if (!distributed()) return;
  std::vector<torch::Tensor> v{t};
  c10d::AllreduceOptions opts;
  opts.reduceOp = c10d::ReduceOp::MAX;
  group_->allreduce(v, opts)->wait();
}

void Communicator::barrier() {
  if (distributed()) group_->barrier()->wait();
}

GradientBuckets::GradientBuckets(std::vector<torch::Tensor> params, Communicator* comm,
                                 size_t bucket_bytes)
    : params_(std::move(params)), comm_(comm) {
  where_.resize(params_.size());
  seen_.assign(params_.size(), false);
  if (!comm_->distributed() || params_.empty()) return;  // nothing to average
  Bucket current;
  size_t bytes = 0;
  int64_t numel = 0;
  auto close = [&] {
    if (current.params.empty()) return;
    current.flat = torch::zeros({numel}, params_[current.params.front()].options());
    buckets_.push_back(std::move(current));
    current = Bucket();
    bytes = 0;
    numel = 0;
  };
  for (size_t k = params_.size(); k-- > 0;) {
    const torch::Tensor& p = params_[k];
    where_[k] = {buckets_.size(), numel};
    current.params.push_back(k);
    current.offsets.push_back(numel);
    numel += p.numel();
    bytes += p.numel() * p.element_size();
    if (bytes >= bucket_bytes) close();
  }
  close();
  for (size_t k = 0; k < params_.size(); ++k) {
    params_[k].register_hook([this, k](torch::Tensor grad) { on_grad(k, grad); });
  }
}

void GradientBuckets::begin(const torch::Tensor& extra) {
  if (buckets_.empty()) {
    extra_ = extra.clone();
    return;
  }
  seen_.assign(params_.size(), false);
  next_ = 0;
  for (Bucket& b : buckets_) {
    b.pending = b.params.size();
    b.work.reset();
  }
  // The extra values sit at the end of the last bucket's buffer.
  Bucket& last = buckets_.back();
  int64_t grads = last.offsets.back() + params_[last.params.back()].numel();
  if (extra_size_ != extra.numel()) {
    extra_size_ = extra.numel();
    last.flat = torch::zeros({grads + extra_size_}, last.flat.options());
  }
  last.flat.narrow(0, grads, extra_size_).copy_(extra);
}

// Runs on the thread autograd runs this device's backward on: all
// parameters live on one device, so one step's hooks never race.
void GradientBuckets::on_grad(size_t param, const torch::Tensor& grad) {
  if (seen_[param] || !grad.defined()) return;  // undefined: finish() zero-fills
  seen_[param] = true;
  auto [b, offset] = where_[param];
  Bucket& bucket = buckets_[b];
  torch::NoGradGuard no_grad;
  bucket.flat.narrow(0, offset, grad.numel()).copy_(grad.reshape(-1));
  --bucket.pending;
  launch_ready();
}

void GradientBuckets::launch_ready() {
  while (next_ < buckets_.size() && buckets_[next_].pending == 0) {
    std::vector<torch::Tensor> v{buckets_[next_].flat};
    buckets_[next_].work = comm_->group()->allreduce(v);
    ++next_;
  }
}

torch::Tensor GradientBuckets::finish(int64_t count_index) {
  torch::NoGradGuard no_grad;
  if (buckets_.empty()) {
    // One process: the gradients are this rank's sums already.
    float count = extra_[count_index].item<float>();
    if (count > 0) {
      for (torch::Tensor& p : params_) {
        if (p.grad().defined()) p.mutable_grad().div_(count);
      }
    }
    return extra_;
  }
  Bucket& last = buckets_.back();
  int64_t grads = last.offsets.back() + params_[last.params.back()].numel();
  // Parameters that took no part in this step's graph (or the whole graph,
  // for an empty batch) contribute zeros.
  for (size_t k = 0; k < params_.size(); ++k) {
    if (seen_[k]) continue;
    seen_[k] = true;
    auto [b, offset] = where_[k];
    buckets_[b].flat.narrow(0, offset, params_[k].numel()).zero_();
    --buckets_[b].pending;
  }
  launch_ready();
  for (Bucket& bucket : buckets_) bucket.work->wait();
  torch::Tensor extra = last.flat.narrow(0, grads, extra_size_).clone();
  float count = extra[count_index].item<float>();
  const double inv = count > 0 ? 1.0 / count : 1.0;
  for (Bucket& bucket : buckets_) {
    for (size_t i = 0; i < bucket.params.size(); ++i) {
      torch::Tensor& p = params_[bucket.params[i]];
      torch::Tensor g = bucket.flat.narrow(0, bucket.offsets[i], p.numel()).view_as(p) * inv;
      if (p.grad().defined()) {
        p.mutable_grad().copy_(g);
      } else {
        p.mutable_grad() = g;
      }
    }
  }
  return extra;
}

}  // namespace sluice::training
