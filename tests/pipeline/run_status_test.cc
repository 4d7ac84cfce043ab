// The status file `sluice top` reads, as bench and train write it: one
// definition of each field (docs/formats.md, "Run status"), replaced whole,
// at most twice a second, and a failed write that turns the writer off.
#include "pipeline/run_status.h"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/temp_dir.h"

namespace sluice {
namespace {

using json = nlohmann::json;

PipelineStats stats_of_a_run() {
  PipelineStats s;
  s.workers = 2;
  s.active_workers = 2;
  s.prefetch = 4;
  s.ready_batches = 1;
  s.bad_samples = 3;
  s.consumer_wait_seconds = 2.5;
  // 10 s on 2 workers: decode busy 16 s is 80 %, read 1 s is 5 %.
  s.stages = {{"read", 100, 1000, 1'000'000'000, 0},
              {"decode", 100, 0, 16'000'000'000, 0},
              {"batch", 10, 0, 500'000'000, 0},
              {"idle", 0, 0, 0, 3'000'000'000}};
  return s;
}

json read_json(const std::string& path) {
  std::ifstream f(path);
  std::stringstream text;
  text << f.rdbuf();
  return json::parse(text.str());
}

TEST(RunStatusTest, FieldsHaveOneDefinition) {
  RunStatus run;
  run.seconds = 10;
  run.images = 640;
  run.batches = 10;
  run.cpu_cores_busy = 1.5;
  json j = json::parse(run_status_json("bench", run, stats_of_a_run(), 64));
  EXPECT_EQ(j["format"], "sluice status 1");
  EXPECT_EQ(j["job"], "bench");
  EXPECT_DOUBLE_EQ(j["seconds"].get<double>(), 10);
  EXPECT_DOUBLE_EQ(j["images_per_second"].get<double>(), 64);
  EXPECT_EQ(j["images"], 640);
  EXPECT_EQ(j["batches"], 10);
  // The consumer's wait inside next() over the run's wall time.
  EXPECT_DOUBLE_EQ(j["consumer_wait_share"].get<double>(), 0.25);
  // Worker stages only, each as busy / (wall * workers).
  ASSERT_EQ(j["stages"].size(), 2u);
  EXPECT_DOUBLE_EQ(j["stages"]["decode"].get<double>(), 0.8);
  EXPECT_DOUBLE_EQ(j["stages"]["read"].get<double>(), 0.05);
  EXPECT_EQ(j["workers"], 2);
  EXPECT_EQ(j["active_workers"], 2);
  EXPECT_EQ(j["prefetch"], 4);
  EXPECT_EQ(j["ready_batches"], 1);
  EXPECT_EQ(j["bad_samples"], 3);
  EXPECT_DOUBLE_EQ(j["cpu_cores_busy"].get<double>(), 1.5);
  EXPECT_GT(j["rss_bytes"].get<uint64_t>(), 0u);  // this process's
  EXPECT_EQ(j["verdict"], bottleneck_verdict(verdict_input(stats_of_a_run(), 10)).text);
  EXPECT_NE(j["verdict"].get<std::string>().find("input-bound"), std::string::npos);
  EXPECT_TRUE(j["gpus"].is_array());
  EXPECT_TRUE(j["gpus"].empty());
  EXPECT_EQ(j["done"], false);
  EXPECT_GT(j["time"].get<double>(), 1.7e9);  // Unix seconds
  EXPECT_FALSE(j.contains("epoch"));
}

TEST(RunStatusTest, TrainingAndGpusAddTheirFields) {
  RunStatus run;
  run.seconds = 10;
  run.done = true;
  run.gpu_names = {"GPU 0: NVIDIA H200"};
  GpuSample g;
  g.utilization = 97;
  g.memory_used_bytes = 5;
  g.memory_total_bytes = 8;
  run.gpu_samples = {g};
  run.training = RunStatus::Training{2, 3, 70, 0.5, 0.75, 0.1};
  json j = json::parse(run_status_json("train", run, stats_of_a_run(), 0));
  EXPECT_EQ(j["job"], "train");
  EXPECT_EQ(j["done"], true);
  ASSERT_EQ(j["gpus"].size(), 1u);
  EXPECT_EQ(j["gpus"][0]["name"], "GPU 0: NVIDIA H200");
  EXPECT_DOUBLE_EQ(j["gpus"][0]["utilization"].get<double>(), 97);
  EXPECT_EQ(j["gpus"][0]["memory_used_bytes"], 5);
  EXPECT_EQ(j["gpus"][0]["memory_total_bytes"], 8);
  EXPECT_EQ(j["epoch"], 2);
  EXPECT_EQ(j["epochs"], 3);
  EXPECT_EQ(j["step"], 70);
  EXPECT_DOUBLE_EQ(j["loss"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(j["accuracy"].get<double>(), 0.75);
  EXPECT_DOUBLE_EQ(j["lr"].get<double>(), 0.1);
}

TEST(RunStatusTest, WriterThrottlesAndReplacesTheFileWhole) {
  TempDir dir;
  const std::string path = dir.path() + "/status.json";
  RunStatusWriter w(path, "bench");
  ASSERT_TRUE(w.enabled());
  EXPECT_TRUE(w.due(false));  // the first write is always due
  RunStatus run;
  run.seconds = 4;
  run.images = 400;
  ASSERT_TRUE(w.write(run, stats_of_a_run()).ok());
  json j = read_json(path);
  EXPECT_DOUBLE_EQ(j["images_per_second"].get<double>(), 100);  // the run so far
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  EXPECT_FALSE(w.due(false));  // not again within half a second...
  EXPECT_TRUE(w.due(true));    // ...except at the end
  run.seconds = 8;
  run.images = 1000;
  run.done = true;
  ASSERT_TRUE(w.write(run, stats_of_a_run()).ok());
  j = read_json(path);
  EXPECT_DOUBLE_EQ(j["images_per_second"].get<double>(), 125);  // at the end: the whole run's
  EXPECT_EQ(j["done"], true);
}

TEST(RunStatusTest, NoPathWritesNothing) {
  RunStatusWriter w("", "train");
  EXPECT_FALSE(w.enabled());
  EXPECT_FALSE(w.due(true));
  EXPECT_TRUE(w.write(RunStatus{}, PipelineStats{}).ok());
}

TEST(RunStatusTest, AFailedWriteNamesTheFileAndTurnsTheWriterOff) {
  TempDir dir;
  const std::string path = dir.path() + "/no-such-folder/status.json";
  RunStatusWriter w(path, "train");
  Status s = w.write(RunStatus{}, PipelineStats{});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find(path + ".tmp"), std::string::npos) << s.to_string();
  EXPECT_FALSE(w.enabled());
  EXPECT_FALSE(w.due(true));
  EXPECT_TRUE(w.write(RunStatus{}, PipelineStats{}).ok());
}

}  // namespace
}  // namespace sluice
