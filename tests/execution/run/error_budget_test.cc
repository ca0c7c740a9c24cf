// The run's error budget (src/execution/run/error_budget.h): the count and the fraction
// limits, when the fraction starts to count, and the message's first causes.
#include "execution/run/error_budget.h"

#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace {

namespace ro = rayorch;
namespace rd = rayorch::detail;
using ::testing::HasSubstr;
using ::testing::Not;

// A root whose second output failed or was suppressed with `cause` (which the outputs point
// at: a FailedRoot is not moved once made).
struct FailedRoot {
  std::string cause;
  std::vector<rd::ErasedOutput> outputs;
  explicit FailedRoot(std::string c, ro::Outcome outcome = ro::Outcome::failed)
      : cause(std::move(c)) {
    // A present output first: the first output that is not present names the cause.
    outputs.push_back(rd::ErasedOutput{.outcome = ro::Outcome::present});
    outputs.push_back(rd::ErasedOutput{.outcome = outcome, .cause = &cause});
  }
};

TEST(ErrorBudget, WithoutLimitsItIsNeverExceeded) {
  rd::ErrorBudget budget{ro::RunOptions{}};
  FailedRoot root("bad");
  for (std::size_t i = 1; i <= 1000; ++i) budget.count_failed(i, root.outputs, i);
  EXPECT_FALSE(budget.exceeded());
  EXPECT_TRUE(budget.error().empty());
}

TEST(ErrorBudget, TheCountLimitIsExceededByTheFirstRootPastIt) {
  ro::RunOptions options;
  options.max_failed_roots = 2;
  rd::ErrorBudget budget(options);
  FailedRoot a("first"), b("second", ro::Outcome::suppressed), c("third"), d("fourth");
  budget.count_failed(7, a.outputs, 10);
  budget.count_failed(8, b.outputs, 11);
  EXPECT_FALSE(budget.exceeded());
  budget.count_failed(9, c.outputs, 12);
  ASSERT_TRUE(budget.exceeded());
  const std::string error = budget.error();
  EXPECT_THAT(error, HasSubstr("3 of 12 delivered roots failed or were suppressed"));
  EXPECT_THAT(error, HasSubstr("RunOptions.max_failed_roots = 2"));
  EXPECT_THAT(error, HasSubstr("row 7: failed: first"));
  EXPECT_THAT(error, HasSubstr("row 8: suppressed: second"));
  EXPECT_THAT(error, HasSubstr("row 9: failed: third"));
  // Set once: a later failure changes nothing.
  budget.count_failed(10, d.outputs, 13);
  EXPECT_EQ(budget.error(), error);
  EXPECT_THAT(error, Not(HasSubstr("fourth")));
}

TEST(ErrorBudget, TheFractionCountsOnlyOnceEnoughRootsWereDelivered) {
  ro::RunOptions options;
  options.max_failed_fraction = 0.5;
  options.min_roots_for_failed_fraction = 4;
  rd::ErrorBudget budget(options);
  FailedRoot root("bad");
  budget.count_failed(0, root.outputs, 1);  // 1 of 1, but too few roots yet
  budget.count_failed(1, root.outputs, 2);  // 2 of 2
  EXPECT_FALSE(budget.exceeded());
  budget.count_failed(5, root.outputs, 6);  // 3 of 6: not above half
  EXPECT_FALSE(budget.exceeded());
  budget.count_failed(6, root.outputs, 7);  // 4 of 7: above half
  ASSERT_TRUE(budget.exceeded());
  EXPECT_THAT(budget.error(), HasSubstr("4 of 7 delivered roots"));
  EXPECT_THAT(budget.error(), HasSubstr("RunOptions.max_failed_fraction = 0.5 after 4 roots"));
}

TEST(ErrorBudget, TheMessageNamesTheDecidingCallAndAtMostThreeCauses) {
  ro::RunOptions options;
  options.max_failed_roots = 3;
  rd::ErrorBudget budget(options);
  std::vector<FailedRoot> roots;
  roots.reserve(4);  // each root's outputs point at its own cause
  for (int i = 0; i < 4; ++i) roots.emplace_back("cause " + std::to_string(i));
  roots[0].outputs[1].origin = ro::IssueOrigin{.call = "Ocr#1"};
  for (std::size_t i = 0; i < roots.size(); ++i) budget.count_failed(i, roots[i].outputs, i + 1);
  ASSERT_TRUE(budget.exceeded());
  EXPECT_THAT(budget.error(), HasSubstr("row 0: failed at Ocr#1: cause 0"));
  EXPECT_THAT(budget.error(), HasSubstr("row 2: failed: cause 2"));
  EXPECT_THAT(budget.error(), Not(HasSubstr("cause 3")));
}

}  // namespace
