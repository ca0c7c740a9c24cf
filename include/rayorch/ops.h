// Structural operators (DESIGN 3.2): expand, reduce, filter, broadcast and aligned forms.
#pragma once

#include <array>
#include <cstddef>
#include <memory>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "rayorch/column.h"
#include "rayorch/detail/graph.h"
#include "rayorch/detail/udf_traits.h"
#include "rayorch/errors.h"
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

namespace detail {

template <class P>
struct ListPort : std::false_type {};
template <class T>
struct ListPort<Port<std::vector<T>>> : std::true_type {
  using element = T;
};

template <class P>
struct MembersArg : std::false_type {};
template <class M>
struct MembersArg<Members<M>> : std::true_type {
  using type = M;
};
template <class M>
struct MembersArg<Port<M>> : std::true_type {
  using type = M;
};

template <class... A>
constexpr bool any_invalid = (is_invalid_port<A> || ...);

// What each operator returns for its argument types: the Port(s) it makes, or InvalidPort
// when an argument is wrong. A declared result keeps a misuse to the operator's own
// static_assert: the rest of forward() still type-checks.
template <class L, class = void>
struct ExpandResult {
  using type = InvalidPort;
};
template <class L>
struct ExpandResult<L, std::enable_if_t<ListPort<L>::value>> {
  using type = Port<typename ListPort<L>::element>;
};
// Aligned forms keep their arity even when an argument is wrong, so structured bindings of
// the result still compile; the wrong element is InvalidPort.
template <class... L>
using ExpandAlignedResult = std::tuple<typename ExpandResult<L>::type...>;

template <class V, class = void>
struct GroupOf {
  using type = InvalidPort;
};
template <class V>
struct GroupOf<V, std::enable_if_t<IsPort<V>::value>> {
  using type = Port<Group<typename V::value_type>>;
};
template <class... V>
using GroupsOf = std::tuple<typename GroupOf<V>::type...>;

template <class First, class... Rest>
struct ReduceAlignedResult {
  using type = GroupsOf<First, Rest...>;
};
template <class M, class... Rest>
struct ReduceAlignedResult<Members<M>, Rest...> {
  using type = GroupsOf<Rest...>;
};

template <class S, class M, class = void>
struct FilterResult {
  using type = InvalidPort;
};
template <class S, class M>
struct FilterResult<S, M, std::enable_if_t<IsPort<S>::value && std::is_same_v<M, Port<bool>>>> {
  using type = S;
};

template <class S, class L, class = void>
struct BroadcastResult {
  using type = InvalidPort;
};
template <class S, class L>
struct BroadcastResult<S, L, std::enable_if_t<IsPort<S>::value && IsPort<L>::value>> {
  using type = S;
};

template <class P>
struct MembersOf {
  using type = InvalidPort;
};
template <class M>
struct MembersOf<Port<M>> {
  using type = Members<M>;
};

// One static_assert per misuse; the template parameters name the offending argument type.
template <class Passed>
constexpr void expand_needs_a_list_port() {
  static_assert(ListPort<Passed>::value,
                "F::expand / F::expand_aligned: each argument must be a ro::Port<std::vector<T>>, "
                "a list-valued Call output (Passed, in the instantiation line above, is not)");
}
template <class Passed>
constexpr void operator_needs_a_port() {
  static_assert(IsPort<Passed>::value,
                "F::reduce / F::reduce_aligned / F::broadcast: the values (and `like`) must be "
                "ro::Port<T> (Passed, in the instantiation line above, is not)");
}
template <class Passed>
constexpr void members_need_a_port() {
  static_assert(MembersArg<Passed>::value,
                "F::reduce membership: pass a ro::Port<M> or F::members(port) (Passed, in the "
                "instantiation line above, is neither)");
}
template <class Passed>
constexpr void filter_needs_a_bool_mask() {
  static_assert(std::is_same_v<Passed, Port<bool>>,
                "F::filter(source, mask): the mask must be a ro::Port<bool>, e.g. the output of "
                "a UDF or ro::function returning bool (Passed, in the instantiation line above, "
                "is not)");
}
template <std::size_t MembershipsPassed>
constexpr void reduce_takes_one_membership() {
  static_assert(MembershipsPassed <= 1,
                "F::reduce(values, members) takes one values Port and at most one membership; "
                "gather several child Ports with F::reduce_aligned");
}
template <std::size_t PortsPassed>
constexpr void operator_needs_ports() {
  static_assert(PortsPassed >= 1, "F::expand_aligned / F::reduce_aligned need at least one Port");
}

}  // namespace detail

