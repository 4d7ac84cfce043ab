#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <vector>

#include "sluice/image_ops.h"
#include "tests/test_seed.h"

namespace sluice {
namespace {

uint64_t test_seed() {
  return run_seed("augment_test");
}

// torchvision.transforms.RandomResizedCrop.get_params transcribed line by
// line, with Python's round() (half to even) and randint(a, b) = a + below(b - a).
CropWindow reference_rrc(int width, int height, double smin, double smax, double rmin, double rmax,
                         CounterRng& rng) {
  const double area = static_cast<double>(height) * width;
  const double log_ratio[2] = {std::log(rmin), std::log(rmax)};
  for (int k = 0; k < 10; ++k) {
    const double target_area = area * (smin + (smax - smin) * rng.uniform());
    const double aspect_ratio =
        std::exp(log_ratio[0] + (log_ratio[1] - log_ratio[0]) * rng.uniform());
    const int w = static_cast<int>(std::nearbyint(std::sqrt(target_area * aspect_ratio)));
    const int h = static_cast<int>(std::nearbyint(std::sqrt(target_area / aspect_ratio)));
    if (0 < w && w <= width && 0 < h && h <= height) {
      const int i = static_cast<int>(rng.below(height - h + 1));
      const int j = static_cast<int>(rng.below(width - w + 1));
      return {j, i, w, h};
    }
  }
  const double in_ratio = static_cast<double>(width) / height;
  int w, h;
  if (in_ratio < std::min(rmin, rmax)) {
    w = width;
    h = static_cast<int>(std::nearbyint(w / std::min(rmin, rmax)));
  } else if (in_ratio > std::max(rmin, rmax)) {
    h = height;
    w = static_cast<int>(std::nearbyint(h * std::max(rmin, rmax)));
  } else {
    w = width;
    h = height;
  }
  return {(width - w) / 2, (height - h) / 2, w, h};
}

struct Shape {
  int width, height;
};

TEST(RandomResizedCrop, MatchesTorchvisionTranscriptionAndStaysInside) {
  const Shape shapes[] = {{500, 375}, {375, 500}, {224, 224},   {1000, 10},
                          {10, 1000}, {1, 1},     {3000, 2000}, {33, 17}};
  const RandomResizedCropParams params;
  for (const Shape& s : shapes) {
    for (uint64_t n = 0; n < 20000; ++n) {
      CounterRng a(hash_key(test_seed(), s.width, s.height, n));
      CounterRng b(hash_key(test_seed(), s.width, s.height, n));
      const CropWindow got = random_resized_crop(s.width, s.height, params, a);
      const CropWindow want = reference_rrc(s.width, s.height, 0.08, 1.0, 3.0 / 4, 4.0 / 3, b);
      ASSERT_EQ(got, want) << s.width << "x" << s.height << " draw " << n;
      ASSERT_GT(got.width, 0);
      ASSERT_GT(got.height, 0);
      ASSERT_GE(got.x, 0);
      ASSERT_GE(got.y, 0);
      ASSERT_LE(got.x + got.width, s.width);
      ASSERT_LE(got.y + got.height, s.height);
    }
  }
}

// E[f(s, log r) | the draw fits] for s ~ U(0.08, 1), log r ~ U(log 3/4,
// log 4/3), by a fine midpoint grid (ignores the rounding of w and h, which
// moves the result by O(1/side)).
template <typename F>
double expected_given_fit(double width, double height, F f) {
  constexpr int kN = 1000;
  const double lr0 = std::log(0.75), lr1 = std::log(4.0 / 3);
  double sum = 0, weight = 0;
  for (int i = 0; i < kN; ++i) {
    const double s = 0.08 + (1 - 0.08) * (i + 0.5) / kN;
    for (int j = 0; j < kN; ++j) {
      const double lr = lr0 + (lr1 - lr0) * (j + 0.5) / kN;
      const double r = std::exp(lr);
      const double area = s * width * height;
      if (std::sqrt(area * r) <= width && std::sqrt(area / r) <= height) {
        sum += f(s, lr);
        weight += 1;
      }
    }
  }
  return sum / weight;
}

TEST(RandomResizedCrop, AreaAndRatioDistributionsMatchTheRule) {
  constexpr int kDraws = 20000;
  const RandomResizedCropParams params;
  const Shape shapes[] = {{500, 375}, {375, 500}, {256, 256}};
  for (const Shape& s : shapes) {
    double share_sum = 0, log_ratio_sum = 0;
    int n = 0;
    for (uint64_t k = 0; k < kDraws; ++k) {
      CounterRng rng(hash_key(test_seed(), 7, s.width, k));
      const CropWindow c = random_resized_crop(s.width, s.height, params, rng);
      share_sum += static_cast<double>(c.width) * c.height / (s.width * s.height);
      log_ratio_sum += std::log(static_cast<double>(c.width) / c.height);
      ++n;
    }
    const double want_share =
        expected_given_fit(s.width, s.height, [](double share, double) { return share; });
    const double want_log_ratio =
        expected_given_fit(s.width, s.height, [](double, double lr) { return lr; });
    // The share has sd ~0.26 and the log-ratio ~0.17; over 20,000 draws the
    // mean's sd is ~0.0019 and ~0.0012. 0.01 is over 5 sd, plus the rounding
    // of w and h (~1/side) and the rare fallback (p < 1e-6 here).
    EXPECT_NEAR(share_sum / n, want_share, 0.01) << s.width << "x" << s.height;
    EXPECT_NEAR(log_ratio_sum / n, want_log_ratio, 0.01) << s.width << "x" << s.height;
  }
}

TEST(RandomResizedCrop, ExtremeAspectFallsBackToClampedRatioCentre) {
  const RandomResizedCropParams params;
  for (uint64_t k = 0; k < 100; ++k) {
    CounterRng rng(hash_key(test_seed(), 11, k));
    // No draw fits: h >= sqrt(0.08 * 10000 / (4/3)) > 10. Ratio clamps to 4/3.
    EXPECT_EQ(random_resized_crop(1000, 10, params, rng), (CropWindow{493, 0, 13, 10}));
    EXPECT_EQ(random_resized_crop(10, 1000, params, rng), (CropWindow{0, 493, 10, 13}));
  }
  // No attempts: the in-range ratio keeps the whole image.
  RandomResizedCropParams none = params;
  none.attempts = 0;
  CounterRng rng(1);
  EXPECT_EQ(random_resized_crop(500, 400, none, rng), (CropWindow{0, 0, 500, 400}));
}

TEST(RandomResizedCrop, SameKeySameCropDifferentKeyDiffers) {
  const RandomResizedCropParams params;
  int differing = 0;
  for (uint64_t k = 0; k < 100; ++k) {
    CounterRng a(hash_key(test_seed(), k)), b(hash_key(test_seed(), k)),
        c(hash_key(test_seed(), k + 1000));
    const CropWindow ca = random_resized_crop(640, 480, params, a);
    EXPECT_EQ(ca, random_resized_crop(640, 480, params, b));
    differing += ca == random_resized_crop(640, 480, params, c) ? 0 : 1;
  }
  EXPECT_GT(differing, 90);
}

TEST(RandomResizedCrop, EmptyImageGivesEmptyCrop) {
  CounterRng rng(1);
  EXPECT_EQ(random_resized_crop(0, 10, {}, rng), CropWindow{});
}

TEST(CenterCropWindow, KeepsTheCentreSquareOfTheShorterSide) {
  EXPECT_EQ(center_crop_window(500, 375), (CropWindow{86, 23, 328, 328}));
  EXPECT_EQ(center_crop_window(375, 500), (CropWindow{23, 86, 328, 328}));
  EXPECT_EQ(center_crop_window(256, 256), (CropWindow{16, 16, 224, 224}));
  EXPECT_EQ(center_crop_window(640, 512, 1.0), (CropWindow{64, 0, 512, 512}));
  EXPECT_EQ(center_crop_window(1, 1), (CropWindow{0, 0, 1, 1}));
  EXPECT_EQ(center_crop_window(0, 5), CropWindow{});
}

TEST(PlanAugment, ModesDrawWhatTheySay) {
  CounterRng rng(hash_key(test_seed(), 3));
  const AugmentPlan resize = plan_augment(AugmentMode::kResize, 300, 200, rng);
  EXPECT_EQ(resize.crop, (CropWindow{0, 0, 300, 200}));
  EXPECT_FALSE(resize.flip);
  const AugmentPlan eval = plan_augment(AugmentMode::kEval, 300, 200, rng);
  EXPECT_EQ(eval.crop, center_crop_window(300, 200));
  EXPECT_FALSE(eval.flip);

  int flips = 0;
  constexpr int kDraws = 10000;
  for (uint64_t k = 0; k < kDraws; ++k) {
    CounterRng a(hash_key(test_seed(), 5, k)), b(hash_key(test_seed(), 5, k));
    const AugmentPlan p = plan_augment(AugmentMode::kTrain, 300, 200, a);
    const AugmentPlan q = plan_augment(AugmentMode::kTrain, 300, 200, b);
    EXPECT_EQ(p.crop, q.crop);
    EXPECT_EQ(p.flip, q.flip);
    flips += p.flip;
  }
  // Binomial(10000, 0.5): sd 50; 300 is 6 sd.
  EXPECT_NEAR(flips, kDraws / 2, 300);
  CounterRng never(1), always(1);
  EXPECT_FALSE(plan_augment(AugmentMode::kTrain, 300, 200, never, {}, 0.0).flip);
  EXPECT_TRUE(plan_augment(AugmentMode::kTrain, 300, 200, always, {}, 1.0).flip);
}

TEST(ChooseScaleDenom, LargestDenominatorThatStillCoversTheOutput) {
  const int outs[] = {1, 7, 64, 224, 299};
  for (int out_w : outs) {
    for (int out_h : outs) {
      for (int w = 1; w <= 2500; w += 13) {
        for (int h = 1; h <= 2500; h += 97) {
          const int d = choose_scale_denom({0, 0, w, h}, out_w, out_h);
          ASSERT_TRUE(d == 1 || d == 2 || d == 4 || d == 8);
          if (d > 1) {
            ASSERT_GE(static_cast<double>(w) / d, out_w);
            ASSERT_GE(static_cast<double>(h) / d, out_h);
          }
          if (d < 8) {  // the next scale would upscale on some axis
            ASSERT_TRUE(static_cast<double>(w) / (2 * d) < out_w ||
                        static_cast<double>(h) / (2 * d) < out_h)
                << w << "x" << h << " -> " << out_w << "x" << out_h << ": " << d;
          }
        }
      }
    }
  }
  EXPECT_EQ(choose_scale_denom({0, 0, 1792, 1792}, 224, 224), 8);
  EXPECT_EQ(choose_scale_denom({0, 0, 1791, 1792}, 224, 224), 4);
  EXPECT_EQ(choose_scale_denom({0, 0, 448, 500}, 224, 224), 2);
  EXPECT_EQ(choose_scale_denom({0, 0, 447, 500}, 224, 224), 1);
  EXPECT_EQ(choose_scale_denom({0, 0, 100, 100}, 224, 224), 1);
}

}  // namespace
}  // namespace sluice
