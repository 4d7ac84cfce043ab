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

Result<ErrorPolicy> parse_error_policy(std::string_view name) {
  if (name == "fail") return ErrorPolicy::kFail;
  if (name == "skip") return ErrorPolicy::kSkip;
  if (name == "warn") return ErrorPolicy::kWarn;
  return invalid_argument_error("unknown error policy '" + std::string(name) +
                                "' (expected fail, skip or warn)");
}

std::string_view error_policy_name(ErrorPolicy policy) {
  switch (policy) {
    case ErrorPolicy::kFail: return "fail";
    case ErrorPolicy::kSkip: return "skip";
    case ErrorPolicy::kWarn: return "warn";
  }
  return "?";
}

}  // namespace sluice
