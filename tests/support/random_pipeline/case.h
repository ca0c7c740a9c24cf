// Randomized differential testing: one case, built from one 64-bit seed (see
// support/random_pipeline.h): its random program, run once under the SyncExecutor (directly,
// with the protocol crossing as bytes, and on pools that lose blocks) and several times on
// the local executor under random schedules, each run compared with the reference
// interpreter and the local runs with the SyncExecutor run; and the statistics the cases
// gather. Case's checks are defined in case_checks.h, its runs in case_runs.h: include both.
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "support/random_pipeline.h"
#include "support/random_pipeline/observed.h"
#include <fmt/format.h>

#include <rayorch/rayorch.h>

namespace random_pipeline {

// ---- One case --------------------------------------------------------------------------------

struct Stats {
  std::uint64_t cases = 0;
  std::uint64_t comparisons = 0;  // runs checked against the SyncExecutor run
  std::uint64_t wire_runs = 0;    // SyncExecutor runs whose protocol crossed as bytes
  std::uint64_t lossy_runs = 0;   // SyncExecutor runs that lost a node's blocks
  std::uint64_t values_rebuilt = 0;
  std::uint64_t lossy_outputs = 0;       // outputs of lossy runs compared
  std::uint64_t lossy_outputs_lost = 0;  // ... that named the loss instead (out of budget)
  std::uint64_t lossy_outputs_open = 0;  // ... that differed where the interpreter allows it
  std::uint64_t runs = 0;
  std::uint64_t outputs_compared = 0;
  std::uint64_t outputs_tainted = 0;
  std::uint64_t outputs_non_present = 0;
  std::uint64_t aborted_cases = 0;
  std::uint64_t calls = 0;
  std::uint64_t domains = 0;
  // Reduces a GroupFailure decides (DESIGN 5), per parent, as the interpreter found them; and
  // the cases with one whose membership leaves the failing child out.
  std::uint64_t barrier_reduces = 0;
  std::uint64_t barrier_reduces_excluding = 0;
  std::uint64_t barrier_reduces_natural_present = 0;
  std::uint64_t cases_excluding = 0;
  // Cases with Modules in worker processes, and those Modules.
  std::uint64_t isolated_cases = 0;
  std::uint64_t isolated_modules = 0;
  // The shapes drawn from the generator's own stream (generator_shapes.h).
  ShapeCensus shapes;
  double slowest_seconds = 0;
  u64 slowest_seed = 0;
};

struct RunRecord {
  bool aborted = false;
  std::string error;
  Table table;
  std::uint64_t values_rebuilt = 0;
};

inline std::string options_text(const ro::RunOptions& o) {
  return fmt::format(
      "input_batch_size={} max_active_input_batches={} queue_order={} reservation={}",
      o.input_batch_size, o.max_active_input_batches,
      o.queue_order == ro::QueueOrder::fifo ? "fifo" : "lifo",
      !o.reservation                               ? "module"
      : *o.reservation == ro::Reservation::elastic ? "elastic"
                                                   : "parent_bound");
}

inline ro::RunOptions random_options(Rng& rng, std::size_t rows) {
  ro::RunOptions o;
  o.progress = false;
  o.input_batch_size =
      rng.chance(300) ? 0 : static_cast<std::size_t>(rng.range(1, static_cast<int>(rows) + 1));
  o.max_active_input_batches = static_cast<std::size_t>(rng.range(1, 4));
  o.queue_order = rng.chance(250) ? ro::QueueOrder::lifo : ro::QueueOrder::fifo;
  const int res = rng.weighted({60, 20, 20});
  if (res == 1) o.reservation = ro::Reservation::elastic;
  if (res == 2) o.reservation = ro::Reservation::parent_bound;
  return o;
}

// Generator knobs a test sets over what the seed draws.
struct Knobs {
  std::optional<int> callless_permille;
};

class Case {
 public:
  Case(u64 seed, bool verbose, Knobs knobs = {})
      : seed_(seed), verbose_(verbose), knobs_(knobs), master_(seed) {}

  // Returns an empty string when the case passes, else a report that names the seed (always
  // the report, with the program listing, when verbose).
  std::string run(Stats& stats);

  // The case's program and what the interpreter makes of it, without running it.
  void count_shapes(ShapeCensus& shapes);

  bool failed() const { return failed_; }

 private:
  // Everything the seed decides before the program: its shape, rows, sources and knobs.
  void prepare() {
    shape_ = master_.weighted({60, 20, 20});
    config_.allow_abort = master_.chance(80);
    // A share of the cases runs some Modules in worker processes (decided from the seed, so
    // the other draws of every case stay as they were).
    config_.isolation_salt = mix(seed_ ^ 0x150a7edULL);
    config_.isolated_permille = config_.isolation_salt % 100 < 12 ? 500 : 0;
    // A share runs every Module in one co-located pool (DESIGN 5.12), also from the seed.
    config_.colocated = mix(seed_ ^ 0xc0106a7edULL) % 100 < 15;
    config_.colocate_auto = !config_.colocated && mix(seed_ ^ 0xa070c01ULL) % 100 < 15;
    const int size = master_.weighted({4, 30, 50, 16});
    rows_ = size == 0   ? 0
            : size == 1 ? master_.range(1, 3)
            : size == 2 ? master_.range(4, 10)
                        : master_.range(11, 24);
    const int columns = shape_ == 1 ? 2 : 1;
    sources_.assign(columns, {});
    for (auto& column : sources_) {
      for (std::size_t r = 0; r < rows_; ++r) {
        // Equal values in different rows must still give independent, identical results.
        if (r > 0 && master_.chance(60))
          column.push_back(column[master_.next() % r]);
        else
          column.push_back(static_cast<i64>(master_.next()));
      }
    }
    structure_seed_ = master_.next();
    rt_ = std::make_shared<Runtime>();
    if (knobs_.callless_permille) config_.callless_permille = *knobs_.callless_permille;
  }

