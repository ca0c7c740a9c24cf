// The worker-pool interface: what a backend implements so that the one driver
// (execution/driver.h) can run a plan's Calls on it (DESIGN 6.1.3).
//
// A backend owns workers, grouped in pools (one pool per Module, `PlanPool`), each worker
// holding one UDF instance. It runs invocations and reports what they produced; it decides
// nothing about the program: which Grains run, in which batch, what a failure means, when
// a worker has hung, and when to replay are all the driver's decisions.
//
// Threading and ownership:
// - Every member function is called from the driver's thread only (the thread that calls
//   ExecutionCore::run / close). A backend may run workers on other threads or processes;
//   it hands their results back only through wait().
// - The driver submits a task only to a worker it knows to be idle: one that has never
//   been given a task, or whose last task's result wait() returned, or that replace()
//   made fresh. At most one task runs on a worker at a time.
// - A worker is a slot for one task, usually one actor with its UDF instance. A backend
//   may give one actor several slots (actors()/actor_of()): the Ray backend can queue
//   calls at an actor so that the next call's round trip overlaps the running one (the
//   Module option max_tasks_in_flight_per_actor; Ray's own calls per second rise by a
//   quarter with one call queued, python/bench/ray_ceiling.py). The actor runs its slots'
//   tasks one after the other; metrics and traces count actors.
// - A task owns what its worker reads (the invocation and the resolved input blocks), so
//   an attempt that the driver abandons (replace) can still read its inputs safely.
// - Results carry the run and the worker's incarnation (`epoch`) they belong to; the
//   driver fences results of abandoned attempts and of earlier runs with them.
// - Eager start (DESIGN 6.1.4): a backend may hand its pools to the driver while its actors'
//   constructors still run (starts_in_background()). It then reports every actor's start,
//   ready or failed, once, through take_actor_events(), and wait() returns early when one is in.
//   The driver submits only to workers whose actor has started and is ready; a task sent to
//   a worker that replace() made fresh waits for that worker's constructor.
// - Held actors: a backend may report a task before its actor is done with it (the Ray
//   backend fails a call whose input went with a node as soon as it finds the node lost,
//   while Ray still holds the call at its actor). The result says so (`actor_held`); the
//   driver then submits nothing to that actor until take_actor_events() reports it again
//   (`resumed`), or, held longer than a start of its pool takes, restarts it
//   (restart_held()).
// - Restarted actors: a backend may put a fresh actor in a lost one's place in the
//   background (`actor_restarting`); the driver takes it for a starting actor, whose start
//   comes through take_actor_events() as any start does.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "execution/actor_event.h"
#include "execution/block_store.h"
#include "execution/crash_record.h"
#include "execution/invoke.h"
#include "execution/value_store.h"
#include "runtime/protocol.h"

namespace rayorch::detail {

/// One invocation handed to one idle worker.
struct WorkerTask {
  std::uint64_t run = 0;  ///< the driver's run counter, echoed in the result
  int pool = -1;
  int slot = -1;  ///< the worker's index within its pool
  Invocation invocation;
  ResolvedInputs inputs;
  /// What the crash record names while the task runs (execution/crash_record.h); set only
  /// for pools whose UDFs run in the driver's process (WorkerPools::in_driver_process) when
  /// the run keeps a crash record.
  CrashLabel crash_label;
};

/// What a worker reported for one task.
struct WorkerResult {
  std::uint64_t run = 0;
  int pool = -1;
  int slot = -1;
  /// False when the worker was replaced (replace()) after the task was submitted: the
  /// attempt was abandoned and its report is late.
  bool current = true;
  Attempt attempt;
  /// The worker rebuilt its UDF instance after an ActorLost (counted as a replacement).
  bool rebuilt = false;
  /// A lost attempt whose actor another worker's result reported lost already (workers
  /// sharing one actor): it replays, but the replacement is counted once.
  bool loss_counted = false;
  /// Non-empty: the worker cannot run anything (its UDF instance could not be rebuilt).
  std::string fatal;
  /// The worker's actor is still held by this task (reported early): it takes no task
  /// until take_actor_events() reports it `resumed`.
  bool actor_held = false;
  /// The worker's actor was lost and a fresh one is starting in its place in the
  /// background: the actor takes no task until take_actor_events() reports its start (a failed
  /// start leaves it out of its pool, as at eager start).
  bool actor_restarting = false;
};

/// A node that went away with workers or blocks of the pools (Ray), once detected.
struct NodeLoss {
  std::string node;                          ///< the node's id
  std::string address;                       ///< "ip:port" of its node manager
  std::chrono::steady_clock::time_point at;  ///< when it was detected
  std::string cause;                         ///< the error that revealed it
};

class WorkerPools {
 public:
  using Clock = std::chrono::steady_clock;

  virtual ~WorkerPools() = default;

