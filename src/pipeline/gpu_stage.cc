#include "pipeline/gpu_stage.h"

#include <cstdio>

namespace sluice::detail {

GpuDecodeStage::GpuDecodeStage(const PipelineOptions& o, device::GpuJpegDecoder* jpeg,
                               DeviceSlots* dev, const SlotArena* arena)
    : o_(o), jpeg_(jpeg), dev_(dev), arena_(arena) {}

bool GpuDecodeStage::to_gpu(uint64_t id, const ImageInfo& info) const {
  return device::detail::share_point(id) < engine_share_.load(std::memory_order_relaxed) ||
         static_cast<int64_t>(info.width) * info.height >= huffman_min_pixels_;
}

void GpuDecodeStage::follow(const device::GpuJpegStats& stats) {
  engine_share_ = stats.hardware_available ? stats.hardware_share : 0.0;
}

std::vector<GpuDecodeStage::Bad> GpuDecodeStage::decode(
    int s, const Slot& slot, size_t n, const std::vector<Slot::Encoded>& encoded,
    std::vector<SampleJob>* jobs, std::vector<const uint8_t*>* src,
    std::optional<device::GpuJpegStats>* stats) {
  src->assign(n, nullptr);
  jobs_.clear();
  index_.clear();
  for (size_t k = 0; k < n; ++k) {
    const Slot::Encoded& e = encoded[k];
    if (!e.pending) continue;
    jobs_.push_back(
        {std::string_view(reinterpret_cast<const char*>(slot.data + e.offset), e.length), e.crop,
         slot.ids[k]});
    index_.push_back(k);
  }
  std::vector<Bad> bad;
  if (jobs_.empty()) return bad;
  const bool decoded = run(stats);
  for (size_t j = 0; j < jobs_.size(); ++j) {
    const size_t k = index_[j];
    Status st =
        plan(s, slot, encoded[k], jobs_[j].bytes, results_[j], decoded, &(*jobs)[k], &(*src)[k]);
    if (!st.ok()) bad.push_back({k, std::move(st)});
  }
  return bad;
}

// nvJPEG's tiers over jobs_ into results_; false when CUDA failed under
// nvJPEG, and then every result says "decode on the CPU".
bool GpuDecodeStage::run(std::optional<device::GpuJpegStats>* stats) {
  Status d = jpeg_->decode(jobs_, dev_->stream(), &results_);
  *stats = jpeg_->stats();
  follow(**stats);
  if (d.ok()) return true;
  std::fprintf(stderr, "sluice: GPU decoding failed, the CPU decodes this batch: %s\n",
               std::string(d.message()).c_str());
  results_.assign(jobs_.size(), device::GpuJpegResult{});
  return false;
}

// A sample's job after GPU decoding: the resize tables for the window the
// GPU decoded (its pixels stay on the device), or, for a file the GPU left
// (tier C), a CPU decode into the slot's arena.
Status GpuDecodeStage::plan(int s, const Slot& slot, const Slot::Encoded& e, std::string_view bytes,
                            const device::GpuJpegResult& g, bool decoded, SampleJob* job,
                            const uint8_t** src) {
  thread_local SampleTables tables;
  if (g.tier != device::JpegTier::kCpu) {
    if (g.hardware_fallback) ++fallbacks_;
    DecodedWindow geometry;  // its pixels are on the device
    geometry.width = g.width;
    geometry.height = g.height;
    geometry.crop_x = g.crop.x;
    geometry.crop_y = g.crop.y;
    geometry.crop_width = g.crop.width;
    geometry.crop_height = g.crop.height;
    *src = g.pixels;
    SLUICE_RETURN_IF_ERROR(plan_sample_job(geometry, e.flip, o_.sample, slot.data, &tables, job));
    return arena_->put_tables(s, slot.data, tables, job);
  }
  if (decoded) ++fallbacks_;
  ++cpu_decoded_;
  SLUICE_ASSIGN_OR_RETURN(ImageInfo info, probe_image(bytes, o_.max_pixels));
  SLUICE_RETURN_IF_ERROR(decode_window(o_, &decoder_, bytes, info, e.crop, &window_));
  return arena_->put_window(window_, e.flip, s, slot.data, job, &scratch_);
}

}  // namespace sluice::detail
