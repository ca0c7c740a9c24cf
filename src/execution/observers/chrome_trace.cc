// The Chrome-trace timeline: every RPC as a complete ("X") event, every actor start as an
// instant ("i") event on its actor's row, every pool resize as an instant on its pool's
// row with a counter of its target actors.
#include <algorithm>
#include <vector>

#include <nlohmann/json.hpp>

#include "rayorch/atomic_file.h"

#include "execution/observers/observers.h"

namespace rayorch::detail {
namespace {

class ChromeTrace final : public RunObserver {
 public:
  explicit ChromeTrace(std::string path) : path_(std::move(path)) {}

  void on_run_start(const RunStartEvent& e) override {
    calls_.assign(e.calls.begin(), e.calls.end());
    pools_.assign(e.pools.begin(), e.pools.end());
    events_ = nlohmann::json::array();
  }

  void on_rpc(const RpcEvent& e) override {
    nlohmann::json ev;
    ev["name"] = calls_[e.call];
    ev["cat"] = e.status;
    ev["ph"] = "X";
    ev["ts"] = e.start_seconds * 1e6;
    ev["dur"] = (e.end_seconds - e.start_seconds) * 1e6;
    ev["pid"] = e.pool;
    ev["tid"] = e.actor;
    ev["args"] = {{"call", calls_[e.call]},
                  {"batch_size", e.rows},
                  {"parents", e.parents},
                  {"input_batch", e.input_batch},
                  {"status", e.status}};
    events_.push_back(std::move(ev));
  }

  void on_actor_start(const ActorStartEvent& e) override {
    nlohmann::json ev;
    ev["name"] = e.error.empty() ? "actor ready" : "actor failed to start";
    ev["ph"] = "i";
    ev["s"] = "t";
    // An actor that started before the run (between runs) is shown at the run's start.
    ev["ts"] = std::max(e.run_seconds, 0.0) * 1e6;
    ev["pid"] = e.pool;
    ev["tid"] = e.actor;
    ev["args"] = {{"seconds_since_executor_start", e.seconds}};
    if (!e.error.empty()) ev["args"]["error"] = e.error;
    events_.push_back(std::move(ev));
  }

  // A pool's decision: an instant on the pool's row and a counter of its target actors.
  void on_pool_resize(const PoolResizeEvent& e) override {
    nlohmann::json ev;
    ev["name"] = e.from == e.to ? "pool resize refused" : "pool resize";
    ev["ph"] = "i";
    ev["s"] = "p";
    ev["ts"] = e.run_seconds * 1e6;
    ev["pid"] = e.pool;
    ev["args"] = {{"from", e.from}, {"to", e.to}, {"reason", e.reason}};
    events_.push_back(std::move(ev));
    if (e.from == e.to) return;
    events_.push_back({{"name", "actors"},
                       {"ph", "C"},
                       {"ts", e.run_seconds * 1e6},
                       {"pid", e.pool},
                       {"args", {{"actors", e.to}}}});
  }

  void on_run_end(const RunEndEvent& e) override {
    nlohmann::json events = std::move(events_);
    events_ = nlohmann::json::array();
    for (std::size_t p = 0; p < pools_.size(); ++p) {
      events.push_back(
          {{"name", "process_name"}, {"ph", "M"}, {"pid", p}, {"args", {{"name", pools_[p]}}}});
    }
    nlohmann::json doc = {{"traceEvents", std::move(events)}, {"displayTimeUnit", "ms"}};
    if (e.aborted) doc["otherData"] = {{"aborted", true}, {"error", e.error}};
    write_file_atomically(path_, doc.dump());
  }

  bool wants_rpc_parents() const override { return true; }

 private:
  std::string path_;
  std::vector<std::string> calls_;
  std::vector<std::string> pools_;
  nlohmann::json events_ = nlohmann::json::array();
};

}  // namespace

std::shared_ptr<RunObserver> make_chrome_trace(std::string path) {
  return std::make_shared<ChromeTrace>(std::move(path));
}

}  // namespace rayorch::detail
