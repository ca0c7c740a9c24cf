// Compile-time analysis of a UDF's `run` signature and conversion of its result.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <vector>

#include "rayorch/column.h"
#include "rayorch/detail/erased.h"
#include "rayorch/outcome.h"

namespace rayorch::detail {

template <class T>
struct ColumnOf {
  static constexpr bool value = false;
};
template <class T>
struct ColumnOf<Column<T>> {
  static constexpr bool value = true;
  using type = T;
};

template <class T>
struct RowOf {
  static constexpr bool value = false;
  using type = T;
};
template <class T>
struct RowOf<Row<T>> {
  static constexpr bool value = true;
  using type = T;
};

template <class T>
struct IsVector : std::false_type {};
template <class T, class A>
struct IsVector<std::vector<T, A>> : std::true_type {};

template <class T>
struct IsTuple : std::false_type {};
template <class... T>
struct IsTuple<std::tuple<T...>> : std::true_type {};

// The signature of a member function pointer.
template <class F>
struct MemberFn;
#define RAYORCH_MEMBER_FN(QUALS)                          \
  template <class R, class C, class... P>                 \
  struct MemberFn<R (C::*)(P...) QUALS> {                 \
    using result = R;                                     \
    using params = std::tuple<std::remove_cvref_t<P>...>; \
  };
RAYORCH_MEMBER_FN()
RAYORCH_MEMBER_FN(const)
RAYORCH_MEMBER_FN(noexcept)
RAYORCH_MEMBER_FN(const noexcept)
RAYORCH_MEMBER_FN(&)
RAYORCH_MEMBER_FN(const&)
#undef RAYORCH_MEMBER_FN

template <class Tuple>
constexpr std::size_t leading_columns() {
  return []<std::size_t... I>(std::index_sequence<I...>) {
    std::size_t n = 0;
    bool leading = true;
    ((leading = leading && ColumnOf<std::tuple_element_t<I, Tuple>>::value, n += leading ? 1 : 0),
     ...);
    return n;
  }
  (std::make_index_sequence<std::tuple_size_v<Tuple>>{});
}

template <class Tuple>
constexpr std::size_t total_columns() {
  return []<std::size_t... I>(std::index_sequence<I...>) {
    return (std::size_t{0} + ... + (ColumnOf<std::tuple_element_t<I, Tuple>>::value ? 1 : 0));
  }
  (std::make_index_sequence<std::tuple_size_v<Tuple>>{});
}

template <class Tuple, std::size_t Offset, std::size_t... I>
auto tuple_slice_type(std::index_sequence<I...>)
    -> std::tuple<std::tuple_element_t<Offset + I, Tuple>...>;

// Element types of each output of a UDF result type.
template <class R>
struct ResultShape {
  static constexpr bool valid = false;
};
template <class E, class A>
struct ResultShape<std::vector<E, A>> {
  static constexpr bool valid = true;
  static constexpr std::size_t outputs = 1;
  using elements = std::tuple<E>;
  using values = std::tuple<typename RowOf<E>::type>;
};
template <class... V>
struct ResultShape<std::tuple<V...>> {
  static constexpr bool valid = (IsVector<V>::value && ...) && sizeof...(V) > 0;
  static constexpr std::size_t outputs = sizeof...(V);
  using elements = std::tuple<typename V::value_type...>;
  using values = std::tuple<typename RowOf<typename V::value_type>::type...>;
};

template <class U>
concept HasRun = requires {
  &U::run;
};

/// What the front end needs to know about a UDF type.
template <class U>
struct UdfTraits {
  static_assert(HasRun<U>,
                "a UDF must have exactly one non-template, non-overloaded member function `run` "
                "taking ro::Column<T> inputs (then any static arguments)");
  using fn = MemberFn<decltype(&U::run)>;
  using params = typename fn::params;
  using result = typename fn::result;
  static constexpr std::size_t column_count = leading_columns<params>();
  static_assert(column_count == total_columns<params>(),
                "UDF run(): every ro::Column<T> parameter must come before the static arguments");
  static_assert(column_count >= 1,
                "UDF run() needs at least one ro::Column<T> parameter: a Call needs a Port input");
  using columns = decltype(tuple_slice_type<params, 0>(std::make_index_sequence<column_count>{}));
  using statics = decltype(tuple_slice_type<params, column_count>(
      std::make_index_sequence<std::tuple_size_v<params> - column_count>{}));
  static_assert(ResultShape<result>::valid,
                "UDF run() must return std::vector<R> (one output) or std::tuple<std::vector<R1>, "
                "std::vector<R2>, ...> (several outputs); elements may be ro::Row<R>");
  using shape = ResultShape<result>;
};

template <class E>
BlockRef make_block(std::vector<E>&& values, std::vector<const void*>& pointers,
                    std::vector<RowKind>& kinds, std::vector<std::string>& messages) {
  const std::size_t n = values.size();
  pointers.resize(n);
  if constexpr (std::is_same_v<E, bool>) {
    auto block = std::make_shared<BoolBlock>(values);
    for (std::size_t i = 0; i < n; ++i) pointers[i] = &block->values[i];
    return block;
  } else {
    auto block = std::make_shared<VectorBlock<E>>(std::move(values));
    for (std::size_t i = 0; i < n; ++i) {
      const E& e = block->values[i];
      if constexpr (RowOf<E>::value) {
        if (e.ok()) {
          pointers[i] = &e.value();
        } else {
          pointers[i] = nullptr;
          const RowKind k = e.is_group_failure() ? RowKind::group_failure : RowKind::record_failure;
          if (kinds.empty()) {
            kinds.assign(n, RowKind::ok);
            messages.assign(n, std::string());
          }
          if (kinds[i] == RowKind::ok ||
              (k == RowKind::group_failure && kinds[i] == RowKind::record_failure)) {
            kinds[i] = k;
            messages[i] = e.message();
          }
        }
      } else {
        pointers[i] = &e;
      }
    }
    return block;
  }
}

/// Converts a UDF result into the erased RPC output, checking row counts.
template <class R>
RpcOutput convert_result(R&& result, std::size_t rows) {
  RpcOutput out;
  std::vector<RowKind> kinds;
  std::vector<std::string> messages;
  auto add = [&](auto&& vec, std::size_t index) {
    if (vec.size() != rows) {
      if (out.contract_error.empty()) {
        out.contract_error = "output " + std::to_string(index) + " has " +
                             std::to_string(vec.size()) + " rows for " + std::to_string(rows) +
                             " input rows";
      }
      return;
    }
    out.values.emplace_back();
    out.blocks.push_back(make_block(std::move(vec), out.values.back(), kinds, messages));
  };
  if constexpr (IsTuple<std::remove_cvref_t<R>>::value) {
    std::apply(
        [&](auto&... vecs) {
          std::size_t i = 0;
          (add(std::move(vecs), i++), ...);
        },
        result);
  } else {
    add(std::move(result), 0);
  }
  if (!out.contract_error.empty()) return out;
  for (std::size_t i = 0; i < kinds.size(); ++i) {
    if (kinds[i] != RowKind::ok) {
      out.failures.push_back(RowFailure{static_cast<std::uint32_t>(i), kinds[i], messages[i]});
      for (auto& column : out.values) column[i] = nullptr;
    }
  }
  return out;
}

/// Readable type name of T.
template <class T>
std::string type_name() {
  return demangle(typeid(T).name());
}

}  // namespace rayorch::detail
