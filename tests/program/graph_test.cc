// Tracing a pipeline into its Graph (DESIGN 3.3 and 4, src/program/graph.cc and the trace
// checks of the Module and operator headers): every CompileError of a Port of another
// pipeline or of a Module or operator called outside a trace names its culprit and the fix;
// a Port has no truth value.
#include <functional>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "support/compiler_testing.h"
#include "support/output_values.h"
#include "support/udfs.h"
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <rayorch/rayorch.h>

#include "program/plan.h"

namespace {

namespace ro = rayorch;
using compiler_testing::compile_error;
using output_values::values;
using test_udfs::Add;
using test_udfs::Double;
using test_udfs::IsEven;
using test_udfs::Split;
using test_udfs::SplitPair;
using test_udfs::Sum;
using ::testing::AllOf;
using ::testing::HasSubstr;

// ---------------------------------------------------------------------------------------
// Properties that must not compile (checked on types, since a failing build is no test).
// ---------------------------------------------------------------------------------------

// `if (port)`, `!port` and `port ? a : b` all need a contextual conversion to bool.
template <class T>
concept Testable = requires(const T& t) {
  t ? 0 : 1;
  !t;
};
static_assert(Testable<int*>, "control: the concept accepts a pointer");
static_assert(!Testable<ro::Port<int>>, "a Port has no truth value: use F::filter");
static_assert(!Testable<ro::Port<bool>>, "not even a Port<bool>");
static_assert(!std::is_constructible_v<bool, ro::Port<int>>);
static_assert(!std::is_convertible_v<ro::Port<bool>, bool>);

// A Call needs at least one Port input. A UDF whose run() takes no ro::Column<T> (e.g.
// `std::vector<int> run(int seed)`) is rejected where its Module is declared, by the
// static_assert "a Call needs a Port input" in detail/udf_traits.h; being a hard error
// inside a class template, it cannot be probed with a concept here. The same holds for a
// Port whose type differs from the Column<T> parameter. tests/diagnostics/ compiles such
// snippets and checks that this message is the first and nearly only error.

// ---------------------------------------------------------------------------------------
// CompileError cases of DESIGN 4.
// ---------------------------------------------------------------------------------------

TEST(CompileErrors, PortOfAnotherPipelineAsCallInput) {
  ro::Module<Double> dbl;
  ro::Module<Add> add;
  std::optional<ro::Port<int>> leaked;
  ro::compile([&](ro::Port<int> x) {
    leaked = dbl(x);
    return *leaked;
  });
  const std::string msg =
      compile_error([&] { ro::compile([&](ro::Port<int> y) { return add(y, *leaked); }); });
  EXPECT_THAT(msg, AllOf(HasSubstr("input of Add"), HasSubstr("p1 (output 0 of Double#0)"),
                         HasSubstr("belongs to another pipeline"),
                         HasSubstr("build every Port inside this pipeline's forward()")));
}

TEST(CompileErrors, PortOfAnotherPipelineInOperatorAndOutput) {
  ro::Module<Split> split;
  ro::Module<Sum> sum;
  std::optional<ro::Port<std::vector<int>>> lists;
  std::optional<ro::Port<int>> source;
  ro::compile([&](ro::Port<int> x) {
    source = x;
    lists = split(x);
    return sum(ro::F::reduce(ro::F::expand(*lists)));
  });
  EXPECT_THAT(
      compile_error([&] {
        ro::compile([&](ro::Port<int>) { return sum(ro::F::reduce(ro::F::expand(*lists))); });
      }),
      AllOf(HasSubstr("F::expand: Port p1 (output 0 of Split#0) belongs to another "
                      "pipeline")));
  EXPECT_THAT(compile_error([&] { ro::compile([&](ro::Port<int>) { return *source; }); }),
              HasSubstr("pipeline output: Port p0 (source 0) belongs to another pipeline"));
}

TEST(CompileErrors, NestedCompileCannotBorrowPortsAndLeavesOuterTraceIntact) {
  ro::Module<Double> dbl;
  std::string inner_error;
  auto outer = ro::compile([&](ro::Port<int> x) {
    auto y = dbl(x);
    inner_error = compile_error([&] { ro::compile([&](ro::Port<int>) { return dbl(y); }); });
    // The outer trace must be the current one again after the inner compile failed.
    return dbl(y);
  });
  EXPECT_THAT(inner_error,
              AllOf(HasSubstr("input of Double"),
                    HasSubstr("p1 (output 0 of Double#0) belongs to another pipeline")));
  EXPECT_EQ(outer.plan()->calls.size(), 2u);
  ro::testing::SyncExecutor ex(outer);
  EXPECT_EQ(values(ex.run({1, 2}).outputs), (std::vector<int>{4, 8}));
}

TEST(CompileErrors, ModuleCalledOutsideATraceWithAPortWhoseTraceEnded) {
  ro::Module<Double> dbl;
  std::optional<ro::Port<int>> leaked;
  ro::compile([&](ro::Port<int> x) {
    leaked = x;
    return dbl(x);
  });
  EXPECT_THAT(compile_error([&] { dbl(*leaked); }),
              AllOf(HasSubstr("Module<Double> was called outside a trace"),
                    HasSubstr("call Modules only inside forward()")));
}

TEST(CompileErrors, OperatorsCalledOutsideATrace) {
  ro::Module<Split> split;
  ro::Module<SplitPair> split_pair;
  ro::Module<IsEven> even;
  ro::Module<Sum> sum;
  std::optional<ro::Port<int>> root;
  std::optional<ro::Port<int>> child;
  std::optional<ro::Port<bool>> mask;
  std::optional<ro::Port<std::vector<int>>> list;
  std::optional<ro::Port<std::vector<std::string>>> names;
  ro::compile([&](ro::Port<int> x) {
    root = x;
    list = split(x);
    child = ro::F::expand(*list);
    mask = even(x);
    std::tie(list, names) = split_pair(x);
    return sum(ro::F::reduce(*child));
  });
  const std::vector<std::pair<std::string, std::function<void()>>> cases = {
      {"F::expand", [&] { ro::F::expand(*list); }},
      {"F::expand_aligned", [&] { ro::F::expand_aligned(*list, *names); }},
      {"F::reduce", [&] { ro::F::reduce(*child); }},
      {"F::reduce", [&] { ro::F::reduce(*child, *child); }},
      {"F::reduce_aligned", [&] { ro::F::reduce_aligned(*child, *child); }},
      {"F::reduce_aligned", [&] { ro::F::reduce_aligned(ro::F::members(*child), *child); }},
      {"F::filter", [&] { ro::F::filter(*root, *mask); }},
      {"F::broadcast", [&] { ro::F::broadcast(*root, *child); }},
  };
  for (const auto& [op, call] : cases) {
    EXPECT_THAT(compile_error(call), AllOf(HasSubstr(op + " was called outside a trace"),
                                           HasSubstr("only inside forward() (or the lambda)")))
        << op;
  }
}

}  // namespace
