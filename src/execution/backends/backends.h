// The worker-pool implementations (execution/worker_pool.h). Each one only runs
// invocations; the driver (execution/driver.h) decides everything else.
#pragma once

#include <memory>

#include "execution/worker_pool.h"
#include "execution/worker_server.h"
#include "program/plan.h"

namespace rayorch::detail {

/// Local threads, the embedded default: `replicas` threads per pool, each building and
/// owning its UDF instance on its own thread. A pool with Isolation::process gets proxy
/// threads instead, each driving one worker process (process_worker.h, fork_server.h).
/// Their worker server is forked from this process unless `launch` says how to start it (the
/// constructor waits for that server, not for the actors). Returns at once: each actor builds
/// its UDF instance on its own thread and its start, ready or failed, reaches the driver
/// through take_actor_events() (eager start, DESIGN 6.1.4).
std::unique_ptr<WorkerPools> make_thread_pools(std::shared_ptr<const RuntimePlan> plan,
                                               const WorkerServerLaunch& launch = {});

/// The deterministic backend of testing::SyncExecutor: one worker per pool, run on the
/// driver's thread inside wait(), one task at a time. With `wire`, every invocation and
/// report crosses as bytes (protocol_codec) before the other side sees it. Timeouts cannot
/// interrupt it: an attempt runs to its end.
std::unique_ptr<WorkerPools> make_inline_pools(std::shared_ptr<const RuntimePlan> plan, bool wire);

}  // namespace rayorch::detail
