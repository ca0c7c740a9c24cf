// Modules: a UDF class plus how to build and resource it. Calling one records a Call.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include <fmt/format.h>

#include "rayorch/detail/graph.h"
#include "rayorch/detail/udf_traits.h"
#include "rayorch/errors.h"
#include "rayorch/port.h"
#include "rayorch/recovery.h"

namespace rayorch {

namespace detail {

// Fails with a readable message when argument `I` is not the Port the UDF expects.
template <std::size_t I, class Expected, class Arg>
constexpr void check_port_argument() {
  static_assert(IsPort<Arg>::value,
                "Module call: the leading arguments must be ro::Port<T>, one per ro::Column<T> "
                "parameter of the UDF's run(); see the argument index I in this instantiation");
  if constexpr (IsPort<Arg>::value) {
    static_assert(std::is_same_v<typename Arg::value_type, Expected>,
                  "Module call: Port type does not match the UDF's run() parameter "
                  "(Arg is the Port passed, Expected the Column<T> element type, I the index)");
  }
}

template <class T>
std::string printable(const T& value) {
  if constexpr (fmt::is_formattable<T>::value) {
    return fmt::format("{}", value);
  } else {
    return "<" + type_name<T>() + ">";
  }
}

template <class... T>
std::vector<std::string> output_type_names(std::tuple<T...>*) {
  return {type_name<T>()...};
}

}  // namespace detail

/// A user UDF class `U` plus how to build and resource it. Constructor arguments are
/// captured by value and replayed on every actor. Calling a Module on Ports inside
/// `forward` records a Call; one Module object used in several Calls gives one shared pool.
template <class U>
class Module {
 public:
  using udf_type = U;

  /// Captures the UDF's constructor arguments by value.
  template <class... A>
  requires(!(sizeof...(A) == 1 &&
             (std::is_same_v<std::remove_cvref_t<A>, Module> && ...))) explicit Module(A&&... args)
      : state_(std::make_shared<State>()) {
    static_assert(std::is_constructible_v<U, const std::decay_t<A>&...>,
                  "ro::Module<U>(args...): U is not constructible from these arguments");
    state_->factory = [captured = std::make_tuple(std::decay_t<A>(std::forward<A>(args))...)]() {
      return std::apply(
          [](const auto&... a) -> std::unique_ptr<detail::UdfInstance> {
            return std::make_unique<detail::UdfBox<U>>(a...);
          },
          captured);
    };
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

  /// Number of actors in the pool (>= 1; default 1).
  Module&& replicas(int n) && {
    state_->options.replicas = n;
    return std::move(*this);
  }
  Module& replicas(int n) & {
    state_->options.replicas = n;
    return *this;
  }
  /// Maximum Grains per RPC (>= 1; default 1).
  Module&& batch_size(int n) && {
    state_->options.batch_size = n;
    return std::move(*this);
  }
  Module& batch_size(int n) & {
    state_->options.batch_size = n;
    return *this;
  }
  /// CPUs per actor (>= 0), a scheduling hint.
  Module&& cpus(double n) && {
    state_->options.cpus = n;
    return std::move(*this);
  }
  Module& cpus(double n) & {
    state_->options.cpus = n;
    return *this;
  }
  /// GPUs per actor (>= 0), a scheduling hint.
  Module&& gpus(double n) && {
    state_->options.gpus = n;
    return std::move(*this);
  }
  Module& gpus(double n) & {
    state_->options.gpus = n;
    return *this;
  }
  /// A named resource per actor (>= 0).
  Module&& resources(const std::string& name, double amount) && {
    state_->options.resources[name] = amount;
    return std::move(*this);
  }
  Module& resources(const std::string& name, double amount) & {
    state_->options.resources[name] = amount;
    return *this;
  }
  /// How physical attempt failures (UDF exceptions) are handled (default abort).
  Module&& recovery(RecoveryPolicy p) && {
    state_->options.recovery = p;
    return std::move(*this);
  }
  Module& recovery(RecoveryPolicy p) & {
    state_->options.recovery = p;
    return *this;
  }
  /// Replays per Grain after a lost actor or a timeout (>= 0; default 1).
  Module&& infra_retries(int n) && {
    state_->options.infra_retries = n;
    return std::move(*this);
  }
  Module& infra_retries(int n) & {
    state_->options.infra_retries = n;
    return *this;
  }
  /// Per-RPC deadline; an RPC running past it counts as a lost actor. The abandoned thread
  /// is not killed: it is detached and its late report is rejected. 0 disables (default).
  Module&& timeout(std::chrono::milliseconds t) && {
    state_->options.timeout = t;
    return std::move(*this);
  }
  Module& timeout(std::chrono::milliseconds t) & {
    state_->options.timeout = t;
    return *this;
  }
  /// How reservations pick Grains (default elastic).
  Module&& reservation(Reservation r) && {
    state_->options.reservation = r;
    return std::move(*this);
  }
  Module& reservation(Reservation r) & {
    state_->options.reservation = r;
    return *this;
  }

  /// The current options.
  const ModuleOptions& options() const { return state_->options; }

  /// Records a Call of this Module on Ports (one per Column parameter of `run`), followed by
  /// static arguments passed through to `run` on every RPC. Returns the output Port, or a
  /// std::tuple of Ports for several outputs.
  template <class... A>
  auto operator()(A&&... args) const {
    using traits = detail::UdfTraits<U>;
    constexpr std::size_t n_cols = traits::column_count;
    constexpr std::size_t n_statics = std::tuple_size_v<typename traits::statics>;
    static_assert(sizeof...(A) == n_cols + n_statics,
                  "Module call: pass one Port per ro::Column<T> parameter of the UDF's run(), "
                  "then exactly its static arguments");
    auto all = std::forward_as_tuple(std::forward<A>(args)...);
    return call_impl(all, std::make_index_sequence<n_cols>{},
                     std::make_index_sequence<n_statics>{});
  }

 private:
  struct State {
    ModuleOptions options;
    detail::Factory factory;
  };

  template <class All, std::size_t... I, std::size_t... J>
  auto call_impl(All& all, std::index_sequence<I...>, std::index_sequence<J...>) const {
    using traits = detail::UdfTraits<U>;
    using columns = typename traits::columns;
    using statics = typename traits::statics;
    using shape = typename traits::shape;
    (detail::check_port_argument<I,
                                 typename detail::ColumnOf<std::tuple_element_t<I, columns>>::type,
                                 std::remove_cvref_t<std::tuple_element_t<I, All>>>(),
     ...);
    detail::Graph* graph = detail::current_graph();
    const std::string udf = detail::short_type_name(detail::type_name<U>());
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
  static auto make_ports(detail::Graph* graph, const std::vector<int>& outs, std::tuple<V...>*) {
    std::shared_ptr<detail::Graph> shared = shared_graph(graph);
    if constexpr (sizeof...(V) == 1) {
      return Port<V...>(shared, outs[0]);
    } else {
      // An index pack, not a running counter: GCC flags `i++` in a braced pack expansion.
      return [&]<std::size_t... K>(std::index_sequence<K...>) {
        return std::tuple<Port<V>...>{Port<V>(shared, outs[K])...};
      }
      (std::index_sequence_for<V...>{});
    }
  }

  static std::shared_ptr<detail::Graph> shared_graph(detail::Graph* graph);

  std::shared_ptr<State> state_;
};

template <class U>
std::shared_ptr<detail::Graph> Module<U>::shared_graph(detail::Graph*) {
  return detail::current_graph_shared();
}

}  // namespace rayorch
