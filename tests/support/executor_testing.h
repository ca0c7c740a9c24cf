// Helpers shared by the executor integration tests: a gate that UDFs block on, a
// deterministic generator for schedule configurations, output comparison that follows the
// schedule-independence contract, and a scratch directory.
#pragma once

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <mutex>
#include <string>
#include <system_error>
#include <tuple>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include <rayorch/rayorch.h>

namespace executor_testing {

/// A one-shot gate. Threads wait until it opens; the bounded wait is a watchdog that turns a
/// broken causality chain into a failed assertion instead of a hung test binary.
class Gate {
 public:
  void open() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      open_ = true;
    }
    cv_.notify_all();
  }
  bool is_open() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return open_;
  }
  /// Returns true when the gate opened, false when the watchdog expired first.
  bool wait(std::chrono::milliseconds watchdog = std::chrono::seconds(30)) {
    std::unique_lock<std::mutex> lock(mutex_);
    ++waiters_;
    cv_.notify_all();
    const bool opened = cv_.wait_for(lock, watchdog, [&] { return open_; });
    return opened;
  }
  /// Blocks until at least `n` threads have entered wait() (watchdog bounded).
  bool wait_for_waiters(int n, std::chrono::milliseconds watchdog = std::chrono::seconds(30)) {
    std::unique_lock<std::mutex> lock(mutex_);
    return cv_.wait_for(lock, watchdog, [&] { return waiters_ >= n; });
  }
  int waiters() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return waiters_;
  }

 private:
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  bool open_ = false;
  int waiters_ = 0;
};

/// splitmix64: a fixed, portable sequence (std distributions differ between libraries).
class Rng {
 public:
  explicit Rng(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  /// Uniform in [lo, hi].
  int between(int lo, int hi) {
    return lo + static_cast<int>(next() % static_cast<std::uint64_t>(hi - lo + 1));
  }
  bool chance(int percent) { return between(1, 100) <= percent; }

 private:
  std::uint64_t state_;
};

/// Compares one output column of a run with the reference run. Outcomes and values must be
/// identical; a non-present output's cause is compared unless `cause_decidable[row]` is false
/// (several failing inputs with different causes may race to decide a suppressed output).
template <class T>
void expect_same_outputs(const std::vector<rayorch::Output<T>>& expected,
                         const std::vector<rayorch::Output<T>>& actual,
                         const std::vector<bool>& cause_decidable, const std::string& context) {
  ASSERT_EQ(expected.size(), actual.size()) << context;
  for (std::size_t row = 0; row < expected.size(); ++row) {
    const auto& e = expected[row];
    const auto& a = actual[row];
    ASSERT_EQ(e.ok(), a.ok()) << context << " row " << row << ": expected "
                              << (e.ok() ? std::string("present")
                                         : std::string(rayorch::to_string(e.issue().outcome)))
                              << ", got "
                              << (a.ok() ? std::string("present")
                                         : std::string(rayorch::to_string(a.issue().outcome)) +
                                               " (" + a.issue().cause + ")");
    if (e.ok()) {
      EXPECT_TRUE(e.value() == a.value()) << context << " row " << row << ": values differ";
      continue;
    }
    EXPECT_EQ(e.issue().outcome, a.issue().outcome)
        << context << " row " << row << ": outcomes differ (" << e.issue().cause << " / "
        << a.issue().cause << ")";
    const bool decidable = cause_decidable.empty() || cause_decidable[row];
    if (decidable) {
      EXPECT_EQ(e.issue().cause, a.issue().cause) << context << " row " << row;
    }
  }
}

/// Several output columns (multi-output pipelines).
template <class... T>
void expect_same_outputs(const std::tuple<std::vector<rayorch::Output<T>>...>& expected,
                         const std::tuple<std::vector<rayorch::Output<T>>...>& actual,
                         const std::vector<bool>& cause_decidable, const std::string& context) {
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    (expect_same_outputs(std::get<I>(expected), std::get<I>(actual), cause_decidable,
                         context + " output " + std::to_string(I)),
     ...);
  }
  (std::index_sequence_for<T...>{});
}

/// A scratch directory removed at scope exit.
class TempDir {
 public:
  TempDir() {
    static std::atomic<int> counter{0};
    path_ = std::filesystem::temp_directory_path() /
            ("rayorch-executor-" + std::to_string(::getpid()) + "-" + std::to_string(++counter));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace executor_testing
