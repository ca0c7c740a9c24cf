// Pipelines, compilation and the immutable compiled program.
#pragma once

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
struct PortValue;
template <class T>
struct PortValue<Port<T>> {
  using type = T;
};

template <class R>
struct OutputSpec {
  static_assert(IsPort<R>::value,
                "forward() must return a ro::Port<T> or a std::tuple of ro::Port<T>");
  using type = typename PortValue<R>::type;
  static std::vector<int> ids(const R& r) { return {r.checked_id("pipeline output")}; }
};
template <class... P>
struct OutputSpec<std::tuple<P...>> {
  static_assert((IsPort<P>::value && ...),
                "forward() must return a ro::Port<T> or a std::tuple of ro::Port<T>");
  using type = MultiOutput<typename PortValue<P>::type...>;
  static std::vector<int> ids(const std::tuple<P...>& r) {
    return std::apply(
        [](const auto&... p) { return std::vector<int>{p.checked_id("pipeline output")...}; }, r);
  }
};

template <class F>
struct Signature;
#define RAYORCH_SIGNATURE(QUALS)                                                    \
  template <class R, class C, class... P>                                           \
  struct Signature<R (C::*)(P...) QUALS> {                                          \
    using result = R;                                                               \
    using inputs = std::tuple<typename PortValue<std::remove_cvref_t<P>>::type...>; \
  };
RAYORCH_SIGNATURE()
RAYORCH_SIGNATURE(const)
RAYORCH_SIGNATURE(noexcept)
RAYORCH_SIGNATURE(const noexcept)
#undef RAYORCH_SIGNATURE

template <class P>
concept HasForward = requires {
  &P::forward;
};

template <class P>
auto entry_point() {
  if constexpr (HasForward<P>) {
    return &P::forward;
  } else {
    return &P::operator();
  }
}

/// Input and output types of a pipeline class or callable.
template <class P>
struct PipelineTraits {
  using sig = Signature<decltype(entry_point<P>())>;
  using inputs = typename sig::inputs;
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

/// Traces `pipeline.forward` (or a callable taking Ports) once and compiles it.
/// Throws CompileError naming the offending Port, Call or Module.
template <class P>
Compiled<std::remove_cvref_t<P>> compile(P&& pipeline, CompileOptions options = {}) {
  using Plain = std::remove_cvref_t<P>;
  using traits = detail::PipelineTraits<Plain>;
  auto graph = std::make_shared<detail::Graph>();
  std::vector<int> outputs;
  {
    detail::TraceScope scope(graph);
    auto sources = []<std::size_t... I>(detail::Graph & g, const std::shared_ptr<detail::Graph>& sg,
                                        std::index_sequence<I...>) {
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

}  // namespace rayorch
