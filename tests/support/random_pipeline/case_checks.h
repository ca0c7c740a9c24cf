// Randomized differential testing: the checks of a case's runs (Case is declared in
// case.h): metrics that account for exactly what the UDFs saw, the SyncExecutor's RPC log,
// and the outputs against the reference interpreter and the reference run.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

#include "support/random_pipeline/case.h"
#include <fmt/format.h>

#include <rayorch/rayorch.h>

namespace random_pipeline {

// Metrics must account for exactly what the UDFs saw.
inline void Case::check_metrics(const ro::RunMetrics& m, const ro::RunOptions& o, bool sync,
                                std::string& problem) {
  const Ir& ir = *schedule_;
  std::uint64_t rpcs = 0, failed = 0, dispatches = 0;
  std::size_t call = 0;
  for (const auto& c : m.calls) {
    rpcs += c.rpcs;
    failed += c.failed_rpcs;
    dispatches += c.grain_dispatches;
    const IrModule& mod = ir.modules[call_modules_.at(call)];
    // The SyncExecutor runs one UDF instance per pool.
    const int actors = sync ? 1 : mod.replicas;
    if (c.actors != actors)
      problem += fmt::format("{} reports {} actors, want {}\n", c.call, c.actors, actors);
    for (const auto& [size, count] : c.batch_size_histogram) {
      if (size == 0 || static_cast<int>(size) > mod.batch_size)
        problem += fmt::format("{} ran an RPC of {} Grains, batch_size {}\n", c.call, size,
                               mod.batch_size);
    }
    ++call;
  }
  if (call != call_modules_.size())
    problem +=
        fmt::format("metrics list {} Calls, the program has {}\n", call, call_modules_.size());
  // An attempt abandoned by a timeout may still be running, and counting, after its run:
  // the UDF-side counters are exact only without timeouts.
  // Nor do UDFs that run in worker processes count in this process.
  bool timeouts = false;
  for (const IrModule& mod : ir.modules)
    timeouts = timeouts || mod.timeout_ms > 0 || (mod.isolated && !sync);
  // RPCs that found their inputs lost never reached a UDF.
  if (!timeouts && !lossy_) {
    if (rpcs != rt_->rpcs)
      problem += fmt::format("metrics count {} RPCs, the UDFs ran {}\n", rpcs, rt_->rpcs.load());
    if (dispatches != rt_->rows)
      problem += fmt::format("metrics count {} Grain dispatches, the UDFs saw {} rows\n",
                             dispatches, rt_->rows.load());
    if (failed != rt_->throws + rt_->losses)
      problem += fmt::format("metrics count {} failed RPCs, the UDFs threw {} and lost {}\n",
                             failed, rt_->throws.load(), rt_->losses.load());
    if (m.actors_replaced != rt_->losses)
      problem += fmt::format("metrics count {} replaced actors, the UDFs lost {}\n",
                             m.actors_replaced, rt_->losses.load());
  }
  if (m.root_completed_seconds.size() != rows_)
    problem += fmt::format("{} root completion times for {} rows\n",
                           m.root_completed_seconds.size(), rows_);
  for (std::size_t r = 0; r < m.root_completed_seconds.size(); ++r) {
    const double t = m.root_completed_seconds[r];
    if (!(t >= 0 && t <= m.elapsed_seconds))
      problem += fmt::format("root {} completed at {} s of a {} s run\n", r, t, m.elapsed_seconds);
  }
  std::size_t next_row = 0;
  for (std::size_t b = 0; b < m.input_batches.size(); ++b) {
    const ro::InputBatchMetrics& ib = m.input_batches[b];
    if (ib.index != b || ib.first_row != next_row || ib.rows == 0)
      problem += fmt::format("input batch {} covers rows {}+{}, expected to start at {}\n",
                             ib.index, ib.first_row, ib.rows, next_row);
    next_row = ib.first_row + ib.rows;
  }
  if (next_row != rows_)
    problem += fmt::format("input batches cover {} of {} rows\n", next_row, rows_);
  const std::size_t per =
      o.input_batch_size == 0 ? std::max<std::size_t>(rows_, 1) : o.input_batch_size;
  const std::size_t batches = (rows_ + per - 1) / per;
  if (m.input_batches.size() != batches)
    problem += fmt::format("{} input batches, want {}\n", m.input_batches.size(), batches);
  if (m.peak_active_input_batches > o.max_active_input_batches)
    problem += fmt::format("{} active input batches over the limit {}\n",
                           m.peak_active_input_batches, o.max_active_input_batches);
}

// Every RPC the SyncExecutor logged respects batch_size and, for parent_bound, one parent.
template <class Ex>
void Case::check_rpc_log(const Ex& ex, const ro::RunOptions& o, std::string& problem) {
  for (const ro::RpcRecord& rpc : ex.rpcs()) {
    const auto hash = rpc.call.rfind('#');
    const std::size_t call = std::stoul(rpc.call.substr(hash + 1));
    const IrModule& mod = schedule_->modules[call_modules_.at(call)];
    if (rpc.grains.empty() || static_cast<int>(rpc.grains.size()) > mod.batch_size)
      problem += fmt::format("RPC {} exceeds batch_size {}\n", rpc.to_string(), mod.batch_size);
    const ro::Reservation policy = o.reservation.value_or(mod.reservation);
    if (policy != ro::Reservation::parent_bound) continue;
    auto parent = [](const std::string& key) {
      const auto slash = key.rfind('/');
      return slash == std::string::npos ? key : key.substr(0, slash);
    };
    for (const auto& g : rpc.grains) {
      if (parent(g) != parent(rpc.grains[0]))
        problem += fmt::format("parent_bound RPC {} mixes parents\n", rpc.to_string());
    }
  }
}

// Whether the interpreter leaves an output open (schedule-dependent, or one of several
// causes) and allows `o`.
inline bool Case::open_and_allowed(const Expected& e, const Obs& o) {
  if (e.tainted) {
    const bool natural =
        o.outcome == e.outcome && (e.outcome != ro::Outcome::present || o.value == e.value);
    return natural || o.outcome == ro::Outcome::suppressed;
  }
  if (e.outcome == ro::Outcome::present || (!e.any_cause && e.causes.size() <= 1)) return false;
  return o.outcome == e.outcome && (e.any_cause || e.causes.count(o.cause) > 0);
}

// Compares a run with the interpreter (and with the reference run when given).
inline void Case::compare(const std::string& label, const RunRecord& run,
                          const RunRecord* reference, Stats& stats, std::string& problem) {
  if (run.aborted) {
    if (!model_->definite_abort && !model_->possible_abort) {
      problem += fmt::format("{}: aborted but the program cannot abort: {}\n", label, run.error);
    }
    return;
  }
  if (model_->definite_abort) {
    problem += fmt::format("{}: completed but a Grain must abort the run\n", label);
    return;
  }
  if (run.table.size() != expected_.size()) {
    problem += fmt::format("{}: {} rows, want {}\n", label, run.table.size(), expected_.size());
    return;
  }
  int reported = 0;
  for (std::size_t r = 0; r < expected_.size(); ++r) {
    if (run.table[r].size() != expected_[r].size()) {
      problem += fmt::format("{}: row {} has {} outputs, want {}\n", label, r, run.table[r].size(),
                             expected_[r].size());
      continue;
    }
    for (std::size_t k = 0; k < expected_[r].size(); ++k) {
      const Expected& e = expected_[r][k];
      const Obs& o = run.table[r][k];
      if (e.tainted) {
        // A GroupFailure barrier can only turn work into SUPPRESSED Items: the output is its
        // natural self or SUPPRESSED, never anything else.
        ++stats.outputs_tainted;
        const bool natural =
            o.outcome == e.outcome && (e.outcome != ro::Outcome::present || o.value == e.value);
        if (!natural && o.outcome != ro::Outcome::suppressed && reported++ < 6) {
          problem += fmt::format("{}: row {} output {}: got {}, want {} or suppressed\n", label, r,
                                 k, show(o), show_natural(e));
        }
        continue;
      }
      ++stats.outputs_compared;
      if (e.outcome != ro::Outcome::present) ++stats.outputs_non_present;
      bool ok = o.outcome == e.outcome;
      if (ok && e.outcome == ro::Outcome::present) ok = o.value == e.value;
      if (ok && e.outcome != ro::Outcome::present && !e.any_cause) ok = e.causes.count(o.cause) > 0;
      // When the interpreter allows only one result, the run must also match the
      // SyncExecutor run exactly: a second, independent oracle.
      if (ok && reference != nullptr && !reference->aborted && !e.any_cause &&
          e.causes.size() <= 1) {
        const Obs& ref = reference->table[r][k];
        ok = ref.outcome == o.outcome && ref.value == o.value && ref.cause == o.cause;
      }
      if (!ok && reported++ < 6) {
        problem +=
            fmt::format("{}: row {} output {}: got {}, want {}{}\n", label, r, k, show(o), show(e),
                        reference && !reference->aborted
                            ? ", reference run gave " + show(reference->table[r][k])
                            : "");
      }
    }
  }
  if (reported > 6) problem += fmt::format("{}: ... {} mismatches in all\n", label, reported);
}

}  // namespace random_pipeline
