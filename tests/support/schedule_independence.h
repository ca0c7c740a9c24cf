// Helpers shared by the schedule-independence tests (tests/execution/
// schedule_independence_*_test.cc, DESIGN 5, "Contract"): deterministic pseudo-random
// schedules (replicas, batch sizes, input batching, active-batch limits, reservation, queue
// order, pool sizing), a check that runs a pipeline under many of them on the local executor
// and the SyncExecutor against a reference SyncExecutor run, and the document UDFs that
// several tests build their pipelines from.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <thread>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "support/executor_testing.h"
#include <gtest/gtest.h>

#include <rayorch/rayorch.h>

namespace schedule_independence {

namespace ro = rayorch;
using executor_testing::Rng;

constexpr int kModules = 8;

// One schedule: per-Module replicas and batch sizes plus the run options.
struct Config {
  int replicas[kModules];
  int batch[kModules];
  int min_auto[kModules];         // -1: a fixed pool; else auto_replicas(min_auto, replicas)
  std::uint64_t resize_seed = 0;  // LocalBackend::random_resize_seed
  std::size_t input_batch_size = 0;
  std::size_t max_active = 1;
  std::optional<ro::Reservation> reservation;
  ro::QueueOrder order = ro::QueueOrder::fifo;
  bool streaming = false;
  // Co-location (DESIGN 5.12): 0 none, 1 Modules 2k and 2k+1 share a pool, 2 every Module
  // shares one; the members of a group take the pool options of its first Module. 3: no
  // group declared, every Module takes the first one's pool options and the compiler
  // co-locates the chains it finds (CompileOptions::auto_colocate).
  int colocate = 0;

  static Config defaults() {
    Config c;
    for (int i = 0; i < kModules; ++i) {
      c.replicas[i] = 1;
      c.batch[i] = 1;
      c.min_auto[i] = -1;
    }
    return c;
  }

  static Config sample(Rng& rng, std::size_t rows) {
    Config c;
    for (int i = 0; i < kModules; ++i) {
      c.replicas[i] = rng.between(1, 8);
      c.batch[i] = rng.chance(50) ? rng.between(1, 8) : rng.between(9, 64);
    }
    c.input_batch_size =
        rng.chance(20) ? 0 : static_cast<std::size_t>(rng.between(1, static_cast<int>(rows)));
    c.max_active = static_cast<std::size_t>(rng.between(1, 4));
    const int r = rng.between(1, 10);
    if (r <= 2) c.reservation = ro::Reservation::elastic;
    if (r >= 9) c.reservation = ro::Reservation::parent_bound;
    c.order = rng.chance(15) ? ro::QueueOrder::lifo : ro::QueueOrder::fifo;
    c.streaming = rng.chance(30);
    // Drawn last, so the schedules above stay those of the seeds before.
    const bool sizing = rng.chance(40);
    for (int i = 0; i < kModules; ++i)
      c.min_auto[i] = sizing && rng.chance(70) ? rng.between(0, 1) : -1;
    if (sizing && rng.chance(75))
      c.resize_seed = static_cast<std::uint64_t>(rng.between(1, 1 << 20));
    const int colocate = rng.between(1, 10);
    c.colocate = colocate <= 6 ? 0 : colocate <= 8 ? 1 : 2;
    if (c.colocate == 0 && rng.chance(50)) c.colocate = 3;
    return c;
  }

  ro::CompileOptions compile_options() const { return {.auto_colocate = colocate == 3}; }

  ro::RunOptions options() const {
    ro::RunOptions o;
    o.input_batch_size = input_batch_size;
    o.max_active_input_batches = max_active;
    o.reservation = reservation;
    o.queue_order = order;
    o.progress = false;
    return o;
  }

