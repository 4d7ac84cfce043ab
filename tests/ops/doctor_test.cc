#include "ops/doctor.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace sluice {
namespace {

bool has(const DoctorReport& r, const std::string& level, const std::string& text) {
  for (const Check& c : r.checks) {
    if (c.level == level && c.detail.find(text) != std::string::npos) return true;
  }
  return false;
}

TEST(ParseCpuinfoTest, ModelCoresAndSimd) {
  std::string text =
      "processor\t: 0\nmodel name\t: AMD EPYC 9B14\nflags\t\t: fpu sse2 sse4_2 avx2 avx512f\n\n"
      "processor\t: 1\nmodel name\t: AMD EPYC 9B14\nflags\t\t: fpu sse2 sse4_2 avx2 avx512f\n";
  CpuInfo c = parse_cpuinfo(text);
  EXPECT_EQ(c.model, "AMD EPYC 9B14");
  EXPECT_EQ(c.logical_cores, 2);
  EXPECT_EQ(c.simd, "AVX-512");
  EXPECT_EQ(parse_cpuinfo("flags: fpu sse2 sse4_2 avx2\n").simd, "AVX2");
  EXPECT_EQ(parse_cpuinfo("flags: fpu sse2\n").simd, "SSE2");
  EXPECT_EQ(parse_cpuinfo("").simd, "");
}

TEST(ParseMeminfoTest, TotalAndAvailable) {
  auto m =
      parse_meminfo("MemTotal:       24594900 kB\nMemFree:  100 kB\nMemAvailable:   20000000 kB\n");
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->total_bytes, 24594900ull * 1024);
  EXPECT_EQ(m->available_bytes, 20000000ull * 1024);
  auto old = parse_meminfo("MemTotal: 1000 kB\nMemFree: 10 kB\n");  // kernels before 3.14
  ASSERT_TRUE(old.ok());
  EXPECT_EQ(old->available_bytes, 10240u);
  EXPECT_EQ(parse_meminfo("nothing").status().code(), StatusCode::kDataLoss);
}

TEST(CudaVersionTest, Encoding) {
  EXPECT_EQ(cuda_version_string(13000), "13.0");
  EXPECT_EQ(cuda_version_string(12040), "12.4");
  EXPECT_EQ(cuda_version_string(0), "none");
}

TEST(DoctorTest, ThisMachineWithoutGpuLibraries) {
  ::setenv("SLUICE_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1", 1);
  ::setenv("SLUICE_CUDART_LIBRARY", "/nonexistent/libcudart.so", 1);
  DoctorReport r = run_doctor({});
  EXPECT_GT(r.cores, 0);
  EXPECT_GT(r.memory_bytes, 0u);
  EXPECT_TRUE(has(r, "ok", "libjpeg-turbo"));
  EXPECT_TRUE(has(r, "ok", "libspng"));
  EXPECT_TRUE(has(r, "ok", "OpenCV"));
  // The override replaces the search list, so no driver loads, whatever
  // this machine has: doctor must say so and not fail.
  EXPECT_TRUE(r.nvml_library.empty());
  EXPECT_TRUE(has(r, "info", "no NVIDIA driver found"));
  EXPECT_NE(format_doctor_json(r).find("\"checks\""), std::string::npos);
}

TEST(DoctorTest, FakeDriverAndRuntime) {
  ::setenv("SLUICE_NVML_LIBRARY", SLUICE_FAKE_NVML, 1);
  ::setenv("SLUICE_CUDART_LIBRARY", SLUICE_FAKE_CUDART, 1);
  DoctorReport r = run_doctor({});
  ASSERT_EQ(r.gpus.size(), 2u);
  EXPECT_EQ(r.gpus[0].name, "NVIDIA H200");
  EXPECT_EQ(r.gpus[0].compute_major, 9);
  EXPECT_EQ(r.driver_version, "580.65.06");
  EXPECT_EQ(r.cuda_driver_version, 13000);
  EXPECT_TRUE(has(r, "ok", "GPU 0: NVIDIA H200, 150.8 GB, compute capability 9.0"));
  EXPECT_TRUE(has(r, "warn", "Tesla P100"));  // no tensor cores
  // The runtime (13.0) is not newer than NVML's driver CUDA (13.0): ok.
  EXPECT_TRUE(has(r, "ok", "CUDA runtime 13.0"));
  std::string text = format_doctor_text(r);
  EXPECT_NE(text.find("fix: compute capability under 7.0"), std::string::npos);
}

TEST(DoctorTest, NvjpegIsFoundWithItsVersionOrSaidMissing) {
  ::setenv("SLUICE_NVML_LIBRARY", SLUICE_FAKE_NVML, 1);
  ::setenv("SLUICE_CUDART_LIBRARY", "/nonexistent/libcudart.so", 1);
  ::setenv("SLUICE_NVJPEG_LIBRARY", SLUICE_FAKE_NVJPEG, 1);
  DoctorReport r = run_doctor({});
  EXPECT_EQ(r.nvjpeg_major, 13);
  EXPECT_EQ(r.nvjpeg_library, SLUICE_FAKE_NVJPEG);
  EXPECT_TRUE(has(r, "ok", "nvJPEG 13.0.0"));
  EXPECT_NE(format_doctor_json(r).find("\"nvjpeg\": \"13.0.0\""), std::string::npos);
  ::setenv("SLUICE_NVJPEG_LIBRARY", "/nonexistent/libnvjpeg.so.13", 1);
  r = run_doctor({});
  EXPECT_EQ(r.nvjpeg_major, 0);
  EXPECT_TRUE(has(r, "info", "nvJPEG not found"));
}

