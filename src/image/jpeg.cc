// JPEG through libjpeg-turbo's libjpeg API, which (unlike TurboJPEG 2.1)
// exposes DCT scaling, the corrupt-data warnings and optimised Huffman
// coding.
//
// libjpeg reports errors by calling error_exit, which must not return; we
// longjmp back. Everything that must survive the jump (the libjpeg structs,
// the output buffer) lives in a job struct owned by the caller of the
// function that calls setjmp, and nothing with a destructor is created
// between setjmp and the libjpeg calls that may jump.

#include <algorithm>
#include <csetjmp>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

// jpeglib.h uses size_t and FILE without including their headers.
#include <jpeglib.h>
// jerror.h needs jpeglib.h first.
#include <jerror.h>

#include "image/codecs.h"
#include "image/jpeg_internal.h"
#include "sluice/image.h"

namespace sluice {
namespace {

[[noreturn]] void jump_with_message(j_common_ptr cinfo) {
  auto* err = reinterpret_cast<detail::JpegErrorManager*>(cinfo->err);
  if (cinfo->err->msg_code == JWRN_JPEG_EOF) {
    std::snprintf(err->message, sizeof err->message, "premature end of data");
  } else {
    (*cinfo->err->format_message)(cinfo, err->message);
  }
  std::longjmp(err->jump, 1);
}

void on_error_exit(j_common_ptr cinfo) {
  jump_with_message(cinfo);
}

// Warnings about the metadata leave the pixels intact; the rest (premature
// end, bad Huffman or arithmetic codes, broken progression) mean libjpeg is
// inventing pixels, and a training sample must not be invented.
bool harmless_warning(int code) {
  return code == JWRN_EXTRANEOUS_DATA || code == JWRN_JFIF_MAJOR || code == JWRN_ADOBE_XFORM;
}

void on_decode_message(j_common_ptr cinfo, int msg_level) {
  if (msg_level == -1 && !harmless_warning(cinfo->err->msg_code)) jump_with_message(cinfo);
}

void on_encode_message(j_common_ptr, int) {}

// What run_decompress needs and produces; see the file comment for why it
// is owned by the caller.
struct DecodeJob {
  std::string_view bytes;
  int scale_denom = 1;
  J_COLOR_SPACE out_space = JCS_RGB;
  // Expected output, computed from the probed header; null `out` means
  // check mode (rows go to libjpeg-owned scratch).
  uint8_t* out = nullptr;
  JDIMENSION out_width = 0;
  JDIMENSION out_height = 0;
  int out_components = 0;
  bool saw_adobe = false;
  detail::JpegErrorManager err;
  jpeg_decompress_struct cinfo;
};

bool read_rows(DecodeJob* job) {
  jpeg_decompress_struct& cinfo = job->cinfo;
  const size_t row_bytes = static_cast<size_t>(cinfo.output_width) * cinfo.output_components;
  constexpr int kMaxRows = 4;  // libjpeg's rec_outbuf_height is at most 4
  JSAMPARRAY scratch = nullptr;
  if (job->out == nullptr) {
    scratch = (*cinfo.mem->alloc_sarray)(reinterpret_cast<j_common_ptr>(&cinfo), JPOOL_IMAGE,
                                         static_cast<JDIMENSION>(row_bytes), kMaxRows);
  }
  while (cinfo.output_scanline < cinfo.output_height) {
    const JDIMENSION n =
        std::min<JDIMENSION>(kMaxRows, cinfo.output_height - cinfo.output_scanline);
    JSAMPROW rows[kMaxRows];
    for (JDIMENSION i = 0; i < n; ++i) {
      rows[i] = scratch ? scratch[i] : job->out + (cinfo.output_scanline + i) * row_bytes;
    }
    if (jpeg_read_scanlines(&cinfo, rows, n) == 0) return false;
  }
  return true;
}

// Returns false with job->err.message set when libjpeg failed.
bool run_decompress(DecodeJob* job) {
  jpeg_decompress_struct& cinfo = job->cinfo;
  detail::install_strict_decode_errors(&cinfo, &job->err);
  if (setjmp(job->err.jump)) {
    jpeg_destroy_decompress(&cinfo);
    return false;
  }
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, reinterpret_cast<const unsigned char*>(job->bytes.data()),
               static_cast<unsigned long>(job->bytes.size()));
  jpeg_read_header(&cinfo, TRUE);
  cinfo.scale_num = 1;
  cinfo.scale_denom = static_cast<unsigned int>(job->scale_denom);
  cinfo.out_color_space = job->out_space;
  jpeg_start_decompress(&cinfo);
  job->saw_adobe = cinfo.saw_Adobe_marker;
  const bool as_expected = cinfo.output_width == job->out_width &&
                           cinfo.output_height == job->out_height &&
                           cinfo.output_components == job->out_components;
  if (!as_expected) {
    std::snprintf(job->err.message, sizeof job->err.message,
                  "decoder disagrees with the header about the output size");
    jpeg_destroy_decompress(&cinfo);
    return false;
  }
  if (!read_rows(job)) {
    std::snprintf(job->err.message, sizeof job->err.message, "decoder returned no rows");
    jpeg_destroy_decompress(&cinfo);
    return false;
  }
  jpeg_finish_decompress(&cinfo);
  jpeg_destroy_decompress(&cinfo);
  return true;
}

JDIMENSION scaled(int size, int denom) {
  return static_cast<JDIMENSION>((size + denom - 1) / denom);
}

void set_output(const ImageInfo& info, int scale_denom, bool force_rgb, DecodeJob* job) {
  job->scale_denom = scale_denom;
  job->out_width = scaled(info.width, scale_denom);
  job->out_height = scaled(info.height, scale_denom);
  if (info.components == 4) {
    job->out_space = JCS_CMYK;
    job->out_components = 4;
  } else if (info.components == 1 && !force_rgb) {
    job->out_space = JCS_GRAYSCALE;
    job->out_components = 1;
  } else {
    job->out_space = JCS_RGB;
    job->out_components = 3;
  }
}

}  // namespace

