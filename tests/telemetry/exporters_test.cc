#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sluice/example.h"
#include "sluice/record.h"
#include "sluice/telemetry.h"
#include "tests/temp_dir.h"

namespace sluice {
namespace {

std::vector<std::string> read_lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

TEST(JsonLinesWriter, LinesParseBack) {
  TempDir dir;
  std::string path = dir.path() + "/metrics.jsonl";
  auto w = JsonLinesWriter::create(path);
  ASSERT_TRUE(w.ok()) << w.status().to_string();
  ASSERT_TRUE((*w)->write(1, 1700000000.5, {{"images_per_s", 1234.5}, {"rss_mb", 812}}).ok());
  // Visible before close: each write reaches the file.
  EXPECT_EQ(read_lines(path).size(), 1u);
  ASSERT_TRUE((*w)->write(2, 1700000001.25, {{"images_per_s", 0.1}}).ok());
  ASSERT_TRUE((*w)->close().ok());

  std::vector<std::string> lines = read_lines(path);
  ASSERT_EQ(lines.size(), 2u);
  nlohmann::json a = nlohmann::json::parse(lines[0]);
  EXPECT_EQ(a["step"], 1);
  EXPECT_DOUBLE_EQ(a["time"].get<double>(), 1700000000.5);
  EXPECT_DOUBLE_EQ(a["images_per_s"].get<double>(), 1234.5);
  EXPECT_DOUBLE_EQ(a["rss_mb"].get<double>(), 812);
  EXPECT_EQ(a.size(), 4u);
  EXPECT_EQ(lines[0].rfind("{\"step\":1,\"time\":", 0), 0u) << lines[0];
  nlohmann::json b = nlohmann::json::parse(lines[1]);
  EXPECT_EQ(b["step"], 2);
  EXPECT_DOUBLE_EQ(b["images_per_s"].get<double>(), 0.1);  // round-trips exactly
}

// A resumed training run appends to its train.jsonl instead of losing the
// lines of the run before.
TEST(JsonLinesWriter, AppendKeepsEarlierLines) {
  TempDir dir;
  std::string path = dir.path() + "/train.jsonl";
  for (int64_t step : {1, 2}) {
    auto w = JsonLinesWriter::create(path, /*append=*/true);
    ASSERT_TRUE(w.ok()) << w.status().to_string();
    ASSERT_TRUE((*w)->write(step, 1700000000.0 + step, {{"train/loss", 0.5}}).ok());
  }
  std::vector<std::string> lines = read_lines(path);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(nlohmann::json::parse(lines[0])["step"], 1);
  EXPECT_EQ(nlohmann::json::parse(lines[1])["step"], 2);
  auto truncating = JsonLinesWriter::create(path);
  ASSERT_TRUE(truncating.ok());
  EXPECT_TRUE(read_lines(path).empty());
}

TEST(JsonLinesWriter, RejectsReservedNamesAndWritesAfterClose) {
  TempDir dir;
  auto w = JsonLinesWriter::create(dir.path() + "/m.jsonl");
  ASSERT_TRUE(w.ok());
  EXPECT_EQ((*w)->write(1, 0, {{"step", 3}}).code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE((*w)->close().ok());
  EXPECT_TRUE((*w)->close().ok());
  EXPECT_EQ((*w)->write(1, 0, {}).code(), StatusCode::kFailedPrecondition);
}

TEST(JsonLinesWriter, UnwritablePathNamesTheFile) {
  TempDir dir;
  std::string path = dir.path() + "/missing/m.jsonl";
  auto w = JsonLinesWriter::create(path);
  ASSERT_FALSE(w.ok());
  EXPECT_NE(w.status().message().find(path), std::string_view::npos) << w.status().to_string();
}

std::vector<Event> read_events(const std::string& path) {
  std::vector<Event> events;
  auto reader = RecordReader::open(path);
  EXPECT_TRUE(reader.ok()) << reader.status().to_string();
  if (!reader.ok()) return events;
  std::string_view record;
  Status s;
  while ((s = (*reader)->next(&record)).ok()) {
    Event e;
    EXPECT_TRUE(decode_event(record, &e).ok());
    events.push_back(e);
  }
  EXPECT_EQ(s.code(), StatusCode::kOutOfRange) << s.to_string();
  return events;
}

TEST(TensorBoardWriter, EventsReadBackWhileOpenAndAfterClose) {
  TempDir dir;
  std::string logdir = dir.path() + "/logs/run1";  // created, parents too
  auto w = TensorBoardWriter::create(logdir);
  ASSERT_TRUE(w.ok()) << w.status().to_string();
  std::string name = std::filesystem::path((*w)->path()).filename().string();
  EXPECT_EQ(std::filesystem::path((*w)->path()).parent_path(), std::filesystem::path(logdir));
  EXPECT_EQ(name.rfind("events.out.tfevents.", 0), 0u) << name;
  EXPECT_TRUE(name.ends_with(".sluice")) << name;

  ASSERT_TRUE((*w)->add_scalar("throughput/images_per_s", 1234.5f, 10, 1700000000.0).ok());
  ASSERT_TRUE((*w)->add_scalar("loss", 0.25f, 11, 1700000001.0).ok());
  ASSERT_TRUE((*w)->flush().ok());

  // Still open: what TensorBoard sees while training runs.
  std::vector<Event> events = read_events((*w)->path());
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0].kind, "file_version");
  EXPECT_EQ(events[0].file_version, "brain.Event:2");
  EXPECT_GT(events[0].wall_time, 1.5e9);  // a real Unix time, not steady_clock
  EXPECT_EQ(events[1].kind, "summary");
  EXPECT_EQ(events[1].step, 10);
  EXPECT_DOUBLE_EQ(events[1].wall_time, 1700000000.0);
  ASSERT_EQ(events[1].values.size(), 1u);
  EXPECT_EQ(events[1].values[0].tag, "throughput/images_per_s");
  EXPECT_EQ(events[1].values[0].kind, "simple_value");
  EXPECT_EQ(events[1].values[0].simple_value, 1234.5f);
  EXPECT_EQ(events[1].values[0].plugin_name, "scalars");
  ASSERT_EQ(events[2].values.size(), 1u);
  EXPECT_EQ(events[2].step, 11);
  EXPECT_EQ(events[2].values[0].tag, "loss");
  EXPECT_EQ(events[2].values[0].simple_value, 0.25f);

