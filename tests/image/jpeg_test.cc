#include <gtest/gtest.h>

#include <array>
#include <string>
#include <vector>

#include "base/file_util.h"
#include "sluice/image.h"
#include "tests/image/image_test_util.h"
#include "tests/temp_dir.h"

namespace sluice {
namespace {

using testing::image_bytes;
using testing::mean_abs_diff;

struct GoodFile {
  const char* file;
  int width, height;
};

// Every JPEG under tests/data/images that libjpeg-turbo should decode.
const GoodFile kGoodJpegs[] = {
    {"jpeg/jpeg-decoder-extraneous-data.jpg", 16, 16},
    {"jpeg/jpeg-decoder-jpg-cmyk-1.jpg", 32, 32},
    {"jpeg/jpeg-decoder-mjpeg.jpg", 960, 720},
    {"jpeg/jpeg-decoder-non-interleaved-mcu.jpg", 64, 16},
    {"jpeg/jpeg-decoder-restarts.jpg", 33, 33},
    {"jpeg/libjpeg-turbo-testimgari.jpg", 227, 149},
    {"jpeg/libjpeg-turbo-testorig.jpg", 227, 149},
    {"jpeg/pillow-exif-200dpcm.jpg", 200, 200},
    {"jpeg/pillow-hopper.jpg", 128, 128},
    {"jpeg/pillow-hopper_16bit_qtables.jpg", 128, 128},
    {"jpeg/pillow-hopper_orientation_2.jpg", 128, 128},
    {"jpeg/pillow-hopper_orientation_5.jpg", 128, 128},
    {"jpeg/pillow-pil_sample_cmyk.jpg", 100, 100},
    {"jpeg/wuffs-peacock.default.jpeg", 100, 75},
    {"jpeg/wuffs-peacock.grayscale.jpeg", 100, 75},
    {"jpeg/wuffs-peacock.progressive.jpeg", 100, 75},
    {"jpeg/wuffs-peacock.s-very-weird.jpeg", 100, 75},
    {"jpeg/wuffs-peacock.s-weird.jpeg", 100, 75},
    {"jpeg/wuffs-peacock.s1x1-444.jpeg", 100, 75},
    {"jpeg/wuffs-peacock.s1x3.jpeg", 100, 75},
    {"jpeg/wuffs-peacock.s2x1-422.jpeg", 100, 75},
};

TEST(DecodeJpeg, GoodFilesDecodeToRgbAtFullSize) {
  for (const GoodFile& f : kGoodJpegs) {
    SCOPED_TRACE(f.file);
    const std::string bytes = image_bytes(f.file);
    auto image = decode_image(bytes);
    ASSERT_TRUE(image.ok()) << image.status().to_string();
    EXPECT_EQ(image->width, f.width);
    EXPECT_EQ(image->height, f.height);
    EXPECT_EQ(image->channels, 3);
    EXPECT_EQ(image->pixels.size(), static_cast<size_t>(f.width) * f.height * 3);
    auto info = check_image(bytes);
    ASSERT_TRUE(info.ok()) << info.status().to_string();
    EXPECT_EQ(info->width, f.width);
  }
}

// Pillow 9.4 (Debian bookworm, linked to the same libjpeg-turbo 2.1.5):
// Image.open(f).convert("RGB").tobytes(), its byte sum and
// weighted_checksum. Both use libjpeg's default (islow) IDCT and fancy
// upsampling, so the pixels agree exactly; a libjpeg-turbo that changes
// its IDCT or upsampling would move the checksum but hardly the mean.
struct PillowReference {
  const char* file;
  uint64_t byte_sum;
  uint32_t checksum;
};

const PillowReference kPillowJpegs[] = {
    {"jpeg/jpeg-decoder-extraneous-data.jpg", 76495, 26987186u},
    {"jpeg/jpeg-decoder-jpg-cmyk-1.jpg", 305992, 434475001u},
    {"jpeg/jpeg-decoder-mjpeg.jpg", 194716391, 1075601387u},
    {"jpeg/jpeg-decoder-restarts.jpg", 325800, 492164635u},
    {"jpeg/libjpeg-turbo-testimgari.jpg", 10768919, 3710602352u},
    {"jpeg/libjpeg-turbo-testorig.jpg", 10771587, 3892039995u},
    {"jpeg/pillow-exif-200dpcm.jpg", 11051121, 3591694163u},
    {"jpeg/pillow-hopper.jpg", 4345064, 4166108255u},
    {"jpeg/pillow-hopper_16bit_qtables.jpg", 4345329, 3933874838u},
    {"jpeg/pillow-hopper_orientation_6.jpg", 4343178, 2533804524u},
    {"jpeg/pillow-pil_sample_cmyk.jpg", 430621, 1192244416u},
    {"jpeg/wuffs-peacock.default.jpeg", 2963635, 32415725u},
    {"jpeg/wuffs-peacock.grayscale.jpeg", 3089046, 1120777759u},
    {"jpeg/wuffs-peacock.progressive.jpeg", 2963635, 32415725u},
    {"jpeg/wuffs-peacock.s-very-weird.jpeg", 2968208, 81421024u},
    {"jpeg/wuffs-peacock.s-weird.jpeg", 2966446, 54036691u},
    {"jpeg/wuffs-peacock.s1x1-444.jpeg", 2964138, 29842726u},
    {"jpeg/wuffs-peacock.s1x3.jpeg", 2965156, 50791136u},
    {"jpeg/wuffs-peacock.s2x1-422.jpeg", 2963958, 31592491u},
};

TEST(DecodeJpeg, PixelsMatchPillow) {
  for (const PillowReference& ref : kPillowJpegs) {
    SCOPED_TRACE(ref.file);
    auto image = decode_image(image_bytes(ref.file));
    ASSERT_TRUE(image.ok()) << image.status().to_string();
    const double n = static_cast<double>(image->pixels.size());
    EXPECT_NEAR(static_cast<double>(testing::byte_sum(*image)) / n,
                static_cast<double>(ref.byte_sum) / n, 0.5);
    EXPECT_EQ(testing::weighted_checksum(*image), ref.checksum);
  }
}

TEST(DecodeJpeg, ScaledDecodeRoundsUp) {
  for (const GoodFile& f : kGoodJpegs) {
    for (int denom : {2, 4, 8}) {
      SCOPED_TRACE(std::string(f.file) + " 1/" + std::to_string(denom));
      DecodeOptions options;
      options.scale_denom = denom;
      auto image = decode_image(image_bytes(f.file), options);
      ASSERT_TRUE(image.ok()) << image.status().to_string();
      EXPECT_EQ(image->width, (f.width + denom - 1) / denom);
      EXPECT_EQ(image->height, (f.height + denom - 1) / denom);
    }
  }
}

TEST(DecodeJpeg, ScaleDenominatorsOutsideTheSimdSetAreRejected) {
  for (int denom : {0, 3, 5, 16, -1}) {
    DecodeOptions options;
    options.scale_denom = denom;
    EXPECT_EQ(decode_image(image_bytes("jpeg/pillow-hopper.jpg"), options).status().code(),
              StatusCode::kInvalidArgument)
        << denom;
  }
}

TEST(DecodeJpeg, GrayStaysGrayWithoutForceRgb) {
  DecodeOptions options;
  options.force_rgb = false;
  auto gray = decode_image(image_bytes("jpeg/wuffs-peacock.grayscale.jpeg"), options);
  ASSERT_TRUE(gray.ok()) << gray.status().to_string();
  EXPECT_EQ(gray->channels, 1);
  auto rgb = decode_image(image_bytes("jpeg/wuffs-peacock.grayscale.jpeg"));
  ASSERT_TRUE(rgb.ok());
  ASSERT_EQ(rgb->channels, 3);
  for (size_t i = 0; i < gray->pixels.size(); ++i) {
    ASSERT_EQ(rgb->pixels[3 * i], gray->pixels[i]);
    ASSERT_EQ(rgb->pixels[3 * i + 1], gray->pixels[i]);
    ASSERT_EQ(rgb->pixels[3 * i + 2], gray->pixels[i]);
  }
  // Colour files ignore force_rgb = false.
  auto colour = decode_image(image_bytes("jpeg/pillow-hopper.jpg"), options);
  ASSERT_TRUE(colour.ok());
  EXPECT_EQ(colour->channels, 3);
}

TEST(DecodeJpeg, ArithmeticCodingDecodesLikeItsHuffmanTwin) {
  auto ari = decode_image(image_bytes("jpeg/libjpeg-turbo-testimgari.jpg"));
  auto huff = decode_image(image_bytes("jpeg/libjpeg-turbo-testorig.jpg"));
  ASSERT_TRUE(ari.ok()) << ari.status().to_string();
  ASSERT_TRUE(huff.ok()) << huff.status().to_string();
  EXPECT_EQ(ari->width, huff->width);
  EXPECT_EQ(ari->height, huff->height);
  // Same coefficients, different entropy coding: identical pixels.
  EXPECT_LT(mean_abs_diff(*ari, *huff), 0.5);
}

TEST(DecodeJpeg, OrientationVariantsHoldTheSamePicture) {
  // hopper_orientation_2 is hopper mirrored left-right (EXIF 2 undoes it);
  // decode ignores EXIF, so mirroring it back must give hopper.
  auto upright = decode_image(image_bytes("jpeg/pillow-hopper.jpg"));
  auto mirrored = decode_image(image_bytes("jpeg/pillow-hopper_orientation_2.jpg"));
  ASSERT_TRUE(upright.ok() && mirrored.ok());
  Image flipped = *mirrored;
  for (int y = 0; y < flipped.height; ++y) {
    for (int x = 0; x < flipped.width; ++x) {
      for (int c = 0; c < 3; ++c) {
        flipped.pixels[(static_cast<size_t>(y) * 128 + x) * 3 + c] =
            mirrored->pixels[(static_cast<size_t>(y) * 128 + (127 - x)) * 3 + c];
      }
    }
  }
  EXPECT_LT(mean_abs_diff(flipped, *upright), 8.0);
  EXPECT_GT(mean_abs_diff(*mirrored, *upright), 8.0);
}

TEST(DecodeJpeg, TruncatedFilesAreDataLoss) {
  for (const char* file : {"jpeg/wuffs-peacock.default.truncated.jpeg",
                           "jpeg/wuffs-peacock.progressive.truncated.jpeg"}) {
    SCOPED_TRACE(file);
    const std::string bytes = image_bytes(file);
    const auto image = decode_image(bytes);
    EXPECT_EQ(image.status().code(), StatusCode::kDataLoss);
    EXPECT_NE(image.status().message().find("premature end of data"), std::string::npos)
        << image.status().to_string();
    EXPECT_EQ(check_image(bytes).status().code(), StatusCode::kDataLoss);
  }
}

TEST(DecodeJpeg, EveryTruncationOfAGoodFileIsDataLoss) {
  const std::string bytes = image_bytes("jpeg/wuffs-peacock.default.jpeg");
  // Stop before the final EOI marker: the scan itself is cut.
  for (size_t n = 0; n + 2 < bytes.size(); n += 37) {
    EXPECT_EQ(check_image(bytes.substr(0, n)).status().code(), StatusCode::kDataLoss)
        << "prefix " << n;
  }
}

TEST(DecodeJpeg, ProgressiveMissingDcScanIsDataLoss) {
  EXPECT_EQ(
      decode_image(image_bytes("jpeg/jpeg-decoder-progressive-missing-dc.jpg")).status().code(),
      StatusCode::kDataLoss);
}

TEST(DecodeJpeg, ExtraneousBytesBeforeAMarkerAreTolerated) {
  auto image = decode_image(image_bytes("jpeg/jpeg-decoder-extraneous-data.jpg"));
  ASSERT_TRUE(image.ok()) << image.status().to_string();
  EXPECT_EQ(image->width, 16);
}

TEST(DecodeJpeg, LosslessAndTwelveBitAreUnimplemented) {
  for (const char* file :
       {"jpeg/jpeg-decoder-jpeg_lossless_sel1.jpg", "jpeg/libjpeg-turbo-monkey12.jpg"}) {
    SCOPED_TRACE(file);
    const std::string bytes = image_bytes(file);
    EXPECT_EQ(decode_image(bytes).status().code(), StatusCode::kUnimplemented);
    EXPECT_EQ(check_image(bytes).status().code(), StatusCode::kUnimplemented);
  }
}

TEST(DecodeJpeg, EmptyInputFailsCleanly) {
  EXPECT_EQ(decode_image(image_bytes("jpeg/jpeg-decoder-empty.jpg")).status().code(),
            StatusCode::kDataLoss);
  EXPECT_EQ(check_image("").status().code(), StatusCode::kDataLoss);
}

TEST(DecodeJpeg, HeaderAloneIsDataLoss) {
  // A frame header and nothing after: no tables, no scan.
  EXPECT_EQ(decode_image(testing::jpeg_header(16, 16)).status().code(), StatusCode::kDataLoss);
}

TEST(DecodeJpeg, PixelLimitIsCheckedBeforeDecoding) {
  DecodeOptions options;
  options.max_pixels = 227 * 149 - 1;
  EXPECT_EQ(decode_image(image_bytes("jpeg/libjpeg-turbo-testorig.jpg"), options).status().code(),
            StatusCode::kResourceExhausted);
  // The limit applies to the stored size even when decoding scaled down.
  options.scale_denom = 8;
  EXPECT_EQ(decode_image(image_bytes("jpeg/libjpeg-turbo-testorig.jpg"), options).status().code(),
            StatusCode::kResourceExhausted);
  EXPECT_EQ(decode_image(testing::jpeg_header(60000, 60000)).status().code(),
            StatusCode::kResourceExhausted);
  EXPECT_EQ(check_image(testing::jpeg_header(60000, 60000)).status().code(),
            StatusCode::kResourceExhausted);
}

// Mean colour of an image, per channel.
std::array<double, 3> mean_rgb(const Image& image) {
  std::array<double, 3> sum{};
  for (size_t i = 0; i < image.pixels.size(); ++i) sum[i % 3] += image.pixels[i];
  for (double& s : sum) s /= static_cast<double>(image.pixels.size() / 3);
  return sum;
}

struct Pixel {
  int x, y;
  std::array<int, 3> rgb;
};

// Reference values from Pillow 9.4 (Debian bookworm's python3-pil, same
// libjpeg-turbo 2.1.5): Image.open(f).convert("RGB"), which reads CMYK
// JPEGs as Adobe-inverted.
struct CmykReference {
  const char* file;
  std::array<double, 3> mean;
  std::vector<Pixel> pixels;
};

TEST(DecodeJpeg, CmykMatchesPillow) {
  const CmykReference refs[] = {
      {"jpeg/pillow-pil_sample_cmyk.jpg",  // YCCK, Adobe transform 2
       {30.23, 5.44, 7.39},
       {{0, 0, {255, 13, 25}}, {50, 50, {1, 4, 5}}, {99, 99, {1, 4, 5}}}},
      {"jpeg/jpeg-decoder-jpg-cmyk-1.jpg",  // plain CMYK, Adobe transform 0
       {127.5, 127.5, 43.82},
       {{0, 0, {255, 255, 0}},
        {16, 16, {123, 123, 8}},
        {31, 31, {0, 0, 255}},
        {10, 21, {173, 82, 0}},
        {21, 8, {82, 189, 0}}}},
  };
  for (const CmykReference& ref : refs) {
    SCOPED_TRACE(ref.file);
    auto image = decode_image(image_bytes(ref.file));
    ASSERT_TRUE(image.ok()) << image.status().to_string();
    ASSERT_EQ(image->channels, 3);
    const auto mean = mean_rgb(*image);
    for (int c = 0; c < 3; ++c) EXPECT_NEAR(mean[c], ref.mean[c], 1.0) << "channel " << c;
    for (const Pixel& p : ref.pixels) {
      const uint8_t* got = &image->pixels[(static_cast<size_t>(p.y) * image->width + p.x) * 3];
      for (int c = 0; c < 3; ++c) {
        EXPECT_NEAR(got[c], p.rgb[c], 2) << "pixel " << p.x << "," << p.y << " channel " << c;
      }
    }
  }
}

TEST(EncodeJpeg, RoundTripIsClose) {
  for (int channels : {1, 3}) {
    for (int quality : {50, 75, 95}) {
      SCOPED_TRACE("channels " + std::to_string(channels) + " quality " + std::to_string(quality));
      const Image original = testing::test_picture(67, 45, channels);
      auto encoded = encode_jpeg(original, quality);
      ASSERT_TRUE(encoded.ok()) << encoded.status().to_string();
      auto info = probe_image(*encoded);
      ASSERT_TRUE(info.ok());
      EXPECT_EQ(info->jpeg_sof, 0);  // baseline
      EXPECT_EQ(info->subsampling, channels == 1 ? "gray" : "4:2:0");
      DecodeOptions options;
      options.force_rgb = false;
      auto decoded = decode_image(*encoded, options);
      ASSERT_TRUE(decoded.ok()) << decoded.status().to_string();
      EXPECT_EQ(decoded->channels, channels);
      EXPECT_LT(mean_abs_diff(*decoded, original), quality >= 95 ? 2.0 : 5.0);
    }
  }
}

TEST(EncodeJpeg, HigherQualityIsCloserAndLarger) {
  const Image original = testing::test_picture(128, 96, 3);
  auto low = encode_jpeg(original, 20);
  auto high = encode_jpeg(original, 98);
  ASSERT_TRUE(low.ok() && high.ok());
  EXPECT_LT(low->size(), high->size());
  EXPECT_LT(mean_abs_diff(*decode_image(*high), original),
            mean_abs_diff(*decode_image(*low), original));
}

TEST(EncodeJpeg, LargeOutputGrowsTheBuffer) {
  // Noise at quality 100 compresses worse than the initial quarter-size
  // buffer assumes.
  Image noise{300, 200, 3, {}};
  noise.pixels.resize(300 * 200 * 3);
  uint32_t x = 12345;
  for (auto& p : noise.pixels) p = static_cast<uint8_t>((x = x * 1103515245 + 12345) >> 24);
  auto encoded = encode_jpeg(noise, 100);
  ASSERT_TRUE(encoded.ok()) << encoded.status().to_string();
  EXPECT_GT(encoded->size(), noise.pixels.size() / 4);
  auto decoded = decode_image(*encoded);
  ASSERT_TRUE(decoded.ok()) << decoded.status().to_string();
  EXPECT_EQ(decoded->width, 300);
}

TEST(EncodeJpeg, RejectsBadArguments) {
  const Image image = testing::test_picture(8, 8, 3);
  EXPECT_EQ(encode_jpeg(image, 0).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(encode_jpeg(image, 101).status().code(), StatusCode::kInvalidArgument);
  Image bad = image;
  bad.pixels.pop_back();
  EXPECT_EQ(encode_jpeg(bad, 90).status().code(), StatusCode::kInvalidArgument);
  bad = testing::test_picture(8, 8, 2);
  EXPECT_EQ(encode_jpeg(bad, 90).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(encode_jpeg(Image{}, 90).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace sluice

namespace sluice {
namespace {

TEST(TranscodeJpegBaseline, SamePixelsNoLongerProgressive) {
  for (const char* name :
       {"images/jpeg/wuffs-peacock.progressive.jpeg",
        "images/jpeg/jpeg-decoder-non-interleaved-mcu.jpg",
        "images/jpeg/libjpeg-turbo-testorig.jpg", "images/jpeg/pillow-pil_sample_cmyk.jpg"}) {
    std::string bytes = *detail::read_file(test_data(name));
    auto out = transcode_jpeg_baseline(bytes);
    ASSERT_TRUE(out.ok()) << name << ": " << out.status().to_string();
    auto info = probe_image(*out);
    ASSERT_TRUE(info.ok());
    EXPECT_FALSE(info->progressive) << name;
    auto a = decode_image(bytes);
    auto b = decode_image(*out);
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_EQ(a->pixels, b->pixels) << name;  // lossless: identical pixels
  }
}

// A CMYK JPEG without Adobe's APP14 marker holds plain ink values; libjpeg
// marks every CMYK file it writes, and a marked one reads as inverted, so
// the rewrite must not add the marker (found by crop_decode_fuzz).
TEST(TranscodeJpegBaseline, CmykWithoutAdobeMarkerKeepsItsColours) {
  std::string bytes = *detail::read_file(test_data("images/jpeg/pillow-pil_sample_cmyk.jpg"));
  // Walk the marker segments up to the scan and drop APP14.
  bool dropped = false;
  for (size_t at = 2; at + 4 <= bytes.size() && static_cast<uint8_t>(bytes[at + 1]) != 0xda;) {
    ASSERT_EQ(static_cast<uint8_t>(bytes[at]), 0xff) << at;
    const size_t length =
        (static_cast<uint8_t>(bytes[at + 2]) << 8) | static_cast<uint8_t>(bytes[at + 3]);
    if (static_cast<uint8_t>(bytes[at + 1]) == 0xee) {
      bytes.erase(at, 2 + length);
      dropped = true;
    } else {
      at += 2 + length;
    }
  }
  ASSERT_TRUE(dropped);
  auto out = transcode_jpeg_baseline(bytes);
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  auto a = decode_image(bytes);
  auto b = decode_image(*out);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->pixels, b->pixels);
}

// A progressive file whose scans leave some coefficients short of full
// precision decodes with libjpeg's interblock smoothing; a sequential copy
// would hold the same coefficients as complete and decode unsmoothed, to
// other pixels (found by crop_decode_fuzz). It is refused, not rewritten.
TEST(TranscodeJpegBaseline, IncompleteProgressionIsRefused) {
  const std::string bytes =
      *detail::read_file(test_data("fuzz/crop/regress-progressive-incomplete-coefficients"));
  ASSERT_TRUE(decode_image(bytes).ok());
  auto out = transcode_jpeg_baseline(bytes);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), StatusCode::kFailedPrecondition) << out.status().to_string();
}

TEST(TranscodeJpegBaseline, DamagedInputIsDataLoss) {
  std::string cut =
      *detail::read_file(test_data("images/jpeg/wuffs-peacock.progressive.truncated.jpeg"));
  EXPECT_EQ(transcode_jpeg_baseline(cut).status().code(), StatusCode::kDataLoss);
  EXPECT_FALSE(transcode_jpeg_baseline("not a jpeg").ok());
}

}  // namespace
}  // namespace sluice
