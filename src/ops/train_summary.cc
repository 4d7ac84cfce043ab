#include "ops/train_summary.h"

#include <nlohmann/json.hpp>
#include <regex>

namespace sluice {

Result<TrainRun> parse_train_summary(std::string_view text, std::string_view name) {
  const std::string file(name);
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return data_loss_error(file + ": not a JSON object");
  if (j.contains("format") && j["format"] != "sluice train summary 1") {
    return data_loss_error(file + ": format: " + j["format"].dump() +
                           " is not a training summary (\"sluice train summary 1\")");
  }
  TrainRun r;
  try {
    r.model = j.at("model").get<std::string>();
    r.amp = j.at("amp").get<std::string>();
    r.device = j.at("device").get<std::string>();
    r.world_size = j.at("world_size").get<int>();
    r.images_per_second = j.at("images_per_second").get<double>();
  } catch (const nlohmann::json::exception& e) {
    return data_loss_error(file +
                           ": model, amp, device, world_size or images_per_second is "
                           "missing or has a wrong type (" +
                           e.what() + ")");
  }
  if (j.contains("gpu") && j["gpu"].is_string()) r.gpu = j["gpu"].get<std::string>();
  if (r.world_size < 1) return data_loss_error(file + ": world_size must be at least 1");
  if (!(r.images_per_second > 0)) {
    return data_loss_error(file + ": images_per_second must be above 0");
  }
  if (r.device.rfind("cuda", 0) != 0) {
    return invalid_argument_error(file + ": device '" + r.device +
                                  "': advise re-anchors on a GPU run only");
  }
  return r;
}

std::string catalogue_gpu(std::string_view driver_name) {
  const std::string n(driver_name);
  auto has = [&](const char* re) { return std::regex_search(n, std::regex(re)); };
  if (has(R"(\bH200\b)")) return "H200";
  if (has(R"(\bH100\b)")) return "H100";
  if (has(R"(\bA100\b)")) return has(R"(80\s?GB)") ? "A100-80GB" : "A100-40GB";
  if (has(R"(\bV100)")) return "V100";
  if (has(R"(\bA10G?\b)")) return "A10";
  if (has(R"(\bL4\b)")) return "L4";
  if (has(R"(\bT4\b)")) return "T4";
  return "";
}

}  // namespace sluice
