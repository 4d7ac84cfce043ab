// PNG through libspng, with its CRC checks on (the default) and limits on
// chunk sizes, since the bytes are untrusted.

#include <spng.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "image/codecs.h"
#include "sluice/image.h"

namespace sluice {
namespace {

// Ancillary chunks (text, ICC, EXIF) that spng keeps in memory: a file may
// not make it hold more than this.
constexpr size_t kMaxCachedChunkBytes = size_t{4} << 20;

struct ContextDeleter {
  void operator()(spng_ctx* ctx) const { spng_ctx_free(ctx); }
};
using Context = std::unique_ptr<spng_ctx, ContextDeleter>;

Status spng_status(int code) {
  const std::string message = spng_strerror(code);
  switch (code) {
    case SPNG_EMEM: return resource_exhausted_error("PNG decoder: " + message);
    case SPNG_EUSER_WIDTH:
    case SPNG_EUSER_HEIGHT:
    case SPNG_ECHUNK_LIMITS:
    case SPNG_EOVERFLOW: return resource_exhausted_error("PNG: " + message);
    case SPNG_EINVAL: return internal_error("PNG decoder: " + message);
    default: return data_loss_error("PNG: " + message);
  }
}

Result<Context> open_png(std::string_view bytes) {
  Context ctx(spng_ctx_new(0));
  if (!ctx) return resource_exhausted_error("PNG decoder: out of memory");
  int rc = spng_set_png_buffer(ctx.get(), bytes.data(), bytes.size());
  if (rc == SPNG_OK) rc = spng_set_chunk_limits(ctx.get(), bytes.size(), kMaxCachedChunkBytes);
  if (rc != SPNG_OK) return spng_status(rc);
  return ctx;
}

// spng stops once the zlib stream has given every row, before the last
// IDAT's CRC; reading the chunks up to IEND checks it, and that the file
// ends whole.
Status read_to_iend(spng_ctx* ctx) {
  const int rc = spng_decode_chunks(ctx);
  return rc == SPNG_OK ? ok_status() : spng_status(rc);
}

bool is_gray(const ImageInfo& info) {
  return info.components <= 2;
}

// Keeps the first of every three bytes: gray decoded as RGB has R = G = B.
void keep_first_channel(Image* image) {
  const size_t n = static_cast<size_t>(image->width) * image->height;
  for (size_t i = 0; i < n; ++i) image->pixels[i] = image->pixels[3 * i];
  image->pixels.resize(n);
  image->channels = 1;
}

}  // namespace

namespace detail {

namespace {

// Into `pixels` with format `fmt`; `channels` is what `fmt` gives per pixel.
Status decode_png_as(std::string_view bytes, const ImageInfo& info, int fmt, int channels,
                     std::vector<uint8_t>* pixels) {
  SLUICE_ASSIGN_OR_RETURN(Context ctx, open_png(bytes));
  size_t size = 0;
  int rc = spng_decoded_image_size(ctx.get(), fmt, &size);
  if (rc != SPNG_OK) return spng_status(rc);
  if (size != static_cast<size_t>(info.width) * info.height * channels) {
    return internal_error("PNG decoder disagrees with the header about the image size");
  }
  pixels->resize(size);
  rc = spng_decode_image(ctx.get(), pixels->data(), size, fmt, 0);
  if (rc != SPNG_OK) return spng_status(rc);
  return read_to_iend(ctx.get());
}

}  // namespace

Result<Image> decode_png(std::string_view bytes, const ImageInfo& info,
                         const DecodeOptions& options) {
  const bool want_gray = is_gray(info) && !options.force_rgb;
  // spng's G8 output takes only plain gray of 8 bits or fewer; other gray
  // forms go through RGB8 and lose the copies after.
  const bool direct_gray = want_gray && info.components == 1 && info.bit_depth <= 8;
  Image image;
  image.width = info.width;
  image.height = info.height;
  image.channels = direct_gray ? 1 : 3;
  SLUICE_RETURN_IF_ERROR(decode_png_as(bytes, info, direct_gray ? SPNG_FMT_G8 : SPNG_FMT_RGB8,
                                       image.channels, &image.pixels));
  if (want_gray && !direct_gray) keep_first_channel(&image);
  return image;
}

Status decode_png_rgb(std::string_view bytes, const ImageInfo& info, std::vector<uint8_t>* pixels) {
  return decode_png_as(bytes, info, SPNG_FMT_RGB8, 3, pixels);
}

// Row by row into one row's buffer: the whole image is decoded and every
// CRC and the zlib checksum verified, without holding the pixels.
Status check_png(std::string_view bytes, const ImageInfo& info) {
  SLUICE_ASSIGN_OR_RETURN(Context ctx, open_png(bytes));
  int rc = spng_decode_image(ctx.get(), nullptr, 0, SPNG_FMT_RGB8, SPNG_DECODE_PROGRESSIVE);
  if (rc != SPNG_OK) return spng_status(rc);
  std::vector<uint8_t> row(static_cast<size_t>(info.width) * 3);
  do {
    rc = spng_decode_row(ctx.get(), row.data(), row.size());
  } while (rc == SPNG_OK);
  if (rc != SPNG_EOI) return spng_status(rc);
  return read_to_iend(ctx.get());
}

}  // namespace detail

Result<std::string> encode_png(const Image& image) {
  if (image.width <= 0 || image.height <= 0) return invalid_argument_error("empty image");
  if (image.channels != 1 && image.channels != 3) {
    return invalid_argument_error("PNG encoding needs 1 or 3 channels");
  }
  if (image.pixels.size() != image.row_bytes() * static_cast<size_t>(image.height)) {
    return invalid_argument_error("pixel buffer size does not match the dimensions");
  }
  Context ctx(spng_ctx_new(SPNG_CTX_ENCODER));
  if (!ctx) return resource_exhausted_error("PNG encoder: out of memory");
  spng_ihdr ihdr = {};
  ihdr.width = static_cast<uint32_t>(image.width);
  ihdr.height = static_cast<uint32_t>(image.height);
  ihdr.bit_depth = 8;
  ihdr.color_type = image.channels == 1 ? SPNG_COLOR_TYPE_GRAYSCALE : SPNG_COLOR_TYPE_TRUECOLOR;
  int rc = spng_set_option(ctx.get(), SPNG_ENCODE_TO_BUFFER, 1);
  if (rc == SPNG_OK) rc = spng_set_ihdr(ctx.get(), &ihdr);
  if (rc == SPNG_OK) {
    rc = spng_encode_image(ctx.get(), image.pixels.data(), image.pixels.size(), SPNG_FMT_PNG,
                           SPNG_ENCODE_FINALIZE);
  }
  if (rc != SPNG_OK) return internal_error(std::string("PNG encoder: ") + spng_strerror(rc));
  size_t size = 0;
  void* buffer = spng_get_png_buffer(ctx.get(), &size, &rc);
  if (buffer == nullptr) return internal_error(std::string("PNG encoder: ") + spng_strerror(rc));
  std::string encoded(static_cast<const char*>(buffer), size);
  std::free(buffer);
  return encoded;
}

}  // namespace sluice
