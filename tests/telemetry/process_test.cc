#include <gtest/gtest.h>

#include <string>

#include "sluice/telemetry.h"

namespace sluice {
namespace {

// Fields 14 (utime) = 250 and 15 (stime) = 50 ticks.
constexpr const char* kStat =
    "4242 (my proc) (x) R 1 4242 4242 0 -1 4194560 1000 0 0 0 250 50 0 0 20 0 3 0 12345 "
    "100000000 2500 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n";

constexpr const char* kStatus =
    "Name:\tmy proc) (x\n"
    "State:\tR (running)\n"
    "VmPeak:\t  200000 kB\n"
    "VmHWM:\t    12000 kB\n"
    "VmRSS:\t    10000 kB\n"
    "VmRSSx:\t   1 kB\n"
    "Threads:\t3\n";

TEST(ParseProcess, CommWithSpacesAndParentheses) {
  Result<ProcessSample> s = parse_process(kStat, kStatus, 100);
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  EXPECT_DOUBLE_EQ(s->cpu_seconds, 3.0);
  EXPECT_EQ(s->rss_bytes, 10000u * 1024);
  EXPECT_EQ(s->peak_rss_bytes, 12000u * 1024);
  EXPECT_EQ(s->threads, 3);
}

TEST(ParseProcess, TicksPerSecondScalesCpuTime) {
  Result<ProcessSample> s = parse_process(kStat, kStatus, 1000);
  ASSERT_TRUE(s.ok());
  EXPECT_DOUBLE_EQ(s->cpu_seconds, 0.3);
}

TEST(ParseProcess, MalformedInputIsAnError) {
  EXPECT_EQ(parse_process("", kStatus, 100).status().code(), StatusCode::kDataLoss);
  EXPECT_EQ(parse_process("4242 no-parens R 1 2 3", kStatus, 100).status().code(),
            StatusCode::kDataLoss);
  // Truncated before stime.
  EXPECT_EQ(parse_process("1 (a) R 1 1 1 0 -1 0 0 0 0 0 250", kStatus, 100).status().code(),
            StatusCode::kDataLoss);
  // utime not a number.
  EXPECT_EQ(parse_process("1 (a) R 1 1 1 0 -1 0 0 0 0 0 x 50 0", kStatus, 100).status().code(),
            StatusCode::kDataLoss);
  // Status without the lines we need, or with garbage in them.
  Status no_rss = parse_process(kStat, "VmHWM:\t1 kB\nThreads:\t1\n", 100).status();
  EXPECT_EQ(no_rss.code(), StatusCode::kDataLoss);
  EXPECT_NE(no_rss.message().find("VmRSS"), std::string_view::npos) << no_rss.to_string();
  EXPECT_NE(no_rss.message().find("/proc/self/status"), std::string_view::npos);
  EXPECT_FALSE(parse_process(kStat, "VmRSS:\tlots kB\nVmHWM:\t1 kB\nThreads:\t1\n", 100).ok());
  EXPECT_EQ(parse_process(kStat, kStatus, 0).status().code(), StatusCode::kInvalidArgument);
}

TEST(SampleProcess, RealProcIsPlausible) {
  Result<ProcessSample> s = sample_process();
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  EXPECT_GT(s->rss_bytes, 0u);
  EXPECT_GE(s->peak_rss_bytes, s->rss_bytes);
  EXPECT_GE(s->threads, 1);
  EXPECT_GE(s->cpu_seconds, 0.0);
}

TEST(SampleProcess, CpuSecondsGrowWithWork) {
  Result<ProcessSample> before = sample_process();
  ASSERT_TRUE(before.ok());
  // Spin until the counter moves (one clock tick, usually 10 ms); the bound
  // only stops a broken sampler from hanging the test.
  volatile uint64_t sink = 0;
  double after = before->cpu_seconds;
  for (int round = 0; round < 20000 && after <= before->cpu_seconds; ++round) {
    for (int i = 0; i < 100000; ++i) sink = sink + static_cast<uint64_t>(i);
    Result<ProcessSample> s = sample_process();
    ASSERT_TRUE(s.ok());
    after = s->cpu_seconds;
  }
  EXPECT_GT(after, before->cpu_seconds);
}

TEST(ParseCpuTimes, SumsBusyAndTotal) {
  // user nice system idle iowait irq softirq steal guest guest_nice
  const char* text =
      "cpu  100 2 30 1000 40 5 6 7 50 1\n"
      "cpu0 50 1 15 500 20 2 3 3 25 0\n"
      "intr 12345\n";
  Result<CpuTimes> t = parse_cpu_times(text);
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  EXPECT_EQ(t->busy, 100u + 2 + 30 + 5 + 6 + 7);  // guest is already inside user
  EXPECT_EQ(t->total, t->busy + 1000 + 40);
}

TEST(ParseCpuTimes, OldKernelWithFewerFields) {
  Result<CpuTimes> t = parse_cpu_times("cpu 10 0 5 100\n");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->busy, 15u);
  EXPECT_EQ(t->total, 115u);
}

TEST(ParseCpuTimes, MalformedInputIsAnError) {
  EXPECT_EQ(parse_cpu_times("").status().code(), StatusCode::kDataLoss);
  EXPECT_EQ(parse_cpu_times("cpu0 1 2 3 4\n").status().code(), StatusCode::kDataLoss);
  EXPECT_EQ(parse_cpu_times("cpu 1 2 3\n").status().code(), StatusCode::kDataLoss);
  EXPECT_EQ(parse_cpu_times("cpu 1 2 x 4\n").status().code(), StatusCode::kDataLoss);
}

// Found by proc_fuzz: fields that each parse but whose sum wraps made
// busy larger than total (a CPU share above 100 %).
TEST(ParseCpuTimes, SumsPastTwoToTheSixtyFourAreAnError) {
  Result<CpuTimes> t = parse_cpu_times("cpu 1 0 0 18446744073709551615 0\n");
  EXPECT_EQ(t.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(t.status().message().find("2^64"), std::string::npos) << t.status().to_string();
  t = parse_cpu_times("cpu 18446744073709551615 1 0 0\n");
  EXPECT_EQ(t.status().code(), StatusCode::kDataLoss);
}

TEST(SampleCpuTimes, RealProcIsPlausible) {
  Result<CpuTimes> t = sample_cpu_times();
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  EXPECT_GT(t->total, 0u);
  EXPECT_LE(t->busy, t->total);
}

}  // namespace
}  // namespace sluice
