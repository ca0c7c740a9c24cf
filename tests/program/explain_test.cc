// explain() (DESIGN 4, src/program/explain.cc): the compiled topology Port by Port, with
// multi-output slots, filters, members, the Calls that reach no output and the rewrites of
// canonicalisation; the explained programs run as printed.
#include <algorithm>
#include <map>
#include <sstream>
#include <string>
#include <tuple>
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
using compiler_testing::PdfToMarkdown;
using output_values::values;
using test_udfs::Add;
using test_udfs::Double;
using test_udfs::IsEven;
using test_udfs::Split;
using test_udfs::Sum;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

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

}  // namespace
