// A catalogue of misuse and bad input, each with the error a user sees. Every entry also
// checks that nothing crashes, hangs or silently loses rows: after a run-time error the
// executor is either closed (and says so) or still produces every row.
#include <atomic>
#include <chrono>
#include <limits>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <type_traits>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <rayorch/rayorch.h>
#include <rayorch/testing.h>

namespace ro = rayorch;
using ::testing::AllOf;
using ::testing::HasSubstr;

namespace {

// ---- UDFs ------------------------------------------------------------------------------------

struct Inc {
  std::vector<int> run(ro::Column<int> x) {
    std::vector<int> out;
    for (int v : x) out.push_back(v + 1);
    return out;
  }
};

struct Add {
  std::vector<int> run(ro::Column<int> a, ro::Column<int> b) {
    std::vector<int> out;
    for (std::size_t i = 0; i < a.size(); ++i) out.push_back(a[i] + b[i]);
    return out;
  }
};

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

// Two lists per row, for F::expand_aligned; the second is one longer when the input is 3.
struct TwoLists {
  std::tuple<std::vector<std::vector<int>>, std::vector<std::vector<int>>> run(ro::Column<int> n) {
    std::tuple<std::vector<std::vector<int>>, std::vector<std::vector<int>>> out;
    for (int v : n) {
      std::get<0>(out).emplace_back(static_cast<std::size_t>(v), 0);
      std::get<1>(out).emplace_back(static_cast<std::size_t>(v == 3 ? v + 1 : v), 1);
    }
    return out;
  }
};

struct Count {
  std::vector<int> run(ro::Column<ro::Group<int>> g) {
    std::vector<int> out;
    for (const auto& group : g) out.push_back(static_cast<int>(group.size()));
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

// Returns one row too few.
struct ShortResult {
  std::vector<int> run(ro::Column<int> x) { return std::vector<int>(x.size() - 1, 0); }
};

// Returns one row too many.
struct LongResult {
  std::vector<int> run(ro::Column<int> x) { return std::vector<int>(x.size() + 1, 0); }
};

// The second of two outputs has the wrong number of rows.
struct LopsidedPair {
  std::tuple<std::vector<int>, std::vector<int>> run(ro::Column<int> x) {
    return {std::vector<int>(x.size(), 1), std::vector<int>(x.size() + 2, 2)};
  }
};

// Throws for the value 2, on every attempt.
struct ThrowsOnTwo {
  std::vector<int> run(ro::Column<int> x) {
    for (int v : x) {
      if (v == 2) throw std::runtime_error("cannot handle 2");
    }
    return x.to_vector();
  }
};

// Throws something that is not a std::exception.
struct ThrowsInt {
  std::vector<int> run(ro::Column<int> x) {
    if (x.size() > 0) throw 42;
    return {};
  }
};

// Loses its actor on every call.
struct AlwaysLost {
  std::vector<int> run(ro::Column<int>) { throw ro::ActorLost("node went away"); }
};

struct FailingConstructor {
  explicit FailingConstructor(std::string model) {
    throw std::runtime_error("cannot load model " + model);
  }
  std::vector<int> run(ro::Column<int> x) { return x.to_vector(); }
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

// The message of the `E` that `f` throws; fails the test otherwise.
template <class E, class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "unexpected exception type: " << e.what();
    return {};
  }
  ADD_FAILURE() << "expected an exception, nothing was thrown";
  return {};
}

const std::vector<int> kRows = {1, 2, 3, 4, 5};

// An aborted run leaves the executor open with its actors: the same run aborts the same way
// again instead of finding the executor closed.
template <class Ex>
void expect_open_after_abort(Ex& ex, const std::string& fragment) {
  EXPECT_FALSE(ex.closed());
  EXPECT_THAT(error_of<ro::ExecutionError>([&] { ex.run(kRows); }), HasSubstr(fragment));
}

// ---- CompileErrors ---------------------------------------------------------------------------
// A Call without a Port input, a Port of the wrong type and a wrong number of static arguments
// are rejected by static_asserts (docs/SEMANTICS.md), so they have no run-time entry here;
// tests/diagnostics/ checks those messages. A UDF cannot return the wrong number of outputs
// either: the count comes from its run() signature; a wrong number of rows in any output is
// tested below.

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

// ---- Source columns --------------------------------------------------------------------------

template <class Ex>
concept RunsWithOneIntColumn = requires(Ex& ex, const std::vector<int>& c) {
  ex.run(c);
};
template <class Ex>
concept RunsWithStrings = requires(Ex& ex, const std::vector<std::string>& c) {
  ex.run(c, c);
};

TEST(Misuse, SourceColumnsOfTheWrongCountOrTypeDoNotCompile) {
  ro::Module<Add> add;
  auto program = ro::compile([&](ro::Port<int> a, ro::Port<int> b) { return add(a, b); });
  // The column count and element types are part of run()'s signature.
  ro::testing::SyncExecutor sync(program);
  static_assert(!RunsWithOneIntColumn<decltype(sync)>);
  static_assert(!RunsWithStrings<decltype(sync)>);
  ro::Executor local(program);
  static_assert(!RunsWithOneIntColumn<decltype(local)>);
  static_assert(!RunsWithStrings<decltype(local)>);
  EXPECT_EQ(sync.run({1, 2}, {10, 20}).outputs.size(), 2u);
  EXPECT_EQ(local.run({1, 2}, {10, 20}).outputs.size(), 2u);
}

TEST(Misuse, SourceColumnsOfDifferentLengths) {
  ro::Module<Add> add;
  auto program = ro::compile([&](ro::Port<int> a, ro::Port<int> b) { return add(a, b); });
  for (int local = 0; local < 2; ++local) {
    auto check = [&](auto& ex) {
      EXPECT_THAT(error_of<std::invalid_argument>([&] {
                    ex.run({1, 2, 3}, {10, 20});
                  }),
                  HasSubstr("source columns are not row-aligned: column 0 has 3 rows but column 1 "
                            "has 2; pass columns of equal length"));
      // Rejected before anything ran: the executor is still open and loses nothing.
      EXPECT_FALSE(ex.closed());
      auto r = ex.run({1, 2, 3}, {10, 20, 30});
      ASSERT_EQ(r.outputs.size(), 3u);
      EXPECT_EQ(r.outputs[2].value(), 33);
    };
    if (local) {
      ro::Executor ex(program);
      check(ex);
    } else {
      ro::testing::SyncExecutor ex(program);
      check(ex);
    }
  }
}

TEST(Misuse, ZeroActiveInputBatches) {
  ro::Module<Inc> inc;
  auto program = ro::compile([&](ro::Port<int> x) { return inc(x); });
  ro::RunOptions bad;
  bad.max_active_input_batches = 0;
  ro::Executor ex(program);
  EXPECT_THAT(error_of<std::invalid_argument>([&] { ex.run(kRows, bad); }),
              HasSubstr("RunOptions.max_active_input_batches must be >= 1, got 0"));
  ro::testing::SyncExecutor sync(program);
  EXPECT_THAT(error_of<std::invalid_argument>([&] { sync.run(kRows, bad); }),
              HasSubstr("RunOptions.max_active_input_batches must be >= 1, got 0"));
  // Still usable, nothing lost.
  EXPECT_EQ(ex.run(kRows).outputs.size(), kRows.size());
  EXPECT_EQ(sync.run(kRows).outputs.size(), kRows.size());
}

// ---- UDF contract errors ---------------------------------------------------------------------

template <class U>
void expect_contract_error(int batch_size, const std::string& fragment) {
  ro::Module<U> udf = ro::Module<U>().batch_size(batch_size);
  auto program = ro::compile([&](ro::Port<int> x) { return udf(x); });
  {
    ro::testing::SyncExecutor ex(program);
    const std::string msg = error_of<ro::ExecutionError>([&] { ex.run(kRows); });
    EXPECT_THAT(msg, AllOf(HasSubstr("contract error: Call "), HasSubstr(fragment),
                           HasSubstr("run() must return one element per input row for every "
                                     "output")));
    expect_open_after_abort(ex, fragment);
  }
  {
    ro::Executor ex(program);
    const std::string msg = error_of<ro::ExecutionError>([&] { ex.run(kRows); });
    EXPECT_THAT(msg, AllOf(HasSubstr("contract error: Call "), HasSubstr(fragment)));
    expect_open_after_abort(ex, fragment);
  }
}

TEST(Misuse, UdfReturnsTooFewRows) {
  expect_contract_error<ShortResult>(
      2,
      "Call ShortResult#0 (UDF ShortResult) returned a result that breaks the UDF contract for "
      "an RPC of 2 rows: output 0 has 1 rows for 2 input rows");
}

TEST(Misuse, UdfReturnsTooManyRows) {
  expect_contract_error<LongResult>(
      1,
      "Call LongResult#0 (UDF LongResult) returned a result that breaks the UDF contract for "
      "an RPC of 1 rows: output 0 has 2 rows for 1 input rows");
}

TEST(Misuse, UdfReturnsAnOutputOfTheWrongLength) {
  ro::Module<LopsidedPair> pair = ro::Module<LopsidedPair>().batch_size(4);
  ro::Module<Add> add;
  auto program = ro::compile([&](ro::Port<int> x) {
    auto [a, b] = pair(x);
    return add(a, b);
  });
  ro::testing::SyncExecutor ex(program);
  EXPECT_THAT(error_of<ro::ExecutionError>([&] { ex.run(kRows); }),
              HasSubstr("contract error: Call LopsidedPair#0 (UDF LopsidedPair) returned a result "
                        "that breaks the UDF contract for an RPC of 4 rows: output 1 has 6 rows "
                        "for 4 input rows"));
  EXPECT_FALSE(ex.closed());  // an aborted run keeps the executor
}

TEST(Misuse, AlignedListsOfDifferentLengths) {
  ro::Module<TwoLists> lists;
  ro::Module<Count> count;
  auto program = ro::compile([&](ro::Port<int> x) {
    auto [l1, l2] = lists(x);
    auto [a, b] = ro::F::expand_aligned(l1, l2);
    (void)b;
    return count(ro::F::reduce(a));
  });
  for (int local = 0; local < 2; ++local) {
    auto check = [&](auto& ex) {
      EXPECT_THAT(error_of<ro::ExecutionError>([&] {
                    ex.run({1, 2, 3, 4});
                  }),
                  HasSubstr("F::expand_aligned lists of TwoLists#0 have different lengths for "
                            "entity 2: p1 has 3 elements but p2 has 4; return lists of equal "
                            "length per row"));
      EXPECT_FALSE(ex.closed());  // an aborted run keeps the executor
    };
    if (local) {
      ro::Executor ex(program);
      check(ex);
    } else {
      ro::testing::SyncExecutor ex(program);
      check(ex);
    }
  }
}

// ---- A UDF throwing, under each recovery policy ----------------------------------------------

struct Throwing {
  ro::Module<ThrowsOnTwo> udf;
  ro::Port<int> forward(ro::Port<int> x) { return udf(x); }
};

ro::Compiled<Throwing> program_with(ro::RecoveryPolicy policy, int batch_size) {
  Throwing p;
  p.udf.recovery(policy).batch_size(batch_size);
  return ro::compile(p);
}

TEST(Misuse, UdfThrowsUnderAbort) {
  auto program = program_with(ro::RecoveryPolicy::abort(), 2);
  for (int local = 0; local < 2; ++local) {
    auto check = [&](auto& ex) {
      const std::string msg = error_of<ro::ExecutionError>([&] { ex.run(kRows); });
      EXPECT_THAT(msg, HasSubstr("Call ThrowsOnTwo#0 (UDF ThrowsOnTwo) failed on Grains [0 g0, 1 "
                                 "g0]: std::runtime_error: cannot handle 2"));
      expect_open_after_abort(ex, "std::runtime_error: cannot handle 2");
    };
    if (local) {
      ro::Executor ex(program);
      check(ex);
    } else {
      ro::testing::SyncExecutor ex(program);
      check(ex);
    }
  }
}

TEST(Misuse, UdfThrowsUnderRetryBatch) {
  auto program = program_with(ro::RecoveryPolicy::retry_batch(2), 1);
  ro::testing::SyncExecutor ex(program);
  EXPECT_THAT(error_of<ro::ExecutionError>([&] { ex.run(kRows); }),
              HasSubstr("Call ThrowsOnTwo#0 (UDF ThrowsOnTwo) failed on Grains [1 g2] after 2 "
                        "retries: std::runtime_error: cannot handle 2"));
  // The exact batch was retried immediately, twice, before the abort.
  std::vector<std::string> log;
  for (const auto& rpc : ex.rpcs()) log.push_back(rpc.to_string());
  EXPECT_THAT(log,
              ::testing::ElementsAre("ThrowsOnTwo#0 [0] g0", "ThrowsOnTwo#0 [1] g0 failed",
                                     "ThrowsOnTwo#0 [1] g1 failed", "ThrowsOnTwo#0 [1] g2 failed"));
  EXPECT_FALSE(ex.closed());  // an aborted run keeps the executor
  ro::Executor local(program);
  EXPECT_THAT(error_of<ro::ExecutionError>([&] { local.run(kRows); }),
              HasSubstr("after 2 retries: std::runtime_error: cannot handle 2"));
  EXPECT_FALSE(local.closed());  // an aborted run keeps the executor
}

TEST(Misuse, UdfThrowsUnderRetryTail) {
  auto program = program_with(ro::RecoveryPolicy::retry_tail(1), 2);
  ro::testing::SyncExecutor ex(program);
  EXPECT_THAT(error_of<ro::ExecutionError>([&] { ex.run(kRows); }),
              HasSubstr("Call ThrowsOnTwo#0 (UDF ThrowsOnTwo) failed on Grains [0 g1, 1 g1] after "
                        "1 retries: std::runtime_error: cannot handle 2"));
  // The failed batch went behind the ready work before its retry.
  std::vector<std::string> log;
  for (const auto& rpc : ex.rpcs()) log.push_back(rpc.to_string());
  EXPECT_THAT(log, ::testing::ElementsAre("ThrowsOnTwo#0 [0 1] g0 failed", "ThrowsOnTwo#0 [2 3] g0",
                                          "ThrowsOnTwo#0 [4] g0", "ThrowsOnTwo#0 [0 1] g1 failed"));
}

TEST(Misuse, UdfThrowsUnderIsolateTailFailsOnlyItsGrain) {
  auto program = program_with(ro::RecoveryPolicy::isolate_tail(), 4);
  for (int local = 0; local < 2; ++local) {
    auto check = [&](auto& ex) {
      auto r = ex.run(kRows);
      ASSERT_EQ(r.outputs.size(), kRows.size());
      for (std::size_t i = 0; i < kRows.size(); ++i) {
        if (kRows[i] == 2) {
          ASSERT_FALSE(r.outputs[i].ok());
          EXPECT_EQ(r.outputs[i].issue(),
                    (ro::OutputIssue{ro::Outcome::failed, "std::runtime_error: cannot handle 2"}));
        } else {
          EXPECT_EQ(r.outputs[i].value(), kRows[i]);
        }
      }
      EXPECT_FALSE(ex.closed());
      // The issue is reported, not thrown, when a user reads it as a value.
      EXPECT_THAT(error_of<std::logic_error>([&] { (void)r.outputs[1].value(); }),
                  HasSubstr("Output::value() called on a failed output; check ok() first (cause: "
                            "std::runtime_error: cannot handle 2)"));
      EXPECT_THAT(error_of<std::logic_error>([&] { (void)r.outputs[0].issue(); }),
                  HasSubstr("Output::issue() called on a present output"));
    };
    if (local) {
      ro::Executor ex(program);
      check(ex);
    } else {
      ro::testing::SyncExecutor ex(program);
      check(ex);
    }
  }
}

TEST(Misuse, UdfThrowsSomethingThatIsNotAnException) {
  ro::Module<ThrowsInt> udf;
  auto program = ro::compile([&](ro::Port<int> x) { return udf(x); });
  ro::testing::SyncExecutor ex(program);
  EXPECT_THAT(error_of<ro::ExecutionError>([&] { ex.run({7}); }),
              HasSubstr("Call ThrowsInt#0 (UDF ThrowsInt) failed on Grains [0 g0]: int"));
}

TEST(Misuse, ActorLostBeyondTheInfrastructureBudget) {
  ro::Module<AlwaysLost> udf = ro::Module<AlwaysLost>().infra_retries(1);
  auto program = ro::compile([&](ro::Port<int> x) { return udf(x); });
  for (int local = 0; local < 2; ++local) {
    auto check = [&](auto& ex) {
      EXPECT_THAT(error_of<ro::ExecutionError>([&] { ex.run({7}); }),
                  HasSubstr("Call AlwaysLost#0 (UDF AlwaysLost) lost its actor on Grains [0 g1] "
                            "and the infrastructure budget (1 replays per Grain) is exhausted: "
                            "rayorch::ActorLost: node went away"));
      // Each lost actor was replaced: the executor stays open.
      EXPECT_FALSE(ex.closed());
    };
    if (local) {
      ro::Executor ex(program);
      check(ex);
    } else {
      ro::testing::SyncExecutor ex(program);
      check(ex);
    }
  }
}

// ---- Constructors and closed executors -------------------------------------------------------

TEST(Misuse, ConstructorFailure) {
  ro::Module<FailingConstructor> udf =
      ro::Module<FailingConstructor>(std::string("eng")).replicas(3);
  auto program = ro::compile([&](ro::Port<int> x) { return udf(x); });
  // The local executor starts its actors in the background: the first run reports a pool
  // whose every constructor failed (eager start, DESIGN 6.1).
  ro::Executor local(program);
  EXPECT_THAT(error_of<ro::ExecutionError>([&] { local.run({1}); }),
              AllOf(HasSubstr("no actor of Module<FailingConstructor> could start"),
                    HasSubstr("the constructor of Module<FailingConstructor> threw "
                              "std::runtime_error: cannot load model eng"),
                    HasSubstr("of pool FailingConstructor")));
  EXPECT_TRUE(local.closed());
  EXPECT_THAT(error_of<ro::ExecutionError>([&] { ro::testing::SyncExecutor ex(program); }),
              HasSubstr("the constructor of Module<FailingConstructor> threw std::runtime_error: "
                        "cannot load model eng"));
}

// Builds once per pool, then its replacement constructor fails; every RPC loses its actor.
struct FragileReplacement {
  explicit FragileReplacement(std::shared_ptr<std::atomic<int>> builds) {
    if (builds->fetch_add(1) > 0) throw std::runtime_error("no spare node");
  }
  std::vector<int> run(ro::Column<int>) { throw ro::ActorLost("node went away"); }
};

TEST(Misuse, ReplacementConstructorFailure) {
  for (int local = 0; local < 2; ++local) {
    auto builds = std::make_shared<std::atomic<int>>(0);
    ro::Module<FragileReplacement> udf = ro::Module<FragileReplacement>(builds).infra_retries(3);
    auto program = ro::compile([&](ro::Port<int> x) { return udf(x); });
    auto check = [&](auto& ex) {
      EXPECT_THAT(error_of<ro::ExecutionError>([&] { ex.run({7}); }),
                  HasSubstr("replacing a lost actor failed: the constructor of "
                            "Module<FragileReplacement> threw std::runtime_error: no spare node"));
      EXPECT_TRUE(ex.closed());
    };
    if (local) {
      ro::Executor ex(program);
      check(ex);
    } else {
      ro::testing::SyncExecutor ex(program);
      check(ex);
    }
  }
}

TEST(Misuse, RunningAClosedExecutor) {
  ro::Module<Inc> inc;
  auto program = ro::compile([&](ro::Port<int> x) { return inc(x); });
  for (int local = 0; local < 2; ++local) {
    auto check = [&](auto& ex) {
      EXPECT_EQ(ex.run(kRows).outputs.size(), kRows.size());
      ex.close();
      ex.close();  // idempotent
      EXPECT_TRUE(ex.closed());
      EXPECT_THAT(error_of<ro::ExecutionError>([&] { ex.run(kRows); }),
                  HasSubstr("this executor is closed (after close() or a run whose actors "
                            "broke); create a new executor to run again"));
      EXPECT_THAT(error_of<ro::ExecutionError>(
                      [&] { ex.run(kRows, {}, [](std::size_t, const ro::Output<int>&) {}); }),
                  HasSubstr("this executor is closed"));
    };
    if (local) {
      ro::Executor ex(program);
      check(ex);
    } else {
      ro::testing::SyncExecutor ex(program);
      check(ex);
    }
  }
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

TEST(Misuse, StreamingCallbackThatThrows) {
  ro::Module<Inc> inc;
  auto program = ro::compile([&](ro::Port<int> x) { return inc(x); });
  for (int local = 0; local < 2; ++local) {
    auto check = [&](auto& ex) {
      EXPECT_THAT(error_of<std::runtime_error>([&] {
                    ex.run(kRows, {}, [](std::size_t row, const ro::Output<int>&) {
                      if (row == 2) throw std::runtime_error("sink full");
                    });
                  }),
                  HasSubstr("sink full"));
      // The user's exception reaches the caller unchanged; the executor runs every row again.
      EXPECT_FALSE(ex.closed());
      EXPECT_EQ(ex.run(kRows).outputs.size(), kRows.size());
    };
    if (local) {
      ro::Executor ex(program);
      check(ex);
    } else {
      ro::testing::SyncExecutor ex(program);
      check(ex);
    }
  }
}

// Sleeps far past its Module's timeout on the value 1.
struct Hangs {
  std::vector<int> run(ro::Column<int> x) {
    for (int v : x) {
      if (v == 1) std::this_thread::sleep_for(std::chrono::seconds(2));
    }
    return x.to_vector();
  }
};

TEST(Misuse, HungUdfPastItsTimeoutDoesNotHangTheRun) {
  ro::Module<Hangs> udf =
      ro::Module<Hangs>().timeout(std::chrono::milliseconds(20)).infra_retries(0);
  auto program = ro::compile([&](ro::Port<int> x) { return udf(x); });
  ro::Executor ex(program);
  EXPECT_THAT(error_of<ro::ExecutionError>([&] { ex.run({1}); }),
              AllOf(HasSubstr("Call Hangs#0 (UDF Hangs) failed on Grains [0 g0]: "
                              "rayorch::Timeout: the RPC ran past the 20 ms timeout; the Module's "
                              "recovery policy abort() (the default) stops the run here")));
  EXPECT_FALSE(ex.closed());  // the hung actor was replaced and the run aborted cleanly
}

// A Port has no truth value; branching on one does not compile.
static_assert(!std::is_constructible_v<bool, ro::Port<int>>);
static_assert(!std::is_convertible_v<ro::Port<int>, bool>);

}  // namespace
