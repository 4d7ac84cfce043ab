// A rectangle of an image, in source pixel coordinates: the crop that the
// CPU decoder, the GPU decoder and the sample kernel agree on. Header-only
// (target sluice::kernel_math), so that the device module uses it without
// linking the image module.
#pragma once

namespace sluice {

struct CropWindow {
  int x = 0, y = 0, width = 0, height = 0;
  friend bool operator==(const CropWindow&, const CropWindow&) = default;
};

}  // namespace sluice