namespace detail {

void install_strict_decode_errors(jpeg_decompress_struct* cinfo, JpegErrorManager* err) {
  cinfo->err = jpeg_std_error(&err->pub);
  err->pub.error_exit = on_error_exit;
  err->pub.emit_message = on_decode_message;
}

void install_encode_errors(jpeg_compress_struct* cinfo, JpegErrorManager* err) {
  cinfo->err = jpeg_std_error(&err->pub);
  err->pub.error_exit = on_error_exit;
  err->pub.emit_message = on_encode_message;
}

Status check_jpeg_supported(const ImageInfo& info) {
  if (info.lossless) return unimplemented_error("lossless JPEG (SOF3)");
  if (info.bit_depth != 8) {
    return unimplemented_error(std::to_string(info.bit_depth) + "-bit JPEG");
  }
  const bool hierarchical = (info.jpeg_sof >= 5 && info.jpeg_sof <= 7) || info.jpeg_sof >= 13;
  if (hierarchical) return unimplemented_error("hierarchical JPEG");
  return ok_status();
}

// Rounded a * b / 255, exact for a, b in [0, 255] (PIL's MULDIV255).
inline uint8_t mul_div255(unsigned a, unsigned b) {
  const unsigned t = a * b + 128;
  return static_cast<uint8_t>((t + (t >> 8)) >> 8);
}

// Adobe writes CMYK inverted (0 = full ink), and libjpeg hands the stored
// values back, so with an APP14 marker R = C' * K' / 255 on the stored
// values; PIL reads every CMYK JPEG that way. Without the marker the values
// are plain ink amounts.
void cmyk_to_rgb(const uint8_t* in, size_t n, bool inverted, uint8_t* out) {
  for (size_t i = 0; i < n; ++i) {
    unsigned c = in[4 * i], m = in[4 * i + 1], y = in[4 * i + 2], k = in[4 * i + 3];
    if (!inverted) {
      c = 255 - c;
      m = 255 - m;
      y = 255 - y;
      k = 255 - k;
    }
    out[3 * i] = mul_div255(c, k);
    out[3 * i + 1] = mul_div255(m, k);
    out[3 * i + 2] = mul_div255(y, k);
  }
}

Result<Image> decode_jpeg(std::string_view bytes, const ImageInfo& info,
                          const DecodeOptions& options) {
  SLUICE_RETURN_IF_ERROR(check_jpeg_supported(info));
  DecodeJob job;
  job.bytes = bytes;
  set_output(info, options.scale_denom, options.force_rgb, &job);
  Image image;
  image.width = static_cast<int>(job.out_width);
  image.height = static_cast<int>(job.out_height);
  image.channels = job.out_components;
  image.pixels.resize(static_cast<size_t>(job.out_width) * job.out_height * job.out_components);
  job.out = image.pixels.data();
  if (!run_decompress(&job)) return data_loss_error(job.err.message);
  if (image.channels == 4) {
    const size_t n = static_cast<size_t>(image.width) * image.height;
    cmyk_to_rgb(image.pixels.data(), n, job.saw_adobe, image.pixels.data());
    image.channels = 3;
    image.pixels.resize(n * 3);
  }
  return image;
}

Status check_jpeg(std::string_view bytes, const ImageInfo& info) {
  SLUICE_RETURN_IF_ERROR(check_jpeg_supported(info));
  DecodeJob job;
  job.bytes = bytes;
  // 1/8 scale skips nearly all IDCT work; entropy decoding, where damage
  // shows, is done in full whatever the scale.
  set_output(info, 8, /*force_rgb=*/false, &job);
  if (!run_decompress(&job)) return data_loss_error(job.err.message);
  return ok_status();
}

}  // namespace detail

