// Modules: a UDF class plus how to build and resource it. Calling one records a Call.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include <fmt/format.h>

#include "rayorch/codec.h"
#include "rayorch/detail/call_checks.h"
#include "rayorch/detail/graph.h"
#include "rayorch/detail/udf_traits.h"
#include "rayorch/errors.h"
#include "rayorch/port.h"
#include "rayorch/recovery.h"

namespace rayorch {

/// A user UDF class `U` plus how to build and resource it. Constructor arguments are
/// captured by value and replayed on every actor. Calling a Module on Ports inside
/// `forward` records a Call; one Module object used in several Calls gives one shared pool.
/// A UDF that breaks the rules of DESIGN 3.1 (no single `run`, no Column parameter, a
/// result that is not a vector or tuple of vectors) is reported where Module<U> is declared.
template <class U>
class Module {
  // Instantiates the UDF's checks with the class: one static_assert names the first problem.
  static_assert(sizeof(detail::UdfCheck<U>) > 0);

 public:
  using udf_type = U;

  /// A Module of a default-constructed U. Not explicit, so a Module member of a pipeline
  /// struct needs no initializer and the struct can be built with braces: ro::compile(P{}).
  Module() : state_(std::make_shared<State>()) { set_factory(); }

  /// Captures the UDF's constructor arguments by value.
  template <class... A>
  requires(sizeof...(A) > 0 &&
           !(sizeof...(A) == 1 &&
             (std::is_same_v<std::remove_cvref_t<A>, Module> && ...))) explicit Module(A&&... args)
      : state_(std::make_shared<State>()) {
    set_factory(std::forward<A>(args)...);
  }

  /// A copy is a new Module (its own pool) with the same options and arguments.
  Module(const Module& other) : state_(std::make_shared<State>(*other.state_)) {}
  Module& operator=(const Module& other) {
    state_ = std::make_shared<State>(*other.state_);
    return *this;
  }
  /// Moving keeps the Module's identity.
  Module(Module&&) noexcept = default;
  Module& operator=(Module&&) noexcept = default;
  ~Module() = default;

  // Each setter works on an lvalue (`m.replicas(2);`) and on a temporary in a chain
  // (`ro::Module<Ocr>().replicas(4).batch_size(32)`); it returns the Module it set.
  // Initialising a Module from a chain on a temporary copies the temporary's settings and
  // arguments into the new Module, which is then the only one using them.

  /// Number of actors in the pool (>= 1; default 1).
  Module& replicas(int n) {
    state_->options.auto_replicas = false;
    return set(&ModuleOptions::replicas, n);
  }
  /// The pool sizes itself (DESIGN 6.1.7): between `min` actors (kept while work
  /// can still reach it; 0 lets it shrink to nothing) and `max` (0: the machine's CPU count),
  /// within the executor's resource budget, following the backlog the lineage knows of.
  Module& auto_replicas(int min = 0, int max = 0) {
    state_->options.auto_replicas = true;
    state_->options.min_replicas = min;
    return set(&ModuleOptions::max_replicas, max);
  }
  /// Maximum Grains per RPC (>= 1; default 1).
  Module& batch_size(int n) { return set(&ModuleOptions::batch_size, n); }
  /// CPUs per actor (>= 0), a scheduling hint.
  Module& cpus(double n) { return set(&ModuleOptions::cpus, n); }
  /// GPUs per actor (>= 0), a scheduling hint.
  Module& gpus(double n) { return set(&ModuleOptions::gpus, n); }
  /// A named resource per actor (>= 0).
  Module& resources(const std::string& name, double amount) {
    state_->options.resources[name] = amount;
    return *this;
  }
  /// How physical attempt failures (UDF exceptions) are handled (default abort).
  Module& recovery(RecoveryPolicy p) { return set(&ModuleOptions::recovery, p); }
  /// Replays per Grain after a lost actor or a timeout (>= 0; default 1).
  Module& infra_retries(int n) { return set(&ModuleOptions::infra_retries, n); }
  /// Per-RPC deadline; an RPC running past it counts as a lost actor. The abandoned thread
  /// is not killed: it is detached, a new thread with a new UDF instance takes its slot, and
  /// its late report is rejected; with Isolation::process the worker process is killed.
  /// Past infra_retries a timeout is a UDF failure under recovery() (isolate_tail() fails
  /// the Grain that keeps timing out and the run goes on). 0 disables (default).
  Module& timeout(std::chrono::milliseconds t) { return set(&ModuleOptions::timeout, t); }
  /// An idle actor waits up to `w` for a batch of batch_size Grains while Grains upstream of
  /// the Call in the same input batch are unsealed (more may arrive), never when nothing
  /// more can arrive and never while no other RPC is running, so it adds no tail latency at
  /// the end of an input batch. For accelerator stages that pay per call. 0: never wait.
  /// The local executor honours it; testing::SyncExecutor (no clock) ignores it.
  Module& batch_wait(std::chrono::milliseconds w) { return set(&ModuleOptions::batch_wait, w); }
  /// How reservations pick Grains (default elastic).
  Module& reservation(Reservation r) { return set(&ModuleOptions::reservation, r); }

