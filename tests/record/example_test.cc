#include "sluice/example.h"

#include <gtest/gtest.h>

#include <cstring>
#include <limits>

namespace sluice {
namespace {

Example sample() {
  Example e;
  e.features["image/encoded"] = Feature::of_bytes({std::string("\xff\xd8\x00\xff", 4)});
  e.features["image/class/label"] =
      Feature::of_int64s({3, -1, std::numeric_limits<int64_t>::min()});
  e.features["score"] = Feature::of_floats({0.5f, -2.25f, std::numeric_limits<float>::infinity()});
  e.features["empty_bytes"] = Feature::of_bytes({});
  e.features["none"] = Feature{};
  return e;
}

TEST(ExampleTest, RoundTrip) {
  Example e = sample();
  Example back;
  ASSERT_TRUE(decode_example(encode_example(e), &back).ok());
  EXPECT_EQ(back, e);
}

// NaN and the infinities survive a round trip bit for bit (found by
// example_fuzz, whose own check compared them with ==).
TEST(ExampleTest, NonFiniteFloatsRoundTripBitForBit) {
  Example e;
  const uint32_t bits[] = {0xffffffffu, 0x7fc00000u, 0x7f800000u, 0xff800000u, 0x80000000u};
  std::vector<float> values;
  for (uint32_t b : bits) {
    float f;
    std::memcpy(&f, &b, 4);
    values.push_back(f);
  }
  e.features["x"] = Feature::of_floats(values);
  Example back;
  ASSERT_TRUE(decode_example(encode_example(e), &back).ok());
  const auto& got = back.features["x"].float_list;
  ASSERT_EQ(got.size(), std::size(bits));
  for (size_t i = 0; i < got.size(); ++i) {
    uint32_t b;
    std::memcpy(&b, &got[i], 4);
    EXPECT_EQ(b, bits[i]) << i;
  }
}

TEST(ExampleTest, EncodingIsDeterministicAndKeyOrdered) {
  std::string a = encode_example(sample());
  EXPECT_EQ(a, encode_example(sample()));
  // Keys appear in sorted order in the wire bytes.
  EXPECT_LT(a.find("empty_bytes"), a.find("image/class/label"));
  EXPECT_LT(a.find("image/encoded"), a.find("score"));
}

TEST(ExampleTest, WireBytesOfAKnownExample) {
  // Example{features{feature{key:"a" value{int64_list{value:[1]}}}}}, as
  // TensorFlow serialises it (packed int64 list).
  Example e;
  e.features["a"] = Feature::of_int64s({1});
  std::string expected(
      "\x0a\x0c\x0a\x0a\x0a\x01"
      "a"
      "\x12\x05\x1a\x03\x0a\x01\x01",
      14);
  EXPECT_EQ(encode_example(e), expected);
}

TEST(ExampleTest, NotAnExampleIsDataLoss) {
  Example e;
  EXPECT_EQ(decode_example("\xff\xff\xff", &e).code(), StatusCode::kDataLoss);
  // A valid protobuf with a field Example does not have (field 2).
  EXPECT_EQ(decode_example(std::string("\x12\x01x", 3), &e).code(), StatusCode::kDataLoss);
  EXPECT_TRUE(decode_example("", &e).ok());  // the empty Example
  EXPECT_TRUE(e.features.empty());
}

TEST(ExampleTest, ClassifiesPayloads) {
  EXPECT_EQ(classify_payload(encode_example(sample())), PayloadKind::kExample);
  Event ev;
  ev.wall_time = 1.5;
  ev.file_version = "brain.Event:2";
  EXPECT_EQ(classify_payload(encode_event(ev)), PayloadKind::kEvent);
  EXPECT_EQ(classify_payload("\xff\xff"), PayloadKind::kOther);
}

TEST(EventTest, ScalarRoundTrip) {
  Event ev;
  ev.wall_time = 1234.5;
  ev.step = 42;
  ev.values.push_back({"loss", "simple_value", 0.25f, "scalars"});
  Event back;
  ASSERT_TRUE(decode_event(encode_event(ev), &back).ok());
  EXPECT_EQ(back.kind, "summary");
  EXPECT_EQ(back.step, 42);
  EXPECT_DOUBLE_EQ(back.wall_time, 1234.5);
  ASSERT_EQ(back.values.size(), 1u);
  EXPECT_EQ(back.values[0].tag, "loss");
  EXPECT_EQ(back.values[0].kind, "simple_value");
  EXPECT_EQ(back.values[0].simple_value, 0.25f);
  EXPECT_EQ(back.values[0].plugin_name, "scalars");
}

}  // namespace
}  // namespace sluice

