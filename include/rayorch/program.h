// Pipelines, compilation and the immutable compiled program.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "rayorch/detail/graph.h"
#include "rayorch/detail/udf_traits.h"
#include "rayorch/errors.h"
#include "rayorch/port.h"

namespace rayorch {

/// Base of a pipeline class: derive from it, declare Modules as members and write
/// `Port<...> forward(Port<...> ...)`. `forward` runs once, on symbolic Ports, when the
/// pipeline is compiled.
struct Pipeline {};

/// Options of ro::compile.
struct CompileOptions {
  bool optimize = true;  ///< run canonicalisation (broadcast-chain collapse)
  /// Co-locate the chains the compiler finds (DESIGN 5.12): a Module whose every output is
  /// read only by Calls of one other Module shares that Module's pool when neither declares
  /// a colocate group and the two agree on every option of a pool (replicas, resources,
  /// timeout, isolation, ...). Off by default: a shared pool of N actors runs the two Calls
  /// one at a time on each, where two pools run 2N at once.
  bool auto_colocate = false;
};

/// Marks a pipeline with several outputs: RunResult::outputs is then a tuple of vectors.
template <class... O>
struct MultiOutput {};

namespace detail {

struct RuntimePlan;

/// Verifies, analyses, canonicalises and lowers a traced graph (src/program).
std::shared_ptr<const RuntimePlan> compile_graph(Graph& graph, const CompileOptions& options);
/// The explain() text of a plan.
std::string explain_plan(const RuntimePlan& plan);

template <class T>
struct PortValue {
  static constexpr bool valid = false;
  using type = T;
};
template <class T>
struct PortValue<Port<T>> {
  static constexpr bool valid = true;
  using type = T;
};
// An output from a Module call that failed its checks keeps its place, so RunResult keeps
// the shape the user wrote and code reading it adds no errors.
template <>
struct PortValue<InvalidPort> {
  static constexpr bool valid = true;
  using type = InvalidPort;
};

// What forward() returns: `valid` when it is a Port or a tuple of Ports; `poisoned` when a
// Module call inside it already failed a static_assert (nothing to trace then).
template <class R>
struct OutputSpec {
  static constexpr bool valid = false;
  static constexpr bool poisoned = false;
  using type = InvalidPort;
};
template <class T>
struct OutputSpec<Port<T>> {
  static constexpr bool valid = true;
  static constexpr bool poisoned = false;
  using type = T;
  static std::vector<int> ids(const Port<T>& r) { return {r.checked_id("pipeline output")}; }
};
template <>
struct OutputSpec<InvalidPort> {
  static constexpr bool valid = true;
  static constexpr bool poisoned = true;
  using type = InvalidPort;
};
template <class... P>
struct OutputSpec<std::tuple<P...>> {
  static constexpr bool valid = (... && (IsPort<P>::value || is_invalid_port<P>));
  static constexpr bool poisoned = (is_invalid_port<P> || ...);
  using type = MultiOutput<typename PortValue<P>::type...>;
  static std::vector<int> ids(const std::tuple<P...>& r) {
    return std::apply(
        [](const auto&... p) { return std::vector<int>{p.checked_id("pipeline output")...}; }, r);
  }
};

template <class F>
struct Signature {
  static constexpr bool valid = false;
};
#define RAYORCH_SIGNATURE(QUALS, CONST)                                                   \
  template <class R, class C, class... P>                                                 \
  struct Signature<R (C::*)(P...) QUALS> {                                                \
    static constexpr bool valid = true;                                                   \
    static constexpr bool is_const = CONST;                                               \
    static constexpr bool ports_only = (PortValue<std::remove_cvref_t<P>>::valid && ...); \
    using result = R;                                                                     \
    using params = std::tuple<std::remove_cvref_t<P>...>;                                 \
  };
RAYORCH_SIGNATURE(, false)
RAYORCH_SIGNATURE(const, true)
RAYORCH_SIGNATURE(noexcept, false)
RAYORCH_SIGNATURE(const noexcept, true)
#undef RAYORCH_SIGNATURE

template <class P>
concept HasForward = requires {
  &P::forward;
};
template <class P>
concept HasCallOperator = requires {
  &P::operator();
};

// The member that ro::compile traces: forward() of a pipeline class, else operator().
// A class, not a function with a deduced return type: a lambda whose body does not compile
// then reports its own error once instead of one more error at every use.
template <class P>
struct EntryPoint {
  using type = void;
};
template <class P>
requires(HasForward<P>) struct EntryPoint<P> {
  using type = decltype(&P::forward);
};
template <class P>
requires(!HasForward<P> && HasCallOperator<P>) struct EntryPoint<P> {
  using type = decltype(&P::operator());
};

template <class Params>
struct SourceTypes;
template <class... P>
struct SourceTypes<std::tuple<P...>> {
  using type = std::tuple<typename PortValue<P>::type...>;
};

/// The first thing wrong with a pipeline type, in the order a user should fix them.
enum class PipelineProblem : std::uint8_t {
  none,
  no_entry,    ///< neither forward() nor a single non-template operator()
  not_member,  ///< forward is not a plain member function
  not_ports,   ///< a parameter that is not a ro::Port<T>
  bad_result,  ///< a result that is neither a Port nor a tuple of Ports
  not_const,   ///< a const pipeline with a non-const forward()
};

template <class P, bool Const>
constexpr PipelineProblem pipeline_problem() {
  using entry = typename EntryPoint<P>::type;
  if constexpr (std::is_void_v<entry>) {
    return PipelineProblem::no_entry;
  } else if constexpr (!Signature<entry>::valid) {
    return PipelineProblem::not_member;
  } else if constexpr (!Signature<entry>::ports_only) {
    return PipelineProblem::not_ports;
  } else if constexpr (!OutputSpec<typename Signature<entry>::result>::valid) {
    return PipelineProblem::bad_result;
  } else if constexpr (Const && !Signature<entry>::is_const) {
    return PipelineProblem::not_const;
  } else {
    return PipelineProblem::none;
  }
}

/// Instantiating this reports the first problem of pipeline `P` as one static_assert.
template <class P, bool Const>
struct PipelineCheck {
  static constexpr PipelineProblem problem = pipeline_problem<P, Const>();
  static_assert(problem != PipelineProblem::no_entry,
                "ro::compile needs a pipeline class with one forward(ro::Port<T>...) member or a "
                "callable with one non-template operator() taking ro::Port<T> (spell out the "
                "lambda's parameter types, no `auto`); if an error inside the lambda is reported "
                "above, fix that first: its return type could not be deduced");
  static_assert(problem != PipelineProblem::not_member,
                "ro::compile: forward() must be a non-static, non-overloaded member function");
  static_assert(problem != PipelineProblem::not_ports,
                "ro::compile: every parameter of forward() (or of the lambda) must be a "
                "ro::Port<T>; each one is a source column");
  static_assert(problem != PipelineProblem::bad_result,
                "forward() must return a ro::Port<T> or a std::tuple of ro::Port<T>");
  static_assert(problem != PipelineProblem::not_const,
                "ro::compile: forward() is not const, so pass the pipeline as a non-const object "
                "or a temporary (ro::compile(P{})), or declare forward() const");
  static constexpr bool ok = problem == PipelineProblem::none;
};

/// Input and output types of a pipeline class or callable. For a pipeline that fails its
/// checks they are what can be recovered of its signature, so that code using
/// Compiled<P> and its executors adds no errors of its own.
template <class P, class = void>
struct PipelineTraits {
  using inputs = std::tuple<>;
  using output = InvalidPort;
};
template <class P>
struct PipelineTraits<P, std::enable_if_t<Signature<typename EntryPoint<P>::type>::valid>> {
  using sig = Signature<typename EntryPoint<P>::type>;
  using inputs = typename SourceTypes<typename sig::params>::type;
  using output = typename OutputSpec<typename sig::result>::type;
};

}  // namespace detail

/// An immutable compiled program: the RuntimePlan of pipeline `P`. Cheap to copy; later
/// changes to the pipeline's Modules do not affect it.
template <class P>
class Compiled {
 public:
  using inputs = typename detail::PipelineTraits<P>::inputs;  ///< std::tuple of source types
  using output = typename detail::PipelineTraits<P>::output;  ///< output type or MultiOutput

