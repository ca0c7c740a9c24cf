// The contract between the Ray backend's C++ pools and its Python side, from the C++ end.
//
// python/rayorch_cpp/_ray_contract.py states it for Python (RayBackendProtocol) and defines
// the names used on both sides; the value types that cross (CallStatus, CallReport,
// FinishedCall) are defined here and bound once (bind_ray_contract), so Python uses these very
// types and neither side re-encodes them. RayBackendClient is the only place that names a
// method of the Python backend: one C++ method per Protocol method, with its types.
//
// Threading: every call into Python, and every copy or destruction of a RayBackendClient,
// happens on the driver's thread; the client takes the GIL itself.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "py_values.h"
#include <nanobind/nanobind.h>

namespace rayorch::python {

/// How one call (one RPC on one actor) ended. The first four mean the actor ran the call
/// (ran_on_actor()); the others are Ray's, and the call may not have run to its end.
enum class CallStatus : std::uint8_t {
  ok,                  ///< the actor ran the call; `report` holds the protocol report
  call_failed,         ///< the actor ran the call and it failed as a whole (`error`)
  udf_lost,            ///< the UDF raised ActorLost; the actor rebuilt its UDF instance
  udf_lost_unrebuilt,  ///< the UDF raised ActorLost and the rebuild failed (`rebuild_error`)
  actor_lost,          ///< Ray: the actor or its node is gone
  block_lost,          ///< Ray: an input block was lost with its node (`lost_object`)
  ray_error,           ///< Ray: any other error; the call did not finish on the actor
};

/// True when the actor ran the call: it applied the call's evictions and keeps the blocks
/// the call carried.
constexpr bool ran_on_actor(CallStatus s) {
  return s == CallStatus::ok || s == CallStatus::call_failed || s == CallStatus::udf_lost ||
         s == CallStatus::udf_lost_unrebuilt;
}

/// What the driver learns of one finished call. Made by the actor (RayWorker::run) and
/// shipped through Ray's object store (hence picklable), or by the Python backend when Ray
/// reports an error instead.
struct CallReport {
  CallStatus status = CallStatus::ok;
  std::string report;  ///< ok: the protocol bytes of the Report (runtime/protocol_codec.h)
  std::string error;   ///< any other status: what went wrong, "Type: message"
  double start_s = 0;  ///< wall-clock seconds on the actor; 0 when it did not run the call
  double end_s = 0;
  std::string rebuild_error;  ///< udf_lost_unrebuilt: why the UDF instance was not rebuilt
  /// block_lost: the hex id of the object Ray could not find, when its error names one.
  std::string lost_object;
  /// The backend failed the call before Ray ended it (its input went with a node found
  /// lost): the actor may still be held by it, so it takes no other call until
  /// take_resumed() names it (the backend keeps the held calls: it waits for their ends).
  bool actor_held = false;
};

/// A call whose report is in, under the token the driver gave it at submission.
struct FinishedCall {
  std::uint64_t token = 0;
  CallReport report;
};

/// Binds CallStatus, CallReport and FinishedCall into the extension module.
void bind_ray_contract(nanobind::module_& m);

/// A started rayorch_cpp._ray_backend.RayBackend (or any RayBackendProtocol), typed.
class RayBackendClient {
 public:
  explicit RayBackendClient(nanobind::object backend) : backend_(std::move(backend)) {}
  RayBackendClient(const RayBackendClient& other);
  RayBackendClient& operator=(const RayBackendClient&) = delete;
  /// Drops the reference under the GIL, or leaks it when the interpreter is going.
  ~RayBackendClient();

  std::vector<int> actors_per_pool() const;
  std::vector<int> max_tasks_in_flight_per_actor() const;
  /// The actors that started since the last call (eager start), each once: (pool, actor,
  /// error), the error empty for an actor that is ready.
  std::vector<std::tuple<int, int, std::string>> take_started() const;
  /// The nodes found lost since the last call, each once: (node id, "ip:port", wall-clock
  /// seconds when the loss was detected, the error that revealed it).
  std::vector<std::tuple<std::string, std::string, double, std::string>> take_node_losses() const;
  /// Puts `values` (a list) into the object store; returns its ObjectRef.
  Ref put(nanobind::handle values) const;
  /// The values (one list each) of the blocks behind `refs`, fetched in one round trip.
  nanobind::list get(nanobind::list refs) const;
  /// Has actor (pool, actor) put `block`, an output it kept (DESIGN 5.12), into the object
  /// store; returns its ObjectRef.
  Ref export_block(int pool, int actor, std::uint64_t block) const;
  /// Sends one call to actor (pool, actor); returns the ObjectRefs of its output blocks.
  std::vector<Ref> submit(int pool, int actor, std::uint64_t token, std::size_t output_blocks,
                          const std::string& task, nanobind::tuple blocks) const;
  /// The calls that finished, waiting up to `timeout_s` for the first (or for a held actor's
  /// release: take_resumed()).
  std::vector<FinishedCall> wait(double timeout_s) const;
  /// The actors that calls reported with actor_held held and no such call holds any more,
  /// since the last call, each once: (pool, actor).
  std::vector<std::pair<int, int>> take_resumed() const;
  /// Kills a hung actor and puts a fresh one, fully built, in its place.
  void replace(int pool, int actor) const;
  /// Kills an actor Ray reported lost and starts a fresh one in its slot in the background
  /// (elsewhere if it can); its start comes through take_started().
  void restart_lost(int pool, int actor) const;
  /// Kills an actor that calls reported early (actor_held) still hold and starts a fresh one
  /// in its slot in the background, where Ray places it; its start comes through
  /// take_started().
  void restart_held(int pool, int actor) const;
  /// Restarts, as restart_lost(), every ready actor without a call that ran on a node found
  /// lost since the last call; returns them as (pool, actor).
  std::vector<std::pair<int, int>> restart_idle_lost() const;
  /// How long a pool may wait for its first actor, in seconds (actor_startup_timeout_s).
  double startup_timeout_s() const;
  /// Kills the actors of `pool` whose starts the driver gave up (their starts are never
  /// reported) and returns why they could not start: what they ask for against what the
  /// cluster has.
  std::string abandon_starts(int pool, const std::vector<int>& actors) const;
  /// Starts an actor in the empty slot `actor` of a self-sizing pool (in the background).
  void start(int pool, int actor) const;
  /// Stops the ready, idle actor `actor` of a self-sizing pool; its slot is empty again.
  void retire(int pool, int actor) const;
  void stop() const;

 private:
  nanobind::object backend_;
};

}  // namespace rayorch::python
