/* A stand-in for libnvidia-ml.so.1, built by the tests: two GPUs, driver
   580.65, CUDA 13.0. Lets doctor's GPU path and the GPU monitor run on
   machines without one. GPU 0 is 87 % busy with a quarter of its memory in
   use; GPU 1 refuses the utilisation query, as some old boards do. */
#include <string.h>

typedef struct nvmlDevice_st* nvmlDevice_t;
typedef struct {
  unsigned long long total, free, used;
} nvmlMemory_t;
typedef struct {
  unsigned int gpu, memory;
} nvmlUtilization_t;
static int devices[2];

int nvmlInit_v2(void) {
  return 0;
}
int nvmlShutdown(void) {
  return 0;
}
int nvmlSystemGetDriverVersion(char* v, unsigned n) {
  strncpy(v, "580.65.06", n);
  return 0;
}
int nvmlSystemGetCudaDriverVersion_v2(int* v) {
  *v = 13000;
  return 0;
}
int nvmlDeviceGetCount_v2(unsigned* n) {
  *n = 2;
  return 0;
}
int nvmlDeviceGetHandleByIndex_v2(unsigned i, nvmlDevice_t* d) {
  if (i >= 2) return 2;
  *d = (nvmlDevice_t)&devices[i];
  return 0;
}
int nvmlDeviceGetName(nvmlDevice_t d, char* name, unsigned n) {
  strncpy(name, d == (nvmlDevice_t)&devices[0] ? "NVIDIA H200" : "Tesla P100-PCIE-16GB", n);
  return 0;
}
int nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t* m) {
  m->total = d == (nvmlDevice_t)&devices[0] ? 150754820096ULL : 17071734784ULL;
  m->used = d == (nvmlDevice_t)&devices[0] ? m->total / 4 : 0;
  m->free = m->total - m->used;
  return 0;
}
int nvmlDeviceGetUtilizationRates(nvmlDevice_t d, nvmlUtilization_t* u) {
  if (d != (nvmlDevice_t)&devices[0]) return 3; /* NVML_ERROR_NOT_SUPPORTED */
  u->gpu = 87;
  u->memory = 40;
  return 0;
}
int nvmlDeviceGetCudaComputeCapability(nvmlDevice_t d, int* major, int* minor) {
  *major = d == (nvmlDevice_t)&devices[0] ? 9 : 6;
  *minor = 0;
  return 0;
}
