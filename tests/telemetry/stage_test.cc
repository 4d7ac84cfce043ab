#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "sluice/telemetry.h"

namespace sluice {
namespace {

TEST(StageStats, ConcurrentAddsSumExactly) {
  Telemetry t;
  StageStats& s = t.stage("decode");
  constexpr int kThreads = 4, kIters = 100000;
  {
    std::vector<std::jthread> threads;
    for (int i = 0; i < kThreads; ++i) {
      threads.emplace_back([&s] {
        for (int j = 0; j < kIters; ++j) {
          s.add(1, 3, 5);
          s.add_wait(7);
        }
      });
    }
  }
  StageSnapshot snap = s.snapshot();
  const uint64_t n = uint64_t{kThreads} * kIters;
  EXPECT_EQ(snap.name, "decode");
  EXPECT_EQ(snap.items, n);
  EXPECT_EQ(snap.bytes, 3 * n);
  EXPECT_EQ(snap.busy_ns, 5 * n);
  EXPECT_EQ(snap.wait_ns, 7 * n);
}

TEST(StageTimer, RecordsItemsBytesAndBusyTime) {
  StageStats s("read");
  {
    StageTimer timer(s);
    volatile uint64_t sink = 0;
    for (int i = 0; i < 100000; ++i) sink = sink + static_cast<uint64_t>(i);
    timer.done(4, 4096);
  }
  StageSnapshot snap = s.snapshot();
  EXPECT_EQ(snap.items, 4u);
  EXPECT_EQ(snap.bytes, 4096u);
  EXPECT_GT(snap.busy_ns, 0u);
  EXPECT_EQ(snap.wait_ns, 0u);
}

TEST(StageTimer, DefaultsToOneItemNoBytes) {
  StageStats s("augment");
  { StageTimer timer(s); }
  EXPECT_EQ(s.snapshot().items, 1u);
  EXPECT_EQ(s.snapshot().bytes, 0u);
}

TEST(Telemetry, StageReturnsTheSameStatsByNameInRegistrationOrder) {
  Telemetry t;
  StageStats& read = t.stage("read");
  StageStats& decode = t.stage("decode");
  for (int i = 0; i < 100; ++i) t.stage("extra" + std::to_string(i));
  EXPECT_EQ(&t.stage("read"), &read);  // references survive later registrations
  EXPECT_EQ(&t.stage("decode"), &decode);
  read.add(2, 10, 100);
  decode.add_wait(9);
  std::vector<StageSnapshot> snap = t.snapshot();
  ASSERT_EQ(snap.size(), 102u);
  EXPECT_EQ(snap[0].name, "read");
  EXPECT_EQ(snap[0].items, 2u);
  EXPECT_EQ(snap[0].bytes, 10u);
  EXPECT_EQ(snap[0].busy_ns, 100u);
  EXPECT_EQ(snap[1].name, "decode");
  EXPECT_EQ(snap[1].wait_ns, 9u);
  EXPECT_EQ(snap[2].name, "extra0");
}

TEST(Telemetry, EmptyRegistrySnapshotsEmpty) {
  Telemetry t;
  EXPECT_TRUE(t.snapshot().empty());
}

}  // namespace
}  // namespace sluice
