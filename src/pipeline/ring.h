// The batch ring's slots: each holds one batch being prepared, staged or
// held by the consumer, with its own status (a bad sample's error arrives
// in its batch's turn). Pipeline::Impl owns the ring and the lock that
// guards the slots' states; the workers fill disjoint samples of a slot.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "kernels/sample_math.h"
#include "sluice/crop_window.h"
#include "sluice/status.h"

namespace sluice::detail {

struct SlotFree {
  size_t bytes;
  void operator()(uint8_t* p) const;
};

// Slot memory straight from mmap, with transparent huge pages asked for and
// every page touched once (see ring.cc); nullptr when the mapping fails.
uint8_t* map_slot(size_t bytes);

// kReady: every sample prepared; on a device, kStaging then kStaged once
// the copy (and kernel) are queued on the pipeline's stream.
enum class SlotState { kFree, kFilling, kReady, kStaging, kStaged, kHeld };

struct Slot {
  std::unique_ptr<uint8_t[], SlotFree> mapped{nullptr, SlotFree{0}};  // host mode
  uint8_t* data = nullptr;      // samples (host mode, copy mode) or the arena (kernel mode)
  std::vector<SampleJob> jobs;  // kernel mode: arena offsets in the pointers
  // GPU decoding: a sample whose encoded JPEG waits in the arena for nvJPEG.
  struct Encoded {
    bool pending = false;
    size_t offset = 0, length = 0;
    CropWindow crop;
    bool flip = false;
  };
  std::vector<Encoded> encoded;
  std::vector<int64_t> labels;
  std::vector<uint64_t> ids;
  std::vector<uint8_t> valid;
  SlotState state = SlotState::kFree;
  uint64_t batch = 0;
  size_t size = 0;       // samples in this batch
  size_t remaining = 0;  // samples still being prepared
  size_t count = 0;      // on a device: good samples, set when staged
  // Under on_error = fail: the batch's first bad sample in batch order, or
  // staging's failure. next() returns it in this batch's turn, so the run
  // fails at the same batch whatever the workers' timing (as tf.data keeps
  // a status beside each element).
  Status error;
  size_t error_index = SIZE_MAX;
};

}  // namespace sluice::detail
