// The crash record (src/execution/crash_record.cc): a Module on threads that crashes the
// process with a fatal signal leaves, on stderr, the Call, its Module and the Entity keys of
// the Grains it ran, and the signal then ends the process as it would have. Death tests run
// each case in a child process ("threadsafe": the child re-runs this binary).
#include "execution/crash_record.h"

#include <algorithm>
#include <csignal>
#include <cstdint>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <rayorch/rayorch.h>

namespace {

namespace ro = rayorch;
namespace rd = rayorch::detail;
using ::testing::HasSubstr;
using ::testing::Not;

// Row n (a document of n pages) lists its pages as n * 10 + page.
struct Pages {
  std::vector<std::vector<int>> run(ro::Column<int> docs) {
    std::vector<std::vector<int>> out;
    for (int n : docs) {
      std::vector<int> pages;
      for (int p = 0; p < n; ++p) pages.push_back(n * 10 + p);
      out.push_back(pages);
    }
    return out;
  }
};

// Raises `Signal` on the page value `Trigger`, as native code that crashes would.
template <int Signal, int Trigger>
struct Crash {
  std::vector<int> run(ro::Column<int> pages) {
    std::vector<int> out;
    for (int v : pages) {
      if (v == Trigger) std::raise(Signal);
      out.push_back(v + 1);
    }
    return out;
  }
};

template <int Signal, int Trigger>
void run_pages(const std::vector<int>& docs, bool crash_record, std::size_t batch_size) {
  ro::Module<Pages> pages;
  ro::Module<Crash<Signal, Trigger>> crash =
      ro::Module<Crash<Signal, Trigger>>().batch_size(batch_size);
  auto program =
      ro::compile([&](ro::Port<int> n) { return ro::F::reduce(crash(ro::F::expand(pages(n)))); });
  ro::Executor ex(program);
  ro::RunOptions options;
  options.progress = false;
  options.crash_record = crash_record;
  ex.run(docs, options);
}

class CrashRecordDeath : public ::testing::Test {
 protected:
  void SetUp() override { GTEST_FLAG_SET(death_test_style, "threadsafe"); }
};

rd::CrashLabel label(const char* call, std::uint32_t grains) {
  rd::CrashLabel l;
  l.call = call;
  l.module = "M";
  l.input_batch = 2;
  l.grains = grains;
  for (std::uint32_t g = 0; g < std::min<std::uint32_t>(grains, rd::CrashLabel::kKeys); ++g) {
    l.keys[g].root = 4;
    l.keys[g].depth = 2;
    l.keys[g].ordinals = {g, 1};  // from the Grain up: 4/1/g
  }
  return l;
}

TEST(CrashRecord, TextNamesTheSignalTheRunningCallAndWhatWouldHaveContainedIt) {
  const std::string text = rd::crash_record_text(SIGBUS, label("c", 1));
  EXPECT_THAT(text, HasSubstr("rayorch: SIGBUS (bad memory access) on an actor thread running "
                              "Call 'c' (Module<M>) on Grain 4/1/0 of input batch 2.\n"));
  EXPECT_THAT(text, HasSubstr("isolation=\"process\""));
  EXPECT_THAT(text, HasSubstr("Isolation::process"));
  EXPECT_EQ(text.back(), '\n');
}

TEST(CrashRecord, KeysPastTheFirstEightAreCountedAndDeepPathsShortened) {
  rd::CrashLabel l = label("c", 10);
  EXPECT_THAT(rd::crash_record_text(SIGSEGV, l),
              HasSubstr("on Grains 4/1/0, 4/1/1, 4/1/2, 4/1/3, 4/1/4, 4/1/5, 4/1/6, 4/1/7 and 2 "
                        "more of input batch 2."));
  // A source row's key, then more levels than a label keeps: the ones nearest the Grain.
  l = label("c", 1);
  l.keys[0].root = 18446744073709551615ULL;
  l.keys[0].depth = rd::CrashLabel::kDepth + 2;
  l.keys[0].ordinals = {0, 1, 2, 3, 4, 5};
  EXPECT_THAT(rd::crash_record_text(SIGSEGV, l),
              HasSubstr("on Grain 18446744073709551615/.../5/4/3/2/1/0 of input batch 2."));
}

TEST_F(CrashRecordDeath, ASegfaultOnAnActorThreadNamesTheCallAndTheGrainsEntityKey) {
  // Document 1 has two pages (20, 21): page 21 is Grain 1/1.
  const std::string crash = fmt::format("Crash<{}, 21>", SIGSEGV);
  EXPECT_EXIT((run_pages<SIGSEGV, 21>({1, 2, 3}, true, 1)), ::testing::KilledBySignal(SIGSEGV),
              HasSubstr(fmt::format("\nrayorch: SIGSEGV (invalid memory access) on an actor thread "
                                    "running Call '{0}#1' (Module<{0}>) on Grain 1/1 of input "
                                    "batch 0.\nrayorch: Modules on threads",
                                    crash)));
}

TEST_F(CrashRecordDeath, AnAbortInABatchNamesEveryGrainOfTheBatch) {
  // The document's pages 30, 31, 32 run as one batch of three: which row crashed is unknown.
  const std::string crash = fmt::format("Crash<{}, 31>", SIGABRT);
  EXPECT_EXIT((run_pages<SIGABRT, 31>({3}, true, 8)), ::testing::KilledBySignal(SIGABRT),
              HasSubstr(fmt::format("rayorch: SIGABRT (abort) on an actor thread running Call "
                                    "'{0}#1' (Module<{0}>) on Grains 0/0, 0/1, 0/2 of input "
                                    "batch 0.\n",
                                    crash)));
}

TEST_F(CrashRecordDeath, ABatchOfMoreThanEightGrainsNamesTheFirstEightAndCountsTheRest) {
  EXPECT_EXIT((run_pages<SIGSEGV, 110>({11}, true, 16)), ::testing::KilledBySignal(SIGSEGV),
              HasSubstr("on Grains 0/0, 0/1, 0/2, 0/3, 0/4, 0/5, 0/6, 0/7 and 3 more of input "
                        "batch 0."));
}

TEST_F(CrashRecordDeath, WithoutTheOptionTheSignalEndsTheProcessWithoutARecord) {
  EXPECT_EXIT((run_pages<SIGSEGV, 21>({1, 2, 3}, false, 1)), ::testing::KilledBySignal(SIGSEGV),
              Not(HasSubstr("rayorch:")));
}

// The handler is installed by the first run; a later crash on a thread that runs no Call
// (here the caller's) goes straight to the default action.
void crash_after_a_run() {
  run_pages<SIGSEGV, -1>({1, 2}, true, 1);
  std::raise(SIGSEGV);
}

TEST_F(CrashRecordDeath, ACrashOutsideAnyCallIsPassedOnWithoutARecord) {
  EXPECT_EXIT(crash_after_a_run(), ::testing::KilledBySignal(SIGSEGV), Not(HasSubstr("rayorch:")));
}

// Nested scopes, as a Call run inside another's: after the inner one ends, a crash names the
// outer label again.
void crash_after_nested_scopes() {
  rd::install_crash_record();
  const rd::CrashLabel outer = label("outer", 1);
  const rd::CrashLabel inner = label("inner", 1);
  const rd::CrashScope a(outer);
  { const rd::CrashScope b(inner); }
  std::raise(SIGFPE);
}

TEST_F(CrashRecordDeath, AScopeRestoresTheLabelOfTheScopeAroundIt) {
  EXPECT_EXIT(crash_after_nested_scopes(), ::testing::KilledBySignal(SIGFPE),
              HasSubstr("SIGFPE (arithmetic error) on an actor thread running Call 'outer'"));
}

}  // namespace
