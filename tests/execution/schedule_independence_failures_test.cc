// DESIGN 5, "Contract": for fixed per-Grain outcomes, the outputs and their order are the
// same for every legal schedule. Each pipeline runs under deterministic pseudo-random
// combinations of replicas, batch sizes, input batch sizes, active-batch limits, reservation
// policies and queue orders, on the local executor (real threads, varying completion order)
// and on the SyncExecutor, and must match a reference SyncExecutor run with default options.
// Some schedules make pools size themselves (DESIGN 6.1.7): by the policy, or
// resized at random by the test hook, so actors join and retire at random times
// (support/schedule_independence.h).
//
// Here: typed failures (RecordFailure and GroupFailure, at the root and below it), and a
// GroupFailure deciding its parent's gathers whatever their membership.
#include <algorithm>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "support/schedule_independence.h"
#include <gtest/gtest.h>

#include <rayorch/rayorch.h>

namespace ro = rayorch;
using schedule_independence::check_schedules;
using schedule_independence::Config;
using schedule_independence::jitter;
using schedule_independence::make_docs;
using schedule_independence::module;
using schedule_independence::OutcomeCounts;
using schedule_independence::PagesOf;
using schedule_independence::Summarize;

namespace {

// Typed failures by document class (d % 5): 1 GroupFailure on one page, 2 RecordFailures on
// some pages, 3 both (two different causes), otherwise none. Pages: d*100 + i, i < d % 8.
struct PagesOf8 {
  std::vector<std::vector<int>> run(ro::Column<int> docs) {
    std::vector<std::vector<int>> out;
    for (int d : docs) {
      std::vector<int> pages;
      for (int i = 0; i < d % 8; ++i) pages.push_back(d * 100 + i);
      out.push_back(std::move(pages));
    }
    return out;
  }
};

struct TypedOcr {
  std::vector<ro::Row<int>> run(ro::Column<int> pages) {
    std::vector<ro::Row<int>> out;
    for (int p : pages) {
      jitter(p);
      const int d = p / 100, i = p % 100, n = d % 8;
      const std::string doc = std::to_string(d);
      if (d % 5 == 1 && i == n / 2) {
        out.push_back(ro::GroupFailure{"encrypted doc " + doc});
      } else if (d % 5 == 2 && i % 3 == 1) {
        out.push_back(ro::RecordFailure{"blurry doc " + doc});
      } else if (d % 5 == 3 && i == 0) {
        out.push_back(ro::GroupFailure{"encrypted doc " + doc});
      } else if (d % 5 == 3 && i == n - 1) {
        out.push_back(ro::RecordFailure{"blurry doc " + doc});
      } else {
        out.push_back(p + 1);
      }
    }
    return out;
  }
};

// A root Call whose GroupFailure only stops its own Grain.
struct RootCheck {
  std::vector<ro::Row<int>> run(ro::Column<int> docs) {
    std::vector<ro::Row<int>> out;
    for (int d : docs) {
      if (d % 13 == 4) {
        out.push_back(ro::GroupFailure{"rejected doc " + std::to_string(d)});
      } else {
        out.push_back(d);
      }
    }
    return out;
  }
};

struct Post {
  std::vector<int> run(ro::Column<int> values) {
    std::vector<int> out;
    for (int v : values) out.push_back(v + 1000);
    return out;
  }
};

}  // namespace

TEST(ScheduleIndependence, TypedFailures) {
  const auto docs = make_docs(17, 60, 299);
  // A suppressed output's cause is decided by whichever failing sibling is reported first;
  // it is fixed only when every failure of the document carries the same cause.
  std::vector<bool> decidable;
  for (int d : docs) {
    const int n = d % 8;
    const bool two_causes = d % 13 != 4 && d % 5 == 3 && n >= 2;
    decidable.push_back(!two_causes);
  }
  auto make = [](const Config& c) {
    auto check = module<RootCheck>(c, 0);
    auto pages = module<PagesOf8>(c, 1);
    auto ocr = module<TypedOcr>(c, 2);
    auto post = module<Post>(c, 3);
    auto summarize = module<Summarize>(c, 4);
    return ro::compile([&](ro::Port<int> doc) {
      return summarize(ro::F::reduce(post(ocr(ro::F::expand(pages(check(doc)))))));
    });
  };
  const OutcomeCounts n = check_schedules("typed failures", make, 606, 12, decidable, docs);
  EXPECT_GT(n[0], 0);
  EXPECT_GT(n[3], 0);
  EXPECT_NE(std::count(decidable.begin(), decidable.end(), false), 0);
}

