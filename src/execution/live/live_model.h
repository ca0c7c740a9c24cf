// What the live page shows, kept from a run's events (rayorch/observer.h) as they arrive:
// the report model the report page draws (execution/report/report_model.h), built the way
// the JSON report would be at that moment, plus where each Call and pool stands now.
//
// Threading: the driver thread sends events; the endpoint's thread takes snapshots. Every
// member locks one mutex; an event holds it for a few counter updates, a snapshot for a
// copy, so the driver never waits on a page being drawn.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "rayorch/observer.h"

#include "execution/report/report_model.h"

namespace rayorch::detail {

/// One Call's queue now (ProgressEvent::calls).
struct CallNow {
  std::string call;
  std::uint64_t done = 0, ready = 0, in_flight = 0;
};

/// A pool's actors now (ProgressEvent::pools).
struct PoolNow {
  std::string pool;
  int actors = 0, ready = 0, failed = 0;
};

struct LiveSnapshot {
  ReportModel report;  ///< elapsed_seconds: until the snapshot (or the end)
  std::vector<CallNow> calls;
  std::vector<PoolNow> pools;
  std::size_t roots_total = 0;
  bool total_known = true;
  bool started = false;  ///< the run has admitted work (on_run_start came)
  bool ended = false;
};

class LiveModel {
 public:
  void run_start(const RunStartEvent& e);
  void rpc(const RpcEvent& e);
  void actor_start(const ActorStartEvent& e);
  void pool_resize(const PoolResizeEvent& e);
  void root(const RootEvent& e);
  void progress(const ProgressEvent& e);
  void end(bool aborted, std::string_view error);

  LiveSnapshot snapshot() const;

 private:
  mutable std::mutex mutex_;
  LiveSnapshot state_;            // guarded by mutex_
  std::vector<int> call_pools_;   // guarded by mutex_; per Call, its pool
  std::vector<int> pool_actors_;  // guarded by mutex_; per pool, actors now
  std::chrono::steady_clock::time_point started_at_{};
};

}  // namespace rayorch::detail
