// What happens to an actor (one UDF instance) over an executor's life, as one value: the
// backends report some of these events (WorkerPools::take_actor_events), the driver applies
// the others itself, and one PoolState per pool (execution/run/pool_state.h) takes them all
// through PoolState::apply. Plain data: an event can be logged, replayed and tested.
#pragma once

#include <chrono>
#include <string>

namespace rayorch::detail {

struct ActorEvent {
  enum class Kind {
    /// The driver asked the pools to start a stopped actor (a self-sizing pool grew).
    starting,
    /// Reported: the actor's constructor finished; it takes tasks.
    ready,
    /// Reported: the actor's constructor failed (`error`): it stays out of its pool for the
    /// executor's life.
    failed,
    /// The driver found a result reported before its actor was done with the task
    /// (WorkerResult::actor_held): the actor takes no task until it is resumed.
    held,
    /// Reported: a held actor is free again.
    resumed,
    /// Reported (or applied by the driver from WorkerResult::actor_restarting, or after
    /// WorkerPools::restart_held): the actor was lost or killed and a fresh one is starting
    /// in its place; its start follows as `ready` or `failed`.
    restarting,
    /// The driver stopped an idle ready actor above its pool's target (self-sizing pools).
    retired,
  };

  Kind kind = Kind::ready;
  int pool = -1;
  int actor = -1;  ///< within its pool, as WorkerPools::actor_of() numbers them
  std::chrono::steady_clock::time_point at;
  std::string error;  ///< `failed`: the constructor's error, naming the Module
};

/// The event's kind as a word ("ready", "held", ...), for messages and logs.
constexpr const char* to_string(ActorEvent::Kind kind) {
  switch (kind) {
    case ActorEvent::Kind::starting:
      return "starting";
    case ActorEvent::Kind::ready:
      return "ready";
    case ActorEvent::Kind::failed:
      return "failed";
    case ActorEvent::Kind::held:
      return "held";
    case ActorEvent::Kind::resumed:
      return "resumed";
    case ActorEvent::Kind::restarting:
      return "restarting";
    case ActorEvent::Kind::retired:
      return "retired";
  }
  return "unknown";
}

}  // namespace rayorch::detail
