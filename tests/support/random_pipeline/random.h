// Randomized differential testing (tests/support/random_pipeline.h): hashing and a portable
// deterministic generator, so that every decision of a case is a function of its seed, the
// same with every standard library; and the names every part of the generator uses.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <vector>

#include <rayorch/rayorch.h>

namespace random_pipeline {

namespace ro = rayorch;
using i64 = std::int64_t;
using u64 = std::uint64_t;

inline u64 mix(u64 x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
inline u64 combine(u64 h, u64 v) {
  return mix(h ^ mix(v + 0x632be59bd9b4e019ull));
}

// A tiny deterministic generator: std distributions differ between standard libraries, and a
// seed must reproduce the same case everywhere.
class Rng {
 public:
  explicit Rng(u64 seed) : state_(seed) {}
  u64 next() { return mix(state_++ * 0xd1342543de82ef95ull + 1); }
  // Uniform in [lo, hi].
  int range(int lo, int hi) {
    return lo + static_cast<int>(next() % static_cast<u64>(hi - lo + 1));
  }
  bool chance(int permille) { return static_cast<int>(next() % 1000) < permille; }
  template <class T>
  const T& pick(const std::vector<T>& v) {
    return v[next() % v.size()];
  }
  // Index drawn with the given weights.
  int weighted(std::initializer_list<int> weights) {
    int total = 0;
    for (int w : weights) total += w;
    int r = range(0, total - 1);
    int i = 0;
    for (int w : weights) {
      if (r < w) return i;
      r -= w;
      ++i;
    }
    return i - 1;
  }

 private:
  u64 state_;
};

}  // namespace random_pipeline
