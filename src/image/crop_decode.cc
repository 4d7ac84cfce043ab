// CropDecoder: decodes only the part of a JPEG a sample needs.
//
// Per JPEG: read the header, start at the chosen DCT scale, narrow the
// columns with jpeg_crop_scanline, skip the rows above with
// jpeg_skip_scanlines, read down to the crop's last row and abort: rows
// below the crop are never entropy-decoded (so damage there goes unseen;
// check_image at convert time is what proves a file whole).
//
// libjpeg reports errors by longjmp (see jpeg.cc). The decompressor lives in
// State for the decoder's life and is reset with jpeg_abort_decompress
// between images, so its permanent pools are allocated once. Functions that
// call setjmp create nothing with a destructor; every buffer they touch is
// owned by State or the caller.

#include <algorithm>
#include <cmath>
#include <csetjmp>
#include <cstdio>
#include <string>

#include "image/codecs.h"
#include "image/jpeg_internal.h"
#include "sluice/image_ops.h"

namespace sluice {
namespace {

bool valid_scale_denom(int d) {
  return d == 1 || d == 2 || d == 4 || d == 8;
}

// Up to this many row pointers per jpeg_read_scanlines call; libjpeg hands
// back at most rec_outbuf_height (<= 4) anyway.
constexpr int kRowBatch = 16;

// Fancy (smooth) h2v1/h2v2 chroma upsampling treats the edges of a cropped
// row as image edges, so the outermost decoded columns may differ slightly
// from a full decode (libjpeg.txt, "Partial image decompression"). Asking
// for this many extra columns on each side keeps those columns outside the
// requested crop.
constexpr JDIMENSION kEdgeMargin = 2;

// The libjpeg half of CropDecoder::State.
struct JpegSession {
  detail::JpegErrorManager err;
  jpeg_decompress_struct cinfo;
  bool created = false;
  // CMYK rows before conversion (the only case libjpeg cannot give RGB).
  std::vector<uint8_t> cmyk_row;
  // Row pointers into the output for one jpeg_read_scanlines call.
  JSAMPROW rows[kRowBatch];
};

// What one JPEG decode is asked for and where it got to. Scaled coordinates
// are in the 1/scale_denom image.
struct JpegCrop {
  CropWindow crop;  // full-resolution; the whole image for decode_full
  int scale_denom = 1;
  JDIMENSION x0 = 0, x1 = 0, y0 = 0, y1 = 0;  // scaled, after alignment
  bool cmyk = false;
  bool saw_adobe = false;
};

// Steps 1-3 under one setjmp: header, start, crop columns, skip rows.
// Returns false with state->err.message set on failure.
bool start_crop(JpegSession* state, std::string_view bytes, JpegCrop* job) {
  jpeg_decompress_struct& cinfo = state->cinfo;
  if (setjmp(state->err.jump)) {
    jpeg_abort_decompress(&cinfo);
    return false;
  }
  jpeg_mem_src(&cinfo, reinterpret_cast<const unsigned char*>(bytes.data()),
               static_cast<unsigned long>(bytes.size()));
  if (jpeg_read_header(&cinfo, TRUE) != JPEG_HEADER_OK) {
    std::snprintf(state->err.message, sizeof state->err.message, "no image in the JPEG");
    jpeg_abort_decompress(&cinfo);
    return false;
  }
  cinfo.scale_num = 1;
  cinfo.scale_denom = static_cast<unsigned int>(job->scale_denom);
  job->cmyk = cinfo.num_components == 4;
  // Gray and YCbCr both convert straight to RGB inside libjpeg.
  cinfo.out_color_space = job->cmyk ? JCS_CMYK : JCS_RGB;
  jpeg_start_decompress(&cinfo);
  job->saw_adobe = cinfo.saw_Adobe_marker;
  const double d = job->scale_denom;
  const CropWindow& c = job->crop;
  const auto sx0 = static_cast<JDIMENSION>(std::floor(c.x / d));
  const auto sx1 =
      std::min(cinfo.output_width, static_cast<JDIMENSION>(std::ceil((c.x + c.width) / d)));
  job->y0 = static_cast<JDIMENSION>(std::floor(c.y / d));
  job->y1 = std::min(cinfo.output_height, static_cast<JDIMENSION>(std::ceil((c.y + c.height) / d)));
  if (sx0 >= sx1 || job->y0 >= job->y1) {
    std::snprintf(state->err.message, sizeof state->err.message, "empty crop");
    jpeg_abort_decompress(&cinfo);
    return false;
  }
  JDIMENSION xoff = sx0 > kEdgeMargin ? sx0 - kEdgeMargin : 0;
  JDIMENSION width = std::min(cinfo.output_width, sx1 + kEdgeMargin) - xoff;
  if (width < cinfo.output_width) jpeg_crop_scanline(&cinfo, &xoff, &width);
  job->x0 = xoff;
  job->x1 = xoff + width;
  if (job->y0 > 0) jpeg_skip_scanlines(&cinfo, job->y0);
  return true;
}

// Step 4: rows y0..y1-1 into out (RGB), converting CMYK through a row
// buffer. Returns false with state->err.message set on failure.
bool read_crop_rows(JpegSession* state, const JpegCrop& job, uint8_t* out) {
  jpeg_decompress_struct& cinfo = state->cinfo;
  if (setjmp(state->err.jump)) {
    jpeg_abort_decompress(&cinfo);
    return false;
  }
  const size_t width = job.x1 - job.x0;
  const size_t row_bytes = width * 3;
  while (cinfo.output_scanline < job.y1) {
    const JDIMENSION row = cinfo.output_scanline - job.y0;
    JDIMENSION n = 1;
    if (job.cmyk) {
      state->rows[0] = state->cmyk_row.data();
    } else {
      n = std::min<JDIMENSION>(kRowBatch, job.y1 - cinfo.output_scanline);
      for (JDIMENSION i = 0; i < n; ++i) state->rows[i] = out + (row + i) * row_bytes;
    }
    const JDIMENSION got = jpeg_read_scanlines(&cinfo, state->rows, n);
    if (got == 0) {
      std::snprintf(state->err.message, sizeof state->err.message, "decoder returned no rows");
      jpeg_abort_decompress(&cinfo);
      return false;
    }
    if (job.cmyk)
      detail::cmyk_to_rgb(state->cmyk_row.data(), width, job.saw_adobe, out + row * row_bytes);
  }
  // Abort rather than finish: the rows below the crop are not wanted.
  jpeg_abort_decompress(&cinfo);
  return true;
}

bool create_decompress(JpegSession* state) {
  detail::install_strict_decode_errors(&state->cinfo, &state->err);
  if (setjmp(state->err.jump)) return false;
  jpeg_create_decompress(&state->cinfo);
  return true;
}

Status check_crop(const ImageInfo& info, const CropWindow& c) {
  const bool inside = c.x >= 0 && c.y >= 0 && c.width > 0 && c.height > 0 &&
                      c.x <= info.width - c.width && c.y <= info.height - c.height;
  if (inside) return ok_status();
  return invalid_argument_error("crop " + std::to_string(c.width) + "x" + std::to_string(c.height) +
                                "+" + std::to_string(c.x) + "+" + std::to_string(c.y) +
                                " is not inside the " + std::to_string(info.width) + "x" +
                                std::to_string(info.height) + " image");
}

// The caller's info may have been probed with a laxer limit than ours.
Status check_pixels(const ImageInfo& info, uint64_t max_pixels) {
  const uint64_t pixels = static_cast<uint64_t>(info.width) * static_cast<uint64_t>(info.height);
  if (info.width <= 0 || info.height <= 0) return invalid_argument_error("empty image");
  if (pixels > max_pixels) {
    return resource_exhausted_error("image of " + std::to_string(pixels) +
                                    " pixels is over the limit of " + std::to_string(max_pixels));
  }
  return ok_status();
}

}  // namespace

struct CropDecoder::State {
  JpegSession jpeg;
};

CropDecoder::CropDecoder() : state_(std::make_unique<State>()) {}

CropDecoder::~CropDecoder() {
  if (state_->jpeg.created) jpeg_destroy_decompress(&state_->jpeg.cinfo);
}

Status CropDecoder::decode(std::string_view bytes, const ImageInfo& info, const CropWindow& crop,
                           int scale_denom, DecodedWindow* out, uint64_t max_pixels) {
  SLUICE_RETURN_IF_ERROR(check_pixels(info, max_pixels));
  SLUICE_RETURN_IF_ERROR(check_crop(info, crop));
  if (info.format == ImageFormat::kPng) {
    // spng decodes whole images only; expose all of it with the crop as the
    // rectangle, which costs write_sample nothing.
    SLUICE_RETURN_IF_ERROR(detail::decode_png_rgb(bytes, info, &out->pixels));
    out->width = info.width;
    out->height = info.height;
    out->crop_x = crop.x;
    out->crop_y = crop.y;
    out->crop_width = crop.width;
    out->crop_height = crop.height;
    out->scale_denom = 1;
    return ok_status();
  }
  if (info.format != ImageFormat::kJpeg) return unimplemented_error("not a JPEG or PNG");
  if (!valid_scale_denom(scale_denom)) {
    return invalid_argument_error("scale_denom must be 1, 2, 4 or 8, not " +
                                  std::to_string(scale_denom));
  }
  SLUICE_RETURN_IF_ERROR(detail::check_jpeg_supported(info));
  if (!state_->jpeg.created) {
    if (!create_decompress(&state_->jpeg))
      return resource_exhausted_error(state_->jpeg.err.message);
    state_->jpeg.created = true;
  }
  JpegCrop job;
  job.crop = crop;
  job.scale_denom = scale_denom;
  if (!start_crop(&state_->jpeg, bytes, &job)) return data_loss_error(state_->jpeg.err.message);
  const jpeg_decompress_struct& cinfo = state_->jpeg.cinfo;
  // The header libjpeg read must be the one that was probed and vetted.
  if (static_cast<int>(cinfo.image_width) != info.width ||
      static_cast<int>(cinfo.image_height) != info.height) {
    jpeg_abort_decompress(&state_->jpeg.cinfo);
    return data_loss_error("JPEG header disagrees with the probed size");
  }
  const size_t width = job.x1 - job.x0;
  const size_t height = job.y1 - job.y0;
  out->pixels.resize(width * height * 3);
  if (job.cmyk) state_->jpeg.cmyk_row.resize(width * 4);
  if (!read_crop_rows(&state_->jpeg, job, out->pixels.data())) {
    return data_loss_error(state_->jpeg.err.message);
  }
  const double d = scale_denom;
  out->width = static_cast<int>(width);
  out->height = static_cast<int>(height);
  out->crop_x = crop.x / d - job.x0;
  out->crop_y = crop.y / d - job.y0;
  out->crop_width = crop.width / d;
  out->crop_height = crop.height / d;
  out->scale_denom = scale_denom;
  return ok_status();
}

Status CropDecoder::decode_full(std::string_view bytes, const ImageInfo& info, DecodedWindow* out,
                                uint64_t max_pixels) {
  return decode(bytes, info, CropWindow{0, 0, info.width, info.height}, 1, out, max_pixels);
}

}  // namespace sluice
