#include "sluice/random.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace sluice {
namespace {

TEST(CounterRngTest, PureFunctionOfKeyAndCounter) {
  CounterRng a(hash_key(1, 2, 3)), b(hash_key(1, 2, 3)), c(hash_key(1, 2, 4));
  for (int i = 0; i < 100; ++i) {
    uint64_t x = a.next();
    EXPECT_EQ(x, b.next());
    EXPECT_NE(x, c.next());
  }
}

TEST(CounterRngTest, UniformMomentsAndRange) {
  CounterRng r(hash_key(42));
  const int n = 200000;
  double sum = 0, sq = 0;
  for (int i = 0; i < n; ++i) {
    double u = r.uniform();
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    sum += u;
    sq += u * u;
  }
  double mean = sum / n, var = sq / n - mean * mean;
  EXPECT_NEAR(mean, 0.5, 0.005);  // sd of the mean ~0.00065
  EXPECT_NEAR(var, 1.0 / 12, 0.002);
}

TEST(CounterRngTest, BelowIsUniform) {
  CounterRng r(hash_key(7));
  std::vector<int> counts(10);
  for (int i = 0; i < 100000; ++i) counts[r.below(10)]++;
  for (int c : counts) EXPECT_NEAR(c, 10000, 500);  // > 5 sd
}

TEST(HashKeyTest, OrderMatters) {
  EXPECT_NE(hash_key(1, 2), hash_key(2, 1));
  EXPECT_NE(hash_key(0, 0, 0, 1), hash_key(0, 0, 1, 0));
}

}  // namespace
}  // namespace sluice
