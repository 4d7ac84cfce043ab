// Counter-based random numbers: every value is a pure function of a key and
// a counter, so any sample's randomness can be recomputed from (seed, epoch,
// sample id) alone, on any thread, in any order (DESIGN.md invariant 1).
//
// The mixer is splitmix64's finaliser (Steele, Lea, Flood 2014), which
// passes BigCrush when fed a Weyl sequence; keys are mixed the same way.
//
// Thread safety: a CounterRng is a small value; use one per thread or sample.
#pragma once

#include <cstdint>

namespace sluice {

inline constexpr uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Folds several 64-bit words into one well-mixed key.
inline constexpr uint64_t hash_key(uint64_t a, uint64_t b = 0, uint64_t c = 0, uint64_t d = 0) {
  uint64_t h = mix64(a + 0x9e3779b97f4a7c15ull);
  h = mix64(h ^ (b + 0x632be59bd9b4e019ull));
  h = mix64(h ^ (c + 0x85157af5ull));
  return mix64(h ^ (d + 0x2545f4914f6cdd1dull));
}

class CounterRng {
 public:
  explicit constexpr CounterRng(uint64_t key) : key_(key) {}

  // The next 64 random bits.
  constexpr uint64_t next() { return mix64(key_ + 0x9e3779b97f4a7c15ull * ++counter_); }
  // Uniform in [0, 1), 53 bits.
  constexpr double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  // Uniform in [lo, hi).
  constexpr double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }
  // Uniform integer in [0, n), n > 0 (Lemire's multiply-shift; bias < 2^-64 * n).
  uint64_t below(uint64_t n) {
    __extension__ using u128 = unsigned __int128;
    return static_cast<uint64_t>((static_cast<u128>(next()) * n) >> 64);
  }

 private:
  uint64_t key_;
  uint64_t counter_ = 0;
};

}  // namespace sluice
