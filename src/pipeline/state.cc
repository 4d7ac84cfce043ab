// The pipeline state file: one home for its format (docs/formats.md).
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "sluice/pipeline.h"

namespace sluice {

namespace {
constexpr std::string_view kFormat = "sluice pipeline state 1";
}  // namespace

std::string format_pipeline_state(const PipelineState& state) {
  return nlohmann::ordered_json{
             {"format", kFormat}, {"epoch", state.epoch}, {"batches", state.batches}}
             .dump() +
         "\n";
}

Result<PipelineState> parse_pipeline_state(std::string_view text, std::string_view name) {
  const auto j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  const auto field = [&](const char* key) -> const nlohmann::json* {
    if (!j.is_object()) return nullptr;
    auto it = j.find(key);
    return it != j.end() && it->is_number_unsigned() ? &*it : nullptr;
  };
  // Files written before the format field have none; another sluice
  // document (a bench summary, say) is refused by name.
  if (j.is_object() && j.contains("format")) {
    const auto& f = j["format"];
    if (!f.is_string() || f.get<std::string>().rfind("sluice pipeline state ", 0) != 0) {
      return data_loss_error(fmt::format("{}: a {}, not a sluice state file", name,
                                         f.is_string() ? f.get<std::string>() : f.dump()));
    }
  }
  const nlohmann::json* epoch = field("epoch");
  const nlohmann::json* batches = field("batches");
  if (epoch == nullptr || batches == nullptr) {
    return data_loss_error(fmt::format(
        "{}: not a sluice state file (expected {{\"epoch\": E, \"batches\": B}})", name));
  }
  return PipelineState{epoch->get<uint64_t>(), batches->get<uint64_t>()};
}

}  // namespace sluice
