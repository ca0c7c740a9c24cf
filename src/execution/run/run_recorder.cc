// The metrics of one run. See run_recorder.h.
#include "execution/run/run_recorder.h"

#include <algorithm>
#include <string>

namespace rayorch::detail {

RunRecorder::RunRecorder(const RuntimePlan& plan, const SourceData& sources,
                         const std::vector<int>& actors_per_pool)
    : start_(Clock::now()),
      per_root_times_(sources.feed == nullptr),
      done_per_call_(plan.calls.size(), 0),
      in_flight_per_call_(plan.calls.size(), 0) {
  if (per_root_times_) metrics_.root_completed_seconds.assign(sources.rows, 0.0);
  metrics_.roots_restored = sources.restored.size();
  for (const auto& [row, outcome] : sources.restored) {
    ++metrics_.roots_by_outcome[std::string(to_string(outcome))];
  }
  metrics_.journal_discarded_bytes = sources.journal_discarded_bytes;
  for (const PlanCall& c : plan.calls) {
    CallMetrics m;
    m.call = c.name;
    m.udf = c.udf;
    m.actors = actors_per_pool[c.pool];
    m.batch_size = c.batch_size;
    metrics_.calls.push_back(std::move(m));
    call_pools_.push_back(c.pool);
  }
  for (const PlanExpand& x : plan.expands) {
    ExpandMetrics m;
    m.call = plan.calls[x.call].name;
    m.port = x.lists.empty() ? -1 : x.lists.front();
    metrics_.expands.push_back(std::move(m));
  }
}

double RunRecorder::now_seconds() const {
  return seconds_at(Clock::now());
}

double RunRecorder::seconds_at(Clock::time_point t) const {
  return std::chrono::duration<double>(t - start_).count();
}

void RunRecorder::batch_admitted(std::size_t index, std::size_t first, std::size_t rows,
                                 std::size_t active) {
  InputBatchMetrics bm;
  bm.index = index;
  bm.first_row = first;
  bm.rows = rows;
  bm.admitted_seconds = now_seconds();
  metrics_.input_batches.push_back(bm);
  metrics_.peak_active_input_batches = std::max(metrics_.peak_active_input_batches, active);
}

void RunRecorder::fold(const Engine& e) {
  for (std::size_t c = 0; c < metrics_.calls.size(); ++c) {
    metrics_.calls[c].requeues += e.counters(static_cast<int>(c)).requeues;
    metrics_.calls[c].suppressed_by_barrier +=
        e.counters(static_cast<int>(c)).suppressed_by_barrier;
  }
  metrics_.stale_reports_rejected += e.stale_reports();
  metrics_.values_rebuilt += e.values_rebuilt();
  metrics_.grains_reexecuted += e.grains_reexecuted();
  auto& bm = metrics_.input_batches[e.batch_index()];
  bm.grains = e.grains_total();
  const RuntimePlan& plan = e.plan();
  bm.entities = 0;
  for (std::size_t d = 0; d < plan.domains.size(); ++d)
    bm.entities += e.entities(static_cast<int>(d));
  bm.items = 0;
  for (const PlanPort& p : plan.ports) bm.items += e.entities(p.domain);
  bm.expansions = 0;
  for (std::size_t x = 0; x < plan.expands.size(); ++x) {
    const std::size_t parents = e.entities(plan.expands[x].parent_domain);
    bm.expansions += parents;
    ExpandMetrics& xm = metrics_.expands[x];
    for (std::uint32_t p = 0; p < parents; ++p) {
      const auto children = e.expansion_children(static_cast<int>(x), p);
      if (!children) continue;
      ++xm.parents;
      xm.children += *children;
      ++xm.fan_out_histogram[*children];
    }
  }
  bm.released_values = e.values_released();
  bm.completed_seconds = now_seconds();
}

void RunRecorder::dispatched(int call, std::size_t grains) {
  in_flight_per_call_[call] += grains;
}

void RunRecorder::rpc_ended(int call, std::size_t grains, std::optional<std::size_t> input_batch,
                            double seconds, std::string_view status) {
  CallMetrics& m = metrics_.calls[call];
  in_flight_per_call_[call] -= grains;
  ++m.rpcs;
  m.grain_dispatches += grains;
  ++m.batch_size_histogram[grains];
  m.rpc_sizes.push_back(static_cast<std::uint32_t>(grains));
  m.busy_seconds += seconds;
  if (status != "ok") ++m.failed_rpcs;
  if (input_batch) ++metrics_.input_batches[*input_batch].rpcs;
}

void RunRecorder::actor_replaced(int pool) {
  ++metrics_.actors_replaced;
  for (std::size_t c = 0; c < call_pools_.size(); ++c)
    if (call_pools_[c] == pool) ++metrics_.calls[c].actors_replaced;
}

double RunRecorder::root_delivered(std::size_t row, Outcome outcome) {
  const double seconds = now_seconds();
  if (per_root_times_) metrics_.root_completed_seconds[row] = seconds;
  ++metrics_.roots_by_outcome[std::string(to_string(outcome))];
  return seconds;
}

void RunRecorder::root_restored(Outcome outcome) {
  ++metrics_.roots_restored;
  ++metrics_.roots_by_outcome[std::string(to_string(outcome))];
}

void RunRecorder::close(bool complete) {
  metrics_.elapsed_seconds = now_seconds();
  if (!complete) return;
  for (CallMetrics& m : metrics_.calls) {
    if (m.rpcs > 0) {
      m.mean_batch_fill = static_cast<double>(m.grain_dispatches) /
                          (static_cast<double>(m.rpcs) * static_cast<double>(m.batch_size));
    }
  }
}

}  // namespace rayorch::detail
