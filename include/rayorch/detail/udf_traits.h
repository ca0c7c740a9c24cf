// Compile-time analysis of a UDF's `run` signature and conversion of its result.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
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
// Only tuples of vectors match, so asking whether `std::tuple<int>` is valid is not an error.
template <class... E, class... A>
struct ResultShape<std::tuple<std::vector<E, A>...>> {
  static constexpr bool valid = sizeof...(E) > 0;
  static constexpr std::size_t outputs = sizeof...(E);
  using elements = std::tuple<E...>;
  using values = std::tuple<typename RowOf<E>::type...>;
};

/// The index of the first true flag, or N.
template <std::size_t N>
constexpr std::size_t first_true(const std::array<bool, N>& flags) {
  for (std::size_t i = 0; i < N; ++i) {
    if (flags[i]) return i;
  }
  return N;
}

template <class U>
concept HasRun = requires {
  &U::run;
};

/// True for a generated UDF (ro::function) whose own checks already reported a problem:
/// its UdfCheck stays silent so the user sees that one message.
template <class U>
struct ReportedElsewhere : std::false_type {};

/// The first thing wrong with a UDF type, in the order a user should fix them.
enum class UdfProblem : std::uint8_t {
  none,
  reported,             ///< see ReportedElsewhere
  no_run,               ///< no `run`, or an overloaded or template `run`
  run_not_member,       ///< a static or &&-qualified `run`
  no_column,            ///< `run` takes no ro::Column<T>
  column_after_static,  ///< a ro::Column<T> parameter after a static one
  bad_result,           ///< `run` returns neither std::vector<R> nor a tuple of vectors
  static_not_copyable,  ///< a static parameter type that cannot be copied
};

template <class Tuple, std::size_t From>
constexpr bool copyable_from() {
  return []<std::size_t... I>(std::index_sequence<I...>) {
    return (std::is_copy_constructible_v<std::tuple_element_t<From + I, Tuple>> && ...);
  }
  (std::make_index_sequence<std::tuple_size_v<Tuple> - From>{});
}

template <class U>
constexpr UdfProblem udf_problem() {
  if constexpr (ReportedElsewhere<U>::value) {
    return UdfProblem::reported;
  } else if constexpr (!HasRun<U>) {
    return UdfProblem::no_run;
  } else if constexpr (!requires { typename MemberFn<decltype(&U::run)>::result; }) {
    return UdfProblem::run_not_member;
  } else {
    using fn = MemberFn<decltype(&U::run)>;
    constexpr std::size_t columns = leading_columns<typename fn::params>();
    if constexpr (columns == 0) {
      return UdfProblem::no_column;
    } else if constexpr (columns != total_columns<typename fn::params>()) {
      return UdfProblem::column_after_static;
    } else if constexpr (!ResultShape<typename fn::result>::valid) {
      return UdfProblem::bad_result;
    } else if constexpr (!copyable_from<typename fn::params, columns>()) {
      return UdfProblem::static_not_copyable;
    } else {
      return UdfProblem::none;
    }
  }
}

/// A class usable as a UDF: one non-overloaded member `run(ro::Column<T>..., statics...)`
/// returning std::vector<R> or a std::tuple of vectors.
template <class U>
concept ValidUdf = (udf_problem<U>() == UdfProblem::none);

/// Instantiating this reports the first problem of UDF `U` as one static_assert; the others
/// stay silent, so a user sees one message per mistake.
template <class U>
struct UdfCheck {
  static constexpr UdfProblem problem = udf_problem<U>();
  static_assert(problem != UdfProblem::no_run,
                "a UDF must have exactly one non-template, non-overloaded member function `run` "
                "taking ro::Column<T> inputs (then any static arguments)");
  static_assert(problem != UdfProblem::run_not_member,
                "UDF run() must be a non-static member function (it may be const); an "
                "&&-qualified run() cannot be called on the actor's instance");
  static_assert(problem != UdfProblem::no_column,
                "UDF run() needs at least one ro::Column<T> parameter: a Call needs a Port input");
  static_assert(problem != UdfProblem::column_after_static,
                "UDF run(): every ro::Column<T> parameter must come before the static arguments");
  static_assert(problem != UdfProblem::bad_result,
                "UDF run() must return std::vector<R> (one output) or std::tuple<std::vector<R1>, "
                "std::vector<R2>, ...> (several outputs); elements may be ro::Row<R>");
  static_assert(problem != UdfProblem::static_not_copyable,
                "UDF run(): every static argument type must be copyable: the Call keeps one "
                "copy and passes it on every RPC");
  static constexpr bool ok = problem == UdfProblem::none;
};

/// What the front end needs to know about a UDF type. Only valid UDFs have traits: check
/// with UdfCheck first so that a bad UDF is reported once.
template <ValidUdf U>
struct UdfTraits {
  using fn = MemberFn<decltype(&U::run)>;
  using params = typename fn::params;
  using result = typename fn::result;
  static constexpr std::size_t column_count = leading_columns<params>();
  using columns = decltype(tuple_slice_type<params, 0>(std::make_index_sequence<column_count>{}));
  using statics = decltype(tuple_slice_type<params, column_count>(
      std::make_index_sequence<std::tuple_size_v<params> - column_count>{}));
  using shape = ResultShape<result>;
};

/// One output column of a UDF result as returned; a failed ro::Row has no value address.
template <class E>
class ResultBlock final : public Block {
 public:
  explicit ResultBlock(std::vector<E> v) : values(std::move(v)) {}
  const void* at(std::size_t row) const override {
    if constexpr (RowOf<E>::value) {
      return values[row].ok() ? &values[row].value() : nullptr;
    } else {
      return &values[row];
    }
  }
  std::size_t size() const override { return values.size(); }
  std::vector<E> values;
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
    auto block = std::make_shared<ResultBlock<E>>(std::move(values));
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