  /// Internal: wraps a compiled plan.
  explicit Compiled(std::shared_ptr<const detail::RuntimePlan> plan) : plan_(std::move(plan)) {}

  /// One line per Port, `pN kind dD <- [inputs] => rule`, plus rewrite lines.
  std::string explain() const { return detail::explain_plan(*plan_); }
  /// Internal: the plan.
  const std::shared_ptr<const detail::RuntimePlan>& plan() const { return plan_; }

 private:
  std::shared_ptr<const detail::RuntimePlan> plan_;
};

/// Traces `pipeline.forward` (or a callable taking Ports) once and compiles it. The pipeline
/// may be an lvalue or a temporary (`ro::compile(P{})`). Throws CompileError naming the
/// offending Port, Call or Module.
template <class P>
Compiled<std::remove_cvref_t<P>> compile(P&& pipeline, CompileOptions options = {}) {
  using Plain = std::remove_cvref_t<P>;
  constexpr bool is_const = std::is_const_v<std::remove_reference_t<P>>;
  if constexpr (!detail::PipelineCheck<Plain, is_const>::ok) {
    return Compiled<Plain>(nullptr);  // reported by PipelineCheck
  } else if constexpr (detail::OutputSpec<
                           typename detail::PipelineTraits<Plain>::sig::result>::poisoned) {
    return Compiled<Plain>(nullptr);  // a Module call in forward() reported its error
  } else {
    using traits = detail::PipelineTraits<Plain>;
    auto graph = std::make_shared<detail::Graph>();
    std::vector<int> outputs;
    {
      detail::TraceScope scope(graph);
      auto sources = []<std::size_t... I>(
          detail::Graph & g, const std::shared_ptr<detail::Graph>& sg, std::index_sequence<I...>) {
        using in = typename traits::inputs;
        return std::tuple<Port<std::tuple_element_t<I, in>>...>{Port<std::tuple_element_t<I, in>>(
            sg, g.add_source(detail::type_name<std::tuple_element_t<I, in>>()))...};
      }
      (*graph, graph, std::make_index_sequence<std::tuple_size_v<typename traits::inputs>>{});
      auto result = std::apply(
          [&](auto&... s) {
            if constexpr (detail::HasForward<Plain>) {
              return pipeline.forward(s...);
            } else {
              return pipeline(s...);
            }
          },
          sources);
      outputs = detail::OutputSpec<decltype(result)>::ids(result);
      graph->set_outputs(std::move(outputs));
      graph->seal();
    }
    return Compiled<Plain>(detail::compile_graph(*graph, options));
  }
}

}  // namespace rayorch
