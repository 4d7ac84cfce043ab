// Inside the image module: the libjpeg plumbing that decode_jpeg (jpeg.cc)
// and CropDecoder (crop_decode.cc) share, so both refuse the same damage and
// turn CMYK into the same RGB. Includes jpeglib.h: keep it out of codecs.h,
// which the PNG side includes too.
#pragma once

#include <csetjmp>
#include <cstddef>
#include <cstdint>
#include <cstdio>

// jpeglib.h uses size_t and FILE without including their headers.
#include <jpeglib.h>

#include "sluice/image.h"
#include "sluice/status.h"

namespace sluice::detail {

// libjpeg reports errors by calling error_exit, which must not return; we
// longjmp back to `jump`, with `message` filled in.
struct JpegErrorManager {
  jpeg_error_mgr pub;  // first, so libjpeg's pointer to it is a pointer to us
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

// Points cinfo->err at `err` with the strict decode policy: errors and any
// warning that means libjpeg is inventing pixels (premature end of data,
// bad Huffman codes, broken progression) jump; metadata warnings
// (extraneous bytes, JFIF version, Adobe transform) pass.
void install_strict_decode_errors(jpeg_decompress_struct* cinfo, JpegErrorManager* err);

// Errors only; warnings are ignored (the encoder emits none that matter).
void install_encode_errors(jpeg_compress_struct* cinfo, JpegErrorManager* err);

// kUnimplemented for what probe_image reports but we do not decode
// (lossless, hierarchical, 12-bit).
Status check_jpeg_supported(const ImageInfo& info);

// Converts `n` CMYK pixels as libjpeg hands them back to RGB, as Pillow
// does. `inverted` is whether an Adobe APP14 marker was seen. `out` may
// alias `in` (it writes 3 bytes for every 4 read, front to back).
void cmyk_to_rgb(const uint8_t* in, size_t n, bool inverted, uint8_t* out);

}  // namespace sluice::detail
