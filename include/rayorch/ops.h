// Structural operators (DESIGN 3.2): expand, reduce, filter, broadcast and aligned forms.
#pragma once

#include <memory>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "rayorch/column.h"
#include "rayorch/detail/graph.h"
#include "rayorch/detail/udf_traits.h"
#include "rayorch/port.h"

namespace rayorch {

/// Selects the membership Port of a reduce: a child is gathered when its member Item is
/// PRESENT, left out when DROPPED, and suppresses the whole group when FAILED/SUPPRESSED.
template <class M>
struct Members {
  Port<M> port;
};

namespace detail {

template <class T>
ListOps list_ops() {
  static_assert(!std::is_same_v<T, bool>,
                "F::expand of std::vector<bool> is not supported (its elements are not "
                "addressable); return std::vector<char> or a small struct instead");
  ListOps ops;
  ops.size = [](const void* list) { return static_cast<const std::vector<T>*>(list)->size(); };
  ops.at = [](const void* list, std::size_t i) -> const void* {
    return &(*static_cast<const std::vector<T>*>(list))[i];
  };
  return ops;
}

template <class T>
GroupMaker group_maker() {
  return [](std::vector<const void*> members, std::shared_ptr<const void> keep,
            const void** group) -> BlockRef {
    std::vector<Group<T>> one;
    one.emplace_back(std::move(members), std::move(keep));
    auto block = std::make_shared<VectorBlock<Group<T>>>(std::move(one));
    *group = &block->values[0];
    return block;
  };
}

template <class T>
struct ListElement {
  static constexpr bool value = false;
};
template <class T, class A>
struct ListElement<std::vector<T, A>> {
  static constexpr bool value = true;
  using type = T;
};

inline Graph& tracing_graph(const char* what) {
  Graph* g = current_graph();
  if (g == nullptr) {
    throw CompileError(std::string("F::") + what +
                       " was called outside a trace: use structural operators only inside "
                       "forward() (or the lambda) while ro::compile traces it");
  }
  return *g;
}

}  // namespace detail

/// The structural operators.
namespace F {

/// Each element of a list-valued Call output becomes an ordered child Entity in a new
/// child Domain. A Port can be expanded once.
template <class T>
Port<T> expand(const Port<std::vector<T>>& list) {
  auto ops = detail::list_ops<T>();
  detail::Graph& g = detail::tracing_graph("expand");
  auto ids = g.add_expand({list.checked_id("F::expand")}, {ops}, {detail::type_name<T>()});
  return Port<T>(detail::current_graph_shared(), ids[0]);
}

/// Several list outputs of the same Call expanded as one Expansion (one shared child
/// Domain); the lists must have equal lengths per row.
template <class... T>
std::tuple<Port<T>...> expand_aligned(const Port<std::vector<T>>&... lists) {
  static_assert(sizeof...(T) >= 1, "F::expand_aligned needs at least one Port");
  detail::Graph& g = detail::tracing_graph("expand_aligned");
  auto ids = g.add_expand({lists.checked_id("F::expand_aligned")...}, {detail::list_ops<T>()...},
                          {detail::type_name<T>()...});
  auto shared = detail::current_graph_shared();
  return [&]<std::size_t... I>(std::index_sequence<I...>) {
    return std::tuple<Port<T>...>{Port<T>(shared, ids[I])...};
  }
  (std::index_sequence_for<T...>{});
}

/// Gathers the surviving child values of each parent, in ordinal order, as one parent Item.
template <class T>
Port<Group<T>> reduce(const Port<T>& values) {
  detail::Graph& g = detail::tracing_graph("reduce");
  auto ids = g.add_reduce({values.checked_id("F::reduce")}, -1, {detail::group_maker<T>()},
                          {detail::type_name<Group<T>>()});
  return Port<Group<T>>(detail::current_graph_shared(), ids[0]);
}

/// Wraps a Port as the explicit membership of a reduce.
template <class M>
Members<M> members(const Port<M>& port) {
  return Members<M>{port};
}

/// reduce with an explicit membership Port in the same child Domain.
template <class T, class M>
Port<Group<T>> reduce(const Port<T>& values, const Members<M>& members) {
  detail::Graph& g = detail::tracing_graph("reduce");
  auto ids =
      g.add_reduce({values.checked_id("F::reduce")}, members.port.checked_id("F::reduce members"),
                   {detail::group_maker<T>()}, {detail::type_name<Group<T>>()});
  return Port<Group<T>>(detail::current_graph_shared(), ids[0]);
}

/// reduce with an explicit membership Port (shorthand for reduce(values, members(m))).
template <class T, class M>
Port<Group<T>> reduce(const Port<T>& values, const Port<M>& members_port) {
  return reduce(values, Members<M>{members_port});
}

/// Several child Ports gathered with one membership (the first Port's, by default).
template <class... T>
std::tuple<Port<Group<T>>...> reduce_aligned(const Port<T>&... values) {
  static_assert(sizeof...(T) >= 1, "F::reduce_aligned needs at least one value Port");
  detail::Graph& g = detail::tracing_graph("reduce_aligned");
  auto ids = g.add_reduce({values.checked_id("F::reduce_aligned")...}, -1,
                          {detail::group_maker<T>()...}, {detail::type_name<Group<T>>()...});
  auto shared = detail::current_graph_shared();
  return [&]<std::size_t... I>(std::index_sequence<I...>) {
    return std::tuple<Port<Group<T>>...>{Port<Group<T>>(shared, ids[I])...};
  }
  (std::index_sequence_for<T...>{});
}

/// reduce_aligned with an explicit membership Port.
template <class M, class... T>
std::tuple<Port<Group<T>>...> reduce_aligned(const Members<M>& members, const Port<T>&... values) {
  static_assert(sizeof...(T) >= 1, "F::reduce_aligned needs at least one value Port");
  detail::Graph& g = detail::tracing_graph("reduce_aligned");
  auto ids = g.add_reduce({values.checked_id("F::reduce_aligned")...},
                          members.port.checked_id("F::reduce_aligned members"),
                          {detail::group_maker<T>()...}, {detail::type_name<Group<T>>()...});
  auto shared = detail::current_graph_shared();
  return [&]<std::size_t... I>(std::index_sequence<I...>) {
    return std::tuple<Port<Group<T>>...>{Port<Group<T>>(shared, ids[I])...};
  }
  (std::index_sequence_for<T...>{});
}

/// Passes `source` where `mask` is true, drops it where false (same Domain).
template <class T>
Port<T> filter(const Port<T>& source, const Port<bool>& mask) {
  detail::Graph& g = detail::tracing_graph("filter");
  int id = g.add_filter(source.checked_id("F::filter source"), mask.checked_id("F::filter mask"));
  return Port<T>(detail::current_graph_shared(), id);
}

/// Makes an ancestor's value available in the Domain of `like` (a descendant Domain).
template <class T, class L>
Port<T> broadcast(const Port<T>& source, const Port<L>& like) {
  detail::Graph& g = detail::tracing_graph("broadcast");
  int id = g.add_broadcast(source.checked_id("F::broadcast source"),
                           like.checked_id("F::broadcast like"));
  return Port<T>(detail::current_graph_shared(), id);
}

}  // namespace F
}  // namespace rayorch
