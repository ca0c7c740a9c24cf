// The verify phase of the compiler (DESIGN 4, src/program/compile_verify.cc) through
// ro::compile: every CompileError of the Domain rules (inputs, expand, reduce, filter,
// broadcast, outputs) names its culprit and the fix, and the suggested fixes compile.
#include <string>
#include <tuple>
#include <vector>

#include "support/compiler_testing.h"
#include "support/output_values.h"
#include "support/udfs.h"
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <rayorch/rayorch.h>

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
using ::testing::Not;

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

}  // namespace
