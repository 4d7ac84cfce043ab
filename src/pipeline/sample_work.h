// One sample's work, written once for everything that decodes a sample:
// the pipeline's workers, its stager's CPU fallback (GPU decoding) and the
// benchmark's decode references. The augmentation a sample gets is a pure
// function of (seed, epoch, sample id), and its decode follows the options
// (the crop window alone at reduced DCT scale, or every pixel).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "image/sample_kernel.h"
#include "pipeline/device_slots.h"
#include "sluice/image.h"
#include "sluice/image_ops.h"
#include "sluice/pipeline.h"

namespace sluice::detail {

// The crop and flip of sample `id` in `epoch`: the same on every run, rank
// and worker.
AugmentPlan plan_sample(const PipelineOptions& o, uint64_t epoch, uint64_t id,
                        const ImageInfo& info);

// Decodes the crop as the options say: the window alone at the smallest
// sufficient DCT scale (o.crop_decode, the default), or every pixel with
// the crop as a rectangle in it (the ablation's baseline).
Status decode_window(const PipelineOptions& o, CropDecoder* decoder, std::string_view bytes,
                     const ImageInfo& info, const CropWindow& crop, DecodedWindow* window);

// Kernel mode: a slot's arena (pinned host memory, copied to the device
// with the slot) holds each sample's decoded window and resize tables; the
// job that the fused kernel runs refers to them by arena offset.
class SlotArena {
 public:
  // `per_sample`: the arena bytes each sample may use (arena_per_sample).
  SlotArena(DeviceSlots* slots, const SampleSpec& spec, size_t per_sample)
      : slots_(slots), spec_(spec), per_sample_(per_sample) {}

  // Puts the window and its tables in slot `slot` (whose host memory is
  // `base`) and plans `job` over them. A window too large for its share is
  // resized (and flipped) on the CPU to the output size first, in 8 bits
  // as write_sample does; the kernel then only normalises, casts and lays
  // out.
  Status put_window(const DecodedWindow& w, bool flip, int slot, uint8_t* base, SampleJob* job,
                    std::vector<float>* scratch) const;
  // Puts a job's resize tables in the slot's arena (offsets in the job).
  Status put_tables(int slot, uint8_t* base, const SampleTables& t, SampleJob* job) const;

 private:
  DeviceSlots* slots_;
  SampleSpec spec_;
  size_t per_sample_;
};

}  // namespace sluice::detail
