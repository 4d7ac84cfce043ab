// Record read + verify throughput from the page cache, on one core.
//
//   record_throughput [--mb N] [--record-kb K] [--dir D] [--repeat R]
//
// Writes N MB of K KB records (ImageNet-like: JPEGs average ~110 KB) to a
// temporary shard, reads it once to warm the page cache, then times R full
// sequential passes (framing + length and data CRC32C on every record) and
// R passes of random access through the index. Prints GB/s per pass and the
// median. A benchmark, not a test: numbers depend on the machine.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "sluice/record.h"

namespace {

using Clock = std::chrono::steady_clock;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int fail(const sluice::Status& s) {
  std::fprintf(stderr, "record_throughput: %s\n", s.to_string().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  size_t mb = 1024, record_kb = 110, repeat = 5;
  std::string dir = std::filesystem::temp_directory_path().string();
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--mb")
      mb = std::strtoull(argv[i + 1], nullptr, 10);
    else if (a == "--record-kb")
      record_kb = std::strtoull(argv[i + 1], nullptr, 10);
    else if (a == "--dir")
      dir = argv[i + 1];
    else if (a == "--repeat")
      repeat = std::strtoull(argv[i + 1], nullptr, 10);
    else {
      std::fprintf(stderr, "unknown option %s\n", a.c_str());
      return 2;
    }
  }
  std::string path = dir + "/sluice-bench-" + std::to_string(::getpid()) + ".tfrecord";
  std::string payload(record_kb * 1024, '\0');
  std::mt19937_64 rng(1);
  for (char& c : payload) c = static_cast<char>(rng());
  size_t n = std::max<size_t>(1, mb * 1024 / record_kb);
  {
    auto w = sluice::RecordWriter::create(path);
    if (!w.ok()) return fail(w.status());
    for (size_t i = 0; i < n; ++i) {
      std::memcpy(payload.data(), &i, sizeof(i));  // distinct records
      auto r = (*w)->write(payload);
      if (!r.ok()) return fail(r.status());
    }
    if (auto s = (*w)->close(); !s.ok()) return fail(s);
  }
  uint64_t bytes = std::filesystem::file_size(path);
  std::printf("shard: %zu records of %zu KB, %.1f MB, %s\n", n, record_kb, bytes / 1e6,
              path.c_str());

  auto sequential = [&]() -> double {
    auto r = sluice::RecordReader::open(path);
    if (!r.ok()) std::exit(fail(r.status()));
    std::string_view rec;
    size_t count = 0;
    auto t0 = Clock::now();
    sluice::Status s;
    while ((s = (*r)->next(&rec)).ok()) ++count;
    double secs = std::chrono::duration<double>(Clock::now() - t0).count();
    if (s.code() != sluice::StatusCode::kOutOfRange || count != n) std::exit(fail(s));
    return bytes / secs / 1e9;
  };
  sequential();  // warm the page cache
  std::vector<double> seq;
  for (size_t i = 0; i < repeat; ++i) {
    seq.push_back(sequential());
    std::printf("sequential read + verify: %.2f GB/s\n", seq.back());
  }

  auto file = sluice::RecordFile::open(path);
  if (!file.ok()) return fail(file.status());
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::vector<double> rnd;
  for (size_t i = 0; i < repeat; ++i) {
    std::shuffle(order.begin(), order.end(), rng);
    std::string buf;
    std::string_view rec;
    auto t0 = Clock::now();
    for (size_t k : order) {
      if (auto s = (*file)->read(k, &buf, &rec); !s.ok()) return fail(s);
    }
    double secs = std::chrono::duration<double>(Clock::now() - t0).count();
    rnd.push_back(bytes / secs / 1e9);
    std::printf("random access read + verify: %.2f GB/s\n", rnd.back());
  }
  std::printf("median: sequential %.2f GB/s, random access %.2f GB/s (one core, page cache)\n",
              median(seq), median(rnd));
  std::filesystem::remove(path);
  return 0;
}
