// An OutputIssue says where it was decided: the Call, the deciding Grain's Entity key and
// its attempt count; an aborting failure names the recovery policies that would contain it.
#include <stdexcept>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <rayorch/rayorch.h>

namespace {

namespace ro = rayorch;
using ::testing::HasSubstr;

struct Pages {
  std::vector<std::vector<int>> run(ro::Column<int> counts) {
    std::vector<std::vector<int>> out;
    for (int n : counts) {
      out.emplace_back();
      for (int p = 0; p < n; ++p) out.back().push_back(p);
    }
    return out;
  }
};
struct Ocr {  // page 2 is unreadable; page 4 crashes the UDF every time
  std::vector<ro::Row<int>> run(ro::Column<int> pages) {
    std::vector<ro::Row<int>> out;
    for (int p : pages) {
      if (p == 4) throw std::runtime_error("decoder crashed on page 4");
      if (p == 2)
        out.push_back(ro::RecordFailure{"page 2 unreadable"});
      else
        out.push_back(p);
    }
    return out;
  }
};
struct Count {
  std::vector<int> run(ro::Column<ro::Group<int>> g) {
    std::vector<int> out;
    for (const auto& x : g) out.push_back(static_cast<int>(x.size()));
    return out;
  }
};

template <class Ex>
void check_origins(Ex& ex) {
  auto r = ex.run(std::vector<int>{2, 3, 5}, {.progress = false});
  ASSERT_TRUE(r.outputs[0].ok());
  const ro::OutputIssue& unreadable = r.outputs[1].issue();
  EXPECT_EQ(unreadable.cause, "page 2 unreadable");
  ASSERT_TRUE(unreadable.origin.has_value());
  EXPECT_EQ(unreadable.origin->call, "Ocr#1");
  EXPECT_EQ(unreadable.origin->call_index, 1);
  EXPECT_EQ(unreadable.origin->entity, "1/2");
  EXPECT_EQ(unreadable.origin->attempts, 1u);
  // Row 2 has both: page 2 (ordinal 2) fails before page 4 is isolated; the lowest ordinal
  // decides the cause, and its origin says so.
  const ro::OutputIssue& both = r.outputs[2].issue();
  EXPECT_EQ(both.cause, "page 2 unreadable");
  ASSERT_TRUE(both.origin.has_value());
  EXPECT_EQ(both.origin->entity, "2/2");
}

TEST(OutputIssue, NamesTheCallTheGrainAndItsAttempts) {
  ro::Module<Pages> pages;
  ro::Module<Ocr> ocr =
      ro::Module<Ocr>().batch_size(4).recovery(ro::RecoveryPolicy::isolate_tail());
  ro::Module<Count> count;
  auto program = ro::compile(
      [&](ro::Port<int> n) { return count(ro::F::reduce(ocr(ro::F::expand(pages(n))))); });
  ro::Executor local(program);
  check_origins(local);
  ro::testing::SyncExecutor sync(program);
  check_origins(sync);
}

struct OnlyPageFour {
  std::vector<std::vector<int>> run(ro::Column<int> counts) {
    std::vector<std::vector<int>> out;
    for (std::size_t i = 0; i < counts.size(); ++i) out.push_back({3, 4, 5});
    return out;
  }
};

TEST(OutputIssue, AnIsolatedGrainCountsItsAttempts) {
  ro::Module<OnlyPageFour> pages;
  ro::Module<Ocr> ocr =
      ro::Module<Ocr>().batch_size(4).recovery(ro::RecoveryPolicy::isolate_tail());
  ro::Module<Count> count;
  auto program = ro::compile(
      [&](ro::Port<int> n) { return count(ro::F::reduce(ocr(ro::F::expand(pages(n))))); });
  ro::testing::SyncExecutor ex(program);
  auto r = ex.run(std::vector<int>{1}, {.progress = false});
  const ro::OutputIssue& issue = r.outputs[0].issue();
  EXPECT_EQ(issue.cause, "std::runtime_error: decoder crashed on page 4");
  ASSERT_TRUE(issue.origin.has_value());
  EXPECT_EQ(issue.origin->entity, "0/1");
  // (3,4,5) failed, the tail retry (3,4,5) failed, then (3) and (4,5), then (4) alone.
  EXPECT_EQ(issue.origin->attempts, 4u);
}

TEST(OutputIssue, AnAbortNamesTheRecoveryPoliciesThatWouldContainIt) {
  ro::Module<OnlyPageFour> pages;
  ro::Module<Ocr> ocr;
  ro::Module<Count> count;
  auto program = ro::compile(
      [&](ro::Port<int> n) { return count(ro::F::reduce(ocr(ro::F::expand(pages(n))))); });
  ro::testing::SyncExecutor ex(program);
  try {
    (void)ex.run(std::vector<int>{1}, {.progress = false});
    ADD_FAILURE() << "the run did not abort";
  } catch (const ro::ExecutionError& e) {
    EXPECT_THAT(e.what(), HasSubstr("Call Ocr#1 (UDF Ocr) failed on Grains [0/1 g0]"));
    EXPECT_THAT(e.what(), HasSubstr("recovery policy abort() (the default)"));
    EXPECT_THAT(e.what(), HasSubstr(".recovery(ro::RecoveryPolicy::retry_batch(n)), "
                                    "retry_tail(n) or isolate_tail()"));
  }
}

}  // namespace
