#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <set>

#include "sluice/pipeline.h"

namespace sluice {
namespace {

PipelineOptions opts(Order order, int rank = 0, int world = 1, bool drop_last = true) {
  PipelineOptions o;
  o.order = order;
  o.rank = rank;
  o.world_size = world;
  o.drop_last = drop_last;
  o.seed = 1234;
  o.quasi_block = 8;
  o.quasi_group = 3;
  o.shuffle_buffer = 50;
  return o;
}

bool is_permutation_of_all(std::vector<uint32_t> v, uint32_t n) {
  std::sort(v.begin(), v.end());
  std::vector<uint32_t> all(n);
  std::iota(all.begin(), all.end(), 0u);
  return v == all;
}

TEST(PlanTest, EveryOrderIsAPermutationAndReproducible) {
  for (Order order : {Order::kNone, Order::kGlobal, Order::kQuasi, Order::kBuffer}) {
    for (uint32_t n : {1u, 7u, 100u, 1001u}) {
      auto a = plan_epoch(n, opts(order), 3);
      EXPECT_TRUE(is_permutation_of_all(a, n)) << order_name(order) << " " << n;
      EXPECT_EQ(a, plan_epoch(n, opts(order), 3));
    }
  }
  auto none = plan_epoch(10, opts(Order::kNone), 0);
  EXPECT_TRUE(std::is_sorted(none.begin(), none.end()));
}

TEST(PlanTest, EpochsAndSeedsChangeTheOrder) {
  for (Order order : {Order::kGlobal, Order::kQuasi, Order::kBuffer}) {
    EXPECT_NE(plan_epoch(1000, opts(order), 0), plan_epoch(1000, opts(order), 1))
        << order_name(order);
    PipelineOptions other = opts(order);
    other.seed = 99;
    EXPECT_NE(plan_epoch(1000, opts(order), 0), plan_epoch(1000, other, 0)) << order_name(order);
  }
}

TEST(PlanTest, RanksAreDisjointCompleteAndEqual) {
  for (Order order : {Order::kNone, Order::kGlobal, Order::kQuasi, Order::kBuffer}) {
    for (uint32_t n : {12u, 1000u, 1003u}) {
      for (int world : {1, 2, 3, 4, 8}) {
        std::vector<uint32_t> all;
        size_t size = 0;
        for (int r = 0; r < world; ++r) {
          auto part = plan_epoch(n, opts(order, r, world, true), 5);
          if (r == 0) size = part.size();
          EXPECT_EQ(part.size(), size);
          EXPECT_EQ(part.size(), n / world);
          all.insert(all.end(), part.begin(), part.end());
        }
        std::set<uint32_t> unique(all.begin(), all.end());
        EXPECT_EQ(unique.size(), all.size()) << "ranks overlap";
        EXPECT_EQ(all.size(), n / world * world);
        // Padded: every record appears, parts stay equal.
        std::set<uint32_t> covered;
        for (int r = 0; r < world; ++r) {
          auto part = plan_epoch(n, opts(order, r, world, false), 5);
          EXPECT_EQ(part.size(), (n + world - 1) / world);
          covered.insert(part.begin(), part.end());
        }
        EXPECT_EQ(covered.size(), n);
      }
    }
  }
}

TEST(PlanTest, QuasiStaysLocal) {
  // Within each group of 3 blocks of 8, records come from those blocks only.
  auto q = plan_epoch(96, opts(Order::kQuasi), 0);
  for (size_t g = 0; g < 96; g += 24) {
    std::set<uint32_t> blocks;
    for (size_t i = g; i < g + 24; ++i) blocks.insert(q[i] / 8);
    EXPECT_EQ(blocks.size(), 3u);
  }
}

TEST(PlanTest, BufferDisplacementIsBounded) {
  // A record leaves a 50-slot shuffle buffer no earlier than it enters.
  auto b = plan_epoch(1000, opts(Order::kBuffer), 0);
  for (size_t pos = 0; pos < b.size(); ++pos) EXPECT_LE(b[pos], pos + 50);
}

TEST(PlanTest, ParseNames) {
  EXPECT_EQ(*parse_order("quasi"), Order::kQuasi);
  EXPECT_EQ(parse_order("random").status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace sluice

namespace sluice {
namespace {

// The state file: what --state-out writes, --state-in reads back; anything
// else is a clear error naming the file.
TEST(PipelineStateFileTest, RoundTripsAndRefusesOtherJson) {
  const PipelineState s{7, (uint64_t{1} << 63) + 5};
  EXPECT_EQ(
      format_pipeline_state(s),
      "{\"format\":\"sluice pipeline state 1\",\"epoch\":7,\"batches\":9223372036854775813}\n");
  // A file from before the format field reads the same.
  EXPECT_EQ(*parse_pipeline_state("{\"epoch\":7,\"batches\":9223372036854775813}", "old"), s);
  Result<PipelineState> other =
      parse_pipeline_state("{\"format\":\"sluice bench 1\",\"epoch\":1,\"batches\":2}", "b.json");
  EXPECT_EQ(other.status().code(), StatusCode::kDataLoss);
  EXPECT_EQ(other.status().message(), "b.json: a sluice bench 1, not a sluice state file");
  auto back = parse_pipeline_state(format_pipeline_state(s), "x.state");
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  EXPECT_EQ(*back, s);
  for (const char* bad : {"", "[1, 2]", "{\"epoch\": 1}", "{\"epoch\": -1, \"batches\": 0}",
                          "{\"epoch\": \"1\", \"batches\": 0}", "{\"epoch\": 1.5, \"batches\": 0}",
                          "{\"epoch\": 1, \"batches\": 2"}) {
    auto r = parse_pipeline_state(bad, "run/x.state");
    EXPECT_EQ(r.status().code(), StatusCode::kDataLoss) << bad;
    EXPECT_NE(r.status().message().find("run/x.state"), std::string_view::npos) << bad;
  }
}

}  // namespace
}  // namespace sluice
