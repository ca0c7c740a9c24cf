// The compiler (DESIGN 3.3 and 4): every CompileError names its culprit and the fix,
// explain() shows the compiled topology, pools follow Module identity, static arguments and
// Module options are snapshotted at compile time.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "support/udfs.h"
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "program/plan.h"

namespace {

namespace ro = rayorch;
using test_udfs::Add;
using test_udfs::Double;
using test_udfs::IsEven;
using test_udfs::RecordingDouble;
using test_udfs::SharedLog;
using test_udfs::Split;
using test_udfs::SplitPair;
using test_udfs::Sum;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

// The message of the CompileError `f` throws; a test failure when it throws nothing.
template <class F>
std::string compile_error(F&& f) {
  try {
    f();
  } catch (const ro::CompileError& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected ro::CompileError";
  return {};
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

template <class T>
std::vector<T> values(const std::vector<ro::Output<T>>& outputs) {
  std::vector<T> out;
  for (const auto& o : outputs) out.push_back(o.value());
  return out;
}

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

TEST(CompileErrors, CallWithInputsFromDifferentDomains) {
  ro::Module<Split> split;
  ro::Module<Add> add;
  ro::Module<Sum> sum;
  EXPECT_THAT(compile_error([&] {
                ro::compile([&](ro::Port<int> x) {
                  auto page = ro::F::expand(split(x));
                  return sum(ro::F::reduce(add(page, x)));
                });
              }),
              AllOf(HasSubstr("Call Add#1 takes inputs from different Domains"),
                    HasSubstr("p2 (expand of p1) is in d1"), HasSubstr("p0 (source 0) is in d0"),
                    HasSubstr("F::broadcast(value, like)")));
  // The suggested fix compiles.
  auto fixed = ro::compile([&](ro::Port<int> x) {
    auto page = ro::F::expand(split(x));
    return sum(ro::F::reduce(add(page, ro::F::broadcast(x, page))));
  });
  ro::testing::SyncExecutor ex(fixed);
  // n -> sum over i < n of (i + n).
  EXPECT_EQ(values(ex.run({0, 1, 3}).outputs), (std::vector<int>{0, 1, 12}));
}

TEST(CompileErrors, CallWithInputsFromSiblingDomains) {
  ro::Module<Split> split_a;
  ro::Module<Split> split_b;
  ro::Module<Add> add;
  ro::Module<Sum> sum;
  // Two expansions of the root: d1 and d2 are siblings, so no broadcast connects them.
  const std::string msg = compile_error([&] {
    ro::compile([&](ro::Port<int> x) {
      auto a = ro::F::expand(split_a(x));
      auto b = ro::F::expand(split_b(x));
      return sum(ro::F::reduce(add(a, b)));
    });
  });
  EXPECT_THAT(msg, AllOf(HasSubstr("Call Add#2 takes inputs from different Domains: p2 (expand of "
                                   "p1) is in d1 but p4 (expand of p3) is in d2"),
                         HasSubstr("d1 and d2 are siblings (neither is an ancestor of the other; "
                                   "both descend from d0)"),
                         HasSubstr("up to d0 with F::reduce first, then F::broadcast the result "
                                   "into the other Domain"),
                         Not(HasSubstr("bring the ancestor value down"))));
  // The suggested fix: gather one side up to d0, then broadcast it into the other.
  auto fixed = ro::compile([&](ro::Port<int> x) {
    auto a = ro::F::expand(split_a(x));
    auto b = ro::F::expand(split_b(x));
    auto b_total = sum(ro::F::reduce(b));
    return sum(ro::F::reduce(add(a, ro::F::broadcast(b_total, a))));
  });
  ro::testing::SyncExecutor ex(fixed);
  // n -> sum over i < n of (i + n(n-1)/2).
  EXPECT_EQ(values(ex.run({0, 1, 3}).outputs), (std::vector<int>{0, 0, 3 + 3 * 3}));
}

TEST(CompileErrors, ExpandOfANonCallOutput) {
  ro::Module<Split> split;
  ro::Module<IsEven> even;
  ro::Module<Sum> sum;
  EXPECT_THAT(compile_error([&] {
                ro::compile([&](ro::Port<std::vector<int>> lists) {
                  return sum(ro::F::reduce(ro::F::expand(lists)));
                });
              }),
              AllOf(HasSubstr("F::expand of p0 (source 0)"),
                    HasSubstr("only a Call output can be expanded"),
                    HasSubstr("produce the list with a UDF")));
  EXPECT_THAT(compile_error([&] {
                ro::compile([&](ro::Port<int> x) {
                  auto lists = split(x);
                  auto kept = ro::F::filter(lists, even(x));
                  return sum(ro::F::reduce(ro::F::expand(kept)));
                });
              }),
              AllOf(HasSubstr("F::expand of p3 (filter of p1)"),
                    HasSubstr("only a Call output can be expanded")));
}

TEST(CompileErrors, ExpandOfOnePortTwice) {
  ro::Module<Split> split;
  ro::Module<SplitPair> split_pair;
  ro::Module<Sum> sum;
  ro::Module<Add> add;
  EXPECT_THAT(compile_error([&] {
                ro::compile([&](ro::Port<int> x) {
                  auto lists = split(x);
                  auto a = ro::F::reduce(ro::F::expand(lists));
                  auto b = ro::F::reduce(ro::F::expand(lists));
                  return add(sum(a), sum(b));
                });
              }),
              AllOf(HasSubstr("p1 (output 0 of Split#0) is expanded twice (by p2 and p4)"),
                    HasSubstr("expand it once and reuse the child Port")));
  // Once alone and once in an aligned expansion is still twice.
  EXPECT_THAT(compile_error([&] {
                ro::compile([&](ro::Port<int> x) {
                  auto [numbers, names] = split_pair(x);
                  auto a = ro::F::reduce(ro::F::expand(numbers));
                  auto [n2, s2] = ro::F::expand_aligned(numbers, names);
                  return add(sum(a), sum(ro::F::reduce(n2, s2)));
                });
              }),
              HasSubstr("p1 (output 0 of SplitPair#0) is expanded twice"));
  // The same Port listed twice in one aligned expansion gets its own message.
  EXPECT_THAT(compile_error([&] {
                ro::compile([&](ro::Port<int> x) {
                  auto lists = split(x);
                  auto [a, b] = ro::F::expand_aligned(lists, lists);
                  return sum(ro::F::reduce(a, b));
                });
              }),
              AllOf(HasSubstr("F::expand_aligned lists p1 (output 0 of Split#0) twice"),
                    HasSubstr("pass distinct Ports")));
}

TEST(CompileErrors, ReduceOfAPortInTheRootDomain) {
  ro::Module<Double> dbl;
  ro::Module<Split> split;
  ro::Module<Sum> sum;
  ro::Module<test_udfs::Count<ro::Group<int>>> count;
  EXPECT_THAT(compile_error([&] {
                ro::compile([&](ro::Port<int> x) { return sum(ro::F::reduce(dbl(x))); });
              }),
              AllOf(HasSubstr("F::reduce of p1 (output 0 of Double#0)"),
                    HasSubstr("lives in the root Domain d0"),
                    HasSubstr("reduce only Ports inside an expansion (F::expand)")));
  // Reducing past the root: the second reduce reads a root Port.
  EXPECT_THAT(
      compile_error([&] {
        ro::compile([&](ro::Port<int> x) {
          auto groups = ro::F::reduce(ro::F::expand(split(x)));
          return count(ro::F::reduce(groups));
        });
      }),
      AllOf(HasSubstr("F::reduce of p3 (reduce of p2)"), HasSubstr("lives in the root Domain d0")));
}

TEST(CompileErrors, ExpandAlignedOverOutputsOfDifferentCalls) {
  ro::Module<Split> split;
  ro::Module<Add> add;
  ro::Module<Sum> sum;
  EXPECT_THAT(compile_error([&] {
                ro::compile([&](ro::Port<int> x) {
                  auto first = split(x);
                  auto second = split(x);
                  auto [a, b] = ro::F::expand_aligned(first, second);
                  return sum(ro::F::reduce(add(a, b)));
                });
              }),
              AllOf(HasSubstr("F::expand_aligned over p1 (output 0 of Split#0) and p2 (output 0 "
                              "of Split#1)"),
                    HasSubstr("aligned lists must be outputs of the same Call"),
                    HasSubstr("return them from one UDF")));
}

TEST(CompileErrors, ReduceAlignedOverPortsOfDifferentExpansions) {
  ro::Module<Split> split;
  ro::Module<Double> dbl;
  ro::Module<Sum> sum;
  ro::Module<Add> add;
  EXPECT_THAT(compile_error([&] {
                ro::compile([&](ro::Port<int> x) {
                  auto a = ro::F::expand(split(x));
                  auto b = ro::F::expand(split(x));
                  auto da = dbl(a);
                  auto db = dbl(b);
                  auto [ga, gb] = ro::F::reduce_aligned(da, db);
                  return add(sum(ga), sum(gb));
                });
              }),
              AllOf(HasSubstr("F::reduce_aligned over p5 (output 0 of Double#2) (d1) and p6 "
                              "(output 0 of Double#3) (d2)"),
                    HasSubstr("aligned Ports must share one expansion"),
                    HasSubstr("reduce them separately")));
  // A child and a grandchild are different expansions too.
  EXPECT_THAT(compile_error([&] {
                ro::compile([&](ro::Port<int> x) {
                  auto a = ro::F::expand(split(x));
                  auto b = ro::F::expand(split(a));
                  auto [ga, gb] = ro::F::reduce_aligned(a, b);
                  return add(sum(ga), sum(gb));
                });
              }),
              AllOf(HasSubstr("(d1) and p4 (expand of p3) (d2)"),
                    HasSubstr("aligned Ports must share one expansion")));
}

TEST(CompileErrors, ReduceMembersInAnotherDomain) {
  ro::Module<Split> split;
  ro::Module<IsEven> even;
  ro::Module<Sum> sum;
  ro::Module<Add> add;
  EXPECT_THAT(compile_error([&] {
                ro::compile([&](ro::Port<int> x) {
                  auto page = ro::F::expand(split(x));
                  return sum(ro::F::reduce(page, even(x)));
                });
              }),
              AllOf(HasSubstr("reduce members p3 (output 0 of IsEven#1) is in d0"),
                    HasSubstr("the values (p2 (expand of p1)) are in d1"),
                    HasSubstr("members must share the values' child Domain")));
  EXPECT_THAT(compile_error([&] {
                ro::compile([&](ro::Port<int> x) {
                  auto page = ro::F::expand(split(x));
                  auto sub = ro::F::expand(split(page));
                  auto [g1, g2] = ro::F::reduce_aligned(ro::F::members(even(sub)), page, page);
                  return add(sum(g1), sum(g2));
                });
              }),
              AllOf(HasSubstr("reduce members p5 (output 0 of IsEven#2) is in d2"),
                    HasSubstr("are in d1")));
}

TEST(CompileErrors, FilterWithSourceAndMaskInDifferentDomains) {
  ro::Module<Split> split;
  ro::Module<IsEven> even;
  ro::Module<Sum> sum;
  EXPECT_THAT(compile_error([&] {
                ro::compile([&](ro::Port<int> x) {
                  auto page = ro::F::expand(split(x));
                  return sum(ro::F::reduce(ro::F::filter(page, even(x))));
                });
              }),
              AllOf(HasSubstr("F::filter of p2 (expand of p1) (d1) by mask p3 (output 0 of "
                              "IsEven#1) (d0)"),
                    HasSubstr("source and mask must be in the same Domain"),
                    HasSubstr("F::broadcast(mask, like)")));
}

TEST(CompileErrors, FilterByAMaskFromASiblingOrDescendantDomain) {
  ro::Module<Split> split_a;
  ro::Module<Split> split_b;
  ro::Module<IsEven> even;
  ro::Module<Sum> sum;
  // The mask lives in a sibling Domain.
  EXPECT_THAT(compile_error([&] {
                ro::compile([&](ro::Port<int> x) {
                  auto a = ro::F::expand(split_a(x));
                  auto b = ro::F::expand(split_b(x));
                  return sum(ro::F::reduce(ro::F::filter(a, even(b))));
                });
              }),
              AllOf(HasSubstr("F::filter of p2 (expand of p1) (d1) by mask p5 (output 0 of "
                              "IsEven#2) (d2)"),
                    HasSubstr("d2 and d1 are siblings"),
                    HasSubstr("gather the mask (and turn each Group into one bool with a UDF) up "
                              "to d0 with F::reduce first"),
                    Not(HasSubstr("F::broadcast(mask, like) first"))));
  // The mask lives below the source.
  EXPECT_THAT(compile_error([&] {
                ro::compile([&](ro::Port<int> x) {
                  auto a = ro::F::expand(split_a(x));
                  return ro::F::filter(x, even(a));
                });
              }),
              AllOf(HasSubstr("by mask p3 (output 0 of IsEven#1) (d1)"),
                    HasSubstr("the mask lives below the source: F::broadcast the source into d1 "
                              "and filter there, or gather the mask up to d0 with F::reduce")));
}

TEST(CompileErrors, BroadcastFromANonAncestor) {
  ro::Module<Split> split;
  ro::Module<Double> dbl;
  ro::Module<Add> add;
  ro::Module<Sum> sum;
  // Sibling Domains: d1 and d2 are both children of d0.
  EXPECT_THAT(compile_error([&] {
                ro::compile([&](ro::Port<int> x) {
                  auto a = ro::F::expand(split(x));
                  auto b = ro::F::expand(split(x));
                  auto moved = ro::F::broadcast(dbl(a), b);
                  return sum(ro::F::reduce(add(moved, b)));
                });
              }),
              AllOf(HasSubstr("F::broadcast of p5 (output 0 of Double#2) (d1) like p4 (expand of "
                              "p3) (d2)"),
                    HasSubstr("d1 is not an ancestor of d2"),
                    HasSubstr("only an ancestor value can be broadcast into a descendant"),
                    HasSubstr("d1 and d2 are siblings"),
                    HasSubstr("gather the source up to d0 with F::reduce first")));
  // Descendant to ancestor.
  EXPECT_THAT(compile_error([&] {
                ro::compile([&](ro::Port<int> x) {
                  auto a = ro::F::expand(split(x));
                  return add(ro::F::broadcast(a, x), x);
                });
              }),
              AllOf(HasSubstr("F::broadcast of p2 (expand of p1) (d1) like p0 (source 0) (d0)"),
                    HasSubstr("d1 is not an ancestor of d0"), HasSubstr("use F::reduce to go up")));
}

TEST(CompileErrors, BroadcastIntoItsOwnDomain) {
  ro::Module<Double> dbl;
  ro::Module<Add> add;
  EXPECT_THAT(compile_error([&] {
                ro::compile([&](ro::Port<int> x) {
                  auto y = dbl(x);
                  return add(ro::F::broadcast(x, y), y);
                });
              }),
              AllOf(HasSubstr("F::broadcast of p0 (source 0) like p1 (output 0 of Double#0)"),
                    HasSubstr("both are already in d0"), HasSubstr("use the Port directly")));
}

struct OptionCase {
  std::string name;
  std::function<void(ro::Module<Double>&)> configure;
  std::string expected;
};

TEST(CompileErrors, InvalidModuleOptionsNameTheModuleAndTheOption) {
  const std::vector<OptionCase> cases = {
      {"replicas", [](auto& m) { m.replicas(0); }, "replicas must be >= 1, got 0"},
      {"batch_size", [](auto& m) { m.batch_size(0); }, "batch_size must be >= 1, got 0"},
      {"negative batch_size", [](auto& m) { m.batch_size(-3); }, "batch_size must be >= 1, got -3"},
      {"cpus", [](auto& m) { m.cpus(-1); }, "cpus must be >= 0, got -1"},
      {"cpus NaN", [](auto& m) { m.cpus(std::numeric_limits<double>::quiet_NaN()); },
       "cpus must be >= 0, got nan"},
      {"gpus", [](auto& m) { m.gpus(-0.5); }, "gpus must be >= 0, got -0.5"},
      {"resource", [](auto& m) { m.resources("tpu", -2); }, "resource 'tpu' must be >= 0, got -2"},
      {"infra_retries", [](auto& m) { m.infra_retries(-1); }, "infra_retries must be >= 0, got -1"},
      {"retry_batch", [](auto& m) { m.recovery(ro::RecoveryPolicy::retry_batch(-1)); },
       "recovery retries must be >= 0, got -1"},
      {"retry_tail", [](auto& m) { m.recovery(ro::RecoveryPolicy::retry_tail(-2)); },
       "recovery retries must be >= 0, got -2"},
      {"timeout", [](auto& m) { m.timeout(std::chrono::milliseconds(-5)); },
       "timeout must be >= 0 ms, got -5"},
  };
  for (const OptionCase& c : cases) {
    ro::Module<Double> dbl;
    c.configure(dbl);
    EXPECT_THAT(
        compile_error([&] { ro::compile([&](ro::Port<int> x) { return dbl(dbl(x)); }); }),
        AllOf(HasSubstr("Module<Double> (used by Double#0, Double#1)"), HasSubstr(c.expected)))
        << c.name;
  }
}

TEST(CompileErrors, BoundaryModuleOptionsAreAccepted) {
  ro::Module<Double> dbl = ro::Module<Double>()
                               .replicas(1)
                               .batch_size(1)
                               .cpus(0)
                               .gpus(0)
                               .resources("tpu", 0)
                               .infra_retries(0)
                               .recovery(ro::RecoveryPolicy::retry_batch(0))
                               .timeout(std::chrono::milliseconds(0));
  auto program = ro::compile([&](ro::Port<int> x) { return dbl(x); });
  ro::testing::SyncExecutor ex(program);
  EXPECT_EQ(values(ex.run({3}).outputs), (std::vector<int>{6}));
}

TEST(CompileErrors, InvalidOptionOfTheSecondModuleNamesThatModule) {
  ro::Module<Double> fine;
  ro::Module<Add> bad = ro::Module<Add>().replicas(-4);
  EXPECT_THAT(compile_error([&] { ro::compile([&](ro::Port<int> x) { return bad(fine(x), x); }); }),
              AllOf(HasSubstr("Module<Add> (used by Add#1): replicas must be >= 1, got -4"),
                    Not(HasSubstr("Double"))));
}

TEST(CompileErrors, EmptyOutputs) {
  // `return std::tuple<>{}` compiles (an empty tuple of Ports), so the check is the
  // compiler's, at compile time of the pipeline.
  ro::Module<Double> dbl;
  EXPECT_THAT(compile_error([&] {
                ro::compile([&](ro::Port<int> x) {
                  (void)dbl(x);
                  return std::tuple<>{};
                });
              }),
              HasSubstr("the pipeline has no outputs: forward() must return at least one Port"));
}

TEST(CompileErrors, OutputNotInTheRootDomain) {
  ro::Module<Split> split;
  ro::Module<Double> dbl;
  EXPECT_THAT(compile_error([&] {
                ro::compile([&](ro::Port<int> x) { return dbl(ro::F::expand(split(x))); });
              }),
              AllOf(HasSubstr("pipeline output p3 (output 0 of Double#1) lives in d1, not the root "
                              "Domain"),
                    HasSubstr("gather it with F::reduce")));
  // Also when only the second of several outputs is misplaced.
  EXPECT_THAT(compile_error([&] {
                ro::compile([&](ro::Port<int> x) {
                  auto child = ro::F::expand(split(x));
                  return std::make_tuple(dbl(x), child);
                });
              }),
              HasSubstr("pipeline output p2 (expand of p1) lives in d1"));
}

// ---------------------------------------------------------------------------------------
// explain()
// ---------------------------------------------------------------------------------------

struct Render {
  // "a;b;c" -> pages ["a", "b", "c"]; "" -> no page.
  std::vector<std::vector<std::string>> run(ro::Column<std::string> pdfs) {
    std::vector<std::vector<std::string>> out;
    for (const std::string& pdf : pdfs) {
      std::vector<std::string> pages;
      std::string page;
      std::istringstream in(pdf);
      while (std::getline(in, page, ';')) pages.push_back(page);
      out.push_back(std::move(pages));
    }
    return out;
  }
};

struct Ocr {
  std::vector<std::string> run(ro::Column<std::string> pages) {
    std::vector<std::string> out;
    for (std::string page : pages) {
      for (char& ch : page) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
      out.push_back(page);
    }
    return out;
  }
};

struct Assemble {
  std::vector<std::string> run(ro::Column<ro::Group<std::string>> texts,
                               ro::Column<std::string> pdfs) {
    std::vector<std::string> out;
    for (std::size_t i = 0; i < texts.size(); ++i) {
      std::string doc = pdfs[i] + " =>";
      for (const std::string& t : texts[i]) doc += " " + t;
      out.push_back(doc);
    }
    return out;
  }
};

struct PdfToMarkdown : ro::Pipeline {
  ro::Module<Render> render = ro::Module<Render>().replicas(2);
  ro::Module<Ocr> ocr = ro::Module<Ocr>().replicas(4).batch_size(32);
  ro::Module<Assemble> assemble;
  ro::Port<std::string> forward(ro::Port<std::string> pdf) {
    auto pages = ro::F::expand(render(pdf));
    return assemble(ro::F::reduce(ocr(pages)), pdf);
  }
};

TEST(Explain, RenderExpandOcrReduceAssemble) {
  PdfToMarkdown pipeline;
  auto program = ro::compile(pipeline);
  EXPECT_THAT(lines(program.explain()),
              ElementsAre("RuntimePlan[optimized]",  //
                          "  p0 source d0 <- [] => source-admission",
                          "  p1 call_output d0 <- [p0] => worker-output by Render#0",
                          "  p2 expand d1 <- [p1] => expanded-output-layout",
                          "  p3 call_output d1 <- [p2] => worker-output by Ocr#1",
                          "  p4 reduce d0 <- [p3] => reduce-effect",
                          "  p5 call_output d0 <- [p4,p0] => worker-output by Assemble#2 output"));
  ro::testing::SyncExecutor ex(program);
  auto r = ex.run({"a;b", "", "x;y;z"});
  EXPECT_EQ(values(r.outputs), (std::vector<std::string>{"a;b => A B", " =>", "x;y;z => X Y Z"}));
}

TEST(Explain, ShowsMultiOutputSlotsFilterAndMembers) {
  ro::Module<test_udfs::SquareAndText> two;
  ro::Module<Split> split;
  ro::Module<IsEven> even;
  ro::Module<Sum> sum;
  auto program = ro::compile([&](ro::Port<int> x) {
    auto [square, text] = two(x);
    auto child = ro::F::expand(split(square));
    auto kept = ro::F::filter(child, even(child));
    // Every child value, gathered where the filtered Port (the members) is present.
    return std::make_tuple(sum(ro::F::reduce(child, kept)), text);
  });
  EXPECT_THAT(
      lines(program.explain()),
      ElementsAre("RuntimePlan[optimized]",  //
                  "  p0 source d0 <- [] => source-admission",
                  "  p1 call_output d0 <- [p0] => worker-output by SquareAndText#0[0]",
                  "  p2 call_output d0 <- [p0] => worker-output by SquareAndText#0[1] output",
                  "  p3 call_output d0 <- [p1] => worker-output by Split#1",
                  "  p4 expand d1 <- [p3] => expanded-output-layout",
                  "  p5 call_output d1 <- [p4] => worker-output by IsEven#2",
                  "  p6 filter d1 <- [p4,p5] => filter-effect",
                  "  p7 reduce d0 <- [p4,p6] => reduce-effect",
                  "  p8 call_output d0 <- [p7] => worker-output by Sum#3 output"));
  ro::testing::SyncExecutor ex(program);
  auto r = ex.run({2, 3});
  // 2 -> children 0..3, even ones 0+2; 3 -> children 0..8, even ones 0+2+4+6+8.
  EXPECT_EQ(values(std::get<0>(r.outputs)), (std::vector<int>{2, 20}));
  EXPECT_EQ(values(std::get<1>(r.outputs)), (std::vector<std::string>{"2", "3"}));
}

TEST(Explain, NamesCallsThatReachNoOutput) {
  ro::Module<Double> dbl;
  ro::Module<IsEven> even;
  ro::Module<Split> split;
  ro::Module<Sum> sum;
  auto program = ro::compile([&](ro::Port<int> x) {
    (void)dbl(x);                          // a forgotten return value
    auto child = ro::F::expand(split(x));  // a dead end: nothing gathers it
    (void)even(child);
    auto kept = ro::F::filter(x, even(x));  // used only as a mask: live
    return sum(ro::F::reduce(ro::F::expand(split(kept))));
  });
  const auto text = lines(program.explain());
  std::vector<std::string> unused;
  for (const auto& line : text) {
    if (line.find("unused Call") != std::string::npos) unused.push_back(line);
  }
  EXPECT_THAT(
      unused,
      ElementsAre("  unused Call Double#0 [p1]: no pipeline output depends on it, yet it "
                  "runs on every Item and its failures count; return its output from "
                  "forward() or remove it",
                  HasSubstr("unused Call Split#1 [p2]"), HasSubstr("unused Call IsEven#2 [p4]")));
  // The notes follow every Port line.
  EXPECT_THAT(text.at(text.size() - 4), HasSubstr("output"));
  // It is a note, not an error: the unused Calls still run on every row.
  ro::testing::SyncExecutor ex(program);
  EXPECT_EQ(values(ex.run({2, 4}).outputs), (std::vector<int>{0 + 1, 0 + 1 + 2 + 3}));
  std::map<std::string, std::size_t> rows;
  for (const auto& rpc : ex.rpcs()) rows[rpc.call] += rpc.grains.size();
  EXPECT_EQ(rows["Double#0"], 2u);
  EXPECT_EQ(rows["IsEven#2"], 2u + 4u);
}

TEST(Explain, NoUnusedNoteWhenEveryCallReachesAnOutput) {
  PdfToMarkdown pipeline;
  EXPECT_THAT(ro::compile(pipeline).explain(), Not(HasSubstr("unused Call")));
}

// x -> children i < x -> grandchildren j < i, each plus x broadcast through two levels.
template <class Capture>
auto broadcast_chain(Capture& m) {
  return [&m](ro::Port<int> x) {
    auto a = ro::F::expand(m.split_a(x));
    auto b = ro::F::expand(m.split_b(a));
    auto x_in_a = ro::F::broadcast(x, a);
    auto x_in_b = ro::F::broadcast(x_in_a, b);
    auto per_b = m.add(b, x_in_b);
    auto per_a = m.sum_a(ro::F::reduce(per_b));
    return m.sum_root(ro::F::reduce(per_a));
  };
}

struct ChainModules {
  ro::Module<Split> split_a;
  ro::Module<Split> split_b;
  ro::Module<Add> add;
  ro::Module<Sum> sum_a;
  ro::Module<Sum> sum_root;
};

TEST(Explain, BroadcastChainCollapsesOnlyWhenOptimized) {
  ChainModules m;
  auto optimized = ro::compile(broadcast_chain(m));
  auto plain = ro::compile(broadcast_chain(m), {.optimize = false});

  const auto opt = lines(optimized.explain());
  const auto unopt = lines(plain.explain());
  EXPECT_EQ(opt.front(), "RuntimePlan[optimized]");
  EXPECT_EQ(unopt.front(), "RuntimePlan[unoptimized]");
  // p0 x, p1 split_a, p2 a, p3 split_b, p4 b, p5 x_in_a, p6 x_in_b.
  EXPECT_THAT(opt, ::testing::Contains("  p5 broadcast d1 <- [p0] => broadcast-effect(p0)"));
  auto at = std::find(opt.begin(), opt.end(), "  p6 broadcast d2 <- [p5] => broadcast-effect(p0)");
  ASSERT_NE(at, opt.end()) << optimized.explain();
  ASSERT_NE(at + 1, opt.end());
  EXPECT_EQ(*(at + 1), "    rewrite collapse-broadcast-chain: [p5] -> [p0]");

  EXPECT_THAT(unopt, ::testing::Contains("  p6 broadcast d2 <- [p5] => broadcast-effect(p5)"));
  for (const std::string& line : unopt) EXPECT_THAT(line, Not(HasSubstr("rewrite"))) << line;
  // Apart from the header and the rewrite, the two plans print the same topology.
  std::vector<std::string> opt_body(opt.begin() + 1, opt.end());
  std::erase_if(opt_body, [](const std::string& l) { return l.find("rewrite") != l.npos; });
  std::vector<std::string> unopt_body(unopt.begin() + 1, unopt.end());
  for (auto& l : unopt_body) {
    if (l.find("broadcast-effect(p5)") != l.npos) l.replace(l.find("(p5)"), 4, "(p0)");
  }
  EXPECT_EQ(opt_body, unopt_body);

  EXPECT_EQ(optimized.plan()->broadcasts[1].source, 0);
  EXPECT_EQ(optimized.plan()->broadcasts[1].declared_source, 5);
  EXPECT_EQ(plain.plan()->broadcasts[1].source, 5);

  const std::vector<int> input = {0, 1, 2, 3, 4, 5};
  std::vector<int> expected;
  for (int n : input) {
    int total = 0;
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < i; ++j) total += j + n;
    expected.push_back(total);
  }
  ro::testing::SyncExecutor ex_opt(optimized);
  ro::testing::SyncExecutor ex_plain(plain);
  for (std::size_t input_batch : {0u, 2u}) {
    // Assigned, not designated: GCC 12 flags designated initializers that omit members.
    ro::RunOptions options;
    options.input_batch_size = input_batch;
    options.max_active_input_batches = 2;
    auto r_opt = ex_opt.run(input, options);
    auto r_plain = ex_plain.run(input, options);
    EXPECT_EQ(values(r_opt.outputs), expected);
    EXPECT_EQ(r_opt.outputs, r_plain.outputs);
  }
}

// ---------------------------------------------------------------------------------------
// Pools follow Module identity.
// ---------------------------------------------------------------------------------------

std::size_t construction_count(const std::shared_ptr<RecordingDouble::Log>& log) {
  return log->constructions.entries().size();
}

TEST(Pools, OneModuleInTwoCallsSharesOnePool) {
  auto log = std::make_shared<RecordingDouble::Log>();
  ro::Module<RecordingDouble> dbl(log);
  auto program = ro::compile([&](ro::Port<int> x) { return dbl(dbl(x)); });
  const auto& plan = *program.plan();
  ASSERT_EQ(plan.pools.size(), 1u);
  EXPECT_EQ(plan.pools[0].name, "RecordingDouble");
  EXPECT_THAT(plan.pools[0].calls, ElementsAre(0, 1));
  ASSERT_EQ(plan.calls.size(), 2u);
  EXPECT_EQ(plan.calls[0].name, "RecordingDouble#0");
  EXPECT_EQ(plan.calls[1].name, "RecordingDouble#1");
  EXPECT_EQ(plan.calls[0].pool, 0);
  EXPECT_EQ(plan.calls[1].pool, 0);

  ro::testing::SyncExecutor ex(program);
  EXPECT_EQ(construction_count(log), 1u);  // one pool, one actor
  EXPECT_EQ(values(ex.run({1, 2}).outputs), (std::vector<int>{4, 8}));
}

TEST(Pools, DistinctModulesWithEqualOptionsGetTwoPools) {
  auto log = std::make_shared<RecordingDouble::Log>();
  ro::Module<RecordingDouble> first = ro::Module<RecordingDouble>(log).batch_size(2);
  ro::Module<RecordingDouble> second = ro::Module<RecordingDouble>(log).batch_size(2);
  auto program = ro::compile([&](ro::Port<int> x) { return second(first(x)); });
  const auto& plan = *program.plan();
  ASSERT_EQ(plan.pools.size(), 2u);
  EXPECT_EQ(plan.pools[0].name, "RecordingDouble/0");
  EXPECT_EQ(plan.pools[1].name, "RecordingDouble/1");
  EXPECT_EQ(plan.calls[0].pool, 0);
  EXPECT_EQ(plan.calls[1].pool, 1);
  EXPECT_THAT(plan.pools[1].calls, ElementsAre(1));

  ro::testing::SyncExecutor ex(program);
  EXPECT_EQ(construction_count(log), 2u);
}

TEST(Pools, ACopiedModuleIsANewPoolAMovedOneIsNot) {
  ro::Module<Double> original = ro::Module<Double>().batch_size(3).replicas(2);
  ro::Module<Double> copy = original;
  EXPECT_EQ(copy.options().batch_size, 3);
  EXPECT_EQ(copy.options().replicas, 2);
  auto copied = ro::compile([&](ro::Port<int> x) { return copy(original(x)); });
  ASSERT_EQ(copied.plan()->pools.size(), 2u);
  EXPECT_EQ(copied.plan()->pools[1].options.batch_size, 3);
  EXPECT_NE(copied.plan()->calls[0].pool, copied.plan()->calls[1].pool);

  auto moved = ro::compile([&](ro::Port<int> x) {
    auto y = original(x);
    ro::Module<Double> same = std::move(original);
    return same(y);
  });
  ASSERT_EQ(moved.plan()->pools.size(), 1u);
  EXPECT_THAT(moved.plan()->pools[0].calls, ElementsAre(0, 1));
}

TEST(Pools, TemporaryModulesNeverShareAPool) {
  // A temporary Module dies at the end of its statement; the next one may be allocated at
  // the same address and must still be a distinct Module with its own options.
  // All three read the source, so every Grain is READY at once and batches fill up.
  auto program = ro::compile([](ro::Port<int> x) {
    auto a = ro::Module<Double>()(x);
    auto b = ro::Module<Double>().batch_size(4)(x);
    auto c = ro::Module<Double>().batch_size(2)(x);
    return std::make_tuple(a, b, c);
  });
  const auto& plan = *program.plan();
  ASSERT_EQ(plan.pools.size(), 3u);
  EXPECT_EQ(plan.calls[0].batch_size, 1);
  EXPECT_EQ(plan.calls[1].batch_size, 4);
  EXPECT_EQ(plan.calls[2].batch_size, 2);
  ro::testing::SyncExecutor ex(program);
  auto r = ex.run({1, 2, 3, 4, 5});
  const std::vector<int> doubled = {2, 4, 6, 8, 10};
  EXPECT_EQ(values(std::get<0>(r.outputs)), doubled);
  EXPECT_EQ(values(std::get<1>(r.outputs)), doubled);
  EXPECT_EQ(values(std::get<2>(r.outputs)), doubled);
  std::map<std::string, std::size_t> largest;
  for (const auto& rpc : ex.rpcs())
    largest[rpc.call] = std::max(largest[rpc.call], rpc.grains.size());
  EXPECT_EQ(largest["Double#0"], 1u);
  EXPECT_EQ(largest["Double#1"], 4u);
  EXPECT_EQ(largest["Double#2"], 2u);
}

// ---------------------------------------------------------------------------------------
// Static arguments.
// ---------------------------------------------------------------------------------------

struct Opaque {
  int bias = 0;
};

// x, statics (k, label, opaque) -> x + k + opaque.bias; logs "label:k:rows" per RPC.
struct Shift {
  explicit Shift(std::shared_ptr<SharedLog<std::string>> rpc_log) : log(std::move(rpc_log)) {}
  std::vector<int> run(ro::Column<int> x, int k, const std::string& label, Opaque opaque) {
    log->add(label + ":" + std::to_string(k) + ":" + std::to_string(x.size()));
    std::vector<int> out;
    for (int v : x) out.push_back(v + k + opaque.bias);
    return out;
  }
  std::shared_ptr<SharedLog<std::string>> log;
};

TEST(StaticArguments, RecordedInThePlanAndPassedOnEveryRpc) {
  auto log = std::make_shared<SharedLog<std::string>>();
  ro::Module<Shift> shift = ro::Module<Shift>(log).batch_size(2);
  int k = 1;
  auto program = ro::compile([&](ro::Port<int> x) {
    auto y = shift(x, k, "first", Opaque{100});
    return shift(y, 10, std::string("second"), Opaque{1000});
  });
  k = 50;  // captured by value when traced

  const auto& plan = *program.plan();
  ASSERT_EQ(plan.calls.size(), 2u);
  ASSERT_EQ(plan.calls[0].static_args.size(), 3u);
  EXPECT_EQ(plan.calls[0].static_args[0], "1");
  EXPECT_EQ(plan.calls[0].static_args[1], "first");
  // Values without a formatter print as their type name.
  EXPECT_THAT(plan.calls[0].static_args[2], AllOf(::testing::StartsWith("<"), HasSubstr("Opaque")));
  EXPECT_EQ(plan.calls[1].static_args[0], "10");
  EXPECT_EQ(plan.calls[1].static_args[1], "second");
  EXPECT_THAT(program.explain(), AllOf(HasSubstr("worker-output by Shift#0 static(1, first, <"),
                                       HasSubstr("worker-output by Shift#1 static(10, second, <")));

  ro::testing::SyncExecutor ex(program);
  auto r = ex.run({1, 2, 3, 4, 5});
  EXPECT_EQ(values(r.outputs), (std::vector<int>{1112, 1113, 1114, 1115, 1116}));
  // SyncExecutor calls the UDF on the test thread, in the order of rpcs().
  const auto entries = log->entries();
  ASSERT_EQ(entries.size(), ex.rpcs().size());
  ASSERT_EQ(entries.size(), 6u);  // 3 RPCs of at most 2 Grains per Call
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const auto& rpc = ex.rpcs()[i];
    const std::string expected_prefix = rpc.call == "Shift#0" ? "first:1:" : "second:10:";
    EXPECT_EQ(entries[i], expected_prefix + std::to_string(rpc.grains.size())) << i;
  }
}

// ---------------------------------------------------------------------------------------
// A compiled program is a snapshot.
// ---------------------------------------------------------------------------------------

std::vector<std::size_t> rpc_sizes(const std::vector<ro::RpcRecord>& rpcs) {
  std::vector<std::size_t> out;
  for (const auto& r : rpcs) out.push_back(r.grains.size());
  return out;
}

TEST(Snapshot, LaterModuleChangesDoNotAffectACompiledProgram) {
  auto log = std::make_shared<RecordingDouble::Log>();
  ro::Module<RecordingDouble> dbl = ro::Module<RecordingDouble>(log).batch_size(2);
  auto pipeline = [&](ro::Port<int> x) { return dbl(x); };
  auto before = ro::compile(pipeline);
  dbl.batch_size(4).replicas(3).recovery(ro::RecoveryPolicy::retry_batch(2));

  const auto& plan = *before.plan();
  EXPECT_EQ(plan.pools[0].options.batch_size, 2);
  EXPECT_EQ(plan.pools[0].options.replicas, 1);
  EXPECT_EQ(plan.calls[0].batch_size, 2);
  EXPECT_EQ(plan.calls[0].recovery, ro::RecoveryPolicy::abort());

  const std::vector<int> input = {1, 2, 3, 4, 5, 6, 7, 8};
  {
    ro::testing::SyncExecutor ex(before);
    EXPECT_EQ(values(ex.run(input).outputs), (std::vector<int>{2, 4, 6, 8, 10, 12, 14, 16}));
    EXPECT_THAT(rpc_sizes(ex.rpcs()), ElementsAre(2, 2, 2, 2));
  }

  auto after = ro::compile(pipeline);
  EXPECT_EQ(after.plan()->pools[0].options.batch_size, 4);
  EXPECT_EQ(after.plan()->pools[0].options.replicas, 3);
  EXPECT_EQ(after.plan()->calls[0].recovery, ro::RecoveryPolicy::retry_batch(2));
  {
    ro::testing::SyncExecutor ex(after);
    EXPECT_EQ(values(ex.run(input).outputs), (std::vector<int>{2, 4, 6, 8, 10, 12, 14, 16}));
    EXPECT_THAT(rpc_sizes(ex.rpcs()), ElementsAre(4, 4));
  }
  {
    // The first program is still unchanged after the recompile.
    ro::testing::SyncExecutor ex(before);
    ex.run(input);
    EXPECT_THAT(rpc_sizes(ex.rpcs()), ElementsAre(2, 2, 2, 2));
  }
}

TEST(Snapshot, ProgramOutlivesThePipelineAndItsModules) {
  std::optional<ro::Compiled<PdfToMarkdown>> program;
  {
    PdfToMarkdown pipeline;
    program.emplace(ro::compile(pipeline));
    pipeline.ocr.batch_size(1);
  }
  EXPECT_EQ(program->plan()->calls[1].batch_size, 32);
  ro::testing::SyncExecutor ex(*program);
  EXPECT_EQ(values(ex.run({"p;q"}).outputs), (std::vector<std::string>{"p;q => P Q"}));
}

}  // namespace
