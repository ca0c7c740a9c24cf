// Plain functions as Modules: a step that is one expression needs no UDF class.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "rayorch/column.h"
#include "rayorch/detail/udf_traits.h"
#include "rayorch/module.h"

namespace rayorch {
namespace detail {

// The signature of a function pointer, or of a class with one non-template operator().
template <class M>
struct MemberCallSignature {
  static constexpr bool valid = false;
  using result = int;
  using args = std::tuple<int>;
};
#define RAYORCH_MEMBER_CALL(QUALS)                   \
  template <class R, class C, class... A>            \
  struct MemberCallSignature<R (C::*)(A...) QUALS> { \
    static constexpr bool valid = true;              \
    using result = R;                                \
    using args = std::tuple<A...>;                   \
  };
RAYORCH_MEMBER_CALL()
RAYORCH_MEMBER_CALL(const)
RAYORCH_MEMBER_CALL(noexcept)
RAYORCH_MEMBER_CALL(const noexcept)
RAYORCH_MEMBER_CALL(&)
RAYORCH_MEMBER_CALL(const&)
#undef RAYORCH_MEMBER_CALL

template <class F>
struct CallableSignature : MemberCallSignature<void> {};
template <class F>
requires requires {
  &F::operator();
}
struct CallableSignature<F> : MemberCallSignature<decltype(&F::operator())> {};
template <class R, class... A>
struct CallableSignature<R (*)(A...)> {
  static constexpr bool valid = true;
  using result = R;
  using args = std::tuple<A...>;
};
template <class R, class... A>
struct CallableSignature<R (*)(A...) noexcept> : CallableSignature<R (*)(A...)> {};

template <class T>
constexpr bool is_mutable_reference =
    std::is_lvalue_reference_v<T> && !std::is_const_v<std::remove_reference_t<T>>;

template <class Args>
struct ArgList;
template <class... A>
struct ArgList<std::tuple<A...>> {
  static constexpr bool any_mutable_reference = (is_mutable_reference<A> || ...);
  static constexpr bool any_column = (ColumnOf<std::remove_cvref_t<A>>::value || ...);
};

enum class FunctionProblem : std::uint8_t {
  none,
  no_signature,
  no_parameter,
  mutable_parameter,
  column_parameter,
  no_result,
  reference_result,
};

template <class F>
constexpr FunctionProblem row_function_problem() {
  using sig = CallableSignature<F>;
  if constexpr (!sig::valid) {
    return FunctionProblem::no_signature;
  } else if constexpr (std::tuple_size_v<typename sig::args> == 0) {
    return FunctionProblem::no_parameter;
  } else if constexpr (ArgList<typename sig::args>::any_mutable_reference) {
    return FunctionProblem::mutable_parameter;
  } else if constexpr (ArgList<typename sig::args>::any_column) {
    return FunctionProblem::column_parameter;
  } else if constexpr (std::is_void_v<typename sig::result>) {
    return FunctionProblem::no_result;
  } else {
    return FunctionProblem::none;
  }
}

// Reports the first problem of a per-row callable as one static_assert.
template <class F>
struct RowFunctionCheck {
  static constexpr FunctionProblem problem = row_function_problem<F>();
  static_assert(problem != FunctionProblem::no_signature,
                "ro::function needs a function pointer or a callable with one non-template "
                "operator(): spell out the lambda's parameter types (no `auto`), or wrap it as "
                "ro::Function<R(A...)>{f}");
  static_assert(problem != FunctionProblem::no_parameter,
                "ro::function: the function needs at least one parameter, one per input Port");
  static_assert(problem != FunctionProblem::mutable_parameter,
                "ro::function: take every parameter by value or by const reference; rows are "
                "read-only");
  static_assert(problem != FunctionProblem::column_parameter,
                "ro::function is called once per row; a function of whole ro::Column<T> batches "
                "is a ro::batch_function");
  static_assert(problem != FunctionProblem::no_result,
                "ro::function: the function must return a value for each row (return bool for "
                "an F::filter mask)");
  static constexpr bool ok = problem == FunctionProblem::none;
  static constexpr const char* udf_name = "function";
};

template <class F, class R, class Args>
struct RowRun;
template <class F, class R, class... A>
struct RowRun<F, R, std::tuple<A...>> {
  explicit RowRun(F fn) : f(std::move(fn)) {}
  std::vector<std::remove_cvref_t<R>> run(Column<std::remove_cvref_t<A>>... columns) {
    const std::size_t rows = std::get<0>(std::forward_as_tuple(columns...)).size();
    std::vector<std::remove_cvref_t<R>> out;
    out.reserve(rows);
    for (std::size_t i = 0; i < rows; ++i) out.push_back(f(columns[i]...));
    return out;
  }
  F f;
};

// What a callable that failed its checks becomes: no run(), and the check that failed is the
// only message (ReportedElsewhere keeps the UDF checks quiet).
template <class F>
struct Unrunnable {
  explicit Unrunnable(F) {}
};

template <class F, class R, class Args>
struct BatchRun;
template <class F, class R, class... A>
struct BatchRun<F, R, std::tuple<A...>> {
  explicit BatchRun(F fn) : f(std::move(fn)) {}
  std::remove_cvref_t<R> run(std::remove_cvref_t<A>... args) { return f(args...); }
  F f;
};

// Run (RowRun or BatchRun) for callable F's signature.
template <template <class, class, class> class Run, class F>
using RunOf = Run<F, typename CallableSignature<F>::result, typename CallableSignature<F>::args>;

// Reports the first problem of a per-batch callable as one static_assert: the rules of a
// UDF's run(), worded for the function.
template <class F>
struct BatchFunctionCheck {
  static constexpr bool has_signature = CallableSignature<F>::valid;
  static constexpr UdfProblem find_problem() {
    if constexpr (has_signature) {
      return udf_problem<RunOf<BatchRun, F>>();
    } else {
      return UdfProblem::none;
    }
  }
  static constexpr UdfProblem problem = find_problem();
  static_assert(has_signature,
                "ro::batch_function needs a function pointer or a callable with one "
                "non-template operator(): spell out the lambda's parameter types (no `auto`)");
  static_assert(problem != UdfProblem::no_column,
                "ro::batch_function: the function needs at least one ro::Column<T> parameter, "
                "one per input Port");
  static_assert(problem != UdfProblem::column_after_static,
                "ro::batch_function: every ro::Column<T> parameter must come before the static "
                "arguments");
  static_assert(problem != UdfProblem::bad_result,
                "ro::batch_function: the function must return std::vector<R> (one element per "
                "input row) or a std::tuple of such vectors; elements may be ro::Row<R>");
  static constexpr bool ok = has_signature && problem == UdfProblem::none;
  static constexpr const char* udf_name = "batch_function";
};

/// The UDF behind a function Module: Run (whose run() calls F) where Check passes, else
/// Unrunnable, so that Check's static_assert is the only message. Calls are named
/// Check::udf_name.
template <class F, class Check, class Run>
struct FunctionUdf : std::conditional_t<Check::ok, Run, Unrunnable<F>> {
  using base = std::conditional_t<Check::ok, Run, Unrunnable<F>>;
  using base::base;
};

template <class F, class Check, class Run>
struct ReportedElsewhere<FunctionUdf<F, Check, Run>> : std::bool_constant<!Check::ok> {};

template <class F, class Check, class Run>
struct UdfNameOf<FunctionUdf<F, Check, Run>> {
  static std::string get() { return Check::udf_name; }
};

/// The UDF behind ro::function(f): run() maps f over the rows of its input columns.
template <class F>
using RowFunction = FunctionUdf<F, RowFunctionCheck<F>, RunOf<RowRun, F>>;

/// The UDF behind ro::batch_function(f): run() is f.
template <class F>
using BatchFunction = FunctionUdf<F, BatchFunctionCheck<F>, RunOf<BatchRun, F>>;

}  // namespace detail

/// A per-row function as a Module. `f` takes one `const T&` (or `T`) per input Port and
/// returns the row's value `R`, or an ro::Row<R> to fail single rows; it runs once per row,
/// inside RPCs batched like any Module's. A `bool` result makes a mask for F::filter.
///
///     auto even = ro::function([](const int& x) { return x % 2 == 0; }).batch_size(64);
///     auto kept = ro::F::filter(x, even(x));
///
/// The result is an ordinary Module: every option applies (replicas, batch_size, recovery,
/// name, ...), and one object used in several Calls is one pool. `f` is copied onto every
/// actor, so state it captures by reference is shared between actors running at once. An
/// exception thrown by `f` fails the whole RPC, as a UDF's would. Calls are named
/// "function#k" unless the Module is given a name().
template <class F>
Module<detail::RowFunction<std::decay_t<F>>> function(F&& f) {
  return Module<detail::RowFunction<std::decay_t<F>>>(std::forward<F>(f));
}

/// A per-batch function as a Module: `f` has the shape of a UDF's run(): one ro::Column<T>
/// per input Port, then any static arguments given at the call site, and returns one
/// std::vector<R> element per input row (or a std::tuple of vectors for several outputs).
///
///     auto lengths = ro::batch_function([](ro::Column<std::string> s) {
///       std::vector<int> out;
///       for (const auto& v : s) out.push_back(static_cast<int>(v.size()));
///       return out;
///     });
///
/// Options, copying onto actors and failures are as for ro::function; Calls are named
/// "batch_function#k" unless the Module is given a name().
template <class F>
Module<detail::BatchFunction<std::decay_t<F>>> batch_function(F&& f) {
  return Module<detail::BatchFunction<std::decay_t<F>>>(std::forward<F>(f));
}

/// The type of a per-row function Module with signature `Sig` (e.g. `bool(const int&)`),
/// for a pipeline struct's member, whose type must be spelled:
///
///     ro::Function<bool(const int&)> even{[](const int& x) { return x % 2 == 0; }};
///
/// The callable is held in a std::function, so a generic lambda works here too.
template <class Sig>
using Function = Module<detail::RowFunction<std::function<Sig>>>;

/// The type of a per-batch function Module with signature `Sig`, e.g.
/// `std::vector<int>(ro::Column<std::string>)`.
template <class Sig>
using BatchFunction = Module<detail::BatchFunction<std::function<Sig>>>;

}  // namespace rayorch
