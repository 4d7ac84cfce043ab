// The pipeline's option table (sluice/pipeline_options.h) against the
// struct it fills: the CLI's --help and Python's docstring show each
// option's default as text, so that text must be the struct's default.
#include <gtest/gtest.h>

#include <set>

#include "device/jpeg_tiers.h"
#include "sluice/pipeline_options.h"

namespace sluice {
namespace {

TEST(OptionsTest, EveryDefaultTextIsTheStructsDefault) {
  const PipelineOptions defaults;
  for (const OptionSpec& spec : pipeline_option_specs()) {
    PipelineOptions o;
    Status s = spec.set(spec.default_value, &o);
    ASSERT_TRUE(s.ok()) << spec.name << ": " << s.to_string();
    EXPECT_TRUE(o == defaults) << spec.name << " = '" << spec.default_value
                               << "' is not PipelineOptions' default";
  }
}

TEST(OptionsTest, NamesAndFlagsAreUniqueAndEachValueLands) {
  std::set<std::string> names, flags;
  for (const OptionSpec& spec : pipeline_option_specs()) {
    EXPECT_TRUE(names.insert(spec.name).second) << spec.name;
    EXPECT_TRUE(flags.insert(spec.flag).second) << spec.flag;
    EXPECT_FALSE(spec.help.empty()) << spec.name;
  }
  PipelineOptions o;
  ASSERT_TRUE(apply_pipeline_option("batch_size", "7", &o).ok());
  EXPECT_EQ(o.batch_size, 7);
  ASSERT_TRUE(apply_pipeline_option("hardware_share", "auto", &o).ok());
  EXPECT_LT(o.hardware_share, 0);
  EXPECT_EQ(apply_pipeline_option("batch_size", "0", &o).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(apply_pipeline_option("batch", "7", &o).code(), StatusCode::kNotFound);
}

// One starting share of the hardware JPEG engine: the pipeline's default
// and the decoder's (which an auto share starts from) are the same number.
TEST(OptionsTest, HardwareShareHasOneDefault) {
  EXPECT_EQ(PipelineOptions{}.hardware_share, device::GpuJpegOptions{}.hardware_share);
}

}  // namespace
}  // namespace sluice
