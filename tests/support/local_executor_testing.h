// Helpers shared by the integration tests of the embedded local executor
// (tests/execution/local_executor_*_test.cc): UDFs that count their instances and RPCs,
// documents split into pages and summed again, and small readers of a run's results.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <numeric>
#include <utility>
#include <vector>

#include <rayorch/rayorch.h>

namespace local_executor_testing {

namespace ro = rayorch;

// What the UDF instances of one test observed. Shared by every instance of a pool (the
// Module captures the shared_ptr and replays it on every actor).
struct Stats {
  std::atomic<int> constructed{0};
  std::atomic<int> destroyed{0};
  std::atomic<int> calls{0};
  std::mutex mutex;
  std::vector<std::vector<int>> batches;            // the values of each RPC
  std::vector<std::pair<int, int>> call_instances;  // (static tag, instance id) per RPC
};
using StatsPtr = std::shared_ptr<Stats>;

struct Counted {
  explicit Counted(StatsPtr s) : stats(std::move(s)), id(++stats->constructed) {}
  ~Counted() { ++stats->destroyed; }
  Counted(const Counted&) = delete;
  Counted& operator=(const Counted&) = delete;
  std::vector<int> run(ro::Column<int> x) {
    ++stats->calls;
    {
      std::lock_guard<std::mutex> lock(stats->mutex);
      stats->batches.push_back(x.to_vector());
    }
    std::vector<int> out;
    for (int v : x) out.push_back(v + 1);
    return out;
  }
  StatsPtr stats;
  int id;
};

// Children of a parent: value p*100+i for i < p % 10, so parent and ordinal are recoverable.
struct Split {
  std::vector<std::vector<int>> run(ro::Column<int> parents) {
    std::vector<std::vector<int>> out;
    for (int p : parents) {
      std::vector<int> children;
      for (int i = 0; i < p % 10; ++i) children.push_back(p * 100 + i);
      out.push_back(std::move(children));
    }
    return out;
  }
};

struct Sum {
  std::vector<int> run(ro::Column<ro::Group<int>> groups) {
    std::vector<int> out;
    for (const auto& g : groups) out.push_back(std::accumulate(g.begin(), g.end(), 0));
    return out;
  }
};

inline std::vector<int> expected_sums(const std::vector<int>& parents, int add) {
  std::vector<int> out;
  for (int p : parents) {
    int s = 0;
    for (int i = 0; i < p % 10; ++i) s += p * 100 + i + add;
    out.push_back(s);
  }
  return out;
}

template <class T>
std::vector<T> values_of(const std::vector<ro::Output<T>>& outputs) {
  std::vector<T> out;
  for (const auto& o : outputs) out.push_back(o.value());
  return out;
}

inline std::uint64_t total_rpcs(const ro::RunMetrics& m) {
  std::uint64_t n = 0;
  for (const auto& c : m.calls) n += c.rpcs;
  return n;
}

inline ro::RunOptions quiet() {
  ro::RunOptions o;
  o.progress = false;
  return o;
}

}  // namespace local_executor_testing
