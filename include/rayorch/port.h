// Symbolic, typed logical data edges.
#pragma once

#include <memory>

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

  /// Deleted: a Port is symbolic; use F::filter for data-dependent branching.
  explicit operator bool() const = delete;

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
}  // namespace detail

}  // namespace rayorch
