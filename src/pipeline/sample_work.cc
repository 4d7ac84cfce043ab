#include "pipeline/sample_work.h"

#include <cstring>

#include "pipeline/source.h"
#include "sluice/random.h"

namespace sluice::detail {

AugmentPlan plan_sample(const PipelineOptions& o, uint64_t epoch, uint64_t id,
                        const ImageInfo& info) {
  CounterRng rng(hash_key(o.seed, epoch, id, kAugmentStream));
  return plan_augment(o.augment, info.width, info.height, rng, o.crop);
}

Status decode_window(const PipelineOptions& o, CropDecoder* decoder, std::string_view bytes,
                     const ImageInfo& info, const CropWindow& crop, DecodedWindow* window) {
  if (o.crop_decode) {
    const int denom = info.format == ImageFormat::kJpeg
                          ? choose_scale_denom(crop, o.sample.width, o.sample.height)
                          : 1;
    return decoder->decode(bytes, info, crop, denom, window, o.max_pixels);
  }
  SLUICE_RETURN_IF_ERROR(decoder->decode_full(bytes, info, window, o.max_pixels));
  window->crop_x = crop.x;
  window->crop_y = crop.y;
  window->crop_width = crop.width;
  window->crop_height = crop.height;
  return Status();
}

namespace {

// Each piece of a sample's share starts on a 256-byte boundary.
size_t up(size_t n) {
  return (n + 255) / 256 * 256;
}

size_t tables_bytes(const SampleTables& t) {
  return up(t.x.start.size() * sizeof(int32_t)) + up(t.x.weight.size() * sizeof(float)) +
         up(t.y.start.size() * sizeof(int32_t)) + up(t.y.weight.size() * sizeof(float));
}

}  // namespace

Status SlotArena::put_window(const DecodedWindow& w, bool flip, int slot, uint8_t* base,
                             SampleJob* job, std::vector<float>* scratch) const {
  thread_local SampleTables tables;
  thread_local DecodedWindow small;
  const DecodedWindow* src = &w;
  SLUICE_RETURN_IF_ERROR(plan_sample_job(w, flip, spec_, base, &tables, job));
  size_t pixels = static_cast<size_t>(w.width) * w.height * 3;
  if (up(pixels) + tables_bytes(tables) > per_sample_) {
    SampleSpec u8 = spec_;
    u8.dtype = DType::kUint8;
    u8.layout = Layout::kNHWC;
    small.width = spec_.width;
    small.height = spec_.height;
    small.pixels.resize(::sluice::sample_bytes(u8));
    small.crop_x = small.crop_y = 0;
    small.crop_width = small.width;
    small.crop_height = small.height;
    SLUICE_RETURN_IF_ERROR(write_sample(w, flip, u8, small.pixels.data(), scratch));
    src = &small;
    SLUICE_RETURN_IF_ERROR(plan_sample_job(small, false, spec_, base, &tables, job));
    pixels = small.pixels.size();
  }
  size_t at = slots_->reserve(slot, pixels);
  if (at == SIZE_MAX) return internal_error("batch slot arena overflow");
  std::memcpy(base + at, src->pixels.data(), pixels);
  job->src = reinterpret_cast<const uint8_t*>(static_cast<uintptr_t>(at));
  return put_tables(slot, base, tables, job);
}

Status SlotArena::put_tables(int slot, uint8_t* base, const SampleTables& t, SampleJob* job) const {
  const size_t xs = t.x.start.size() * sizeof(int32_t), xw = t.x.weight.size() * sizeof(float);
  const size_t ys = t.y.start.size() * sizeof(int32_t), yw = t.y.weight.size() * sizeof(float);
  size_t at = slots_->reserve(slot, up(xs) + up(xw) + up(ys) + up(yw));
  if (at == SIZE_MAX) return internal_error("batch slot arena overflow");
  auto put = [&](const void* p, size_t bytes) {
    std::memcpy(base + at, p, bytes);
    const uint8_t* as_offset = reinterpret_cast<const uint8_t*>(static_cast<uintptr_t>(at));
    at += up(bytes);
    return as_offset;
  };
  job->x_start = reinterpret_cast<const int32_t*>(put(t.x.start.data(), xs));
  job->x_weight = reinterpret_cast<const float*>(put(t.x.weight.data(), xw));
  job->y_start = reinterpret_cast<const int32_t*>(put(t.y.start.data(), ys));
  job->y_weight = reinterpret_cast<const float*>(put(t.y.weight.data(), yw));
  job->dst = nullptr;
  return Status();
}

}  // namespace sluice::detail
