// resize_image through OpenCV's imgproc, on Mat headers over our buffers.

#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

#include "sluice/image.h"

namespace sluice {
namespace {

// sluice runs its own decode workers; OpenCV's pool on top of them would
// oversubscribe the cores. The setting is process-wide, so it is made once
// (a function-local static initialises thread-safely).
void keep_opencv_single_threaded() {
  static const bool done = [] {
    cv::setNumThreads(0);
    return true;
  }();
  (void)done;
}

}  // namespace

Image resize_image(const Image& image, int width, int height) {
  const bool valid = width > 0 && height > 0 && image.width > 0 && image.height > 0 &&
                     (image.channels == 1 || image.channels == 3) &&
                     image.pixels.size() == image.row_bytes() * static_cast<size_t>(image.height);
  if (!valid) return Image{};
  if (width == image.width && height == image.height) return image;
  keep_opencv_single_threaded();
  Image out;
  out.width = width;
  out.height = height;
  out.channels = image.channels;
  out.pixels.resize(out.row_bytes() * static_cast<size_t>(height));
  const int type = CV_8UC(image.channels);
  // cv::Mat takes a non-const pointer; the source is only read.
  const cv::Mat src(image.height, image.width, type, const_cast<uint8_t*>(image.pixels.data()));
  cv::Mat dst(height, width, type, out.pixels.data());
  const bool shrinking = width <= image.width && height <= image.height;
  // INTER_LINEAR_EXACT is OpenCV's bit-exact bilinear: the same bytes
  // whichever SIMD path the CPU takes.
  const int interpolation = shrinking ? cv::INTER_AREA : cv::INTER_LINEAR_EXACT;
  try {
    cv::resize(src, dst, dst.size(), 0, 0, interpolation);
  } catch (const cv::Exception&) {
    return Image{};  // only on OpenCV failing to allocate its scratch
  }
  return out;
}

}  // namespace sluice
