#include "base/enum_names.h"
#include "sluice/dataset.h"

namespace sluice {

FeatureKeys tensorflow_feature_keys() {
  return FeatureKeys{};
}

FeatureKeys image_raw_feature_keys() {
  FeatureKeys k;
  k.image = "image_raw";
  k.format = "";
  k.label = "label";
  k.height = "height";
  k.width = "width";
  k.key = "";
  return k;
}

Result<FeatureKeys> detect_feature_keys(const Example& example) {
  if (example.features.count("image/encoded")) return tensorflow_feature_keys();
  if (example.features.count("image_raw")) return image_raw_feature_keys();
  return not_found_error(
      "no image feature (neither image/encoded nor image_raw); name the keys "
      "explicitly");
}

namespace {
constexpr detail::EnumName<ErrorPolicy> kErrorPolicies[] = {
    {ErrorPolicy::kFail, "fail"}, {ErrorPolicy::kSkip, "skip"}, {ErrorPolicy::kWarn, "warn"}};
}  // namespace

Result<ErrorPolicy> parse_error_policy(std::string_view name) {
  return detail::parse_enum_name(name, kErrorPolicies, "unknown error policy");
}

std::string_view error_policy_name(ErrorPolicy policy) {
  return detail::enum_name(policy, kErrorPolicies);
}

}  // namespace sluice