  /// Where the pool's actors run (default threads). With Isolation::process each actor is
  /// a child process: a crash (signal, abort, exit), a hang past timeout() or a memory
  /// limit exceeded costs that worker only; it is replaced, its Grains are replayed within
  /// infra_retries, and a Grain that keeps killing workers is split out of its batch until
  /// it alone is FAILED with a cause naming what happened (docs/ISOLATION.md). Every Column
  /// input type and output type of run() needs a rayorch::Codec: calling isolation() on a
  /// Module whose types lack one does not compile.
  Module& isolation(Isolation i) {
    check_codecs();
    return set(&ModuleOptions::isolation, i);
  }
  /// Process-isolated pools only: the bytes each worker may allocate beyond what it
  /// inherited from the executor's process (RLIMIT_AS). A worker that exceeds it is lost
  /// with the cause "worker exceeded its memory limit (N MiB)". 0: no limit (default).
  Module& memory_limit(std::uint64_t bytes) { return set(&ModuleOptions::memory_limit, bytes); }

  /// Shares one pool with the other Modules of `group` (ModuleOptions::colocate): a value
  /// that one member makes and another reads stays in the actor's process where the backend
  /// allows. The members must agree on every pool option; "" gives the Module its own pool.
  Module& colocate(std::string group) { return set(&ModuleOptions::colocate, std::move(group)); }

  /// The name of this Module's Calls ("name#k") and pool in explain(), metrics and
  /// messages; by default the UDF's type name without namespaces.
  Module& name(std::string n) {
    state_->name = std::move(n);
    return *this;
  }
  /// The current name.
  std::string name() const {
    return state_->name.empty() ? detail::UdfNameOf<U>::get() : state_->name;
  }

  /// The current options.
  const ModuleOptions& options() const { return state_->options; }

  /// Records a Call of this Module on Ports (one per Column parameter of `run`), followed by
  /// static arguments passed through to `run` on every RPC. Returns the output Port, or a
  /// std::tuple of Ports for several outputs. A wrong argument fails one static_assert that
  /// names it; the declared return type keeps the rest of forward() free of follow-on errors.
  template <class... A>
  detail::CallPorts<U> operator()(A&&... args) const {
    if constexpr (!detail::UdfCheck<U>::ok) {
      return {};  // reported where Module<U> was declared
    } else if constexpr ((detail::is_invalid_port<A> || ...)) {
      // An argument comes from a call that already failed its checks.
      return detail::placeholder<detail::CallPorts<U>>();
    } else if constexpr (!detail::CallCheck<U, A&&...>::ok) {
      detail::CallCheck<U, A&&...>::report();
      return detail::placeholder<detail::CallPorts<U>>();
    } else {
      using traits = detail::UdfTraits<U>;
      auto all = std::forward_as_tuple(std::forward<A>(args)...);
      return call_impl(all, std::make_index_sequence<traits::column_count>{},
                       std::make_index_sequence<std::tuple_size_v<typename traits::statics>>{});
    }
  }

