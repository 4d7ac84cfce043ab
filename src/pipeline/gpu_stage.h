// The stager's half of GPU decoding (kernel mode with nvJPEG): a staged
// batch's pending JPEGs through nvJPEG's tiers on the pipeline's stream,
// then the resize tables for what they decoded. A file the GPU does not
// decode (tier C) is decoded on the CPU here; a file that fails there too
// is a bad sample, returned for the ring to record and drop.
//
// Thread safety: decode() on the stager thread only; to_gpu() and the
// counters from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "device/jpeg_tiers.h"
#include "pipeline/ring.h"
#include "pipeline/sample_work.h"

namespace sluice::detail {

class GpuDecodeStage {
 public:
  GpuDecodeStage(const PipelineOptions& o, device::GpuJpegDecoder* jpeg, DeviceSlots* dev,
                 const SlotArena* arena);

  // Which JPEGs the workers leave to nvJPEG: the engine's share (a sample's
  // place is a hash of its id, as the decoder decides it) and, outside it,
  // images large enough for Huffman decoding on the GPU. The rest would
  // take nvJPEG's CPU-Huffman path, one image at a time on the stager; the
  // workers decode them faster, in parallel and at reduced DCT scale.
  bool to_gpu(uint64_t id, const ImageInfo& info) const;
  // Sets the engine's share (from the decoder's stats).
  void follow(const device::GpuJpegStats& stats);

  struct Bad {
    size_t index;  // among the staged samples
    Status status;
  };
  // The pending JPEGs among slot s's `n` staged samples (`encoded`): their
  // jobs (`jobs`, planned by the workers for the others) and device pixels
  // (`src`, resized to n; null for the workers' samples). `stats` gets the
  // decoder's snapshot when it ran. Returns the samples that failed, in
  // order.
  std::vector<Bad> decode(int s, const Slot& slot, size_t n,
                          const std::vector<Slot::Encoded>& encoded, std::vector<SampleJob>* jobs,
                          std::vector<const uint8_t*>* src,
                          std::optional<device::GpuJpegStats>* stats);

  uint64_t fallbacks() const { return fallbacks_; }      // redone on another tier
  uint64_t cpu_decoded() const { return cpu_decoded_; }  // tier C, here

 private:
  bool run(std::optional<device::GpuJpegStats>* stats);
  Status plan(int s, const Slot& slot, const Slot::Encoded& e, std::string_view bytes,
              const device::GpuJpegResult& g, bool decoded, SampleJob* job, const uint8_t** src);

  const PipelineOptions& o_;
  device::GpuJpegDecoder* jpeg_;
  DeviceSlots* dev_;
  const SlotArena* arena_;
  std::atomic<double> engine_share_{0};  // the decoder's share now; 0 without an engine
  const int64_t huffman_min_pixels_ = device::GpuJpegOptions{}.gpu_huffman_min_pixels;
  std::atomic<uint64_t> fallbacks_{0}, cpu_decoded_{0};
  // The stager's scratch.
  CropDecoder decoder_;
  DecodedWindow window_;
  std::vector<float> scratch_;
  std::vector<device::GpuJpegJob> jobs_;
  std::vector<device::GpuJpegResult> results_;
  std::vector<size_t> index_;
};

}  // namespace sluice::detail
