#include <gtest/gtest.h>

#include <string>

#include "sluice/image.h"
#include "tests/image/image_test_util.h"

namespace sluice {
namespace {

using testing::image_bytes;

// Pillow 9.4: Image.open(f).convert("RGB").tobytes(), its byte sum and
// weighted_checksum. Pillow also drops alpha and keeps the high byte of
// 16-bit samples, so the pixels agree exactly.
struct PillowReference {
  const char* file;
  int width, height;
  uint64_t byte_sum;
  uint32_t checksum;
};

const PillowReference kGoodPngs[] = {
    {"png/pngsuite-basi2c08.png", 32, 32, 587520, 802356480u},  // Adam7
    {"png/pngsuite-basn0g01.png", 32, 32, 382500, 439612605u},  // 1-bit gray
    {"png/pngsuite-basn2c16.png", 32, 32, 305944, 434277624u},  // 16-bit RGB
    {"png/pngsuite-basn4a08.png", 32, 32, 390240, 392856624u},  // gray + alpha
    {"png/pngsuite-basn6a16.png", 32, 32, 326400, 455431338u},  // 16-bit RGBA
    {"png/pngsuite-oi9n2c16.png", 32, 32, 305944, 434277624u},  // 1-byte IDATs
    {"png/pngsuite-tbbn3p08.png", 32, 32, 523084, 824284854u},  // palette + tRNS
    {"png/pngsuite-z00n2c08.png", 32, 32, 305986, 434473176u},  // stored zlib
    {"png/wuffs-peacock.default.truncated.decoded-by-djpeg.png", 100, 75, 2832824, 2410313454u},
};

TEST(DecodePng, GoodFilesDecodeToRgb8LikePillow) {
  for (const PillowReference& ref : kGoodPngs) {
    SCOPED_TRACE(ref.file);
    const std::string bytes = image_bytes(ref.file);
    auto image = decode_image(bytes);
    ASSERT_TRUE(image.ok()) << image.status().to_string();
    EXPECT_EQ(image->width, ref.width);
    EXPECT_EQ(image->height, ref.height);
    EXPECT_EQ(image->channels, 3);
    EXPECT_EQ(testing::byte_sum(*image), ref.byte_sum);
    EXPECT_EQ(testing::weighted_checksum(*image), ref.checksum);
    auto info = check_image(bytes);
    EXPECT_TRUE(info.ok()) << info.status().to_string();
  }
}

TEST(DecodePng, ScaleIsIgnoredForPng) {
  DecodeOptions options;
  options.scale_denom = 4;
  auto image = decode_image(image_bytes("png/pngsuite-z00n2c08.png"), options);
  ASSERT_TRUE(image.ok()) << image.status().to_string();
  EXPECT_EQ(image->width, 32);
}

TEST(DecodePng, GrayKeepsOneChannelWithoutForceRgb) {
  DecodeOptions options;
  options.force_rgb = false;
  for (const char* file : {"png/pngsuite-basn0g01.png", "png/pngsuite-basn4a08.png"}) {
    SCOPED_TRACE(file);
    auto gray = decode_image(image_bytes(file), options);
    auto rgb = decode_image(image_bytes(file));
    ASSERT_TRUE(gray.ok() && rgb.ok()) << gray.status().to_string();
    ASSERT_EQ(gray->channels, 1);
    ASSERT_EQ(gray->pixels.size(), 32u * 32);
    for (size_t i = 0; i < gray->pixels.size(); ++i) {
      ASSERT_EQ(gray->pixels[i], rgb->pixels[3 * i]) << i;
    }
  }
  auto colour = decode_image(image_bytes("png/pngsuite-tbbn3p08.png"), options);
  ASSERT_TRUE(colour.ok());
  EXPECT_EQ(colour->channels, 3);
}

TEST(DecodePng, DamagedFilesAreDataLoss) {
  for (const char* file : {
           "png/pngsuite-xcsn0g01.png",  // bad IDAT CRC
           "png/pngsuite-xhdn0g08.png",  // bad IHDR CRC
           "png/pngsuite-xs1n0g01.png",  // signature byte 0 wrong
           "png/pngsuite-xdtn0g01.png",  // no IDAT
           "png/pngsuite-xcrn0g04.png",  // CR/LF-mangled signature
           "png/wuffs-hippopotamus.regular.truncated.png",
       }) {
    SCOPED_TRACE(file);
    const std::string bytes = image_bytes(file);
    const auto image = decode_image(bytes);
    EXPECT_EQ(image.status().code(), StatusCode::kDataLoss) << image.status().to_string();
    EXPECT_EQ(check_image(bytes).status().code(), StatusCode::kDataLoss);
  }
}

TEST(DecodePng, EveryTruncationIsDataLoss) {
  const std::string bytes = image_bytes("png/pngsuite-basn2c16.png");
  // The last 12 bytes are IEND, which the pixels do not need.
  for (size_t n = 0; n + 12 < bytes.size(); n += 7) {
    EXPECT_EQ(decode_image(bytes.substr(0, n)).status().code(), StatusCode::kDataLoss)
        << "prefix " << n;
    EXPECT_EQ(check_image(bytes.substr(0, n)).status().code(), StatusCode::kDataLoss)
        << "prefix " << n;
  }
}

TEST(DecodePng, FlippedIdatByteIsDataLoss) {
  std::string bytes = image_bytes("png/pngsuite-z00n2c08.png");
  const size_t idat = bytes.find("IDAT");
  ASSERT_NE(idat, std::string::npos);
  bytes[idat + 40] ^= 0x10;
  EXPECT_EQ(decode_image(bytes).status().code(), StatusCode::kDataLoss);
}

TEST(DecodePng, PixelLimitIsCheckedBeforeDecoding) {
  // The header claims 60000 x 60000 and nothing follows: refused on the
  // claim, before any allocation or read of the (absent) pixel data.
  const std::string huge = testing::png_header(60000, 60000);
  EXPECT_EQ(decode_image(huge).status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(check_image(huge).status().code(), StatusCode::kResourceExhausted);
  DecodeOptions options;
  options.max_pixels = 32 * 32 - 1;
  EXPECT_EQ(decode_image(image_bytes("png/pngsuite-z00n2c08.png"), options).status().code(),
            StatusCode::kResourceExhausted);
}

TEST(EncodePng, RoundTripIsExact) {
  for (int channels : {1, 3}) {
    SCOPED_TRACE(channels);
    const Image original = testing::test_picture(53, 31, channels);
    auto encoded = encode_png(original);
    ASSERT_TRUE(encoded.ok()) << encoded.status().to_string();
    auto info = probe_image(*encoded);
    ASSERT_TRUE(info.ok()) << info.status().to_string();
    EXPECT_EQ(info->components, channels);
    DecodeOptions options;
    options.force_rgb = false;
    auto decoded = decode_image(*encoded, options);
    ASSERT_TRUE(decoded.ok()) << decoded.status().to_string();
    EXPECT_EQ(decoded->width, original.width);
    EXPECT_EQ(decoded->height, original.height);
    EXPECT_EQ(decoded->channels, channels);
    EXPECT_EQ(decoded->pixels, original.pixels);
  }
}

TEST(EncodePng, RejectsBadArguments) {
  Image bad = testing::test_picture(8, 8, 3);
  bad.pixels.pop_back();
  EXPECT_EQ(encode_png(bad).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(encode_png(testing::test_picture(8, 8, 4)).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(encode_png(Image{}).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace sluice