 private:
  struct State {
    ModuleOptions options;
    detail::Factory factory;
    std::string name;
  };

  template <class Field, class Value>
  Module& set(Field ModuleOptions::*field, Value value) {
    state_->options.*field = std::move(value);
    return *this;
  }

  static void check_codecs() {
    if constexpr (detail::UdfCheck<U>::ok) {
      using traits = detail::UdfTraits<U>;
      detail::check_isolation_codecs(
          static_cast<typename detail::ColumnValues<typename traits::columns>::type*>(nullptr),
          static_cast<typename traits::shape::values*>(nullptr));
    }
  }

  template <class... A>
  void set_factory(A&&... args) {
    if constexpr (detail::UdfCheck<U>::ok) {
      constexpr bool constructible = std::is_constructible_v<U, const std::decay_t<A>&...>;
      static_assert(constructible,
                    "ro::Module<U>(args...): U is not constructible from these arguments");
      if constexpr (constructible) {
        state_->factory = [captured =
                               std::make_tuple(std::decay_t<A>(std::forward<A>(args))...)]() {
          return std::apply(
              [](const auto&... a) -> std::unique_ptr<detail::UdfInstance> {
                return std::make_unique<detail::UdfBox<U>>(a...);
              },
              captured);
        };
      }
    }
  }

  template <class All, std::size_t... I, std::size_t... J>
  auto call_impl(All& all, std::index_sequence<I...>, std::index_sequence<J...>) const {
    using traits = detail::UdfTraits<U>;
    using columns = typename traits::columns;
    using statics = typename traits::statics;
    using shape = typename traits::shape;
    const std::shared_ptr<detail::Graph> graph = detail::current_graph_shared();
    const std::string udf = name();
    if (graph == nullptr) {
      throw CompileError("Module<" + udf +
                         "> was called outside a trace: call Modules only inside forward() "
                         "(or the lambda) while ro::compile traces it");
    }
    std::vector<int> inputs{std::get<I>(all).checked_id(("input of " + udf).c_str())...};
    statics captured{std::tuple_element_t<J, statics>(std::get<n_cols_of() + J>(all))...};
    detail::CallRecord call;
    call.inputs = std::move(inputs);
    call.output_types = detail::output_type_names(static_cast<typename shape::values*>(nullptr));
    call.static_args = {detail::printable(std::get<J>(captured))...};
    call.codecs =
        detail::call_codecs(static_cast<typename detail::ColumnValues<columns>::type*>(nullptr),
                            static_cast<typename shape::values*>(nullptr));
    call.invoker = [captured](detail::UdfInstance& instance,
                              std::span<const detail::ColumnInput> in) -> detail::RpcOutput {
      U& udf_object = static_cast<detail::UdfBox<U>&>(instance).udf;
      const std::size_t rows = in.empty() ? 0 : in[0].size;
      return detail::convert_result(
          udf_object.run(std::tuple_element_t<I, columns>(in[I].data, in[I].size)...,
                         std::get<J>(captured)...),
          rows);
    };
    detail::ModuleRecord module{state_.get(), udf, state_->options, state_->factory, state_};
    std::vector<int> outs = graph->add_call(std::move(module), std::move(call));
    return make_ports(graph, outs, static_cast<typename shape::values*>(nullptr));
  }

  static constexpr std::size_t n_cols_of() { return detail::UdfTraits<U>::column_count; }

  template <class... V>
  static auto make_ports(const std::shared_ptr<detail::Graph>& graph, const std::vector<int>& outs,
                         std::tuple<V...>*) {
    if constexpr (sizeof...(V) == 1) {
      return Port<V...>(graph, outs[0]);
    } else {
      // An index pack, not a running counter: GCC flags `i++` in a braced pack expansion.
      return [&]<std::size_t... K>(std::index_sequence<K...>) {
        return std::tuple<Port<V>...>{Port<V>(graph, outs[K])...};
      }
      (std::index_sequence_for<V...>{});
    }
  }

  std::shared_ptr<State> state_;
};

}  // namespace rayorch
