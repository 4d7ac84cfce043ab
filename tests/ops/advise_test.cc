// advise's arithmetic on hand-checked cases.
#include "ops/advise.h"

#include <gtest/gtest.h>

#include <cmath>

namespace sluice {
namespace {

std::vector<GpuType> catalog() {
  return {
      {"Anchor", 80, 2000, 400, 400, 200, 50, "test"},
      {"Half", 40, 1000, 200, 200, 100, 25, "test"},  // half the peak, half the bandwidth
      {"NoBf16", 16, 500, 100, 0, 0, 10, "test"},     // like a T4
  };
}

AdviseInput input() {
  AdviseInput in;
  in.catalog = catalog();
  in.anchor_gpu = "Anchor";
  in.anchor_images_per_second = 2800;
  in.cpu_images_per_core = 1000;
  in.images = 1'000'000;
  in.counts = {1, 2};
  return in;
}

const AdviseRow& row(const AdviseReport& r, const std::string& gpu, int n) {
  for (const AdviseRow& x : r.rows) {
    if (x.gpu == gpu && x.count == n) return x;
  }
  throw std::runtime_error("no row");
}

TEST(AdviseTest, AnchorScalesByCountAndCoresFollow) {
  auto r = advise(input());
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_DOUBLE_EQ(row(*r, "Anchor", 1).gpu_images_per_second, 2800);
  EXPECT_DOUBLE_EQ(row(*r, "Anchor", 2).gpu_images_per_second, 5600);
  EXPECT_DOUBLE_EQ(row(*r, "Anchor", 2).cores_needed, 5.6);
  EXPECT_DOUBLE_EQ(row(*r, "Anchor", 1).epoch_seconds, 1'000'000 / 2800.0);
  EXPECT_FALSE(row(*r, "Anchor", 2).input_bound);  // no --cores: not judged
  EXPECT_FALSE(row(*r, "Anchor", 1).cost_per_epoch.has_value());
}

TEST(AdviseTest, GeometricMeanOfComputeAndBandwidth) {
  auto r = advise(input());
  ASSERT_TRUE(r.ok());
  EXPECT_DOUBLE_EQ(row(*r, "Half", 1).gpu_images_per_second, 1400);  // sqrt(0.5 * 0.5) = 0.5
  // No bf16: fp16 at 100 of 400, bandwidth 500 of 2000: sqrt(1/16) = 1/4.
  EXPECT_DOUBLE_EQ(row(*r, "NoBf16", 1).gpu_images_per_second, 700);
  EXPECT_EQ(row(*r, "NoBf16", 1).precision, "fp16");
}

TEST(AdviseTest, ModelFlopsRatio) {
  AdviseInput in = input();
  in.model = "resnet18";
  auto r = advise(in);
  ASSERT_TRUE(r.ok());
  EXPECT_NEAR(row(*r, "Anchor", 1).gpu_images_per_second, 2800 * 8.22 / 3.64, 1e-9);
}

TEST(AdviseTest, InputBoundEpochAndCost) {
  AdviseInput in = input();
  in.cores = 2;  // 2,000 images/s of input
  in.prices = {{"Anchor", 3.6}};
  auto r = advise(in);
  ASSERT_TRUE(r.ok());
  const AdviseRow& a = row(*r, "Anchor", 1);
  EXPECT_TRUE(a.input_bound);              // 2.8 cores needed > 2
  EXPECT_DOUBLE_EQ(a.epoch_seconds, 500);  // 1e6 / min(2800, 2000)
  ASSERT_TRUE(a.cost_per_epoch.has_value());
  EXPECT_DOUBLE_EQ(*a.cost_per_epoch, 0.5);                     // 500 s = 1/7.2 h x 1 GPU x 3.6
  EXPECT_FALSE(row(*r, "Half", 1).input_bound);                 // 1.4 cores
  EXPECT_DOUBLE_EQ(*row(*r, "Anchor", 2).cost_per_epoch, 1.0);  // still input-bound: 500 s x 2 GPUs
}

TEST(AdviseTest, PrecisionOffUsesTf32ThenFp32) {
  AdviseInput in = input();
  in.amp = "off";
  in.anchor_amp = "bf16";
  auto r = advise(in);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(row(*r, "Anchor", 1).precision, "tf32");
  EXPECT_EQ(row(*r, "NoBf16", 1).precision, "fp32");
  // tf32 200 of bf16 400 at the same bandwidth: sqrt(0.5).
  EXPECT_NEAR(row(*r, "Anchor", 1).gpu_images_per_second, 2800 * std::sqrt(0.5), 1e-9);
}

TEST(AdviseTest, BadInputs) {
  AdviseInput in = input();
  in.model = "vit";
  EXPECT_EQ(advise(in).status().code(), StatusCode::kInvalidArgument);
  in = input();
  in.only = {"B200"};
  EXPECT_EQ(advise(in).status().code(), StatusCode::kNotFound);
  in = input();
  in.amp = "fp8";
  EXPECT_EQ(advise(in).status().code(), StatusCode::kInvalidArgument);
  in = input();
  in.cpu_images_per_core = 0;
  EXPECT_EQ(advise(in).status().code(), StatusCode::kInvalidArgument);
}

TEST(CatalogTest, BuiltInCatalogueHasEveryTypeWithASource) {
  auto c = builtin_gpu_catalog();
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  std::vector<std::string> names;
  for (const GpuType& g : *c) {
    names.push_back(g.name);
    EXPECT_FALSE(g.source.empty()) << g.name;
  }
  EXPECT_EQ(names, (std::vector<std::string>{"T4", "A10", "L4", "V100", "A100-40GB", "A100-80GB",
                                             "H100", "H200"}));
  EXPECT_FALSE(parse_gpu_catalog("{}", "x.json").ok());
  EXPECT_FALSE(parse_gpu_catalog(R"({"gpus": [{"name": "X"}]})", "x.json").ok());
}

TEST(PricesTest, NullMeansNoPrice) {
  auto p = parse_prices(R"({"per_gpu_hour": {"H100": 2.5, "T4": null}})", "p.json");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->size(), 1u);
  EXPECT_DOUBLE_EQ(p->at("H100"), 2.5);
  EXPECT_FALSE(parse_prices(R"({"per_gpu_hour": {"H100": -1}})", "p.json").ok());
  EXPECT_FALSE(parse_prices("[]", "p.json").ok());
}

}  // namespace
}  // namespace sluice
