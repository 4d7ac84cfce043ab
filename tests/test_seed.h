// Fresh randomness per test run, printed so a failure can be replayed by
// setting SLUICE_TEST_SEED to the printed value.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

namespace sluice {

// One seed per test binary: the first call picks and prints it.
inline uint64_t run_seed(const char* test_name) {
  static const uint64_t seed = [test_name] {
    const char* env = std::getenv("SLUICE_TEST_SEED");
    const uint64_t s =
        env ? std::strtoull(env, nullptr, 10)
            : static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
    std::printf("%s seed: %llu (set SLUICE_TEST_SEED to replay)\n", test_name,
                static_cast<unsigned long long>(s));
    return s;
  }();
  return seed;
}

}  // namespace sluice
