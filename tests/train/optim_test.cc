// The optimiser and learning-rate schedule as the trainer builds them from
// --optimizer and --schedule: parsed once, the values each schedule gives,
// and which parameters decay.
#include "train/optim.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

namespace sluice::training {
namespace {

TEST(OptimTest, NamesParseOnceAndUnknownOnesSayWhatIsExpected) {
  EXPECT_EQ(*parse_optimizer("sgd"), OptimizerKind::kSgd);
  EXPECT_EQ(*parse_optimizer("adam"), OptimizerKind::kAdam);
  EXPECT_EQ(*parse_optimizer("adamw"), OptimizerKind::kAdamW);
  Result<OptimizerKind> o = parse_optimizer("lamb");
  EXPECT_EQ(o.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(o.status().message(),
            "--optimizer: unknown value 'lamb' (expected sgd, adam or adamw)");
  EXPECT_EQ(*parse_schedule("cosine"), ScheduleKind::kCosine);
  EXPECT_EQ(*parse_schedule("step"), ScheduleKind::kStep);
  EXPECT_EQ(*parse_schedule("constant"), ScheduleKind::kConstant);
  Result<ScheduleKind> s = parse_schedule("Cosine");
  EXPECT_EQ(s.status().message(),
            "--schedule: unknown value 'Cosine' (expected cosine, step or constant)");
  TrainOptions bad;
  bad.schedule = "linear";
  EXPECT_FALSE(LrSchedule::create(bad).ok());
}

TEST(OptimTest, CosineWarmsUpLinearlyThenFallsToZeroAtTheLastEpoch) {
  TrainOptions o;
  o.lr = 0.4;
  o.epochs = 10;
  o.warmup_epochs = 2;
  o.schedule = "cosine";
  LrSchedule s = *LrSchedule::create(o);
  EXPECT_DOUBLE_EQ(s.at(0), 0.04);             // lr / 10
  EXPECT_DOUBLE_EQ(s.at(1), 0.04 + 0.36 / 2);  // half way up
  EXPECT_DOUBLE_EQ(s.at(2), 0.4);              // the peak
  EXPECT_NEAR(s.at(6), 0.2, 1e-12);            // half way down
  EXPECT_NEAR(s.at(10), 0, 1e-12);
  EXPECT_NEAR(s.at(12), 0, 1e-12);  // held there
  EXPECT_NEAR(s.at(3), 0.2 * (1 + std::cos(std::numbers::pi / 8)), 1e-12);
}

TEST(OptimTest, StepDecaysEveryStepSizeEpochsAndConstantStays) {
  TrainOptions o;
  o.lr = 1;
  o.epochs = 90;
  o.schedule = "step";
  o.step_size = 30;
  o.step_gamma = 0.1;
  LrSchedule s = *LrSchedule::create(o);
  EXPECT_DOUBLE_EQ(s.at(0), 1);
  EXPECT_DOUBLE_EQ(s.at(29.99), 1);
  EXPECT_NEAR(s.at(30), 0.1, 1e-15);
  EXPECT_NEAR(s.at(61), 0.01, 1e-15);
  o.schedule = "constant";
  LrSchedule c = *LrSchedule::create(o);
  EXPECT_DOUBLE_EQ(c.at(0), 1);
  EXPECT_DOUBLE_EQ(c.at(89.5), 1);
}

TEST(OptimTest, BiasesAndNormScalesDoNotDecayUnlessDecayAll) {
  std::vector<torch::Tensor> params = {torch::zeros({4, 3}, torch::requires_grad()),
                                       torch::zeros({4}, torch::requires_grad())};
  TrainOptions o;
  o.lr = 0.1;
  o.weight_decay = 5e-4;
  for (OptimizerKind kind : {OptimizerKind::kSgd, OptimizerKind::kAdam, OptimizerKind::kAdamW}) {
    auto opt = make_optimizer(kind, o, params);
    ASSERT_EQ(opt->param_groups().size(), 2u);
    EXPECT_TRUE(opt->param_groups()[0].params()[0].is_same(params[0]));
    EXPECT_DOUBLE_EQ(opt->param_groups()[0].options().get_lr(), 0.1);
    auto decay = [&](size_t g) -> double {
      auto& options = opt->param_groups()[g].options();
      if (kind == OptimizerKind::kSgd)
        return static_cast<torch::optim::SGDOptions&>(options).weight_decay();
      if (kind == OptimizerKind::kAdam)
        return static_cast<torch::optim::AdamOptions&>(options).weight_decay();
      return static_cast<torch::optim::AdamWOptions&>(options).weight_decay();
    };
    EXPECT_DOUBLE_EQ(decay(0), 5e-4);
    EXPECT_DOUBLE_EQ(decay(1), 0);
  }
  o.decay_all = true;
  auto all = make_optimizer(OptimizerKind::kSgd, o, params);
  ASSERT_EQ(all->param_groups().size(), 1u);
  EXPECT_EQ(all->param_groups()[0].params().size(), 2u);
}

}  // namespace
}  // namespace sluice::training
