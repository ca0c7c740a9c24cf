// The misuse catalogue, compile time: each CompileError a user sees for a pipeline built
// wrongly (Ports of another pipeline, Modules and operators outside a trace, the Domain
// rules, no outputs, invalid Module options) or a forward() that throws, with the message
// naming the culprit and the fix.
#include <chrono>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "support/misuse_testing.h"
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <rayorch/rayorch.h>

namespace ro = rayorch;
using ::testing::AllOf;
using ::testing::HasSubstr;

namespace {

using misuse_testing::Add;
using misuse_testing::Count;
using misuse_testing::error_of;
using misuse_testing::Inc;

// n -> [0, n)
struct Range {
  std::vector<std::vector<int>> run(ro::Column<int> n) {
    std::vector<std::vector<int>> out;
    for (int v : n) {
      out.emplace_back();
      for (int i = 0; i < v; ++i) out.back().push_back(i);
    }
    return out;
  }
};

struct IsEven {
  std::vector<bool> run(ro::Column<int> x) {
    std::vector<bool> out;
    for (int v : x) out.push_back(v % 2 == 0);
    return out;
  }
};

// ---- Helpers ---------------------------------------------------------------------------------

// The message of the CompileError `f` throws; fails the test when it throws anything else or
// nothing.
template <class F>
std::string compile_error(F&& f) {
  try {
    f();
  } catch (const ro::CompileError& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected ro::CompileError, got: " << e.what();
    return {};
  }
  ADD_FAILURE() << "expected ro::CompileError, nothing was thrown";
  return {};
}

// ---- CompileErrors ---------------------------------------------------------------------------
// A Call without a Port input, a Port of the wrong type and a wrong number of static arguments
// are rejected by static_asserts (docs/SEMANTICS.md), so they have no run-time entry here;
// tests/diagnostics/ checks those messages. A UDF cannot return the wrong number of outputs
// either: the count comes from its run() signature; a wrong number of rows in any output is
// tested in misuse_contracts_test.cc.

TEST(Misuse, PortOfAnotherPipeline) {
  ro::Module<Inc> inc;
  std::optional<ro::Port<int>> leaked;
  ro::compile([&](ro::Port<int> x) {
    leaked = inc(x);
    return *leaked;
  });
  const std::string msg = compile_error(
      [&] { ro::compile([&](ro::Port<int> x) { return ro::Module<Add>()(x, *leaked); }); });
  EXPECT_THAT(msg, AllOf(HasSubstr("input of Add: Port p1 (output 0 of Inc#0) belongs to another "
                                   "pipeline"),
                         HasSubstr("build every Port inside this pipeline's forward()")));
}

TEST(Misuse, ModuleCalledOutsideATrace) {
  ro::Module<Inc> inc;
  std::optional<ro::Port<int>> leaked;
  ro::compile([&](ro::Port<int> x) {
    leaked = x;
    return inc(x);
  });
  EXPECT_THAT(compile_error([&] { inc(*leaked); }),
              HasSubstr("Module<Inc> was called outside a trace: call Modules only inside "
                        "forward() (or the lambda) while ro::compile traces it"));
}

TEST(Misuse, OperatorCalledOutsideATrace) {
  ro::Module<Range> range;
  std::optional<ro::Port<std::vector<int>>> leaked;
  ro::compile([&](ro::Port<int> x) {
    leaked = range(x);
    return x;
  });
  EXPECT_THAT(compile_error([&] { ro::F::expand(*leaked); }),
              HasSubstr("F::expand was called outside a trace"));
}

TEST(Misuse, CallWithInputsFromDifferentDomains) {
  ro::Module<Range> range;
  ro::Module<Add> add;
  ro::Module<Count> count;
  const std::string msg = compile_error([&] {
    ro::compile([&](ro::Port<int> x) {
      auto child = ro::F::expand(range(x));
      return count(ro::F::reduce(add(child, x)));
    });
  });
  EXPECT_THAT(msg,
              AllOf(HasSubstr("Call Add#1 takes inputs from different Domains: p2 (expand of "
                              "p1) is in d1 but p0 (source 0) is in d0"),
                    HasSubstr("bring the ancestor value down with F::broadcast(value, like)")));
}

TEST(Misuse, ExpandOfANonCallOutput) {
  const std::string msg = compile_error([&] {
    ro::compile(
        [&](ro::Port<std::vector<int>> lists) { return ro::F::reduce(ro::F::expand(lists)); });
  });
  EXPECT_THAT(msg, HasSubstr("F::expand of p0 (source 0): only a Call output can be expanded; "
                             "produce the list with a UDF"));
}

TEST(Misuse, ExpandOfOnePortTwice) {
  ro::Module<Range> range;
  ro::Module<Count> count;
  ro::Module<Add> add;
  const std::string msg = compile_error([&] {
    ro::compile([&](ro::Port<int> x) {
      auto lists = range(x);
      auto a = count(ro::F::reduce(ro::F::expand(lists)));
      auto b = count(ro::F::reduce(ro::F::expand(lists)));
      return add(a, b);
    });
  });
  EXPECT_THAT(msg, HasSubstr("p1 (output 0 of Range#0) is expanded twice (by p2 and p5); expand it "
                             "once and reuse the child Port"));
}

TEST(Misuse, ExpandAlignedOverDifferentCalls) {
  ro::Module<Range> r1, r2;
  ro::Module<Count> count;
  const std::string msg = compile_error([&] {
    ro::compile([&](ro::Port<int> x) {
      auto l1 = r1(x);
      auto l2 = r2(x);
      auto [a, b] = ro::F::expand_aligned(l1, l2);
      (void)b;
      return count(ro::F::reduce(a));
    });
  });
  EXPECT_THAT(msg, HasSubstr("F::expand_aligned over p1 (output 0 of Range#0) and p2 (output 0 of "
                             "Range#1): aligned lists must be outputs of the same Call"));
}

TEST(Misuse, ExpandAlignedOfTheSamePortTwice) {
  ro::Module<Range> range;
  ro::Module<Count> count;
  const std::string msg = compile_error([&] {
    ro::compile([&](ro::Port<int> x) {
      auto lists = range(x);
      auto [a, b] = ro::F::expand_aligned(lists, lists);
      (void)b;
      return count(ro::F::reduce(a));
    });
  });
  EXPECT_THAT(msg, HasSubstr("F::expand_aligned lists p1 (output 0 of Range#0) twice; pass "
                             "distinct Ports"));
}

TEST(Misuse, ReduceOfARootPort) {
  const std::string msg = compile_error(
      [&] { ro::compile([&](ro::Port<int> x) { return ro::Module<Count>()(ro::F::reduce(x)); }); });
  EXPECT_THAT(msg, HasSubstr("F::reduce of p0 (source 0): it lives in the root Domain d0, which "
                             "has no parent to gather into"));
}

TEST(Misuse, ReduceAlignedOverDifferentExpansions) {
  ro::Module<Range> r1, r2;
  ro::Module<Count> count;
  const std::string msg = compile_error([&] {
    ro::compile([&](ro::Port<int> x) {
      auto c1 = ro::F::expand(r1(x));
      auto c2 = ro::F::expand(r2(x));
      auto [a, b] = ro::F::reduce_aligned(c1, c2);
      (void)b;
      return count(a);
    });
  });
  EXPECT_THAT(msg, HasSubstr("F::reduce_aligned over p2 (expand of p1) (d1) and p4 (expand of p3) "
                             "(d2): aligned Ports must share one expansion"));
}

TEST(Misuse, ReduceMembersInAnotherDomain) {
  ro::Module<Range> r1, r2;
  ro::Module<Count> count;
  const std::string msg = compile_error([&] {
    ro::compile([&](ro::Port<int> x) {
      auto a = ro::F::expand(r1(x));
      auto b = ro::F::expand(r2(x));
      return count(ro::F::reduce(a, ro::F::members(b)));
    });
  });
  EXPECT_THAT(msg, HasSubstr("reduce members p4 (expand of p3) is in d2 but the values (p2 (expand "
                             "of p1)) are in d1; members must share the values' child Domain"));
}

TEST(Misuse, FilterWithSourceAndMaskInDifferentDomains) {
  ro::Module<Range> range;
  ro::Module<IsEven> even;
  ro::Module<Count> count;
  const std::string msg = compile_error([&] {
    ro::compile([&](ro::Port<int> x) {
      auto child = ro::F::expand(range(x));
      return count(ro::F::reduce(ro::F::filter(child, even(x))));
    });
  });
  EXPECT_THAT(msg, HasSubstr("F::filter of p2 (expand of p1) (d1) by mask p3 (output 0 of "
                             "IsEven#1) (d0): source and mask must be in the same Domain"));
}

TEST(Misuse, BroadcastFromANonAncestor) {
  ro::Module<Range> range;
  ro::Module<Count> count;
  const std::string msg = compile_error([&] {
    ro::compile([&](ro::Port<int> x) {
      auto child = ro::F::expand(range(x));
      auto up = ro::F::broadcast(child, x);
      return count(ro::F::reduce(ro::F::broadcast(up, child)));
    });
  });
  EXPECT_THAT(msg, HasSubstr("F::broadcast of p2 (expand of p1) (d1) like p0 (source 0) (d0): d1 "
                             "is not an ancestor of d0; only an ancestor value can be broadcast "
                             "into a descendant Domain (use F::reduce to go up)"));
}

TEST(Misuse, BroadcastIntoItsOwnDomain) {
  ro::Module<Inc> inc;
  const std::string msg = compile_error(
      [&] { ro::compile([&](ro::Port<int> x) { return ro::F::broadcast(inc(x), x); }); });
  EXPECT_THAT(msg, HasSubstr("F::broadcast of p1 (output 0 of Inc#0) like p0 (source 0): both are "
                             "already in d0; use the Port directly"));
}

TEST(Misuse, OutputOutsideTheRootDomain) {
  ro::Module<Range> range;
  const std::string msg =
      compile_error([&] { ro::compile([&](ro::Port<int> x) { return ro::F::expand(range(x)); }); });
  EXPECT_THAT(msg, HasSubstr("pipeline output p2 (expand of p1) lives in d1, not the root Domain; "
                             "gather it with F::reduce until it is one value per source row"));
}

TEST(Misuse, NoOutputs) {
  const std::string msg =
      compile_error([&] { ro::compile([&](ro::Port<int>) { return std::tuple<>{}; }); });
  EXPECT_THAT(msg,
              HasSubstr("the pipeline has no outputs: forward() must return at least one Port"));
}

// ---- Invalid Module options (CompileError naming the Module, its Calls and the option) -------

template <class Configure>
std::string option_error(Configure&& configure) {
  ro::Module<Inc> inc;
  configure(inc);
  return compile_error([&] { ro::compile([&](ro::Port<int> x) { return inc(inc(x)); }); });
}

TEST(Misuse, NonPositiveReplicas) {
  EXPECT_THAT(option_error([](auto& m) { m.replicas(0); }),
              HasSubstr("Module<Inc> (used by Inc#0, Inc#1): replicas must be >= 1, got 0"));
  EXPECT_THAT(option_error([](auto& m) { m.replicas(-3); }),
              HasSubstr("replicas must be >= 1, got -3"));
}

TEST(Misuse, NonPositiveBatchSize) {
  EXPECT_THAT(option_error([](auto& m) { m.batch_size(0); }),
              HasSubstr("Module<Inc> (used by Inc#0, Inc#1): batch_size must be >= 1, got 0"));
}

TEST(Misuse, NegativeResources) {
  EXPECT_THAT(option_error([](auto& m) { m.cpus(-1); }), HasSubstr("cpus must be >= 0, got -1"));
  EXPECT_THAT(option_error([](auto& m) { m.gpus(-0.5); }),
              HasSubstr("gpus must be >= 0, got -0.5"));
  EXPECT_THAT(option_error([](auto& m) { m.cpus(std::numeric_limits<double>::quiet_NaN()); }),
              HasSubstr("cpus must be >= 0, got nan"));
  EXPECT_THAT(option_error([](auto& m) { m.resources("tpu", -2); }),
              HasSubstr("resource 'tpu' must be >= 0, got -2"));
  EXPECT_THAT(option_error([](auto& m) { m.resources("", 1); }),
              HasSubstr("a named resource has an empty name"));
}

TEST(Misuse, NegativeBudgets) {
  EXPECT_THAT(option_error([](auto& m) { m.infra_retries(-1); }),
              HasSubstr("infra_retries must be >= 0, got -1"));
  EXPECT_THAT(option_error([](auto& m) { m.recovery(ro::RecoveryPolicy::retry_batch(-2)); }),
              HasSubstr("recovery retries must be >= 0, got -2"));
  EXPECT_THAT(option_error([](auto& m) { m.timeout(std::chrono::milliseconds(-5)); }),
              HasSubstr("timeout must be >= 0 ms, got -5"));
}

TEST(Misuse, ForwardThatThrowsLeavesNoTraceBehind) {
  ro::Module<Inc> inc;
  EXPECT_THAT(error_of<std::runtime_error>([&] {
                ro::compile([&](ro::Port<int> x) -> ro::Port<int> {
                  (void)inc(x);
                  throw std::runtime_error("bad config");
                });
              }),
              HasSubstr("bad config"));
  // The aborted trace is gone: Modules are again outside any trace, and the next compile works.
  std::optional<ro::Port<int>> leaked;
  auto program = ro::compile([&](ro::Port<int> x) {
    leaked = x;
    return inc(x);
  });
  EXPECT_THAT(compile_error([&] { inc(*leaked); }), HasSubstr("was called outside a trace"));
  ro::testing::SyncExecutor ex(program);
  EXPECT_EQ(ex.run({1}).outputs[0].value(), 2);
}

// A Port has no truth value; branching on one does not compile.
static_assert(!std::is_constructible_v<bool, ro::Port<int>>);
static_assert(!std::is_convertible_v<ro::Port<int>, bool>);

}  // namespace
