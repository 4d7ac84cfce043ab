// decode_image and check_image: probe first (limits, unsupported variants),
// then hand the vetted header to the format's decoder.

#include <string_view>

#include "image/codecs.h"
#include "sluice/image.h"

namespace sluice {
namespace {

bool valid_scale_denom(int d) {
  return d == 1 || d == 2 || d == 4 || d == 8;
}

}  // namespace

Result<Image> decode_image(std::string_view bytes, const DecodeOptions& options) {
  if (!valid_scale_denom(options.scale_denom)) {
    return invalid_argument_error("scale_denom must be 1, 2, 4 or 8, not " +
                                  std::to_string(options.scale_denom));
  }
  SLUICE_ASSIGN_OR_RETURN(ImageInfo info, probe_image(bytes, options.max_pixels));
  if (info.format == ImageFormat::kJpeg) return detail::decode_jpeg(bytes, info, options);
  return detail::decode_png(bytes, info, options);
}

Result<ImageInfo> check_image(std::string_view bytes, uint64_t max_pixels) {
  SLUICE_ASSIGN_OR_RETURN(ImageInfo info, probe_image(bytes, max_pixels));
  const Status status = info.format == ImageFormat::kJpeg ? detail::check_jpeg(bytes, info)
                                                          : detail::check_png(bytes, info);
  if (!status.ok()) return status;
  return info;
}

}  // namespace sluice
