#include "pipeline/stats_json.h"

#include <fmt/format.h>

namespace sluice {

using json = nlohmann::ordered_json;

VerdictInput verdict_input(const PipelineStats& stats, double wall_seconds) {
  VerdictInput in;
  in.wall_seconds = wall_seconds;
  in.consumer_wait_seconds = stats.consumer_wait_seconds;
  in.workers = stats.workers;
  for (const StageSnapshot& s : stats.stages) {
    if (is_worker_stage(s.name)) in.stages.push_back(s);
  }
  return in;
}

double busy_share(const StageSnapshot& stage, double wall_seconds, int workers) {
  return wall_seconds > 0 && workers > 0 ? stage.busy_ns / 1e9 / (wall_seconds * workers) : 0;
}

json stages_json(const PipelineStats& s, double wall) {
  json stages = json::object();
  for (const StageSnapshot& st : s.stages) {
    stages[st.name] = {{"items", st.items},
                       {"bytes", st.bytes},
                       {"busy_seconds", st.busy_ns / 1e9},
                       {"wait_seconds", st.wait_ns / 1e9},
                       {"busy_share", st.name == "batch" ? 0.0 : busy_share(st, wall, s.workers)}};
  }
  return stages;
}

json device_json(const PipelineStats& st, double wall, double gpu_busy_percent) {
  auto tier = [&](uint64_t n) {
    return json{{"images", n}, {"images_per_second", wall > 0 ? n / wall : 0}};
  };
  return {{"device", fmt::format("cuda:{}", st.device)},
          {"gpu_augment", st.gpu_augment},
          {"gpu_decode", st.gpu_decode},
          {"h2d_bytes", st.h2d_bytes},
          {"h2d_seconds", st.h2d_seconds},
          {"h2d_gb_per_second", st.h2d_seconds > 0 ? st.h2d_bytes / st.h2d_seconds / 1e9 : 0},
          {"kernel_seconds", st.kernel_seconds},
          {"device_slot_bytes", st.device_slot_bytes},
          {"tiers",
           {{"hardware", tier(st.decoded_hardware)},
            {"cuda", tier(st.decoded_cuda)},
            {"cpu", tier(st.decoded_cpu)}}},
          {"tier_fallbacks", st.gpu_decode_fallbacks},
          {"hardware_share", st.hardware_share},
          {"nvjpeg_refused", st.nvjpeg_refused},
          {"gpu_decode_strict", st.gpu_decode_strict},
          {"gpu_decode_allocations", st.gpu_decode_allocations},
          {"gpu_decode_reallocations", st.gpu_decode_reallocations},
          {"gpu_busy_percent", gpu_busy_percent >= 0 ? json(gpu_busy_percent) : json(nullptr)}};
}

json remote_json(const PipelineStats& st) {
  return {{"requests", st.remote_requests}, {"retries", st.remote_retries},
          {"failures", st.remote_failures}, {"bytes", st.remote_bytes},
          {"cache_hits", st.cache_hits},    {"cache_fills", st.cache_fills}};
}

}  // namespace sluice
