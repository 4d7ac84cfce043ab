// sluice's own GPU kernels, in a library of their own (libsluice_kernels.so,
// built with nvcc where the CUDA build is on) that is loaded at run time
// beside the CUDA runtime: the sluice binary itself links no CUDA. The ABI
// is C: one version function and one launcher per kernel.
#pragma once

#include <string>
#include <vector>

#include "kernels/kernels_abi.h"
#include "sluice/status.h"

namespace sluice::device {

struct Kernels {
  std::string library;
  sluice_launch_fused_samples_fn launch_fused_samples = nullptr;

  // Loaded once: SLUICE_KERNELS_LIBRARY, else libsluice_kernels.so beside
  // the executable or the module holding sluice (the Python extension),
  // else the build tree's copy. kUnavailable where none loads or its ABI
  // differs (naming both).
  static Result<const Kernels*> get();
};

std::vector<std::string> kernels_candidates();

}  // namespace sluice::device