  ASSERT_TRUE((*w)->add_scalar("loss", 0.125f, 12, 1700000002.0).ok());
  std::string path = (*w)->path();
  ASSERT_TRUE((*w)->close().ok());
  EXPECT_EQ((*w)->add_scalar("loss", 1, 13, 0).code(), StatusCode::kFailedPrecondition);
  events = read_events(path);
  ASSERT_EQ(events.size(), 4u);
  EXPECT_EQ(events[3].values[0].simple_value, 0.125f);
}

TEST(TensorBoardWriter, TwoWritersInOneFolderDoNotCollide) {
  TempDir dir;
  auto a = TensorBoardWriter::create(dir.path());
  auto b = TensorBoardWriter::create(dir.path());
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE((*a)->path(), (*b)->path());
  ASSERT_TRUE((*a)->add_scalar("x", 1, 1, 1).ok());
  ASSERT_TRUE((*a)->close().ok());
  ASSERT_TRUE((*b)->close().ok());
  EXPECT_EQ(read_events((*a)->path()).size(), 2u);
  EXPECT_EQ(read_events((*b)->path()).size(), 1u);
}

TEST(TensorBoardWriter, EmptyTagIsRefused) {
  TempDir dir;
  auto w = TensorBoardWriter::create(dir.path());
  ASSERT_TRUE(w.ok());
  EXPECT_EQ((*w)->add_scalar("", 1, 1, 1).code(), StatusCode::kInvalidArgument);
}

TEST(TensorBoardWriter, LogdirThatIsAFileIsAnError) {
  TempDir dir;
  std::string file = dir.path() + "/plain";
  std::ofstream(file) << "x";
  auto w = TensorBoardWriter::create(file + "/sub");
  ASSERT_FALSE(w.ok());
  EXPECT_NE(w.status().message().find(file), std::string_view::npos) << w.status().to_string();
}

}  // namespace
}  // namespace sluice
