// The JSON report: the run's metrics plus every observer's section.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <vector>

#include <nlohmann/json.hpp>

#include "rayorch/atomic_file.h"
#include "rayorch/metrics.h"

#include "execution/observers/observers.h"
#include "execution/report/failure_groups.h"

namespace rayorch::detail {
namespace {

nlohmann::json call_json(const CallMetrics& m) {
  nlohmann::json hist = nlohmann::json::object();
  for (const auto& [size, count] : m.batch_size_histogram) hist[std::to_string(size)] = count;
  return {{"call", m.call},
          {"udf", m.udf},
          {"actors", m.actors},
          {"rpcs", m.rpcs},
          {"grain_dispatches", m.grain_dispatches},
          {"requeues", m.requeues},
          {"failed_rpcs", m.failed_rpcs},
          {"suppressed_by_barrier", m.suppressed_by_barrier},
          {"busy_seconds", m.busy_seconds},
          {"batch_size", m.batch_size},
          {"mean_batch_fill", m.mean_batch_fill},
          {"batch_size_histogram", hist}};
}

nlohmann::json expand_json(const ExpandMetrics& m) {
  nlohmann::json hist = nlohmann::json::object();
  for (const auto& [children, parents] : m.fan_out_histogram) {
    hist[std::to_string(children)] = parents;
  }
  return {{"call", m.call},
          {"port", m.port},
          {"parents", m.parents},
          {"children", m.children},
          {"fan_out_histogram", std::move(hist)}};
}

nlohmann::json node_loss_json(const NodeLossMetrics& m) {
  return {{"node", m.node},
          {"address", m.address},
          {"detected_seconds", m.detected_seconds},
          {"cause", m.cause}};
}

nlohmann::json pool_json(const PoolMetrics& m) {
  nlohmann::json started = nlohmann::json::array();
  for (const ActorStartMetrics& s : m.started) {
    nlohmann::json one = {{"actor", s.actor}, {"started_seconds", s.started_seconds}};
    if (!s.error.empty()) one["error"] = s.error;
    started.push_back(std::move(one));
  }
  nlohmann::json out = {{"pool", m.pool}, {"actors", m.actors}, {"started", std::move(started)}};
  if (!m.resizes.empty() || !m.actors_over_time.empty()) {
    nlohmann::json resizes = nlohmann::json::array();
    for (const PoolResizeMetrics& r : m.resizes) {
      resizes.push_back(
          {{"seconds", r.seconds}, {"from", r.from}, {"to", r.to}, {"reason", r.reason}});
    }
    nlohmann::json over_time = nlohmann::json::array();
    for (const auto& [seconds, actors] : m.actors_over_time) over_time.push_back({seconds, actors});
    out["resizes"] = std::move(resizes);
    out["actors_over_time"] = std::move(over_time);
  }
  return out;
}

// One RPC's time, as the report needs it (floats: two per RPC is what the report costs).
struct RpcSpan {
  float start = 0, end = 0;
};

// The RPCs' durations at the 50th, 90th and 99th percentile and the longest (nearest rank).
nlohmann::json rpc_seconds_json(const std::vector<RpcSpan>& spans) {
  std::vector<float> d;
  d.reserve(spans.size());
  for (const RpcSpan& s : spans) d.push_back(s.end - s.start);
  std::sort(d.begin(), d.end());
  const auto at = [&](double q) {
    const auto rank = static_cast<std::size_t>(std::ceil(q * static_cast<double>(d.size())));
    return static_cast<double>(d[std::min(d.size() - 1, rank > 0 ? rank - 1 : 0)]);
  };
  return {{"p50", at(0.5)}, {"p90", at(0.9)}, {"p99", at(0.99)}, {"max", at(1.0)}};
}

// The actors of a Call busy on average in each of `buckets` equal slices of the run: the
// busy seconds of its RPCs that fall in a slice, over the slice's length.
std::vector<double> busy_over_time(const std::vector<RpcSpan>& spans, double elapsed,
                                   std::size_t buckets) {
  std::vector<double> busy(buckets, 0.0);
  const double width = elapsed / static_cast<double>(buckets);
  for (const RpcSpan& s : spans) {
    const double start = std::max(0.0, static_cast<double>(s.start));
    const double end = std::min(elapsed, static_cast<double>(s.end));
    for (auto b = static_cast<std::size_t>(start / width); b < buckets && end > start; ++b) {
      const double lo = static_cast<double>(b) * width;
      const double hi = lo + width;
      if (lo >= end) break;
      busy[b] += std::min(end, hi) - std::max(start, lo);
    }
  }
  for (double& v : busy) v /= width;
  return busy;
}

// Slices of the run in a Call's busy_over_time.
constexpr std::size_t kBusyBuckets = 60;
// Parents whose stage windows the report keeps, evenly spaced by row.
constexpr std::size_t kWindowParents = 48;
constexpr RpcSpan kNoWindow{std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity()};

class JsonReport final : public RunObserver {
 public:
  explicit JsonReport(std::string path) : path_(std::move(path)) {}

  void on_run_start(const RunStartEvent& e) override {
    spans_.assign(e.calls.size(), {});
    failures_.clear();
    windows_.clear();
    // A stream's length is not known: its first parents are kept.
    const std::size_t rows = e.rows_known ? e.rows + e.restored : kWindowParents;
    window_stride_ = std::max<std::size_t>(1, (rows + kWindowParents - 1) / kWindowParents);
  }

  bool wants_rpc_roots() const override { return true; }

