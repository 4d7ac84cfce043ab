// Reads files written by TensorFlow, TFX/Beam, PyTorch and DALI (see
// tests/data/PROVENANCE.md) and checks what that file says they hold.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "sluice/example.h"
#include "tests/record/record_test_util.h"
#include "tests/temp_dir.h"

namespace sluice {
namespace {

struct Scan {
  std::vector<std::string> records;
  std::vector<uint64_t> offsets;
  Status end;
  Compression compression = Compression::kAuto;
};

Scan scan(const std::string& rel) {
  Scan s;
  auto r = RecordReader::open(test_data(rel));
  if (!r.ok()) {
    s.end = r.status();
    return s;
  }
  s.compression = (*r)->compression();
  std::string_view rec;
  for (;;) {
    Status st = (*r)->next(&rec);
    if (!st.ok()) {
      s.end = st;
      return s;
    }
    s.records.emplace_back(rec);
    s.offsets.push_back((*r)->record_offset());
  }
}

Example example(const std::string& bytes) {
  Example e;
  Status s = decode_example(bytes, &e);
  EXPECT_TRUE(s.ok()) << s.to_string();
  return e;
}

std::set<std::string> keys(const Example& e) {
  std::set<std::string> k;
  for (const auto& [key, f] : e.features) k.insert(key);
  return k;
}

TEST(CompatTest, DeeplabPascalVoc) {
  Scan s = scan("tfrecord/tensorflow-models/deeplab_pascal_voc_seg_val-00000-of-00001.tfrecord");
  EXPECT_EQ(s.end.code(), StatusCode::kOutOfRange);
  ASSERT_EQ(s.records.size(), 3u);
  EXPECT_EQ(s.records[0].size(), 402447u);
  EXPECT_EQ(s.records[1].size(), 368172u);
  EXPECT_EQ(s.records[2].size(), 367007u);
  const char* names[] = {"2007_000033", "2007_000042", "2007_000061"};
  for (int i = 0; i < 3; ++i) {
    Example e = example(s.records[i]);
    EXPECT_EQ(keys(e), (std::set<std::string>{"image/channels", "image/encoded", "image/filename",
                                              "image/format", "image/height",
                                              "image/segmentation/class/encoded",
                                              "image/segmentation/class/format", "image/width"}));
    EXPECT_EQ(e.features["image/filename"].bytes_list, std::vector<std::string>{names[i]});
    EXPECT_EQ(e.features["image/format"].bytes_list, std::vector<std::string>{"jpeg"});
    EXPECT_EQ(e.features["image/width"].int64_list, std::vector<int64_t>{500});
    EXPECT_EQ(e.features["image/channels"].int64_list, std::vector<int64_t>{3});
    const std::string& jpeg = e.features["image/encoded"].bytes_list.at(0);
    EXPECT_EQ(jpeg.substr(0, 2), "\xff\xd8");
  }
  EXPECT_EQ(example(s.records[0]).features["image/height"].int64_list, std::vector<int64_t>{366});
  EXPECT_EQ(example(s.records[0]).features["image/encoded"].bytes_list[0].size(), 218323u);
}

TEST(CompatTest, TfrecordLiteImagesTutorialSchema) {
  Scan s = scan("tfrecord/tfrecord_lite/images.tfrecord");
  ASSERT_EQ(s.records.size(), 2u);
  Example a = example(s.records[0]);
  EXPECT_EQ(keys(a), (std::set<std::string>{"depth", "height", "image_raw", "label", "width"}));
  EXPECT_EQ(a.features["height"].int64_list, std::vector<int64_t>{213});
  EXPECT_EQ(a.features["width"].int64_list, std::vector<int64_t>{320});
  EXPECT_EQ(a.features["label"].int64_list, std::vector<int64_t>{0});
  EXPECT_EQ(a.features["depth"].int64_list, std::vector<int64_t>{3});
  EXPECT_EQ(a.features["image_raw"].bytes_list.at(0).size(), 17858u);
  Example b = example(s.records[1]);
  EXPECT_EQ(b.features["label"].int64_list, std::vector<int64_t>{1});
  EXPECT_EQ(b.features["depth"].int64_list, std::vector<int64_t>{1});
}

TEST(CompatTest, TfrecordLiteTutorialSerializeExample) {
  Scan s = scan("tfrecord/tfrecord_lite/test.tfrecord");
  ASSERT_EQ(s.records.size(), 42u);
  const char* strings[] = {"cat", "dog", "chicken", "horse", "goat"};
  for (const auto& r : s.records) {
    Example e = example(r);
    ASSERT_EQ(keys(e), (std::set<std::string>{"feature0", "feature1", "feature2", "feature3"}));
    int64_t f0 = e.features["feature0"].int64_list.at(0);
    int64_t f1 = e.features["feature1"].int64_list.at(0);
    EXPECT_TRUE(f0 == 0 || f0 == 1);
    ASSERT_GE(f1, 0);
    ASSERT_LE(f1, 4);
    EXPECT_EQ(e.features["feature2"].bytes_list.at(0), strings[f1]);
    EXPECT_EQ(e.features["feature3"].kind, Feature::Kind::kFloat);
  }
  EXPECT_EQ(example(s.records[0]).features["feature2"].bytes_list[0], "chicken");
}

TEST(CompatTest, PytorchDataExampleExactValues) {
  Scan s = scan("tfrecord/pytorch-data/example.tfrecord");
  ASSERT_EQ(s.records.size(), 4u);
  for (int i = 0; i < 4; ++i) {
    Example e = example(s.records[i]);
    std::vector<float> xf;
    std::vector<int64_t> xi;
    for (int j = 0; j < 10; ++j) {
      xf.push_back(static_cast<float>(10 * i + j));
      xi.push_back(10 * (10 * i + j));
    }
    EXPECT_EQ(e.features["x_float"].float_list, xf);
    EXPECT_EQ(e.features["x_int"].int64_list, xi);
    EXPECT_EQ(e.features["x_byte"].bytes_list, std::vector<std::string>{"test str"});
  }
}

TEST(CompatTest, PytorchDataSequenceExample) {
  Scan s = scan("tfrecord/pytorch-data/sequence_example.tfrecord");
  ASSERT_EQ(s.records.size(), 4u);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(classify_payload(s.records[i]), PayloadKind::kSequenceExample);
    SequenceExample se;
    ASSERT_TRUE(decode_sequence_example(s.records[i], &se).ok());
    EXPECT_EQ(se.context.size(), 3u);
    EXPECT_EQ(se.context["x_byte"].bytes_list, std::vector<std::string>{"test str"});
    for (const char* k : {"x_float_seq", "x_int_seq", "x_byte_seq"}) {
      EXPECT_EQ(se.feature_lists[k].size(), static_cast<size_t>(2 * i + 3)) << k;
    }
  }
}

TEST(CompatTest, NegativeInt64Varints) {
  Scan s = scan("tfrecord/jupyterlab_tfrecord_viewer/sample_record.record");
  ASSERT_EQ(s.records.size(), 17u);
  for (int i = 0; i < 17; ++i) {
    Example e = example(s.records[i]);
    EXPECT_EQ(e.features["width"].int64_list, std::vector<int64_t>{-4 + 2 * i});
    EXPECT_EQ(e.features["height"].int64_list, std::vector<int64_t>{3 + i});
  }
}

TEST(CompatTest, LingvoPayloadIsNotAnExample) {
  Scan s = scan("tfrecord/lingvo/en_fr.tfrecord");
  ASSERT_EQ(s.records.size(), 2u);
  EXPECT_EQ(s.records[0].size(), 56u);
  EXPECT_EQ(s.records[1].size(), 52u);
  EXPECT_NE(s.records[0].find("I love paragliding!"), std::string::npos);
  EXPECT_EQ(classify_payload(s.records[0]), PayloadKind::kOther);
  Example e;
  EXPECT_EQ(decode_example(s.records[0], &e).code(), StatusCode::kDataLoss);
}

TEST(CompatTest, TfxBeamGzipPenguins) {
  Scan s = scan("tfrecord/tfx/penguin_Split-eval_data_tfrecord-00000-of-00001.gz");
  EXPECT_EQ(s.compression, Compression::kGzip);
  EXPECT_EQ(s.end.code(), StatusCode::kOutOfRange) << s.end.to_string();
  ASSERT_EQ(s.records.size(), 100u);
  EXPECT_EQ(s.offsets.back() + 136 + 16, 15200u);
  for (const auto& r : s.records) {
    EXPECT_EQ(r.size(), 136u);
    Example e = example(r);
    EXPECT_EQ(keys(e), (std::set<std::string>{"body_mass_g", "culmen_depth_mm", "culmen_length_mm",
                                              "flipper_length_mm", "species"}));
  }
  EXPECT_EQ(example(s.records[0]).features["species"].int64_list, std::vector<int64_t>{0});
}

TEST(CompatTest, GzipWithFileNameHeader) {
  Scan s = scan("tfrecord/tfx/tfjs_next_page_prediction_data.tfrecord.gz");
  EXPECT_EQ(s.compression, Compression::kGzip);
  ASSERT_EQ(s.records.size(), 100u);
  Example e = example(s.records[0]);
  EXPECT_EQ(keys(e), (std::set<std::string>{"cur_page", "label", "session_index"}));
  EXPECT_EQ(e.features["cur_page"].bytes_list, std::vector<std::string>{"page2"});
  EXPECT_EQ(e.features["label"].bytes_list, std::vector<std::string>{"page3"});
}

TEST(CompatTest, GzipSequenceExamplesWithEmptyFeatures) {
  Scan s = scan("tfrecord/tfx/tfrecord_sequence_Split-eval_data_tfrecord_eval.gz");
  ASSERT_EQ(s.records.size(), 4500u);
  EXPECT_EQ(s.offsets.back() + s.records.back().size() + 16, 340200u);
  size_t empty = 0;
  for (const auto& r : s.records) {
    SequenceExample se;
    ASSERT_TRUE(decode_sequence_example(r, &se).ok());
    EXPECT_EQ(se.feature_lists["s"].size(), 2u);
    empty += se.context["f"].kind == Feature::Kind::kNone;
  }
  EXPECT_GT(empty, 0u);
}

TEST(CompatTest, CrlfMangledPetsRecord) {
  auto r = RecordReader::open(test_data("tfrecord/corrupt/pets_examples.crlf-mangled.record"));
  ASSERT_TRUE(r.ok());
  std::string_view rec;
  Status a = (*r)->next(&rec);
  EXPECT_EQ(a.code(), StatusCode::kDataLoss);
  EXPECT_NE(a.message().find("offset 0: data CRC mismatch (18430 data bytes)"),
            std::string_view::npos)
      << a.message();
  Status b = (*r)->next(&rec);
  EXPECT_EQ(b.code(), StatusCode::kDataLoss);
  EXPECT_NE(b.message().find("offset 18446: length CRC mismatch"), std::string_view::npos)
      << b.message();
}

TEST(CompatTest, DaliIndexFiles) {
  auto a = read_index(test_data("tfrecord/dali_idx/tfrecord_train.idx"));
  ASSERT_TRUE(a.ok()) << a.status().to_string();
  ASSERT_EQ(a->size(), 47u);
  EXPECT_EQ(a->front(), (IndexEntry{0, 171504}));
  EXPECT_EQ(a->back().offset + a->back().size, 12078679u);
  auto b = read_index(test_data("tfrecord/dali_idx/small_coco_index.idx"));
  ASSERT_TRUE(b.ok());
  ASSERT_EQ(b->size(), 64u);
  EXPECT_EQ(b->back(), (IndexEntry{3397594, 96136}));
  for (size_t i = 1; i < b->size(); ++i) {
    EXPECT_EQ((*b)[i].offset, (*b)[i - 1].offset + (*b)[i - 1].size);  // contiguous
  }
}

TEST(CompatTest, OurIndexOfTheirFileMatchesTheirConvention) {
  // tfrecord2idx writes offset and framed size; build_index must agree with
  // the framing the reader sees.
  auto idx = build_index(test_data("tfrecord/tfrecord_lite/images.tfrecord"));
  ASSERT_TRUE(idx.ok());
  EXPECT_EQ(*idx, (std::vector<IndexEntry>{{0, 17956 + 16}, {17956 + 16, 15570 + 16}}));
}

struct EventFile {
  const char* path;
  size_t records;
  std::map<std::string, size_t> kinds;
  int64_t max_step;
};

TEST(CompatTest, TensorBoardEventFiles) {
  std::vector<EventFile> files = {
      {"events/lingvo/events.out.tfevents.test",
       361,
       {{"file_version", 1}, {"summary", 360}},
       185200},
      {"events/tensorboard-profile/end_to_end.tfevents",
       25,
       {{"file_version", 1}, {"summary", 24}},
       0},
      {"events/tensorboard-reducer-pytorch/events.out.tfevents.1622543341.janoshs-mbp.lan.86862.0",
       101,
       {{"file_version", 1}, {"summary", 100}},
       495},
      {"events/tfx-estimator/events.out.tfevents.1646034739.jiyongjung.c.googlers.com",
       28,
       {{"file_version", 1},
        {"graph_def", 2},
        {"meta_graph_def", 2},
        {"session_log", 4},
        {"summary", 19}},
       1000},
      {"events/wandb/events.out.tfevents.1585769947.cvp",
       105,
       {{"file_version", 1}, {"graph_def", 1}, {"meta_graph_def", 1}, {"summary", 102}},
       16},
  };
  for (const EventFile& f : files) {
    Scan s = scan(f.path);
    EXPECT_EQ(s.end.code(), StatusCode::kOutOfRange) << f.path;
    ASSERT_EQ(s.records.size(), f.records) << f.path;
    std::map<std::string, size_t> kinds;
    int64_t max_step = 0;
    for (const auto& r : s.records) {
      Event ev;
      ASSERT_TRUE(decode_event(r, &ev).ok()) << f.path;
      kinds[ev.kind]++;
      max_step = std::max(max_step, ev.step);
    }
    EXPECT_EQ(kinds, f.kinds) << f.path;
    EXPECT_EQ(max_step, f.max_step) << f.path;
    Event first;
    ASSERT_TRUE(decode_event(s.records[0], &first).ok());
    EXPECT_EQ(first.file_version, "brain.Event:2") << f.path;
  }
}

TEST(CompatTest, EventTagsAndValueKinds) {
  Scan s = scan(
      "events/tensorboard-reducer-pytorch/"
      "events.out.tfevents.1622543341.janoshs-mbp.lan.86862.0");
  ASSERT_EQ(s.records.size(), 101u);
  for (size_t i = 1; i < s.records.size(); ++i) {
    Event ev;
    ASSERT_TRUE(decode_event(s.records[i], &ev).ok());
    ASSERT_EQ(ev.values.size(), 1u);
    EXPECT_EQ(ev.values[0].tag, "strict/foo");
    EXPECT_EQ(ev.values[0].kind, "simple_value");
  }
  Scan t = scan("events/tfx-estimator/events.out.tfevents.1646034739.jiyongjung.c.googlers.com");
  size_t histos = 0;
  for (const auto& r : t.records) {
    Event ev;
    ASSERT_TRUE(decode_event(r, &ev).ok());
    for (const auto& v : ev.values) histos += v.kind == "histo";
  }
  EXPECT_EQ(histos, 60u);  // 6 activation tags x 10 (PROVENANCE.md)
}

TEST(CompatTest, WhatWeWriteTheirReaderPathReads) {
  // Our writer's file read back through the same reader that read theirs,
  // and byte-identical to framing them by hand (TensorFlow's format).
  TempDir dir;
  Scan theirs = scan("tfrecord/pytorch-data/example.tfrecord");
  std::string p = write_records(dir.path() + "/ours.tfrecord", theirs.records);
  EXPECT_EQ(slurp(p), slurp(test_data("tfrecord/pytorch-data/example.tfrecord")));
}

}  // namespace
}  // namespace sluice
