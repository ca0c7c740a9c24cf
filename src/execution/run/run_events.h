// The observers of one run (rayorch/observer.h): the user's, then the built-in progress
// line, trace and report that RunOptions asks for, and the events they receive.
//
// Threading: the driver thread only; observers are called on it.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "rayorch/observer.h"
#include "rayorch/run_options.h"

namespace rayorch::detail {

class RunRecorder;

class RunEvents {
 public:
  /// Builds the observer list from checked options (check_run_options).
  explicit RunEvents(const RunOptions& options);

  /// No observer listens: the caller may skip building events.
  bool empty() const { return observers_.empty(); }
  /// Some observer counts the parent Entities of each RPC (RpcEvent::parents).
  bool wants_rpc_parents() const { return wants_parents_; }
  /// Some observer reads the roots of each RPC's Grains (RpcEvent::roots).
  bool wants_rpc_roots() const { return wants_roots_; }

  void run_start(const RunStartEvent& e);
  void root(const RootEvent& e);
  void rpc(const RpcEvent& e);
  void actor_start(const ActorStartEvent& e);
  void pool_resize(const PoolResizeEvent& e);
  /// True at most every 250 ms: a progress event is due.
  bool progress_due();
  void progress(const ProgressEvent& e);
  /// Ends the run for the observers once (later calls do nothing): collects their report
  /// sections and calls on_run_end. An observer's failure (a file that cannot be written)
  /// goes to `recorder` as a file error and to stderr, never out of here.
  void end(RunRecorder& recorder, bool aborted, const std::string& error,
           std::size_t roots_delivered);

 private:
  std::vector<std::shared_ptr<RunObserver>> observers_;
  bool wants_parents_ = false;
  bool wants_roots_ = false;
  bool ended_ = false;
  std::chrono::steady_clock::time_point last_progress_;
};

}  // namespace rayorch::detail
