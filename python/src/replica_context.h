// Which replica of its Module a Python UDF instance is: its index in the Module's pool, the
// pool's size, the CPUs and GPUs each actor asks for and the GPU devices it is given
// (rayorch_cpp.replica_context()).
//
// Threading: the local backend runs each actor on its own thread, which builds the UDF
// instance and runs all of its calls; the synchronous core runs every actor on the caller's
// thread. So the context is kept per thread: set from the instance before its constructor
// and before each of its calls, read by the UDF on the same thread. The environment is
// process-wide, so CUDA_VISIBLE_DEVICES is changed per replica only in a worker process of
// its own (isolation="process"); on threads the context carries the device list instead.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <nanobind/nanobind.h>

#include "rayorch/detail/erased.h"

namespace rayorch::python {

namespace rd = rayorch::detail;

struct ReplicaContext {
  std::string module;
  int index = -1;  ///< -1: not inside a UDF instance's constructor or call
  int replicas = 0;
  double cpus = 0.0;  ///< the Module's num_cpus per actor
  double gpus = 0.0;  ///< the Module's num_gpus per actor
  std::vector<std::string> devices;
};

/// The replicas of one Module: hands out indices as its instances are built and remembers
/// each instance's context. Shared by the Module's factory and invokers; thread-safe.
class ReplicaRegistry {
 public:
  ReplicaRegistry(std::string module, int replicas, double cpus, double gpus);

  /// The context of an instance about to be built on this thread. An instance rebuilt on
  /// the thread of the one it replaces (a lost actor) keeps that one's index.
  ReplicaContext next();
  /// Remembers `context` as `instance`'s.
  void built(const rd::UdfInstance* instance, ReplicaContext context);
  /// The context `instance` was built with.
  ReplicaContext of(const rd::UdfInstance* instance) const;

 private:
  std::string module_;
  int replicas_;
  double cpus_;
  double gpus_;
  mutable std::mutex mutex_;
  int built_ = 0;  ///< instances built so far (an index is built_ modulo replicas)
  std::map<const rd::UdfInstance*, ReplicaContext> contexts_;
};

/// Makes the next instance built on this thread replica `index` of its Module while it
/// lives (a Ray actor, a process of its own, is told its replica by the driver).
class ReplicaPreset {
 public:
  explicit ReplicaPreset(int index);
  ~ReplicaPreset();
  ReplicaPreset(const ReplicaPreset&) = delete;
  ReplicaPreset& operator=(const ReplicaPreset&) = delete;
};

/// In a worker process (isolation="process"), before its UDF instance is built: this thread
/// builds replica `replica` of its Module, and it is that replica's process alone, so its
/// constructor sees CUDA_VISIBLE_DEVICES set to the replica's devices (when it has any).
void enter_worker_process(int replica);
/// True on the thread of a worker process that enter_worker_process() set up.
bool in_worker_process();

/// Makes a context the calling thread's current replica while it lives (a constructor or
/// a call), then restores the one before.
class ReplicaScope {
 public:
  explicit ReplicaScope(ReplicaContext context);
  ~ReplicaScope();
  ReplicaScope(const ReplicaScope&) = delete;
  ReplicaScope& operator=(const ReplicaScope&) = delete;

 private:
  ReplicaContext previous_;
};

/// Binds replica_context(): the calling thread's context as a dict, or None.
void bind_replica_context(nanobind::module_& m);

}  // namespace rayorch::python