  /// Makes the store of one run's blocks. The in-process backends keep blocks in this
  /// process (ValueStore); a backend whose workers keep them elsewhere returns its own
  /// store, which resolve_inputs() fills WorkerTask::inputs for.
  virtual std::unique_ptr<BlockStore> make_store(std::shared_ptr<const RuntimePlan> plan) {
    return std::make_unique<ValueStore>(std::move(plan));
  }
  /// Workers (task slots) per pool, in plan order. Fixed for the pools' lifetime.
  virtual std::vector<int> sizes() const = 0;
  /// Actors (UDF instances) per pool, in plan order; at most sizes().
  virtual std::vector<int> actors() const { return sizes(); }
  /// The actor, within its pool, that runs the tasks of worker (pool, slot).
  virtual int actor_of(int pool, int slot) const {
    (void)pool;
    return slot;
  }
  /// True when the driver should ask holder_of() where to send the tasks of `pool`: its actors
  /// keep values that the pool's own Calls read (co-location, DESIGN 5.12). The driver asks
  /// nothing of the other pools, which pay nothing for it.
  virtual bool places_by_inputs(int pool) const {
    (void)pool;
    return false;
  }
  /// The actor of `pool` that holds most of `inputs`, or -1 (places_by_inputs pools only).
  virtual int holder_of(int pool, const ResolvedInputs& inputs) const {
    (void)pool;
    (void)inputs;
    return -1;
  }
  /// How many tasks may be outstanding at once across all pools (the driver never submits
  /// more). A deterministic backend returns 1.
  virtual std::size_t max_outstanding() const = 0;
  /// Hands `task` to the idle worker (task.pool, task.slot).
  virtual void submit(WorkerTask task) = 0;
  /// Appends the results that are ready to `out`, waiting until at least one is, an actor
  /// started (take_actor_events()), or `deadline` passes. A backend that runs tasks on the
  /// driver's thread runs them here.
  virtual void wait(Clock::time_point deadline, std::vector<WorkerResult>& out) = 0;
  /// True when the actors' constructors may still run after the pools were made: each
  /// actor's start then comes through take_actor_events(). False: every actor was built before
  /// the pools were returned (a constructor failure threw then).
  virtual bool starts_in_background() const { return false; }
  /// Appends what happened to the actors since the last call, each event once, in the order
  /// it did: starts (`ready`, `failed`), and from pools that report them, `resumed` and
  /// `restarting` (ActorEvent). The driver applies the other kinds itself.
  virtual void take_actor_events(std::vector<ActorEvent>& out) { (void)out; }
  /// Appends the nodes found lost since the last call, each once, in the order they were.
  /// Only a backend whose workers live on nodes that can go away reports any.
  virtual void take_node_losses(std::vector<NodeLoss>& out) { (void)out; }
  /// True when the pools start no actor of a self-sizing pool (sizes_itself()) by themselves
  /// and implement start_actor() / retire_actor(); their slots are their actors.
  virtual bool resizable() const { return false; }
  /// How long a pool may wait for its first actor before the driver gives up its starts
  /// (PoolState::overdue_starts): a backend whose actors may never be placed (Ray, on a
  /// cluster without the resources they ask for) sets it; nullopt: starts are not bounded
  /// (a local constructor reports its own failure).
  virtual std::optional<Clock::duration> start_timeout() const { return std::nullopt; }
  /// Stops the starts of `actors` of `pool`, which the driver gives up (start_timeout()), and
  /// says why; no start of them is reported afterwards. The driver fails them with that
  /// reason.
  virtual std::string abandon_starts(int pool, const std::vector<int>& actors) {
    (void)pool;
    (void)actors;
    return {};
  }
  /// True when `pool`'s UDFs run in the driver's own process (threads, or the driver's
  /// thread), where a crash ends the run: their tasks carry a crash label and run under a
  /// CrashScope (execution/crash_record.h).
  virtual bool in_driver_process(int pool) const {
    (void)pool;
    return false;
  }
  /// Starts the stopped actor `actor` of `pool` (never started, or retired): its constructor
  /// runs in the background and its start comes through take_actor_events().
  virtual void start_actor(int pool, int actor) {
    (void)pool;
    (void)actor;
  }
  /// Stops a started actor whose start was reported and that has no task (the driver never
  /// retires a busy or starting actor, so no Grain is lost); its slot may start again.
  virtual void retire_actor(int pool, int actor) {
    (void)pool;
    (void)actor;
  }
  /// Kills `actor` of `pool`, which a task reported early still holds (WorkerResult::
  /// actor_held), and starts a fresh one in its place in the background: the driver then
  /// takes it for a starting actor, whose start comes through take_actor_events(), and no
  /// resumed report of the old one follows. False: these pools cannot (the driver waits).
  virtual bool restart_held(int pool, int actor) {
    (void)pool;
    (void)actor;
    return false;
  }
  /// Abandons the attempt running on (pool, slot) and puts a fresh worker in its place
  /// (its constructor runs again). The abandoned attempt's result, if it ever comes, is
  /// returned by wait() with `current == false`. Throws ExecutionError if no fresh worker
  /// can be made.
  virtual void replace(int pool, int slot) = 0;
  /// Stops every worker and releases them. Does not wait for an attempt that may hang
  /// (one whose pool has a timeout). Idempotent; never throws.
  virtual void stop() noexcept = 0;
};

}  // namespace rayorch::detail