// The search the GPU decoder makes: past an nvJPEG for another CUDA to the
// one for the runtime, saying what it passed over and why.
TEST(DoctorTest, NvjpegSearchSaysWhatItPassedOver) {
  // Fresh copies: a library an earlier test of this process loaded would be
  // found first, as loaded.
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("sluice-doctor-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path v12 = dir / "libnvjpeg.so.12", v13 = dir / "libnvjpeg.so.13";
  fs::copy_file(SLUICE_FAKE_NVJPEG_CUDA12, v12, fs::copy_options::overwrite_existing);
  fs::copy_file(SLUICE_FAKE_NVJPEG, v13, fs::copy_options::overwrite_existing);
  ::setenv("SLUICE_NVML_LIBRARY", SLUICE_FAKE_NVML, 1);
  ::setenv("SLUICE_CUDART_LIBRARY", SLUICE_FAKE_CUDART, 1);  // runtime 13.0
  ::setenv("SLUICE_NVJPEG_LIBRARY", (v12.string() + ":" + v13.string()).c_str(), 1);
  DoctorReport r = run_doctor({});
  EXPECT_EQ(r.nvjpeg_library, v13.string());
  ASSERT_EQ(r.nvjpeg_refused.size(), 1u);
  EXPECT_TRUE(has(r, "info",
                  "nvJPEG passed over: " + v12.string() +
                      ": nvJPEG 12.0.0 is for CUDA 12, not the runtime's CUDA 13"));
  EXPECT_NE(format_doctor_json(r).find("nvjpeg_refused"), std::string::npos);
  ::setenv("SLUICE_NVJPEG_LIBRARY", v12.c_str(), 1);
  r = run_doctor({});
  EXPECT_EQ(r.nvjpeg_major, 0);
  EXPECT_TRUE(has(r, "warn", "no usable nvJPEG for CUDA runtime 13.0"));
  EXPECT_TRUE(has(r, "info", "nvJPEG passed over"));
  ::unsetenv("SLUICE_NVJPEG_LIBRARY");
  ::unsetenv("SLUICE_CUDART_LIBRARY");
  fs::remove_all(dir);  // the loaded copies stay mapped
}

TEST(DoctorTest, LibTorchComesFromTheTrainerOrIsSaidMissing) {
  DoctorOptions o;
  o.trainer = "/nonexistent/sluice-train";
  DoctorReport r = run_doctor(o);
  EXPECT_FALSE(r.torch_build);
  EXPECT_TRUE(has(r, "info", "built without it"));
  // A stand-in trainer that answers --version as sluice-train does.
  char dir[] = "/tmp/sluice-doctor-XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  std::string script = std::string(dir) + "/sluice-train";
  {
    std::ofstream f(script);
    f << "#!/bin/sh\necho 'sluice-train 0.1.0, LibTorch 9.9.0, CPU only'\n";
  }
  ::chmod(script.c_str(), 0755);
  o.trainer = script;
  r = run_doctor(o);
  EXPECT_TRUE(r.torch_build);
  EXPECT_TRUE(has(r, "ok", "LibTorch 9.9.0, CPU only"));
  {
    std::ofstream f(script);
    f << "#!/bin/sh\nexit 127\n";
  }
  r = run_doctor(o);
  EXPECT_FALSE(r.torch_build);
  EXPECT_TRUE(has(r, "fail", "does not start"));
  ::unlink(script.c_str());
  ::rmdir(dir);
}

TEST(DoctorTest, RuntimeNewerThanDriverFails) {
  ::setenv("SLUICE_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1", 1);
  ::setenv("SLUICE_CUDART_LIBRARY", SLUICE_FAKE_CUDART, 1);
  DoctorReport r = run_doctor({});
  if (!r.nvml_library.empty()) GTEST_SKIP() << "a real NVIDIA driver answered";
  EXPECT_EQ(r.cuda_driver_version, 12040);
  EXPECT_TRUE(has(r, "fail",
                  "CUDA runtime 13.0 (" SLUICE_FAKE_CUDART
                  ") is newer than the driver's CUDA 12.4"));
}

TEST(DoctorTest, DataFolderSpaceAndReadSpeed) {
  ::setenv("SLUICE_NVML_LIBRARY", "/nonexistent", 1);
  DoctorOptions o;
  o.data_dir = SLUICE_TEST_DATA;
  o.read_bytes = 4 << 20;
  DoctorReport r = run_doctor(o);
  EXPECT_TRUE(has(r, "ok", "free of"));
  EXPECT_GT(r.data_read_mb_per_second, 0);
  o.data_dir = "/nonexistent/data";
  EXPECT_TRUE(has(run_doctor(o), "fail", "cannot be read"));
}

}  // namespace
}  // namespace sluice
