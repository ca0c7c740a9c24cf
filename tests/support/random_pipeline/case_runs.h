// Randomized differential testing: the runs of a case (Case is declared in case.h): the
// SyncExecutor reference run, the same schedule with the protocol crossing as bytes and on
// pools that lose blocks, the local executor under several random schedules, and the
// program alone for a census of its shapes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "support/lossy_pools.h"
#include "support/random_pipeline/case.h"
#include "support/random_pipeline/case_checks.h"
#include <fmt/format.h>

#include <rayorch/rayorch.h>

namespace random_pipeline {

// The same schedule on pools that lose, once, every block some random pools made (a node
// going away when a random Call starts its n-th RPC): the lost values are rebuilt from
// lineage (DESIGN 5.13). Every output must be the reference's, or an issue whose cause
// names the loss (a Grain out of replays: random Modules may have none), or, where the
// interpreter leaves the result open, one it allows: the replays change the order of the
// RPCs, and with it which of a parent's failures a reduce meets first when a GroupFailure
// is one of them (the pinned gap of DESIGN 5.12).
template <std::size_t NIn, class Program>
void Case::lossy_run(const Program& program, const ro::RunOptions& o, const RunRecord& reference,
                     Stats& stats, std::string& problem) {
  const auto plan = program.plan();
  const int pools = static_cast<int>(plan->pools.size());
  if (pools == 0) return;  // a program without Calls has no blocks of a pool to lose
  std::set<int> on_node;
  for (int p = 0; p < pools; ++p)
    if (master_.chance(600)) on_node.insert(p);
  const int trigger = static_cast<int>(master_.next() % static_cast<u64>(pools));
  const int after = static_cast<int>(master_.next() % 3);
  const bool lose_inputs = master_.chance(300);
  lossy::LossyExecutor lossy(
      program, std::make_unique<lossy::LossyPools>(rayorch::detail::make_inline_pools(plan, false),
                                                   on_node, trigger, after, lose_inputs));
  rt_->reset(0, 0, 0);
  lossy_ = true;
  std::string run_problem;
  const RunRecord l = execute<NIn>(lossy, o, false, true, run_problem);
  lossy_ = false;
  ++stats.lossy_runs;
  stats.values_rebuilt += l.values_rebuilt;
  // Whether a Grain that may abort the run gets to run first depends on the schedule,
  // which the losses change (compare() allows the same).
  if (l.aborted && (model_->definite_abort || model_->possible_abort)) return;
  if (l.aborted != reference.aborted || l.table.size() != reference.table.size()) {
    problem += fmt::format("lossy run: aborted {} ({}), the reference {}\n", l.aborted, l.error,
                           reference.aborted);
    return;
  }
  for (std::size_t r = 0; r < l.table.size(); ++r) {
    for (std::size_t k = 0; k < l.table[r].size(); ++k) {
      const Obs& got = l.table[r][k];
      const Obs& want = reference.table[r][k];
      const bool same =
          got.outcome == want.outcome && got.value == want.value && got.cause == want.cause;
      ++stats.lossy_outputs;
      if (same) continue;
      if (got.cause.find("rayorch::BlockLost: ") != std::string::npos) {
        ++stats.lossy_outputs_lost;
        continue;
      }
      if (r < expected_.size() && k < expected_[r].size() &&
          open_and_allowed(expected_[r][k], got)) {
        ++stats.lossy_outputs_open;
        continue;
      }
      problem += fmt::format("lossy run, row {} output {}: {} {} ({}), the reference {} {} ({})\n",
                             r, k, ro::to_string(got.outcome), got.value, got.cause,
                             ro::to_string(want.outcome), want.value, want.cause);
      return;
    }
  }
  if (!run_problem.empty()) problem += "lossy run: " + run_problem;
}

template <std::size_t NIn, std::size_t NOut>
std::string Case::run_shape(Stats& stats) {
  std::string problem;
  std::string listing;
  // The reference: the SyncExecutor, itself under random batch sizes and input batching.
  RunRecord reference;
  std::string explain;
  {
    Builder b(structure_seed_, master_.next(), config_, rt_);
    auto program = compile<NIn, NOut>(b, master_.chance(500));
    ir_ = b.ir();
    schedule_ = &ir_;
    explain = program.explain();
    for (std::size_t i = 0; i < ir_.ops.size(); ++i) {
      if (ir_.ops[i].kind == OpKind::call) call_modules_.push_back(ir_.ops[i].module);
    }
    stats.calls += call_modules_.size();
    stats.domains += ir_.domains.size();
    std::uint64_t isolated = 0;
    for (const IrModule& m : ir_.modules) isolated += m.isolated ? 1 : 0;
    stats.isolated_modules += isolated;
    if (isolated > 0) ++stats.isolated_cases;
    listing =
        fmt::format("reference program (schedule of the SyncExecutor run):\n{}", ir_.describe());
    model_ = std::make_unique<Model>(ir_);
    expected_ = model_->run(sources_);
    stats.barrier_reduces += model_->barrier_decided;
    stats.barrier_reduces_excluding += model_->barrier_decided_excluding;
    stats.barrier_reduces_natural_present += model_->barrier_decided_natural_present;
    if (model_->barrier_decided_excluding > 0) ++stats.cases_excluding;
    stats.shapes.count(ir_, *model_);
    ro::testing::SyncExecutor ex(program);
    const ro::RunOptions o = random_options(master_, rows_);
    rt_->reset(0, 0, 0);
    std::string run_problem;
    reference = execute<NIn>(ex, o, false, true, run_problem);
    if (!reference.aborted) check_rpc_log(ex, o, run_problem);
    {
      // The same schedule again with every invocation, report and store command encoded to
      // bytes and decoded before the other side sees it: the protocol is plain data, so the
      // outputs (and an abort's message) must be identical.
      ro::testing::SyncExecutor wire(program, {.wire_protocol = true});
      rt_->reset(0, 0, 0);
      std::string wire_problem;
      const RunRecord w = execute<NIn>(wire, o, false, true, wire_problem);
      bool same = w.aborted == reference.aborted && w.error == reference.error &&
                  w.table.size() == reference.table.size();
      for (std::size_t r = 0; same && r < w.table.size(); ++r) {
        for (std::size_t k = 0; same && k < w.table[r].size(); ++k) {
          const Obs& got = w.table[r][k];
          const Obs& want = reference.table[r][k];
          same = got.outcome == want.outcome && got.value == want.value && got.cause == want.cause;
        }
      }
      if (!same) {
        run_problem += fmt::format(
            "wire-protocol SyncExecutor run differs from the direct run "
            "(aborted {} vs {}: {} / {})\n",
            w.aborted, reference.aborted, w.error, reference.error);
      }
      ++stats.wire_runs;
    }
    if (!reference.aborted) lossy_run<NIn>(program, o, reference, stats, run_problem);
    if (verbose_) {
      rpc_log_ = "SyncExecutor RPCs:\n";
      for (const ro::RpcRecord& rpc : ex.rpcs()) rpc_log_ += "  " + rpc.to_string() + "\n";
      if (reference.aborted) rpc_log_ += "  aborted: " + reference.error + "\n";
    }
    if (!reference.aborted && !ex.closed() && master_.chance(300)) {
      // Actors are reused across runs; a second run on the same executor must agree.
      rt_->reset(0, 0, 0);
      RunRecord again = execute<NIn>(ex, random_options(master_, rows_), false, true, run_problem);
      compare("SyncExecutor second run", again, nullptr, stats, run_problem);
    }
    compare(fmt::format("SyncExecutor [{}]", options_text(o)), reference, nullptr, stats,
            run_problem);
    if (!run_problem.empty()) problem += run_problem;
    ++stats.runs;
  }
  // The local executor under several schedules.
  const int variants = 2;
  const int runs_per_variant = 2;
  for (int v = 0; v < variants && problem.empty(); ++v) {
    Builder b(structure_seed_, master_.next(), config_, rt_);
    auto program = compile<NIn, NOut>(b, master_.chance(500));
    if (b.ir().fingerprint() != ir_.fingerprint()) {
      problem += "internal: the generator is not deterministic for this seed\n";
      break;
    }
    schedule_ = &b.ir();
    std::string label_base = fmt::format("local variant {}", v);
    std::string modules = b.ir().describe();
    try {
      // Half the cases start their actors slowly, in a random order (eager start, DESIGN
      // 6.1): the first run begins on whichever actors are ready and the others join it.
      // Drawn from the seed, so the other draws of every case stay as they were.
      const u64 startup = mix(seed_ ^ 0x57a27ULL ^ static_cast<u64>(v));
      rt_->startup_salt = startup;
      rt_->startup_us = startup % 2 == 0 ? static_cast<int>(1 + (startup >> 8) % 3000) : 0;
      rt_->builds = 0;
      u64 actors = 0;
      for (const IrModule& m : b.ir().modules) actors += static_cast<u64>(m.replicas);
      rt_->slow_builds = actors;
      ro::Executor ex(program);
      for (int k = 0; k < runs_per_variant && problem.empty(); ++k) {
        const ro::RunOptions o = random_options(master_, rows_);
        const int delay = master_.chance(300) ? master_.range(1, 200) : 0;
        const bool streaming = master_.chance(200);
        rt_->reset(delay, master_.next(), 30);
        if (ex.closed()) break;  // a run whose actors broke closes the executor
        std::string run_problem;
        RunRecord run = execute<NIn>(ex, o, streaming, false, run_problem);
        const std::string label =
            fmt::format("{} run {} [{} delay_us={}{}]", label_base, k, options_text(o), delay,
                        streaming ? " streaming" : "");
        compare(label, run, &reference, stats, run_problem);
        ++stats.runs;
        ++stats.comparisons;
        if (!run_problem.empty()) {
          problem += run_problem;
          listing += fmt::format("{} schedule:\n{}", label_base, modules);
        }
      }
    } catch (const std::exception& e) {
      problem += fmt::format("{}: building the executor threw {}\n", label_base, e.what());
    }
  }
  if (reference.aborted) ++stats.aborted_cases;
  ++stats.cases;
  failed_ = !problem.empty();
  if (!failed_ && !verbose_) return {};
  std::string text = fmt::format(
      "randomized case seed=0x{:016x} shape={} rows={} allow_abort={} {}\n"
      "reproduce: RAYORCH_RANDOM_SEED=0x{:016x} ./execution_randomized_test (add "
      "RAYORCH_RANDOM_REPEAT=50 when a local run failed: schedules vary)\n",
      seed_, shape_, rows_, config_.allow_abort,
      model_->definite_abort   ? "(must abort)"
      : model_->possible_abort ? "(may abort)"
                               : "",
      seed_);
  text += problem;
  text += listing;
  text += explain;
  text += rpc_log_;
  return text;
}

// Returns an empty string when the case passes, else a report that names the seed (always
// the report, with the program listing, when verbose).
inline std::string Case::run(Stats& stats) {
  prepare();
  switch (shape_) {
    case 0:
      return run_shape<1, 1>(stats);
    case 1:
      return run_shape<2, 2>(stats);
    default:
      return run_shape<1, 3>(stats);
  }
}

inline void Case::count_shapes(ShapeCensus& shapes) {
  prepare();
  Builder b(structure_seed_, master_.next(), config_, rt_);
  switch (shape_) {
    case 0:
      compile<1, 1>(b, true);
      break;
    case 1:
      compile<2, 2>(b, true);
      break;
    default:
      compile<1, 3>(b, true);
      break;
  }
  Model model(b.ir());
  model.run(sources_);
  shapes.count(b.ir(), model);
}

}  // namespace random_pipeline
