// The benchmark's reference decoders: the full-decode ceiling and the plan
// floor, on images preloaded into memory.
#include <atomic>
#include <chrono>
#include <thread>

#include "pipeline/sample_work.h"
#include "pipeline/source.h"
#include "sluice/pipeline.h"

namespace sluice {
namespace {

constexpr uint64_t kMaxPreloadBytes = uint64_t{768} << 20;

struct Preloaded {
  std::string bytes;
  uint64_t id;
};

}  // namespace

Result<ReferenceResult> measure_decode_reference(const PipelineOptions& o, DecodeReference kind,
                                                 uint64_t samples, int threads) {
  SLUICE_ASSIGN_OR_RETURN(auto source, detail::open_sample_source(o));
  std::vector<uint32_t> plan = plan_epoch(source->size(), o, 0);
  if (plan.size() > samples) plan.resize(samples);
  std::vector<Preloaded> images;
  uint64_t held = 0;
  std::string buffer;
  for (uint32_t id : plan) {
    detail::RawSample raw;
    if (!source->read(id, &buffer, &raw).ok()) continue;
    held += raw.image.size();
    if (held > kMaxPreloadBytes) break;
    images.push_back({std::string(raw.image), id});
  }
  if (images.empty()) return data_loss_error("no image could be read for the reference decode");
  PipelineOptions crop_decode = o;
  crop_decode.crop_decode = true;
  std::atomic<size_t> next{0};
  std::atomic<uint64_t> failed{0};
  auto t0 = std::chrono::steady_clock::now();
  {
    std::vector<std::jthread> pool;
    for (int t = 0; t < std::max(1, threads); ++t) {
      pool.emplace_back([&] {
        CropDecoder decoder;
        DecodedWindow window;
        for (size_t k; (k = next.fetch_add(1)) < images.size();) {
          const Preloaded& p = images[k];
          auto info = probe_image(p.bytes, o.max_pixels);
          Status s = info.status();
          if (s.ok() && kind == DecodeReference::kFullDecode) {
            s = decoder.decode_full(p.bytes, *info, &window, o.max_pixels);
          } else if (s.ok()) {
            // The plan floor: the decode call a worker makes, nothing else.
            const AugmentPlan aug = detail::plan_sample(crop_decode, 0, p.id, *info);
            s = detail::decode_window(crop_decode, &decoder, p.bytes, *info, aug.crop, &window);
          }
          if (!s.ok()) failed.fetch_add(1);
        }
      });
    }
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ReferenceResult r;
  r.failed = failed.load();
  r.images = images.size() - r.failed;
  r.images_per_second = secs > 0 ? r.images / secs : 0;
  return r;
}

}  // namespace sluice