  void on_rpc(const RpcEvent& e) override {
    if (e.call < 0 || static_cast<std::size_t>(e.call) >= spans_.size()) return;
    const auto call = static_cast<std::size_t>(e.call);
    const RpcSpan span{static_cast<float>(e.start_seconds), static_cast<float>(e.end_seconds)};
    spans_[call].push_back(span);
    for (const std::size_t row : e.roots) {
      if (row % window_stride_ != 0 || row / window_stride_ >= kWindowParents) continue;
      auto [it, added] = windows_.try_emplace(row);
      if (added) it->second.assign(spans_.size(), kNoWindow);
      RpcSpan& w = it->second[call];
      w.start = std::min(w.start, span.start);
      w.end = std::max(w.end, span.end);
    }
  }

  void on_root(const RootEvent& e) override {
    if (e.restored || e.outcome == Outcome::present) return;
    add_failure(failures_, e.call, to_string(e.outcome), e.cause, e.entity, e.row);
  }

  void on_run_end(const RunEndEvent& e) override {
    const RunMetrics& m = e.metrics;
    nlohmann::json calls = nlohmann::json::array();
    for (std::size_t i = 0; i < m.calls.size(); ++i) {
      nlohmann::json call = call_json(m.calls[i]);
      if (i < spans_.size() && !spans_[i].empty() && m.elapsed_seconds > 0) {
        call["rpc_seconds"] = rpc_seconds_json(spans_[i]);
        call["busy_over_time"] = {
            {"bucket_seconds", m.elapsed_seconds / static_cast<double>(kBusyBuckets)},
            {"actors_busy", busy_over_time(spans_[i], m.elapsed_seconds, kBusyBuckets)}};
      }
      calls.push_back(std::move(call));
    }
    nlohmann::json pools = nlohmann::json::array();
    for (const PoolMetrics& p : m.pools) pools.push_back(pool_json(p));
    nlohmann::json expands = nlohmann::json::array();
    for (const ExpandMetrics& x : m.expands) expands.push_back(expand_json(x));
    nlohmann::json node_losses = nlohmann::json::array();
    for (const NodeLossMetrics& n : m.node_losses) node_losses.push_back(node_loss_json(n));
    nlohmann::json batches = nlohmann::json::array();
    for (const InputBatchMetrics& b : m.input_batches) {
      batches.push_back({{"index", b.index},
                         {"first_row", b.first_row},
                         {"rows", b.rows},
                         {"grains", b.grains},
                         {"rpcs", b.rpcs},
                         {"admitted_seconds", b.admitted_seconds},
                         {"completed_seconds", b.completed_seconds}});
    }
    // "version" changes when a field changes meaning or goes; new fields keep it.
    nlohmann::json doc = {{"format", "rayorch-report"},
                          {"version", 1},
                          {"elapsed_seconds", m.elapsed_seconds},
                          {"calls", calls},
                          {"pools", pools},
                          {"input_batches", batches},
                          {"peak_active_input_batches", m.peak_active_input_batches},
                          {"expands", expands},
                          {"root_completed_seconds", m.root_completed_seconds},
                          {"stale_reports_rejected", m.stale_reports_rejected},
                          {"actors_replaced", m.actors_replaced},
                          {"values_rebuilt", m.values_rebuilt},
                          {"grains_reexecuted", m.grains_reexecuted},
                          {"rebuild_seconds", m.rebuild_seconds},
                          {"node_losses", node_losses},
                          {"roots_by_outcome", m.roots_by_outcome},
                          {"roots_restored", m.roots_restored},
                          {"journal_discarded_bytes", m.journal_discarded_bytes},
                          {"roots_delivered", e.roots_delivered},
                          {"aborted", e.aborted}};
    nlohmann::json failures = nlohmann::json::array();
    for (const ReportFailureGroup& g : failures_) {
      nlohmann::json examples = nlohmann::json::array();
      for (const auto& [entity, row] : g.examples) {
        examples.push_back({{"entity", entity}, {"row", row}});
      }
      failures.push_back({{"call", g.call},
                          {"outcome", g.outcome},
                          {"cause", g.cause},
                          {"roots", g.roots},
                          {"examples", std::move(examples)}});
    }
    doc["failures"] = std::move(failures);
    nlohmann::json windows = nlohmann::json::array();
    for (const auto& [row, per_call_windows] : windows_) {
      nlohmann::json per_call = nlohmann::json::array();
      for (const RpcSpan& w : per_call_windows) {
        per_call.push_back(w.end >= w.start ? nlohmann::json::array({w.start, w.end})
                                            : nlohmann::json(nullptr));
      }
      windows.push_back({{"row", row}, {"windows", std::move(per_call)}});
    }
    doc["parent_windows"] = std::move(windows);
    if (e.aborted) doc["error"] = e.error;
    for (const ReportSection& s : e.sections) {
      nlohmann::json value = nlohmann::json::parse(s.json, nullptr, false);
      // A section that is not valid JSON is kept as text rather than lost.
      doc[s.name] = value.is_discarded() ? nlohmann::json(s.json) : std::move(value);
    }
    write_file_atomically(path_, doc.dump(2) + "\n");
  }

 private:
  std::string path_;
  std::vector<std::vector<RpcSpan>> spans_;  // per Call, every RPC of the run
  std::vector<ReportFailureGroup> failures_;
  // Per sampled parent (rows divisible by window_stride_), per Call: its first RPC's start
  // to its last RPC's end; kNoWindow while the Call ran none for it.
  std::map<std::size_t, std::vector<RpcSpan>> windows_;
  std::size_t window_stride_ = 1;
};

}  // namespace

std::shared_ptr<RunObserver> make_json_report(std::string path) {
  return std::make_shared<JsonReport>(std::move(path));
}

}  // namespace rayorch::detail