namespace {

// A growable malloc'd output buffer: jpeg_mem_dest only publishes its
// buffer at the end, so after an error longjmp it would leak.
struct Destination {
  jpeg_destination_mgr pub;  // first, as for ErrorManager
  unsigned char* buffer = nullptr;
  size_t capacity = 0;
};

void init_destination(j_compress_ptr cinfo) {
  auto* dest = reinterpret_cast<Destination*>(cinfo->dest);
  dest->pub.next_output_byte = dest->buffer;
  dest->pub.free_in_buffer = dest->capacity;
}

boolean grow_destination(j_compress_ptr cinfo) {
  auto* dest = reinterpret_cast<Destination*>(cinfo->dest);
  const size_t old_capacity = dest->capacity;
  auto* grown = static_cast<unsigned char*>(std::realloc(dest->buffer, 2 * old_capacity));
  if (grown == nullptr) ERREXIT(cinfo, JERR_OUT_OF_MEMORY);
  dest->buffer = grown;
  dest->capacity = 2 * old_capacity;
  dest->pub.next_output_byte = grown + old_capacity;
  dest->pub.free_in_buffer = old_capacity;
  return TRUE;
}

void term_destination(j_compress_ptr) {}

struct EncodeJob {
  const Image* image = nullptr;
  int quality = 0;
  detail::JpegErrorManager err;
  Destination dest;
  jpeg_compress_struct cinfo;
};

bool run_compress(EncodeJob* job) {
  jpeg_compress_struct& cinfo = job->cinfo;
  detail::install_encode_errors(&cinfo, &job->err);
  if (setjmp(job->err.jump)) {
    jpeg_destroy_compress(&cinfo);
    return false;
  }
  jpeg_create_compress(&cinfo);
  job->dest.pub.init_destination = init_destination;
  job->dest.pub.empty_output_buffer = grow_destination;
  job->dest.pub.term_destination = term_destination;
  cinfo.dest = &job->dest.pub;
  const Image& image = *job->image;
  cinfo.image_width = static_cast<JDIMENSION>(image.width);
  cinfo.image_height = static_cast<JDIMENSION>(image.height);
  cinfo.input_components = image.channels;
  cinfo.in_color_space = image.channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_set_defaults(&cinfo);  // YCbCr with 2x2 luma sampling: 4:2:0
  jpeg_set_quality(&cinfo, job->quality, TRUE);
  cinfo.optimize_coding = TRUE;
  jpeg_start_compress(&cinfo, TRUE);
  while (cinfo.next_scanline < cinfo.image_height) {
    // libjpeg's API takes non-const rows but only reads them.
    JSAMPROW row = const_cast<uint8_t*>(image.pixels.data()) +
                   static_cast<size_t>(cinfo.next_scanline) * image.row_bytes();
    jpeg_write_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_compress(&cinfo);
  jpeg_destroy_compress(&cinfo);
  return true;
}

Status check_encodable(const Image& image) {
  if (image.width <= 0 || image.height <= 0) return invalid_argument_error("empty image");
  if (image.width > JPEG_MAX_DIMENSION || image.height > JPEG_MAX_DIMENSION) {
    return invalid_argument_error("image too large for JPEG");
  }
  if (image.channels != 1 && image.channels != 3) {
    return invalid_argument_error("JPEG encoding needs 1 or 3 channels");
  }
  if (image.pixels.size() != image.row_bytes() * static_cast<size_t>(image.height)) {
    return invalid_argument_error("pixel buffer size does not match the dimensions");
  }
  return ok_status();
}

}  // namespace

Result<std::string> encode_jpeg(const Image& image, int quality) {
  SLUICE_RETURN_IF_ERROR(check_encodable(image));
  if (quality < 1 || quality > 100) return invalid_argument_error("JPEG quality must be 1..100");
  EncodeJob job;
  job.image = &image;
  job.quality = quality;
  // Most photos compress below a quarter of their raw size; the buffer
  // doubles when they do not.
  job.dest.capacity = image.pixels.size() / 4 + 4096;
  job.dest.buffer = static_cast<unsigned char*>(std::malloc(job.dest.capacity));
  if (job.dest.buffer == nullptr) return resource_exhausted_error("out of memory");
  const bool ok = run_compress(&job);
  std::string encoded;
  if (ok) {
    const size_t size = job.dest.capacity - job.dest.pub.free_in_buffer;
    encoded.assign(reinterpret_cast<const char*>(job.dest.buffer), size);
  }
  std::free(job.dest.buffer);
  if (!ok) return internal_error(std::string("JPEG encoder: ") + job.err.message);
  return encoded;
}

namespace {

struct TranscodeJob {
  std::string_view bytes;
  bool incomplete = false;  // progressive scans that leave coefficients short
  detail::JpegErrorManager in_err;
  detail::JpegErrorManager out_err;
  jpeg_decompress_struct in;
  jpeg_compress_struct out;
  Destination dest;
};

// Whether every scan-coded coefficient of every component reached full
// precision (coef_bits 0; -1 = never sent, above 0 = bits still missing).
bool all_coefficients_complete(const jpeg_decompress_struct& in) {
  if (in.coef_bits == nullptr) return true;
  for (int c = 0; c < in.num_components; ++c) {
    for (int k = 0; k < DCTSIZE2; ++k) {
      if (in.coef_bits[c][k] != 0) return false;
    }
  }
  return true;
}

// Reads the DCT coefficients and writes them again, sequential, with
// Huffman tables optimised for this image. Both structs are created before
// the jump point so one cleanup serves every exit.
bool run_transcode(TranscodeJob* job) {
  detail::install_strict_decode_errors(&job->in, &job->in_err);
  detail::install_encode_errors(&job->out, &job->out_err);
  jpeg_create_decompress(&job->in);
  jpeg_create_compress(&job->out);
  // An error in either half lands here: the encoder's jump buffer is made
  // the same as the decoder's.
  if (setjmp(job->in_err.jump)) {
    jpeg_destroy_compress(&job->out);
    jpeg_destroy_decompress(&job->in);
    return false;
  }
  std::memcpy(job->out_err.jump, job->in_err.jump, sizeof(std::jmp_buf));
  jpeg_mem_src(&job->in, reinterpret_cast<const unsigned char*>(job->bytes.data()),
               static_cast<unsigned long>(job->bytes.size()));
  jpeg_read_header(&job->in, TRUE);
  jvirt_barray_ptr* coefficients = jpeg_read_coefficients(&job->in);
  // A progressive file whose scans leave some coefficient short of full
  // precision (or never sent) is decoded with libjpeg's interblock
  // smoothing, which guesses the missing low AC terms; a sequential copy of
  // the same coefficients is complete, so decoders would not smooth it and
  // its pixels would differ (found by crop_decode_fuzz).
  if (job->in.progressive_mode && !all_coefficients_complete(job->in)) {
    job->incomplete = true;
    jpeg_destroy_compress(&job->out);
    jpeg_destroy_decompress(&job->in);
    return false;
  }
  job->dest.pub.init_destination = init_destination;
  job->dest.pub.empty_output_buffer = grow_destination;
  job->dest.pub.term_destination = term_destination;
  job->out.dest = &job->dest.pub;
  jpeg_copy_critical_parameters(&job->in, &job->out);
  // libjpeg marks every CMYK/YCCK output with an Adobe APP14 marker, and a
  // reader takes a marked CMYK file as inverted: a source without the
  // marker (plain ink values) would come out with its colours inverted
  // (found by crop_decode_fuzz). Keep the source's choice.
  if (job->in.num_components == 4) job->out.write_Adobe_marker = job->in.saw_Adobe_marker;
  job->out.optimize_coding = TRUE;
  jpeg_write_coefficients(&job->out, coefficients);
  jpeg_finish_compress(&job->out);
  jpeg_finish_decompress(&job->in);
  jpeg_destroy_compress(&job->out);
  jpeg_destroy_decompress(&job->in);
  return true;
}

}  // namespace

Result<std::string> transcode_jpeg_baseline(std::string_view bytes, uint64_t max_pixels) {
  SLUICE_ASSIGN_OR_RETURN(ImageInfo info, probe_image(bytes, max_pixels));
  if (info.format != ImageFormat::kJpeg) return invalid_argument_error("not a JPEG");
  SLUICE_RETURN_IF_ERROR(detail::check_jpeg_supported(info));
  TranscodeJob job;
  job.bytes = bytes;
  job.in_err.message[0] = job.out_err.message[0] = '\0';
  job.dest.capacity = bytes.size() + 4096;
  job.dest.buffer = static_cast<unsigned char*>(std::malloc(job.dest.capacity));
  if (job.dest.buffer == nullptr) return resource_exhausted_error("out of memory");
  const bool ok = run_transcode(&job);
  std::string encoded;
  if (ok) {
    encoded.assign(reinterpret_cast<const char*>(job.dest.buffer),
                   job.dest.capacity - job.dest.pub.free_in_buffer);
  }
  std::free(job.dest.buffer);
  if (job.incomplete) {
    return failed_precondition_error(
        "JPEG transcode: progressive scans leave coefficients incomplete; decoders smooth "
        "them, a sequential copy would decode to other pixels");
  }
  if (!ok) {
    const char* m = job.in_err.message[0] ? job.in_err.message : job.out_err.message;
    return data_loss_error(std::string("JPEG transcode: ") + m);
  }
  return encoded;
}

}  // namespace sluice
