// The read-ahead of remote shards (pipeline/read_ahead.h) with a ReadSpan
// that stands in for RecordFile::read_span: what a failed span hands the
// workers, and the budget across restarts while fetches are in flight.
#include "pipeline/read_ahead.h"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <numeric>
#include <thread>

namespace sluice::detail {
namespace {

using namespace std::chrono_literals;

// Counts reads, can hold the reads of record 0 at a gate, and fails a span
// that covers `bad`.
struct Reads {
  std::mutex mu;
  std::condition_variable cv;
  int calls = 0;
  bool gate_open = true;
  int64_t bad = -1;

  Status read(size_t index, size_t count, std::vector<std::string>* out) {
    std::unique_lock<std::mutex> lock(mu);
    ++calls;
    cv.notify_all();
    if (index == 0) cv.wait(lock, [&] { return gate_open; });
    if (bad >= 0 && static_cast<size_t>(bad) >= index && static_cast<size_t>(bad) < index + count)
      return data_loss_error("record " + std::to_string(bad) + " is damaged");
    for (size_t i = index; i < index + count; ++i) out->push_back("r" + std::to_string(i));
    return Status();
  }
  void wait_calls(int n) {
    std::unique_lock<std::mutex> lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, 10s, [&] { return calls >= n; })) << calls << " of " << n;
  }
  void open_gate() {
    std::lock_guard<std::mutex> lock(mu);
    gate_open = true;
    cv.notify_all();
  }
};

std::shared_ptr<const std::vector<uint32_t>> in_order(uint32_t n) {
  auto plan = std::make_shared<std::vector<uint32_t>>(n);
  std::iota(plan->begin(), plan->end(), 0);
  return plan;
}

TEST(ReadAheadTest, ADamagedRecordFailsOnlyItselfNotItsSpan) {
  Reads reads;
  reads.bad = 3;
  // Eight neighbours of 100 bytes: one span.
  ReadAhead ra(
      [](uint64_t id) {
        return ReadAhead::Place{0, id, id * 100, 100};
      },
      [&](size_t, size_t index, size_t count, std::vector<std::string>* out) {
        return reads.read(index, count, out);
      },
      1 << 20);
  ra.follow(in_order(8), 0, 1);
  reads.wait_calls(1);
  for (uint64_t id = 0; id < 8; ++id) {
    std::string bytes;
    Status s;
    if (!ra.take(id, &bytes, &s)) continue;  // the worker reads it itself
    if (id == 3) continue;
    EXPECT_TRUE(s.ok()) << "record " << id << ": " << s.to_string();
    EXPECT_EQ(bytes, "r" + std::to_string(id));
  }
  EXPECT_EQ(ra.held_bytes(), 0u);
}

TEST(ReadAheadTest, ARestartWhileAFetchIsInFlightKeepsTheBudget) {
  Reads reads;
  reads.gate_open = false;
  // Records far apart: one request each. Room for two.
  ReadAhead ra(
      [](uint64_t id) {
        return ReadAhead::Place{0, id, id * 1000, 100};
      },
      [&](size_t, size_t index, size_t count, std::vector<std::string>* out) {
        return reads.read(index, count, out);
      },
      200);
  ra.follow(in_order(10), 0, 2);
  reads.wait_calls(2);            // record 0 held at the gate, record 1 fetched
  ra.follow(in_order(10), 0, 2);  // a restart at the same place
  reads.wait_calls(3);            // the free fetcher goes on
  reads.open_gate();
  ra.follow(in_order(10), 10, 2);  // nothing left to fetch: all is given back
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (ra.held_bytes() != 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(10ms);
  EXPECT_EQ(ra.held_bytes(), 0u);
}

}  // namespace
}  // namespace sluice::detail
