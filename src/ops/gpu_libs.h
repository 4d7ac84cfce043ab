// Doctor's probe of the GPU libraries (loaded at run time:
// device/libraries.h; NVML's ABI: device/nvml.h).
#pragma once

#include <dlfcn.h>

#include <string>
#include <vector>

#include "device/libraries.h"
#include "device/nvml.h"
#include "ops/doctor.h"

namespace sluice::detail {

// Fills the GPU part of the report from whatever loads.
void probe_gpu_libraries(DoctorReport* report);

}  // namespace sluice::detail