namespace sluice {
namespace {

TEST(FindFeaturesTest, AgreesWithTheFullDecode) {
  Example e;
  e.features["image/encoded"] = Feature::of_bytes({"jpegbytes", "second"});
  e.features["image/class/label"] = Feature::of_int64s({-7, 3});
  e.features["score"] = Feature::of_floats({2.5f});
  e.features["empty"] = Feature{};
  std::string data = encode_example(e);
  const std::string_view keys[] = {"image/encoded", "image/class/label", "score", "empty",
                                   "missing"};
  FeatureView v[5];
  ASSERT_TRUE(find_features(data, keys, 5, v).ok());
  EXPECT_TRUE(v[0].found);
  EXPECT_EQ(v[0].kind, Feature::Kind::kBytes);
  EXPECT_EQ(v[0].count, 2u);
  EXPECT_EQ(v[0].first_bytes, "jpegbytes");
  EXPECT_GE(v[0].first_bytes.data(), data.data());  // a view into the record
  EXPECT_EQ(v[1].first_int64, -7);
  EXPECT_EQ(v[1].count, 2u);
  EXPECT_EQ(v[2].first_float, 2.5f);
  EXPECT_TRUE(v[3].found);
  EXPECT_EQ(v[3].kind, Feature::Kind::kNone);
  EXPECT_FALSE(v[4].found);
}

TEST(FindFeaturesTest, LastMapEntryWinsAndDamageIsDataLoss) {
  Example a, b;
  a.features["k"] = Feature::of_int64s({1});
  b.features["k"] = Feature::of_int64s({2});
  std::string both = encode_example(a) + encode_example(b);  // concatenation = merge
  const std::string_view key = "k";
  FeatureView v;
  ASSERT_TRUE(find_features(both, &key, 1, &v).ok());
  EXPECT_EQ(v.first_int64, 2);
  Example decoded;
  ASSERT_TRUE(decode_example(both, &decoded).ok());
  EXPECT_EQ(decoded.features["k"].int64_list[0], 2);
  std::string cut = encode_example(a);
  cut.pop_back();
  EXPECT_EQ(find_features(cut, &key, 1, &v).code(), StatusCode::kDataLoss);
  EXPECT_EQ(find_features("\xff\xff\xff", &key, 1, &v).code(), StatusCode::kDataLoss);
}

// An Example of 16 million features (a 64 MB record; a billion would be
// 4 GB, over any record limit): the hot-path scan walks it without
// allocating anything and finds nothing.
TEST(FindFeaturesTest, SixteenMillionFeaturesCostNoMemory) {
  const size_t n = size_t{16} << 20;
  std::string features;
  features.reserve(4 * n);
  for (size_t i = 0; i < n; ++i) features.append("\x0a\x02\x0a\x00", 4);  // key "", no value
  std::string example = "\x0a";
  uint64_t len = features.size();
  for (; len >= 0x80; len >>= 7) example += static_cast<char>(0x80 | (len & 0x7f));
  example += static_cast<char>(len);
  example += features;
  features.clear();
  features.shrink_to_fit();
  const std::string_view keys[] = {"image/encoded", ""};
  FeatureView v[2];
  ASSERT_TRUE(find_features(example, keys, 2, v).ok());
  EXPECT_FALSE(v[0].found);
  EXPECT_TRUE(v[1].found);  // the empty key, with no value
  EXPECT_EQ(v[1].kind, Feature::Kind::kNone);
}

// Found by example_scan_fuzz (inputs kept in tests/data/fuzz/example/regress-*):
// bytes protobuf parses as an Example, which the scan rejected or read
// otherwise.
TEST(FindFeaturesTest, SkipsGroupsAndReadsTagsAsProtobufDoes) {
  Example a;
  a.features["k"] = Feature::of_int64s({7});
  const std::string plain = encode_example(a);
  const std::string_view key = "k";
  FeatureView v;
  Example decoded;
  // An unknown group (field 14: start tag 0x73, a varint field inside,
  // end tag 0x74) inside the map entry for "k": protobuf drops it, the
  // scan must skip it whole.
  const std::string feature("\x1a\x03\x0a\x01\x07", 5);  // int64_list {7}
  const std::string entry = std::string("\x0a\x01k\x73\x08\x05\x74\x12\x05", 9) + feature;
  const std::string features = std::string("\x0a") + static_cast<char>(entry.size()) + entry;
  const std::string group = std::string("\x0a") + static_cast<char>(features.size()) + features;
  ASSERT_TRUE(decode_example(group, &decoded).ok());
  ASSERT_EQ(decoded.features.count("k"), 1u);
  ASSERT_TRUE(find_features(group, &key, 1, &v).ok());
  EXPECT_EQ(v.first_int64, 7);
  // A group whose end tag names another field (15) is malformed.
  std::string mismatched = group;
  mismatched[mismatched.find('\x74')] = '\x7c';
  EXPECT_EQ(find_features(mismatched, &key, 1, &v).code(), StatusCode::kDataLoss);

  // The value twice in one map entry: protobuf merges the two Features
  // (the int64 lists append), while a second entry for the key replaces.
  const std::string twice = std::string("\x0a\x01k\x12\x05", 5) + feature +
                            std::string("\x12\x05\x1a\x03\x0a\x01\x09", 7);
  const std::string twice_features = std::string("\x0a") + static_cast<char>(twice.size()) + twice;
  const std::string merged =
      std::string("\x0a") + static_cast<char>(twice_features.size()) + twice_features;
  ASSERT_TRUE(decode_example(merged, &decoded).ok());
  ASSERT_EQ(decoded.features["k"].int64_list, (std::vector<int64_t>{7, 9}));
  ASSERT_TRUE(find_features(merged, &key, 1, &v).ok());
  EXPECT_EQ(v.count, 2u);
  EXPECT_EQ(v.first_int64, 7);

  // A list field of the wrong wire type (int64_list as a fixed32) is an
  // unknown field to protobuf: skipped, the Feature stays empty (the strict
  // decode refuses unknown fields, unless a later entry for the key
  // replaces that Feature, as here; the scan skips them either way).
  const std::string wrong_entry("\x0a\x01k\x12\x05\x1d\x03\x0a\x01\x01", 10);
  const std::string then =
      std::string("\x0a\x0a", 2) + wrong_entry + std::string("\x0a\x0e", 2) + entry;
  const std::string replaced = std::string("\x0a") + static_cast<char>(then.size()) + then;
  ASSERT_TRUE(decode_example(replaced, &decoded).ok());
  ASSERT_TRUE(find_features(replaced, &key, 1, &v).ok());
  EXPECT_EQ(v.first_int64, 7);
  const std::string alone = std::string("\x0a\x0c\x0a\x0a", 4) + wrong_entry;
  ASSERT_TRUE(find_features(alone, &key, 1, &v).ok());
  EXPECT_TRUE(v.found);
  EXPECT_EQ(v.kind, Feature::Kind::kNone);

  // A 5-byte tag whose varint has bits above 32: protobuf keeps the low 32
  // (here field 1 of Example, wire type 2) and so must the scan.
  std::string wide = plain;
  wide.replace(0, 1, std::string("\x8a\x80\x80\x80\x70", 5));
  ASSERT_TRUE(decode_example(wide, &decoded).ok());
  ASSERT_TRUE(find_features(wide, &key, 1, &v).ok());
  EXPECT_EQ(v.first_int64, 7);
  // Six bytes is no tag, for both.
  std::string six = plain;
  six.replace(0, 1, std::string("\x8a\x80\x80\x80\x80\x00", 6));
  EXPECT_FALSE(decode_example(six, &decoded).ok());
  EXPECT_EQ(find_features(six, &key, 1, &v).code(), StatusCode::kDataLoss);
}

}  // namespace
}  // namespace sluice
