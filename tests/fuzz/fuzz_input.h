// Structured values drawn from a fuzz input's tail, so that the front stays
// the file bytes the seed corpus starts from (libFuzzer's mutations then
// change the parameters and the file independently). Works under the
// replay driver too, which has no FuzzedDataProvider.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace sluice {

class FuzzInput {
 public:
  FuzzInput(const uint8_t* data, size_t size) : data_(data), size_(size) {}

  // An integer in [lo, hi] from the last bytes (lo when none are left).
  int64_t take(int64_t lo, int64_t hi) {
    const uint64_t range = static_cast<uint64_t>(hi - lo);
    uint64_t v = 0;
    for (uint64_t seen = 0; seen < range && size_ > 0; seen = (seen << 8) | 0xff) {
      v = (v << 8) | data_[--size_];
    }
    return lo + static_cast<int64_t>(range == UINT64_MAX ? v : v % (range + 1));
  }
  bool take_bool() { return take(0, 1) == 1; }

  // Whatever is left, from the front.
  std::string_view rest() const { return {reinterpret_cast<const char*>(data_), size_}; }

 private:
  const uint8_t* data_;
  size_t size_;
};

}  // namespace sluice
