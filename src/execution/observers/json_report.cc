// The JSON report: the run's metrics plus every observer's section.
#include <nlohmann/json.hpp>

#include "rayorch/atomic_file.h"
#include "rayorch/metrics.h"

#include "execution/observers/observers.h"

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

class JsonReport final : public RunObserver {
 public:
  explicit JsonReport(std::string path) : path_(std::move(path)) {}

  void on_run_end(const RunEndEvent& e) override {
    const RunMetrics& m = e.metrics;
    nlohmann::json calls = nlohmann::json::array();
    for (const CallMetrics& c : m.calls) calls.push_back(call_json(c));
    nlohmann::json pools = nlohmann::json::array();
    for (const PoolMetrics& p : m.pools) pools.push_back(pool_json(p));
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
};

}  // namespace

std::shared_ptr<RunObserver> make_json_report(std::string path) {
  return std::make_shared<JsonReport>(std::move(path));
}

}  // namespace rayorch::detail
