#include <gtest/gtest.h>

#include "sluice/telemetry.h"

namespace sluice {
namespace {

constexpr uint64_t kSecond = 1'000'000'000;

StageSnapshot stage(std::string name, double busy_seconds) {
  StageSnapshot s;
  s.name = std::move(name);
  s.busy_ns = static_cast<uint64_t>(busy_seconds * kSecond);
  return s;
}

TEST(BottleneckVerdict, InputBound) {
  VerdictInput in;
  in.wall_seconds = 10;
  in.consumer_wait_seconds = 4.1;
  in.workers = 2;
  // decode: 19.4 s busy over 10 s * 2 workers = 97 %.
  in.stages = {stage("read", 1.0), stage("decode", 19.4), stage("augment", 3.0)};
  Verdict v = bottleneck_verdict(in);
  EXPECT_EQ(v.kind, "input-bound");
  EXPECT_EQ(v.bottleneck, "decode");
  EXPECT_EQ(v.text,
            "input-bound: the consumer waited 41 % of the time; decode is 97 % busy on 2 "
            "workers");
}

TEST(BottleneckVerdict, InputBoundJustAboveTenPercent) {
  VerdictInput in;
  in.wall_seconds = 100;
  in.consumer_wait_seconds = 10.4;  // 10.4 % > 10 %, printed rounded
  in.workers = 1;
  in.stages = {stage("decode", 99.6)};
  Verdict v = bottleneck_verdict(in);
  EXPECT_EQ(v.kind, "input-bound");
  EXPECT_EQ(v.text,
            "input-bound: the consumer waited 10 % of the time; decode is 100 % busy on 1 "
            "worker");
}

TEST(BottleneckVerdict, ConsumerBound) {
  VerdictInput in;
  in.wall_seconds = 20;
  in.consumer_wait_seconds = 0.05;  // 0.25 %: never waited, bar the cold start
  in.workers = 4;
  // decode: 24 s / (20 s * 4) = 30 %.
  in.stages = {stage("read", 2), stage("decode", 24), stage("augment", 8)};
  Verdict v = bottleneck_verdict(in);
  EXPECT_EQ(v.kind, "consumer-bound");
  EXPECT_EQ(v.bottleneck, "decode");
  EXPECT_EQ(v.text,
            "consumer-bound: the consumer waited 0 % of the time; decode is 30 % busy on 4 "
            "workers");
}

TEST(BottleneckVerdict, BalancedWhenBothSidesAreBusy) {
  VerdictInput in;
  in.wall_seconds = 10;
  in.consumer_wait_seconds = 0.5;  // 5 %: some waiting, but under the 10 % bar
  in.workers = 2;
  in.stages = {stage("decode", 16)};  // 80 %: workers are not idle
  Verdict v = bottleneck_verdict(in);
  EXPECT_EQ(v.kind, "balanced");
  EXPECT_EQ(v.bottleneck, "decode");
  EXPECT_EQ(v.text,
            "balanced: the consumer waited 5 % of the time; decode is 80 % busy on 2 "
            "workers");
}

TEST(BottleneckVerdict, IdleWorkersButConsumerWaitedSomeIsBalanced) {
  VerdictInput in;
  in.wall_seconds = 10;
  in.consumer_wait_seconds = 0.5;  // waited 5 %: not "never"
  in.workers = 2;
  in.stages = {stage("decode", 2)};  // 10 % busy
  EXPECT_EQ(bottleneck_verdict(in).kind, "balanced");
}

TEST(BottleneckVerdict, ZeroWallTime) {
  VerdictInput in;
  in.consumer_wait_seconds = 1;
  in.stages = {stage("decode", 1)};
  Verdict v = bottleneck_verdict(in);
  EXPECT_EQ(v.kind, "balanced");
  EXPECT_EQ(v.bottleneck, "");
  EXPECT_EQ(v.text, "balanced: no time measured yet");
}

TEST(BottleneckVerdict, NoStages) {
  VerdictInput in;
  in.wall_seconds = 10;
  in.consumer_wait_seconds = 5;
  Verdict v = bottleneck_verdict(in);
  EXPECT_EQ(v.kind, "input-bound");
  EXPECT_EQ(v.bottleneck, "");
  EXPECT_EQ(v.text, "input-bound: the consumer waited 50 % of the time; no worker stages measured");
  in.consumer_wait_seconds = 0;
  EXPECT_EQ(bottleneck_verdict(in).kind, "balanced");  // idle workers cannot be judged
}

TEST(BottleneckVerdict, OutOfRangeInputsAreClamped) {
  VerdictInput in;
  in.wall_seconds = 10;
  in.consumer_wait_seconds = 12;  // clocks skew: more wait than wall
  in.workers = 0;                 // treated as 1
  in.stages = {stage("decode", 5)};
  Verdict v = bottleneck_verdict(in);
  EXPECT_EQ(v.text,
            "input-bound: the consumer waited 100 % of the time; decode is 50 % busy on 1 "
            "worker");
}

}  // namespace
}  // namespace sluice
