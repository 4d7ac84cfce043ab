// The ring's size from the options and budgets (pipeline/sizing.h).
#include "pipeline/sizing.h"

#include <gtest/gtest.h>

namespace sluice::detail {
namespace {

constexpr uint64_t kMB = uint64_t{1} << 20;

TEST(SizingTest, AutoGivesOneWorkerPerCoreAndTwoSlotsEach) {
  PipelineOptions o;  // 2 GiB budget
  Result<RingSize> r = size_ring(o, 10 * kMB, UINT64_MAX, 4);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->workers, 4);
  EXPECT_EQ(r->prefetch, 8);
  EXPECT_NE(r->tuning.find("workers 4 (one per core), prefetch 8"), std::string::npos) << r->tuning;
}

TEST(SizingTest, TheBudgetLessScratchCapsTheSlots) {
  PipelineOptions o;
  o.workers = 2;
  o.memory_budget = 2 * kWorkerScratchBytes + 35 * kMB;  // room for 3 slots of 10 MB
  Result<RingSize> r = size_ring(o, 10 * kMB, UINT64_MAX, 16);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->workers, 2);
  EXPECT_EQ(r->prefetch, 3);
  EXPECT_NE(r->tuning.find("workers 2 (set), prefetch 3 (of 3 slots"), std::string::npos)
      << r->tuning;
  // The device budget caps them too.
  r = size_ring(o, 10 * kMB, 2, 16);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->prefetch, 2);
}

TEST(SizingTest, FewerThanTwoSlotsSaysWhatToChange) {
  PipelineOptions o;
  o.workers = 1;
  o.memory_budget = kWorkerScratchBytes + 15 * kMB;  // one slot of 10 MB
  Result<RingSize> r = size_ring(o, 10 * kMB, UINT64_MAX, 1);
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("memory budget of 63 MB is too small"), std::string::npos)
      << r.status().to_string();
  EXPECT_NE(r.status().message().find("raise the budget"), std::string::npos);
}

TEST(SizingTest, SetPrefetchIsTakenAsGiven) {
  PipelineOptions o;
  o.prefetch = 5;
  o.memory_budget = kMB;  // not consulted
  Result<RingSize> r = size_ring(o, 10 * kMB, UINT64_MAX, 3);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->workers, 3);
  EXPECT_EQ(r->prefetch, 5);
  EXPECT_EQ(r->tuning, "workers 3 (one per core), prefetch 5 (set)");
}

TEST(SizingTest, ArenaShareCoversADoubleSizeWindowAndItsTables) {
  SampleSpec s;
  s.width = s.height = 224;
  const size_t share = arena_per_sample(s);
  EXPECT_EQ(share % 256, 0u);
  EXPECT_GE(share, size_t{448} * 448 * 3);
}

}  // namespace
}  // namespace sluice::detail
