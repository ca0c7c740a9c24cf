// Symbolic, typed logical data edges.
#pragma once

#include <memory>
#include <tuple>
#include <type_traits>

#include "rayorch/detail/graph.h"

namespace rayorch {

/// A symbolic, typed logical data edge of a pipeline being traced. Ports exist only while
/// `forward` runs under ro::compile; they carry no data. A Port has no truth value:
/// data-dependent branching is F::filter or logic inside a UDF.
template <class T>
class Port {
 public:
  using value_type = T;

  /// Internal: the Port `id` of `graph`.
  Port(std::shared_ptr<detail::Graph> graph, int id) : graph_(std::move(graph)), id_(id) {}

  /// Deleted: a Port is symbolic; use F::filter for data-dependent branching. The comment
  /// on the next line is what the compiler quotes when a Port is used in `if`.
  explicit operator bool() const = delete;  // a Port has no truth value: use F::filter

  /// The Port's id in its program (the N of "pN" in explain()).
  int id() const { return id_; }
  /// Internal: the graph the Port belongs to.
  const std::shared_ptr<detail::Graph>& graph() const { return graph_; }

  /// Internal: returns the id after checking that the Port belongs to the current trace.
  int checked_id(const char* what) const {
    if (detail::current_graph() != graph_.get())
      detail::throw_foreign_port(graph_.get(), id_, what);
    return id_;
  }

 private:
  std::shared_ptr<detail::Graph> graph_;
  int id_;
};

namespace detail {
template <class T>
struct IsPort : std::false_type {};
template <class T>
struct IsPort<Port<T>> : std::true_type {};

/// What a Module call returns when its UDF failed a static_assert: the error has been
/// reported once, and code that passes this value on stays quiet instead of piling up
/// follow-on errors. Never exists in a program that compiles.
struct InvalidPort {};
template <class T>
constexpr bool is_invalid_port = std::is_same_v<std::remove_cvref_t<T>, InvalidPort>;

template <class R>
struct Placeholder {
  static R make() { return R{}; }  // InvalidPort
};
template <class T>
struct Placeholder<Port<T>> {
  static Port<T> make() { return Port<T>(nullptr, -1); }
};
template <class... R>
struct Placeholder<std::tuple<R...>> {
  static std::tuple<R...> make() { return {Placeholder<R>::make()...}; }
};

/// What an operation that failed a static_assert returns in place of its Ports `R` (a Port,
/// InvalidPort or a tuple of them), so the caller's code type-checks and adds no errors.
template <class R>
R placeholder() {
  return Placeholder<R>::make();
}
}  // namespace detail

}  // namespace rayorch
