// What the sample-corpus generators share: a fixed random generator and heavy-tailed counts.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace workloads {

/// splitmix64: a fixed generator, so a seed gives the same corpus with any standard library.
class SampleRng {
 public:
  explicit SampleRng(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  /// Uniform in (0, 1].
  double unit() { return (static_cast<double>(next() >> 11) + 1.0) * 0x1.0p-53; }
  std::size_t below(std::size_t n) { return static_cast<std::size_t>(next() % n); }
  /// Uniform in [lo, hi].
  int between(int lo, int hi) {
    return lo + static_cast<int>(below(static_cast<std::size_t>(hi - lo + 1)));
  }

 private:
  std::uint64_t state_;
};

/// `n` counts in [1, max] with a Pareto tail, P(count >= k) = k^-alpha, drawn by inverse
/// transform from SampleRng(seed).
inline std::vector<int> pareto_counts(std::uint64_t seed, int n, double alpha, int max) {
  SampleRng rng(seed);
  std::vector<int> counts;
  for (int i = 0; i < n; ++i) {
    const double k = std::floor(std::pow(rng.unit(), -1.0 / alpha));
    counts.push_back(static_cast<int>(std::clamp(k, 1.0, static_cast<double>(max))));
  }
  return counts;
}

}  // namespace workloads
