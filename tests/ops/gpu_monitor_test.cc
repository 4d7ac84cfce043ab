#include "sluice/gpu_monitor.h"

#include <gtest/gtest.h>
#include <stdlib.h>

namespace sluice {
namespace {

TEST(GpuMonitorTest, NoDriverSaysWhy) {
  ::setenv("SLUICE_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1", 1);
  auto m = GpuMonitor::open();
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kNotFound);
  EXPECT_NE(std::string(m.status().message()).find("no NVIDIA driver found"), std::string::npos);
}

// The fake driver (fake_nvml.c): GPU 0 is 87 % busy with a quarter of its
// memory used; GPU 1 refuses the utilisation query.
TEST(GpuMonitorTest, SamplesEveryGpuOfTheFakeDriver) {
  ::setenv("SLUICE_NVML_LIBRARY", SLUICE_FAKE_NVML, 1);
  auto m = GpuMonitor::open();
  ASSERT_TRUE(m.ok()) << m.status().message();
  ASSERT_EQ((*m)->names().size(), 2u);
  EXPECT_EQ((*m)->names()[0], "GPU 0: NVIDIA H200");
  EXPECT_EQ((*m)->names()[1], "GPU 1: Tesla P100-PCIE-16GB");
  std::vector<GpuSample> s = (*m)->sample();
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].utilization, 87);
  EXPECT_EQ(s[0].memory_total_bytes, 150754820096ull);
  EXPECT_EQ(s[0].memory_used_bytes, 150754820096ull / 4);
  EXPECT_EQ(s[1].utilization, -1);  // refused: unknown, the memory still read
  EXPECT_EQ(s[1].memory_total_bytes, 17071734784ull);
  EXPECT_EQ(s[1].memory_used_bytes, 0u);
}

}  // namespace
}  // namespace sluice