/// The structural operators. Each is a template over its argument types that checks them
/// with one static_assert, so a wrong argument gives one message naming it.
namespace F {

/// Each element of a list-valued Call output becomes an ordered child Entity in a new
/// child Domain. A Port can be expanded once.
template <class L>
typename detail::ExpandResult<L>::type expand(const L& list) {
  if constexpr (detail::is_invalid_port<L>) {
    return {};
  } else if constexpr (!detail::ListPort<L>::value) {
    detail::expand_needs_a_list_port<L>();
    return detail::placeholder<typename detail::ExpandResult<L>::type>();
  } else {
    using T = typename detail::ListPort<L>::element;
    auto ops = detail::list_ops<T>();
    detail::Graph& g = detail::tracing_graph("expand");
    auto ids = g.add_expand({list.checked_id("F::expand")}, {ops}, {detail::type_name<T>()});
    return Port<T>(detail::current_graph_shared(), ids[0]);
  }
}

/// Several list outputs of the same Call expanded as one Expansion (one shared child
/// Domain); the lists must have equal lengths per row.
template <class... L>
detail::ExpandAlignedResult<L...> expand_aligned(const L&... lists) {
  if constexpr (detail::any_invalid<L...>) {
    return detail::placeholder<detail::ExpandAlignedResult<L...>>();
  } else if constexpr (sizeof...(L) == 0) {
    detail::operator_needs_ports<0>();
    return {};
  } else if constexpr (!(detail::ListPort<L>::value && ...)) {
    constexpr std::size_t bad =
        detail::first_true(std::array<bool, sizeof...(L)>{!detail::ListPort<L>::value...});
    detail::expand_needs_a_list_port<std::tuple_element_t<bad, std::tuple<L...>>>();
    return detail::placeholder<detail::ExpandAlignedResult<L...>>();
  } else {
    detail::Graph& g = detail::tracing_graph("expand_aligned");
    auto ids = g.add_expand({lists.checked_id("F::expand_aligned")...},
                            {detail::list_ops<typename detail::ListPort<L>::element>()...},
                            {detail::type_name<typename detail::ListPort<L>::element>()...});
    auto shared = detail::current_graph_shared();
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      return detail::ExpandAlignedResult<L...>{
          typename detail::ExpandResult<L>::type(shared, ids[I])...};
    }
    (std::index_sequence_for<L...>{});
  }
}

/// Wraps a Port as the explicit membership of a reduce.
template <class P>
typename detail::MembersOf<P>::type members(const P& port) {
  if constexpr (detail::is_invalid_port<P>) {
    return {};
  } else if constexpr (!detail::IsPort<P>::value) {
    detail::members_need_a_port<P>();
    return {};
  } else {
    return {port};
  }
}

/// Gathers the surviving child values of each parent, in ordinal order, as one parent Item.
/// With `members` (a Port in the same child Domain, or F::members(port)), that Port decides
/// which children are gathered: see Members.
template <class V, class... M>
typename detail::GroupOf<V>::type reduce(const V& values, const M&... members) {
  using Result = typename detail::GroupOf<V>::type;
  if constexpr (detail::any_invalid<V, M...>) {
    return detail::placeholder<Result>();
  } else if constexpr (!detail::IsPort<V>::value) {
    detail::operator_needs_a_port<V>();
    return {};
  } else if constexpr (sizeof...(M) > 1) {
    detail::reduce_takes_one_membership<sizeof...(M)>();
    return detail::placeholder<Result>();
  } else if constexpr (!(detail::MembersArg<M>::value && ...)) {
    detail::members_need_a_port<M...>();
    return detail::placeholder<Result>();
  } else {
    using T = typename V::value_type;
    detail::Graph& g = detail::tracing_graph("reduce");
    int member_id = -1;
    if constexpr (sizeof...(M) == 1) {
      const auto& m = std::get<0>(std::forward_as_tuple(members...));
      if constexpr (detail::IsPort<std::remove_cvref_t<decltype(m)>>::value) {
        member_id = m.checked_id("F::reduce members");
      } else {
        member_id = m.port.checked_id("F::reduce members");
      }
    }
    auto ids = g.add_reduce({values.checked_id("F::reduce")}, member_id, {detail::group_maker<T>()},
                            {detail::type_name<Group<T>>()});
    return Port<Group<T>>(detail::current_graph_shared(), ids[0]);
  }
}

