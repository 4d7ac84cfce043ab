// Inside the image module: the per-format halves of decode_image and
// check_image, entered after probe_image has vetted the header (so `info`
// is trustworthy and its pixel count is within the caller's limit).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "sluice/image.h"
#include "sluice/status.h"

namespace sluice::detail {

Result<Image> decode_jpeg(std::string_view bytes, const ImageInfo& info,
                          const DecodeOptions& options);
Status check_jpeg(std::string_view bytes, const ImageInfo& info);

Result<Image> decode_png(std::string_view bytes, const ImageInfo& info,
                         const DecodeOptions& options);
Status check_png(std::string_view bytes, const ImageInfo& info);

// Decodes a PNG as 8-bit RGB (gray, palette, alpha and 16-bit converted)
// into `pixels`, resized to width * height * 3 and reusing its capacity.
Status decode_png_rgb(std::string_view bytes, const ImageInfo& info, std::vector<uint8_t>* pixels);

}  // namespace sluice::detail
