// Fuzzes probe_image (our own header parser) and, for small inputs, the
// whole check path through libjpeg-turbo and libspng.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "sluice/image.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  // A small limit keeps a hostile header from making a fuzz run slow.
  constexpr uint64_t kMaxPixels = 4'000'000;
  const auto info = sluice::probe_image(bytes, kMaxPixels);
  if (info.ok() && (info->width <= 0 || info->height <= 0)) __builtin_trap();
  if (size < 64 * 1024) sluice::check_image(bytes, kMaxPixels).status().ignore();
  return 0;
}