/// Several child Ports gathered with one membership: the first Port's, or an explicit one
/// given first, `reduce_aligned(F::members(m), a, b)`.
template <class First, class... Rest>
typename detail::ReduceAlignedResult<First, Rest...>::type reduce_aligned(const First& first,
                                                                          const Rest&... rest) {
  using Result = typename detail::ReduceAlignedResult<First, Rest...>::type;
  constexpr bool with_members = detail::MembersArg<First>::value && !detail::IsPort<First>::value;
  if constexpr (detail::any_invalid<First, Rest...>) {
    return detail::placeholder<Result>();
  } else if constexpr (with_members && sizeof...(Rest) == 0) {
    detail::operator_needs_ports<0>();
    return {};
  } else if constexpr (!(detail::IsPort<Rest>::value && ...)) {
    constexpr std::size_t bad =
        detail::first_true(std::array<bool, sizeof...(Rest)>{!detail::IsPort<Rest>::value...});
    detail::operator_needs_a_port<std::tuple_element_t<bad, std::tuple<Rest...>>>();
    return detail::placeholder<Result>();
  } else if constexpr (!with_members && !detail::IsPort<First>::value) {
    detail::operator_needs_a_port<First>();
    return detail::placeholder<Result>();
  } else {
    detail::Graph& g = detail::tracing_graph("reduce_aligned");
    auto shared = detail::current_graph_shared();
    auto make = [&](int member_id, const auto&... values) {
      auto ids = g.add_reduce(
          {values.checked_id("F::reduce_aligned")...}, member_id,
          {detail::group_maker<typename std::remove_cvref_t<decltype(values)>::value_type>()...},
          {detail::type_name<
              Group<typename std::remove_cvref_t<decltype(values)>::value_type>>()...});
      return [&]<std::size_t... I>(std::index_sequence<I...>) {
        return Result{std::tuple_element_t<I, Result>(shared, ids[I])...};
      }
      (std::make_index_sequence<sizeof...(values)>{});
    };
    if constexpr (with_members) {
      return make(first.port.checked_id("F::reduce_aligned members"), rest...);
    } else {
      return make(-1, first, rest...);
    }
  }
}

/// Passes `source` where `mask` is true, drops it where false (same Domain).
template <class S, class M>
typename detail::FilterResult<S, M>::type filter(const S& source, const M& mask) {
  if constexpr (detail::any_invalid<S, M>) {
    return {};
  } else if constexpr (!detail::IsPort<S>::value) {
    detail::operator_needs_a_port<S>();
    return {};
  } else if constexpr (!std::is_same_v<M, Port<bool>>) {
    detail::filter_needs_a_bool_mask<M>();
    return {};
  } else {
    detail::Graph& g = detail::tracing_graph("filter");
    int id = g.add_filter(source.checked_id("F::filter source"), mask.checked_id("F::filter mask"));
    return S(detail::current_graph_shared(), id);
  }
}

/// Makes an ancestor's value available in the Domain of `like` (a descendant Domain).
template <class S, class L>
typename detail::BroadcastResult<S, L>::type broadcast(const S& source, const L& like) {
  if constexpr (detail::any_invalid<S, L>) {
    return {};
  } else if constexpr (!detail::IsPort<S>::value) {
    detail::operator_needs_a_port<S>();
    return {};
  } else if constexpr (!detail::IsPort<L>::value) {
    detail::operator_needs_a_port<L>();
    return {};
  } else {
    detail::Graph& g = detail::tracing_graph("broadcast");
    int id = g.add_broadcast(source.checked_id("F::broadcast source"),
                             like.checked_id("F::broadcast like"));
    return S(detail::current_graph_shared(), id);
  }
}

}  // namespace F
}  // namespace rayorch