namespace {

// A page whose number ends in 3 poisons its document: a GroupFailure whose cause names only
// the document, so several failing pages of one document give one cause.
struct Caption {
  std::vector<ro::Row<int>> run(ro::Column<int> pages) {
    std::vector<ro::Row<int>> out;
    for (int p : pages) {
      jitter(p);
      if (p % 10 == 3) {
        out.push_back(ro::GroupFailure{"unreadable doc " + std::to_string(p / 100)});
      } else {
        out.push_back(p * 7);
      }
    }
    return out;
  }
};

// The membership: every page but the ones Caption fails.
struct NotPoisoned {
  std::vector<bool> run(ro::Column<int> pages) {
    std::vector<bool> out;
    for (int p : pages) out.push_back(p % 10 != 3);
    return out;
  }
};

}  // namespace

// DESIGN 5: a GroupFailure decides its parent's gathers. Whatever the membership (here one
// that leaves the failing page out), a reduce over the parent of a Port downstream of the
// failing Call is SUPPRESSED with the GroupFailure's cause; documents without a failing page
// gather normally. Which siblings committed before the GroupFailure varies with the
// schedule; the outputs must not.
TEST(ScheduleIndependence, GroupFailureDecidesGathersWhateverTheMembership) {
  const auto docs = make_docs(19, 40, 199);
  auto make = [](const Config& c) {
    auto pages = module<PagesOf>(c, 0);
    auto caption = module<Caption>(c, 1);
    auto keep = module<NotPoisoned>(c, 2);
    auto summarize = module<Summarize>(c, 3);
    auto summarize_all = module<Summarize>(c, 4);
    return ro::compile([&](ro::Port<int> doc) {
      auto page = ro::F::expand(pages(doc));
      auto text = caption(page);
      auto kept = ro::F::filter(page, keep(page));
      return std::make_tuple(summarize(ro::F::reduce(text, ro::F::members(kept))),
                             summarize_all(ro::F::reduce(text)));
    });
  };
  const OutcomeCounts n = check_schedules("group failure gathers", make, 808, 12, {}, docs);
  EXPECT_GT(n[0], 0);
  EXPECT_GT(n[3], 0);
  // The data has documents with a failing page among others (so the membership leaves a
  // failing child out while its siblings succeed), and documents without one.
  int poisoned = 0, clean = 0;
  for (int d : docs) {
    const int pages = d % 7;
    if (pages > 3)
      ++poisoned;
    else if (pages > 0)
      ++clean;
  }
  EXPECT_GT(poisoned, 0);
  EXPECT_GT(clean, 0);
  // The reference itself: every document with a failing page is SUPPRESSED in both outputs.
  ro::testing::SyncExecutor ex(make(Config::defaults()));
  ro::RunOptions quiet;
  quiet.progress = false;
  const auto [kept, all] = ex.run(docs, quiet).outputs;
  for (std::size_t i = 0; i < docs.size(); ++i) {
    const bool has_failing_page = docs[i] % 7 > 3;
    for (const auto* column : {&kept, &all}) {
      const auto& o = (*column)[i];
      if (has_failing_page) {
        ASSERT_FALSE(o.ok()) << "doc " << docs[i];
        EXPECT_EQ(o.issue().outcome, ro::Outcome::suppressed);
        EXPECT_EQ(o.issue().cause, "unreadable doc " + std::to_string(docs[i]));
      } else {
        EXPECT_TRUE(o.ok()) << "doc " << docs[i];
      }
    }
  }
}
