#include <gtest/gtest.h>

#include <filesystem>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "sluice/image.h"
#include "tests/image/image_test_util.h"

namespace sluice {
namespace {

using testing::image_bytes;
using testing::jpeg_header;
using testing::png_header;

// One row per file under tests/data/images, copied from the "Image
// inspection output" of tests/data/PROVENANCE.md (written by another tool).
struct Expected {
  const char* file;
  StatusCode code;  // kOk, or how probing fails
  ImageFormat format;
  int width, height, components, bit_depth;
  bool progressive, arithmetic, lossless;
  const char* subsampling;
  const char* sampling_factors;
  int adobe_transform;
  int jpeg_sof;
};

constexpr auto kOk = StatusCode::kOk;
constexpr auto kLoss = StatusCode::kDataLoss;
constexpr auto J = ImageFormat::kJpeg;
constexpr auto P = ImageFormat::kPng;
constexpr auto U = ImageFormat::kUnknown;
constexpr const char* k420 = "2x2,1x1,1x1";

// One row per file, to read like the inspection output.
// clang-format off
const Expected kFiles[] = {
    {"jpeg/jpeg-decoder-empty.jpg", kLoss, U, 0, 0, 0, 0, false, false, false, "", "", -1, -1},
    {"jpeg/jpeg-decoder-extraneous-data.jpg", kOk, J, 16, 16, 3, 8, false, false, false, "4:2:0", k420, -1, 0},
    {"jpeg/jpeg-decoder-jpeg_lossless_sel1.jpg", kOk, J, 256, 256, 1, 16, false, false, true, "gray", "1x1", -1, 3},
    {"jpeg/jpeg-decoder-jpg-cmyk-1.jpg", kOk, J, 32, 32, 4, 8, false, false, false, "4:4:4", "1x1,1x1,1x1,1x1", 0, 0},
    {"jpeg/jpeg-decoder-mjpeg.jpg", kOk, J, 960, 720, 3, 8, false, false, false, "4:2:2", "2x1,1x1,1x1", -1, 0},
    {"jpeg/jpeg-decoder-non-interleaved-mcu.jpg", kOk, J, 64, 16, 3, 8, true, false, false, "4:2:0", k420, -1, 2},
    {"jpeg/jpeg-decoder-progressive-missing-dc.jpg", kOk, J, 8, 8, 1, 8, true, false, false, "gray", "1x1", -1, 2},
    {"jpeg/jpeg-decoder-restarts.jpg", kOk, J, 33, 33, 3, 8, false, false, false, "4:4:4", "1x1,1x1,1x1", -1, 0},
    {"jpeg/libjpeg-turbo-monkey12.jpg", kOk, J, 149, 227, 3, 12, false, false, false, "4:2:0", k420, -1, 1},
    {"jpeg/libjpeg-turbo-testimgari.jpg", kOk, J, 227, 149, 3, 8, false, true, false, "4:2:0", k420, -1, 9},
    {"jpeg/libjpeg-turbo-testorig.jpg", kOk, J, 227, 149, 3, 8, false, false, false, "4:2:0", k420, -1, 0},
    {"jpeg/pillow-exif-200dpcm.jpg", kOk, J, 200, 200, 3, 8, false, false, false, "4:4:4", "1x1,1x1,1x1", 1, 0},
    {"jpeg/pillow-hopper.jpg", kOk, J, 128, 128, 3, 8, false, false, false, "4:2:0", k420, -1, 0},
    {"jpeg/pillow-hopper_16bit_qtables.jpg", kOk, J, 128, 128, 3, 8, false, false, false, "4:2:0", k420, -1, 1},
    {"jpeg/pillow-hopper_orientation_2.jpg", kOk, J, 128, 128, 3, 8, false, false, false, "4:2:0", k420, -1, 0},
    {"jpeg/pillow-hopper_orientation_3.jpg", kOk, J, 128, 128, 3, 8, false, false, false, "4:2:0", k420, -1, 0},
    {"jpeg/pillow-hopper_orientation_4.jpg", kOk, J, 128, 128, 3, 8, false, false, false, "4:2:0", k420, -1, 0},
    {"jpeg/pillow-hopper_orientation_5.jpg", kOk, J, 128, 128, 3, 8, false, false, false, "4:2:0", k420, -1, 0},
    {"jpeg/pillow-hopper_orientation_6.jpg", kOk, J, 128, 128, 3, 8, false, false, false, "4:2:0", k420, -1, 0},
    {"jpeg/pillow-hopper_orientation_7.jpg", kOk, J, 128, 128, 3, 8, false, false, false, "4:2:0", k420, -1, 0},
    {"jpeg/pillow-hopper_orientation_8.jpg", kOk, J, 128, 128, 3, 8, false, false, false, "4:2:0", k420, -1, 0},
    {"jpeg/pillow-pil_sample_cmyk.jpg", kOk, J, 100, 100, 4, 8, false, false, false, "4:4:4", "1x1,1x1,1x1,1x1", 2, 0},
    {"jpeg/wuffs-peacock.default.jpeg", kOk, J, 100, 75, 3, 8, false, false, false, "4:2:0", k420, -1, 0},
    {"jpeg/wuffs-peacock.default.truncated.jpeg", kOk, J, 100, 75, 3, 8, false, false, false, "4:2:0", k420, -1, 0},
    {"jpeg/wuffs-peacock.grayscale.jpeg", kOk, J, 100, 75, 1, 8, false, false, false, "gray", "1x1", -1, 0},
    {"jpeg/wuffs-peacock.progressive.jpeg", kOk, J, 100, 75, 3, 8, true, false, false, "4:2:0", k420, -1, 2},
    {"jpeg/wuffs-peacock.progressive.truncated.jpeg", kOk, J, 100, 75, 3, 8, true, false, false, "4:2:0", k420, -1, 2},
    {"jpeg/wuffs-peacock.s-very-weird.jpeg", kOk, J, 100, 75, 3, 8, false, false, false, "other", "4x1,2x1,2x2", -1, 0},
    {"jpeg/wuffs-peacock.s-weird.jpeg", kOk, J, 100, 75, 3, 8, false, false, false, "other", "2x2,2x1,1x1", -1, 0},
    {"jpeg/wuffs-peacock.s1x1-444.jpeg", kOk, J, 100, 75, 3, 8, false, false, false, "4:4:4", "1x1,1x1,1x1", -1, 0},
    {"jpeg/wuffs-peacock.s1x3.jpeg", kOk, J, 100, 75, 3, 8, false, false, false, "other", "1x3,1x1,1x1", -1, 0},
    {"jpeg/wuffs-peacock.s2x1-422.jpeg", kOk, J, 100, 75, 3, 8, false, false, false, "4:2:2", "2x1,1x1,1x1", -1, 0},
    {"png/pngsuite-basi2c08.png", kOk, P, 32, 32, 3, 8, true, false, false, "", "", -1, -1},
    {"png/pngsuite-basn0g01.png", kOk, P, 32, 32, 1, 1, false, false, false, "", "", -1, -1},
    {"png/pngsuite-basn2c16.png", kOk, P, 32, 32, 3, 16, false, false, false, "", "", -1, -1},
    {"png/pngsuite-basn4a08.png", kOk, P, 32, 32, 2, 8, false, false, false, "", "", -1, -1},
    {"png/pngsuite-basn6a16.png", kOk, P, 32, 32, 4, 16, false, false, false, "", "", -1, -1},
    {"png/pngsuite-oi9n2c16.png", kOk, P, 32, 32, 3, 16, false, false, false, "", "", -1, -1},
    {"png/pngsuite-tbbn3p08.png", kOk, P, 32, 32, 3, 8, false, false, false, "", "", -1, -1},
    {"png/pngsuite-xcrn0g04.png", kLoss, U, 0, 0, 0, 0, false, false, false, "", "", -1, -1},
    {"png/pngsuite-xcsn0g01.png", kOk, P, 32, 32, 1, 1, false, false, false, "", "", -1, -1},
    {"png/pngsuite-xdtn0g01.png", kOk, P, 32, 32, 1, 1, false, false, false, "", "", -1, -1},
    {"png/pngsuite-xhdn0g08.png", kLoss, U, 0, 0, 0, 0, false, false, false, "", "", -1, -1},
    {"png/pngsuite-xs1n0g01.png", kLoss, U, 0, 0, 0, 0, false, false, false, "", "", -1, -1},
    {"png/pngsuite-z00n2c08.png", kOk, P, 32, 32, 3, 8, false, false, false, "", "", -1, -1},
    {"png/wuffs-hippopotamus.regular.truncated.png", kOk, P, 36, 28, 3, 8, false, false, false, "", "", -1, -1},
    {"png/wuffs-peacock.default.truncated.decoded-by-djpeg.png", kOk, P, 100, 75, 3, 8, false, false, false, "", "", -1, -1},
};
// clang-format on

TEST(ProbeImage, EveryTestFileProbesAsInspected) {
  for (const Expected& e : kFiles) {
    SCOPED_TRACE(e.file);
    const auto info = probe_image(image_bytes(e.file));
    if (e.code != kOk) {
      EXPECT_EQ(info.status().code(), e.code) << info.status().to_string();
      continue;
    }
    ASSERT_TRUE(info.ok()) << info.status().to_string();
    EXPECT_EQ(info->format, e.format);
    EXPECT_EQ(info->width, e.width);
    EXPECT_EQ(info->height, e.height);
    EXPECT_EQ(info->components, e.components);
    EXPECT_EQ(info->bit_depth, e.bit_depth);
    EXPECT_EQ(info->progressive, e.progressive);
    EXPECT_EQ(info->arithmetic, e.arithmetic);
    EXPECT_EQ(info->lossless, e.lossless);
    EXPECT_EQ(info->subsampling, e.subsampling);
    EXPECT_EQ(info->sampling_factors, e.sampling_factors);
    EXPECT_EQ(info->adobe_transform, e.adobe_transform);
    EXPECT_EQ(info->jpeg_sof, e.jpeg_sof);
  }
}

TEST(ProbeImage, TableCoversEveryTestFile) {
  std::set<std::string> listed;
  for (const Expected& e : kFiles) listed.insert(e.file);
  const std::filesystem::path root = test_data("images");
  for (const auto& entry : std::filesystem::recursive_directory_iterator(root)) {
    if (!entry.is_regular_file()) continue;
    EXPECT_TRUE(listed.count(std::filesystem::relative(entry.path(), root).string()))
        << entry.path() << " has no row in kFiles";
  }
}

// tRNS before the image data: a palette (tbbn3p08) or single-colour
// transparency that decoders keeping alpha turn into an alpha channel.
TEST(ProbeImage, PngTransparencyChunk) {
  for (const Expected& e : kFiles) {
    if (e.format != P) continue;
    SCOPED_TRACE(e.file);
    const auto info = probe_image(image_bytes(e.file));
    ASSERT_TRUE(info.ok());
    EXPECT_EQ(info->transparency, std::string(e.file) == "png/pngsuite-tbbn3p08.png");
  }
  const std::string bytes = image_bytes("png/pngsuite-tbbn3p08.png");
  for (size_t n = 33; n < bytes.size(); ++n) {  // every cut: no crash, no claim past the cut
    auto info = probe_image(bytes.substr(0, n));
    ASSERT_TRUE(info.ok()) << n;
    if (info->transparency) {
      EXPECT_GE(n, bytes.find("tRNS") + 4) << n;
    }
  }
}

TEST(ProbeImage, FormatNames) {
  EXPECT_EQ(image_format_name(ImageFormat::kJpeg), "jpeg");
  EXPECT_EQ(image_format_name(ImageFormat::kPng), "png");
  EXPECT_EQ(image_format_name(ImageFormat::kUnknown), "unknown");
}

TEST(ProbeImage, OtherFormatsAreUnimplemented) {
  EXPECT_EQ(probe_image("GIF89a\x01\x00\x01\x00").status().code(), StatusCode::kUnimplemented);
  EXPECT_EQ(probe_image("BM").status().code(), StatusCode::kUnimplemented);
}

TEST(ProbeImage, SignaturePrefixesAreTruncation) {
  EXPECT_EQ(probe_image("").status().code(), kLoss);
  EXPECT_EQ(probe_image("\xFF").status().code(), kLoss);
  EXPECT_EQ(probe_image("\x89PN").status().code(), kLoss);
}

TEST(ProbeImage, EveryPrefixOfAJpegHeaderIsDataLoss) {
  const std::string bytes = image_bytes("jpeg/libjpeg-turbo-testorig.jpg");
  // Markers before the frame header end at the SOF segment's last byte.
  const size_t sof = bytes.find("\xFF\xC0");
  ASSERT_NE(sof, std::string::npos);
  const size_t sof_end = sof + 2 + 17;
  for (size_t n = 0; n < sof_end; ++n) {
    EXPECT_EQ(probe_image(bytes.substr(0, n)).status().code(), kLoss) << "prefix " << n;
  }
  EXPECT_TRUE(probe_image(bytes.substr(0, sof_end)).ok());
}

TEST(ProbeImage, EveryPrefixOfAPngHeaderIsDataLoss) {
  const std::string bytes = image_bytes("png/pngsuite-basn2c16.png");
  for (size_t n = 0; n < 33; ++n) {
    EXPECT_EQ(probe_image(bytes.substr(0, n)).status().code(), kLoss) << "prefix " << n;
  }
  EXPECT_TRUE(probe_image(bytes.substr(0, 33)).ok());
}

TEST(ProbeImage, HandMadeHeaders) {
  auto jpeg = probe_image(jpeg_header(640, 480));
  ASSERT_TRUE(jpeg.ok()) << jpeg.status().to_string();
  EXPECT_EQ(jpeg->width, 640);
  EXPECT_EQ(jpeg->height, 480);
  EXPECT_EQ(jpeg->subsampling, "4:4:4");
  auto png = probe_image(png_header(640, 480, 16, 6, 1));
  ASSERT_TRUE(png.ok()) << png.status().to_string();
  EXPECT_EQ(png->components, 4);
  EXPECT_EQ(png->bit_depth, 16);
  EXPECT_TRUE(png->progressive);
}

TEST(ProbeImage, PixelLimitRefusesHugeHeaders) {
  EXPECT_EQ(probe_image(jpeg_header(60000, 60000)).status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(probe_image(png_header(60000, 60000)).status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(probe_image(png_header(100, 100), 9999).status().code(),
            StatusCode::kResourceExhausted);
  EXPECT_TRUE(probe_image(png_header(100, 100), 10000).ok());
}

TEST(ProbeImage, JpegZeroSizeIsDataLoss) {
  EXPECT_EQ(probe_image(jpeg_header(0, 10)).status().code(), kLoss);
  EXPECT_EQ(probe_image(jpeg_header(10, 0)).status().code(), kLoss);  // DNL
}

TEST(ProbeImage, JpegUnsupportedComponentCounts) {
  EXPECT_EQ(probe_image(jpeg_header(8, 8, 2)).status().code(), StatusCode::kUnimplemented);
  EXPECT_EQ(probe_image(jpeg_header(8, 8, 0)).status().code(), kLoss);
}

TEST(ProbeImage, JpegBadSamplingFactorsAreDataLoss) {
  std::string bytes = jpeg_header(8, 8, 3);
  bytes[bytes.size() - 2] = 0x05;  // H = 0 for the last component
  EXPECT_EQ(probe_image(bytes).status().code(), kLoss);
}

TEST(ProbeImage, JpegSegmentPastTheEndIsDataLoss) {
  std::string bytes = "\xFF\xD8\xFF\xE0";
  testing::append_be16(&bytes, 100);  // APP0 claims 98 bytes it does not have
  bytes += "JFIF";
  EXPECT_EQ(probe_image(bytes).status().code(), kLoss);
  bytes = "\xFF\xD8\xFF\xE0";
  testing::append_be16(&bytes, 1);  // shorter than its own length field
  EXPECT_EQ(probe_image(bytes + jpeg_header(8, 8).substr(2)).status().code(), kLoss);
}

TEST(ProbeImage, JpegMarkersBeforeTheFrameThatLibjpegSkips) {
  // Fill bytes, a stuffed zero, RST0, TEM and junk before a marker.
  const std::string bytes = std::string("\xFF\xD8\xFF\xFF\xFF\x00\xFF\xD0\xFF\x01junk", 14) +
                            jpeg_header(24, 16).substr(2);
  auto info = probe_image(bytes);
  ASSERT_TRUE(info.ok()) << info.status().to_string();
  EXPECT_EQ(info->width, 24);
}

TEST(ProbeImage, JpegStructuralErrorsBeforeTheFrame) {
  EXPECT_EQ(probe_image("\xFF\xD8\xFF\xD9").status().code(), kLoss);  // EOI
  EXPECT_EQ(probe_image("\xFF\xD8\xFF\xD8").status().code(), kLoss);  // second SOI
  EXPECT_EQ(probe_image(std::string("\xFF\xD8\xFF\xDA\x00\x02", 6)).status().code(), kLoss);
}

TEST(ProbeImage, JpegAdobeMarkerShorterThanLibjpegReadsIsIgnored) {
  std::string app14 = "\xFF\xEE";
  testing::append_be16(&app14, 2 + 11);
  app14 += std::string("Adobe\x00\x64\x00\x00\x00\x00", 11);
  auto info = probe_image("\xFF\xD8" + app14 + jpeg_header(8, 8).substr(2));
  ASSERT_TRUE(info.ok()) << info.status().to_string();
  EXPECT_EQ(info->adobe_transform, -1);
}

TEST(ProbeImage, PngHeaderDamage) {
  std::string bytes = png_header(32, 32);
  bytes[20] ^= 1;  // a height byte, without re-signing
  EXPECT_EQ(probe_image(bytes).status().code(), kLoss);
  EXPECT_EQ(probe_image(png_header(0, 32)).status().code(), kLoss);
  EXPECT_EQ(probe_image(png_header(0x80000000u, 1)).status().code(), kLoss);
  EXPECT_EQ(probe_image(png_header(32, 32, 8, 2, 2)).status().code(), kLoss);  // interlace
  bytes = png_header(32, 32);
  bytes[12] = 'i';  // first chunk not IHDR
  EXPECT_EQ(probe_image(bytes).status().code(), kLoss);
}

TEST(ProbeImage, PngBitDepthAndColourTypeCombinations) {
  const int depths[] = {1, 2, 3, 4, 8, 16};
  const int types[] = {0, 1, 2, 3, 4, 5, 6, 7};
  for (int type : types) {
    for (int depth : depths) {
      const bool valid = (type == 0 && depth != 3) || (type == 3 && depth != 3 && depth != 16) ||
                         ((type == 2 || type == 4 || type == 6) && (depth == 8 || depth == 16));
      EXPECT_EQ(probe_image(png_header(4, 4, depth, type)).ok(), valid)
          << "type " << type << " depth " << depth;
    }
  }
}

// Random damage to every test file: probing must answer (any answer) and
// never read out of bounds; the ASan build makes that a real check.
TEST(ProbeImage, SurvivesRandomDamage) {
  const uint32_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  for (const Expected& e : kFiles) {
    const std::string original = image_bytes(e.file);
    if (original.empty()) continue;
    for (int trial = 0; trial < 50; ++trial) {
      std::string bytes = original.substr(0, std::min<size_t>(original.size(), 512));
      for (int flips = 0; flips < 3; ++flips) {
        bytes[rng() % bytes.size()] = static_cast<char>(rng());
      }
      bytes.resize(rng() % (bytes.size() + 1));
      const auto info = probe_image(bytes);
      if (info.ok()) {
        EXPECT_GT(info->width, 0);
        EXPECT_GT(info->height, 0);
      }
    }
  }
}

}  // namespace
}  // namespace sluice