  template <std::size_t NIn, std::size_t NOut>
  auto compile(Builder& b, bool optimize) const {
    const ro::CompileOptions options{.optimize = optimize, .auto_colocate = config_.colocate_auto};
    if constexpr (NIn == 1 && NOut == 1) {
      return ro::compile([&b](ro::Port<i64> a) { return b.build<1>({a})[0]; }, options);
    } else if constexpr (NIn == 2 && NOut == 2) {
      return ro::compile(
          [&b](ro::Port<i64> a, ro::Port<i64> c) {
            auto o = b.build<2>({a, c});
            return std::make_tuple(o[0], o[1]);
          },
          options);
    } else {
      static_assert(NIn == 1 && NOut == 3);
      return ro::compile(
          [&b](ro::Port<i64> a) {
            auto o = b.build<3>({a});
            return std::make_tuple(o[0], o[1], o[2]);
          },
          options);
    }
  }

  template <std::size_t NIn, class Ex>
  auto call_run(Ex& ex, const ro::RunOptions& o) {
    if constexpr (NIn == 1) {
      return ex.run(sources_[0], o);
    } else {
      return ex.run(sources_[0], sources_[1], o);
    }
  }

  template <std::size_t NIn, class Ex>
  RunRecord execute(Ex& ex, const ro::RunOptions& o, bool streaming, bool sync,
                    std::string& problem) {
    RunRecord rec;
    try {
      if (streaming) {
        rec.table.assign(rows_, {});
        std::vector<int> delivered(rows_, 0);
        auto on_row = [&](std::size_t row, const auto& out) {
          if (row >= rows_) {
            problem += fmt::format("streaming delivered row {} of {}\n", row, rows_);
            return;
          }
          ++delivered[row];
          rec.table[row] = observe_row(out);
        };
        ro::RunMetrics m;
        if constexpr (NIn == 1) {
          auto r = ex.run(sources_[0], o, on_row);
          m = std::move(r.metrics);
          if constexpr (requires { r.outputs.empty(); }) {
            if (!r.outputs.empty()) problem += "a streaming run returned outputs\n";
          }
        } else {
          auto r = ex.run(sources_[0], sources_[1], o, on_row);
          m = std::move(r.metrics);
        }
        for (std::size_t r = 0; r < rows_; ++r) {
          if (delivered[r] != 1)
            problem += fmt::format("streaming delivered row {} {} times\n", r, delivered[r]);
        }
        check_metrics(m, o, sync, problem);
      } else {
        auto r = call_run<NIn>(ex, o);
        rec.table = to_table(r.outputs);
        rec.values_rebuilt = r.metrics.values_rebuilt;
        check_metrics(r.metrics, o, sync, problem);
      }
    } catch (const ro::ExecutionError& e) {
      rec.aborted = true;
      rec.error = e.what();
    } catch (const std::exception& e) {
      problem +=
          fmt::format("the run threw {}: {}\n", ro::detail::current_exception_type(), e.what());
      rec.aborted = true;
      rec.error = e.what();
    }
    return rec;
  }

  // The checks of a run (case_checks.h).
  void check_metrics(const ro::RunMetrics& m, const ro::RunOptions& o, bool sync,
                     std::string& problem);
  template <class Ex>
  void check_rpc_log(const Ex& ex, const ro::RunOptions& o, std::string& problem);
  static bool open_and_allowed(const Expected& e, const Obs& o);
  void compare(const std::string& label, const RunRecord& run, const RunRecord* reference,
               Stats& stats, std::string& problem);

  // The runs of one case (case_runs.h).
  template <std::size_t NIn, class Program>
  void lossy_run(const Program& program, const ro::RunOptions& o, const RunRecord& reference,
                 Stats& stats, std::string& problem);
  template <std::size_t NIn, std::size_t NOut>
  std::string run_shape(Stats& stats);

  u64 seed_;
  bool verbose_;
  Knobs knobs_;
  bool failed_ = false;
  Rng master_;
  int shape_ = 0;
  std::size_t rows_ = 0;
  GenConfig config_;
  std::vector<std::vector<i64>> sources_;
  u64 structure_seed_ = 0;
  std::shared_ptr<Runtime> rt_;
  Ir ir_;
  const Ir* schedule_ = nullptr;
  std::string rpc_log_;            // the Module options of the program being run
  std::vector<int> call_modules_;  // module of each Call, in Call order
  std::unique_ptr<Model> model_;
  bool lossy_ = false;  // the run loses blocks: its RPCs and the UDFs' counts differ
  std::vector<std::vector<Expected>> expected_;
};

}  // namespace random_pipeline
