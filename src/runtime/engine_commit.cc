// Commit of reports: validating a whole Report against its Invocation, then publishing
// its rows (DESIGN 6.2).
#include <fmt/format.h>

#include "runtime/engine.h"

namespace rayorch::detail {

std::string Engine::check_report(const InFlight& in_flight, const Report& report) const {
  const std::size_t rows = in_flight.grains.size();
  for (const RowFailure& rf : report.failures) {
    if (rf.row >= rows)
      return fmt::format("a failure names row {} of an RPC of {} rows", rf.row, rows);
  }
  if (report.outputs.size() != in_flight.outputs.size()) {
    return fmt::format("{} outputs for {} declared", report.outputs.size(),
                       in_flight.outputs.size());
  }
  for (std::size_t k = 0; k < in_flight.outputs.size(); ++k) {
    const OutputReport& o = report.outputs[k];
    if (in_flight.outputs[k].child_block != 0 && o.lengths.size() != rows) {
      return fmt::format("expanded output {} reports {} list lengths for {} rows", k,
                         o.lengths.size(), rows);
    }
    if (in_flight.outputs[k].truth && o.truth.size() != rows) {
      return fmt::format("mask output {} reports {} booleans for {} rows", k, o.truth.size(), rows);
    }
  }
  return {};
}

CommitStatus Engine::commit(Report& report, const std::vector<BlockId>& created) {
  auto stale = [&] {
    ++stale_reports_;
    for (BlockId b : created) {
      // A duplicate of an accepted report names blocks that are live: those stay.
      const std::uint32_t local = block_local(b);
      if (block_batch(b) == options_.batch_index && local < blocks_.size() && blocks_[local].live)
        continue;
      StoreCommand c;
      c.kind = StoreCommand::Kind::release;
      c.block = b;
      store_commands_.push_back(std::move(c));
    }
    return CommitStatus::stale;
  };
  auto it = in_flight_.find(report.invocation);
  if (it == in_flight_.end()) return stale();
  const InFlight& f = it->second;
  const int call = f.call;
  // Validate the whole report before publishing anything: generation fence.
  for (std::size_t i = 0; i < f.grains.size(); ++i) {
    const Grain& g = grains_[call][f.grains[i]];
    // A re-execution runs sealed Grains: its generation alone fences it.
    const bool live = f.lineage >= 0 || g.phase == GrainPhase::in_flight;
    if (!live || g.generation != f.generations[i]) {
      in_flight_.erase(it);
      return stale();
    }
  }
  if (!report.contract_error.empty()) return CommitStatus::contract_error;
  report.contract_error = check_report(f, report);
  if (!report.contract_error.empty()) return CommitStatus::contract_error;
  const PlanCall& pc = p_.calls[call];
  InFlight in_flight = std::move(it->second);
  in_flight_.erase(it);
  if (in_flight.lineage >= 0) {
    commit_rebuild(std::move(in_flight), report);
    return CommitStatus::accepted;
  }
  record_lineage(in_flight, report);
  const std::size_t nout = pc.outputs.size();
  std::vector<std::int32_t> blocks(nout, -1);
  std::vector<std::int32_t> child_blocks(nout, -1);
  for (std::size_t k = 0; k < nout; ++k) {
    // Each new block is held while its rows are published: sealing a row can settle a group
    // and release that row before the later rows of the same block exist.
    blocks[k] = static_cast<std::int32_t>(block_local(in_flight.outputs[k].block));
    make_live(blocks[k]);
    ++blocks_[blocks[k]].uses;
    if (in_flight.outputs[k].child_block != 0) {
      child_blocks[k] = static_cast<std::int32_t>(block_local(in_flight.outputs[k].child_block));
      make_live(child_blocks[k]);
      ++blocks_[child_blocks[k]].uses;
    }
  }
  std::vector<std::uint8_t> failed_row(in_flight.grains.size(), 0);
  // GroupFailures first: install barriers, fail the triggering Grains.
  for (const RowFailure& rf : report.failures) {
    if (rf.kind != RowKind::group_failure) continue;
    const std::uint32_t e = in_flight.grains[rf.row];
    const std::int32_t cause = intern(rf.message, call, e);
    set_barrier(call, e, cause);
    if (failed_row[rf.row]) continue;
    failed_row[rf.row] = 1;
    seal_grain(call, e, ItemState::failed, cause, GrainEvent::commit);
  }
  for (const RowFailure& rf : report.failures) {
    if (rf.kind != RowKind::record_failure || failed_row[rf.row]) continue;
    failed_row[rf.row] = 1;
    seal_grain(call, in_flight.grains[rf.row], ItemState::failed,
               intern(rf.message, call, in_flight.grains[rf.row]), GrainEvent::commit);
  }
  std::vector<std::uint32_t> offsets(nout, 0);
  for (std::size_t row = 0; row < in_flight.grains.size(); ++row) {
    const std::uint32_t e = in_flight.grains[row];
    const bool publishable = !failed_row[row] && barrier_cause(call, e) < 0;
    for (std::size_t k = 0; k < nout; ++k) {
      if (child_blocks[k] < 0) continue;
      const std::uint32_t length = report.outputs[k].lengths[row];
      if (publishable) {
        expand_.splits[pc.outputs[k]][e] = ListSplit{child_blocks[k], offsets[k], length};
        ++blocks_[child_blocks[k]].uses;  // held until the expansion is decided
      }
      offsets[k] += length;
    }
    if (failed_row[row]) continue;
    if (!publishable) {
      // In-flight siblings may finish, but their successes are rejected.
      seal_suppressed_by_barrier(call, e);
      continue;
    }
    move_grain(call, e, GrainEvent::commit);
    for (std::size_t k = 0; k < nout; ++k) {
      const std::uint8_t flags =
          in_flight.outputs[k].truth && report.outputs[k].truth[row] != 0 ? kTruth : 0;
      publish(pc.outputs[k], e, ItemState::present, blocks[k], static_cast<std::uint32_t>(row), -1,
              flags);
    }
    grain_sealed(call, e);
  }
  for (std::size_t k = 0; k < nout; ++k) {
    drop_use(blocks[k]);
    if (child_blocks[k] >= 0) drop_use(child_blocks[k]);
  }
  return CommitStatus::accepted;
}

}  // namespace rayorch::detail
