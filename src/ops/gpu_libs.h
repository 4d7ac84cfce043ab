// Run-time loading of NVIDIA's libraries (never needed to build): the
// project's own minimal declarations of the few entry points doctor uses.
#pragma once

#include <string>
#include <vector>

#include "sluice/doctor.h"

namespace sluice::detail {

// Where each library is looked for, in order: an environment override
// (SLUICE_NVML_LIBRARY, SLUICE_CUDART_LIBRARY, SLUICE_NCCL_LIBRARY: when
// set, the only candidate), the dynamic loader's own path, the CUDA toolkit's folder, pip's
// nvidia/cu13 wheels. The toolkit's stubs folder is never used: its NVML
// stub answers every call with an error.
std::vector<std::string> nvml_candidates();
std::vector<std::string> cudart_candidates();
std::vector<std::string> nccl_candidates();

// Fills the GPU part of the report from whatever loads.
void probe_gpu_libraries(DoctorReport* report);

}  // namespace sluice::detail