  std::string describe() const {
    std::string s = "replicas/batch";
    for (int i = 0; i < kModules; ++i) {
      s += " " + std::to_string(replicas[i]) + "/" + std::to_string(batch[i]);
    }
    s += " input_batch_size " + std::to_string(input_batch_size) + " max_active " +
         std::to_string(max_active);
    if (reservation) {
      s += *reservation == ro::Reservation::elastic ? " elastic" : " parent_bound";
    }
    if (order == ro::QueueOrder::lifo) s += " lifo";
    if (streaming) s += " streaming";
    for (int i = 0; i < kModules; ++i) {
      if (min_auto[i] >= 0) s += " auto" + std::to_string(i) + ":" + std::to_string(min_auto[i]);
    }
    if (resize_seed != 0) s += " resize_seed " + std::to_string(resize_seed);
    if (colocate != 0) {
      s += colocate == 1 ? " colocate pairs" : colocate == 2 ? " colocate all" : " colocate auto";
    }
    return s;
  }
};

template <class U, class... A>
ro::Module<U> module(const Config& c, int index, A&&... args) {
  ro::Module<U> m = ro::Module<U>(std::forward<A>(args)...).batch_size(c.batch[index]);
  // The pool options come from the first Module of the group (co-located ones share them).
  const int lead = c.colocate == 0 ? index : c.colocate == 1 ? index - index % 2 : 0;
  if (c.colocate == 1 || c.colocate == 2)
    m.colocate(c.colocate == 1 ? "pair" + std::to_string(index / 2) : std::string("all"));
  if (c.min_auto[lead] >= 0)
    m.auto_replicas(std::min(c.min_auto[lead], c.replicas[lead]), c.replicas[lead]);
  else
    m.replicas(c.replicas[lead]);
  return m;
}

// Perturbs completion order between actors without sleeping.
inline void jitter(int v) {
  for (int i = 0; i < (v % 4); ++i) std::this_thread::yield();
}

template <class T>
struct IsMulti : std::false_type {};
template <class... O>
struct IsMulti<std::tuple<std::vector<ro::Output<O>>...>> : std::true_type {};

// Runs `ex` on `cols` collecting every row delivered by the streaming callback, which must
// deliver each row exactly once.
template <class Ex, class T, class... Cols>
std::vector<ro::Output<T>> run_streaming(Ex& ex, const ro::RunOptions& o, const std::string& ctx,
                                         const Cols&... cols) {
  std::vector<ro::Output<T>> out;
  std::vector<int> seen;
  const std::size_t rows = std::get<0>(std::forward_as_tuple(cols...)).size();
  out.assign(rows, ro::Output<T>(ro::OutputIssue{ro::Outcome::dropped, "never delivered"}));
  seen.assign(rows, 0);
  ex.run(cols..., o, [&](std::size_t row, ro::Output<T> value) {
    ++seen[row];
    out[row] = std::move(value);
  });
  for (std::size_t r = 0; r < rows; ++r) EXPECT_EQ(seen[r], 1) << ctx << " row " << r;
  return out;
}

// How many reference outputs had each outcome (present, dropped, failed, suppressed), so a
// test can show that its data exercises the paths it is about.
using OutcomeCounts = std::array<int, 4>;

template <class T>
void count_outcomes(const std::vector<ro::Output<T>>& outputs, OutcomeCounts& counts) {
  for (const auto& o : outputs) ++counts[o.ok() ? 0 : static_cast<int>(o.issue().outcome)];
}
template <class... T>
void count_outcomes(const std::tuple<std::vector<ro::Output<T>>...>& outputs,
                    OutcomeCounts& counts) {
  std::apply([&](const auto&... column) { (count_outcomes(column, counts), ...); }, outputs);
}

// Runs the pipeline built by `make` under `configs` sampled schedules and compares every
// run with the default-options SyncExecutor reference.
template <class Make, class... Cols>
OutcomeCounts check_schedules(const std::string& name, const Make& make, std::uint64_t seed,
                              int configs, const std::vector<bool>& cause_decidable,
                              const Cols&... cols) {
  const std::size_t rows = std::get<0>(std::forward_as_tuple(cols...)).size();
  auto reference_program = make(Config::defaults());
  ro::testing::SyncExecutor reference(reference_program);
  ro::RunOptions quiet;
  quiet.progress = false;
  const auto expected = reference.run(cols..., quiet).outputs;
  OutcomeCounts counts{};
  count_outcomes(expected, counts);
  Rng rng(seed);
  for (int i = 0; i < configs; ++i) {
    const Config c = Config::sample(rng, rows);
    const std::string ctx = name + " [" + std::to_string(i) + "] " + c.describe();
    auto program = make(c);
    const ro::RunOptions o = c.options();
    {
      ro::testing::SyncExecutor sync(program);
      executor_testing::expect_same_outputs(expected, sync.run(cols..., o).outputs, cause_decidable,
                                            ctx + " sync");
    }
    ro::LocalBackend backend;
    backend.random_resize_seed = c.resize_seed;
    backend.budget.cpus = 64;  // the policy is not starved on a small machine
    ro::Executor local(program, backend);
    using Outputs = std::remove_cvref_t<decltype(expected)>;
    if constexpr (!IsMulti<Outputs>::value) {
      if (c.streaming) {
        using T = std::remove_cvref_t<decltype(expected[0].value())>;
        executor_testing::expect_same_outputs(
            expected, run_streaming<decltype(local), T>(local, o, ctx, cols...), cause_decidable,
            ctx + " local");
        continue;
      }
    }
    auto result = local.run(cols..., o);
    executor_testing::expect_same_outputs(expected, result.outputs, cause_decidable,
                                          ctx + " local");
    EXPECT_LE(result.metrics.peak_active_input_batches, c.max_active) << ctx;
    EXPECT_EQ(result.metrics.root_completed_seconds.size(), rows) << ctx;
    if (::testing::Test::HasFailure()) break;  // one failing schedule is enough to read
  }
  return counts;
}

inline std::vector<int> make_docs(std::uint64_t seed, int n, int max_value) {
  Rng rng(seed);
  std::vector<int> docs;
  for (int i = 0; i < n; ++i) docs.push_back(rng.between(0, max_value));
  return docs;
}

inline std::string join(const ro::Group<int>& g) {
  std::string s;
  for (int v : g) s += std::to_string(v) + ",";
  return s;
}

// ---- UDFs -----------------------------------------------------------------------------

// Children of doc d: d*100 + i for i < d % 7 (including empty expansions).
struct PagesOf {
  std::vector<std::vector<int>> run(ro::Column<int> docs) {
    std::vector<std::vector<int>> out;
    for (int d : docs) {
      std::vector<int> pages;
      for (int i = 0; i < d % 7; ++i) pages.push_back(d * 100 + i);
      out.push_back(std::move(pages));
    }
    return out;
  }
};

// A per-page result that fails some pages; the cause names only the document, so every
// failure inside one document has the same cause.
struct Ocr {
  std::vector<ro::Row<int>> run(ro::Column<int> pages) {
    std::vector<ro::Row<int>> out;
    for (int p : pages) {
      jitter(p);
      if (p % 13 == 5) {
        out.push_back(ro::RecordFailure{"unreadable page in doc " + std::to_string(p / 100)});
      } else {
        out.push_back(p * 3 + 1);
      }
    }
    return out;
  }
};

struct Summarize {
  std::vector<std::string> run(ro::Column<ro::Group<int>> groups) {
    std::vector<std::string> out;
    for (const auto& g : groups) out.push_back(std::to_string(g.size()) + ":" + join(g));
    return out;
  }
};

}  // namespace schedule_independence
