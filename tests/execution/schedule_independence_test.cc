// DESIGN 5, "Contract": for fixed per-Grain outcomes, the outputs and their order are the
// same for every legal schedule. Each pipeline runs under deterministic pseudo-random
// combinations of replicas, batch sizes, input batch sizes, active-batch limits, reservation
// policies and queue orders, on the local executor (real threads, varying completion order)
// and on the SyncExecutor, and must match a reference SyncExecutor run with default options.
// Some schedules make pools size themselves (DESIGN 6.1.7): by the policy, or
// resized at random by the test hook, so actors join and retire at random times
// (support/schedule_independence.h).
//
// Here: expansions gathered back by reduce, nested two levels, behind a filter (with a
// root-level filter as a second output), and aligned with explicit membership; Calls with
// several inputs are in schedule_independence_inputs_test.cc, typed failures and
// GroupFailures in schedule_independence_failures_test.cc.
#include "support/schedule_independence.h"

#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include <rayorch/rayorch.h>

namespace ro = rayorch;
using schedule_independence::check_schedules;
using schedule_independence::Config;
using schedule_independence::jitter;
using schedule_independence::join;
using schedule_independence::make_docs;
using schedule_independence::module;
using schedule_independence::Ocr;
using schedule_independence::OutcomeCounts;
using schedule_independence::PagesOf;
using schedule_independence::Summarize;

namespace {

struct SumGroup {
  std::vector<int> run(ro::Column<ro::Group<int>> groups) {
    std::vector<int> out;
    for (const auto& g : groups) {
      int s = 0;
      for (int v : g) s += v;
      out.push_back(s);
    }
    return out;
  }
};

struct Keep {
  std::vector<bool> run(ro::Column<int> values) {
    std::vector<bool> out;
    for (int v : values) out.push_back(v % 3 != 0);
    return out;
  }
};

}  // namespace

TEST(ScheduleIndependence, ExpandReduce) {
  const auto docs = make_docs(11, 40, 199);
  auto make = [](const Config& c) {
    auto pages = module<PagesOf>(c, 0);
    auto ocr = module<Ocr>(c, 1);
    auto summarize = module<Summarize>(c, 2);
    return ro::compile(
        [&](ro::Port<int> doc) { return summarize(ro::F::reduce(ocr(ro::F::expand(pages(doc))))); },
        c.compile_options());
  };
  const OutcomeCounts n = check_schedules("expand/reduce", make, 101, 12, {}, docs);
  EXPECT_GT(n[0], 0);
  EXPECT_GT(n[3], 0);
}

namespace {

// Sections of doc d: d*10 + s for s < d % 4. Lines of section v: v*10 + l for l < v % 5.
// A line's document is line / 100.
struct SectionsOf {
  std::vector<std::vector<int>> run(ro::Column<int> docs) {
    std::vector<std::vector<int>> out;
    for (int d : docs) {
      std::vector<int> v;
      for (int s = 0; s < d % 4; ++s) v.push_back(d * 10 + s);
      out.push_back(std::move(v));
    }
    return out;
  }
};

struct LinesOf {
  std::vector<std::vector<int>> run(ro::Column<int> sections) {
    std::vector<std::vector<int>> out;
    for (int s : sections) {
      std::vector<int> v;
      for (int l = 0; l < s % 5; ++l) v.push_back(s * 10 + l);
      out.push_back(std::move(v));
    }
    return out;
  }
};

struct LineWork {
  std::vector<ro::Row<int>> run(ro::Column<int> lines) {
    std::vector<ro::Row<int>> out;
    for (int l : lines) {
      jitter(l);
      if (l % 23 == 7) {
        out.push_back(ro::RecordFailure{"bad line in doc " + std::to_string(l / 100)});
      } else {
        out.push_back(l % 1000);
      }
    }
    return out;
  }
};

}  // namespace

// Calls that read each other's values directly, the chains the compiler co-locates when a
// schedule asks it to (colocate auto): pages -> ocr -> line work -> reduce, so a failure of
// either chained Call is contained in its own Call's Grains.
TEST(ScheduleIndependence, ChainedCalls) {
  const auto docs = make_docs(19, 40, 199);
  auto make = [](const Config& c) {
    auto pages = module<PagesOf>(c, 0);
    auto ocr = module<Ocr>(c, 1);
    auto work = module<LineWork>(c, 2);
    auto summarize = module<Summarize>(c, 3);
    return ro::compile(
        [&](ro::Port<int> doc) {
          return summarize(ro::F::reduce(work(ocr(ro::F::expand(pages(doc))))));
        },
        c.compile_options());
  };
  Config chained = Config::defaults();
  chained.colocate = 3;
  EXPECT_NE(make(chained).explain().find("co-located pool Ocr+LineWork: Ocr#1, LineWork#2 "
                                         "(found by the compiler)"),
            std::string::npos)
      << make(chained).explain();
  const OutcomeCounts n = check_schedules("chained", make, 303, 16, {}, docs);
  EXPECT_GT(n[0], 0);
  EXPECT_GT(n[3], 0);
}

TEST(ScheduleIndependence, NestedExpandReduce) {
  const auto docs = make_docs(12, 36, 99);
  auto make = [](const Config& c) {
    auto sections = module<SectionsOf>(c, 0);
    auto lines = module<LinesOf>(c, 1);
    auto work = module<LineWork>(c, 2);
    auto per_section = module<SumGroup>(c, 3);
    auto per_doc = module<Summarize>(c, 4);
    return ro::compile(
        [&](ro::Port<int> doc) {
          auto section = ro::F::expand(sections(doc));
          auto line = ro::F::expand(lines(section));
          return per_doc(ro::F::reduce(per_section(ro::F::reduce(work(line)))));
        },
        c.compile_options());
  };
  const OutcomeCounts n = check_schedules("nested", make, 202, 12, {}, docs);
  EXPECT_GT(n[0], 0);
  EXPECT_GT(n[3], 0);
}

TEST(ScheduleIndependence, FilterWithSeveralOutputs) {
  const auto docs = make_docs(13, 40, 199);
  auto make = [](const Config& c) {
    auto pages = module<PagesOf>(c, 0);
    auto keep = module<Keep>(c, 1);
    auto ocr = module<Ocr>(c, 2);
    auto summarize = module<Summarize>(c, 3);
    auto keep_doc = module<Keep>(c, 4);
    return ro::compile(
        [&](ro::Port<int> doc) {
          auto page = ro::F::expand(pages(doc));
          auto kept = ro::F::filter(page, keep(page));
          auto summary = summarize(ro::F::reduce(ocr(kept)));
          // A root-level filter: dropped rows are DROPPED outputs, in source order.
          return std::make_tuple(summary, ro::F::filter(doc, keep_doc(doc)));
        },
        c.compile_options());
  };
  const OutcomeCounts n = check_schedules("filter", make, 303, 12, {}, docs);
  EXPECT_GT(n[0], 0);
  EXPECT_GT(n[1], 0);
  EXPECT_GT(n[3], 0);
}

namespace {

// Two aligned outputs per page; some pages fail both.
struct Analyze {
  std::tuple<std::vector<ro::Row<int>>, std::vector<std::string>> run(ro::Column<int> pages) {
    std::vector<ro::Row<int>> scores;
    std::vector<std::string> labels;
    for (int p : pages) {
      jitter(p);
      if (p % 19 == 2) {
        scores.push_back(ro::RecordFailure{"bad analysis in doc " + std::to_string(p / 100)});
      } else {
        scores.push_back(p % 97);
      }
      labels.push_back("L" + std::to_string(p));
    }
    return {std::move(scores), std::move(labels)};
  }
};

struct Assemble {
  std::vector<std::string> run(ro::Column<ro::Group<int>> scores,
                               ro::Column<ro::Group<std::string>> labels) {
    std::vector<std::string> out;
    for (std::size_t i = 0; i < scores.size(); ++i) {
      std::string s = join(scores[i]) + "|";
      for (const auto& l : labels[i]) s += l + ",";
      out.push_back(s);
    }
    return out;
  }
};

}  // namespace

TEST(ScheduleIndependence, ReduceAligned) {
  const auto docs = make_docs(18, 40, 199);
  auto make = [](const Config& c) {
    auto pages = module<PagesOf>(c, 0);
    auto analyze = module<Analyze>(c, 1);
    auto keep = module<Keep>(c, 2);
    auto assemble = module<Assemble>(c, 3);
    auto assemble_all = module<Assemble>(c, 4);
    return ro::compile(
        [&](ro::Port<int> doc) {
          auto page = ro::F::expand(pages(doc));
          auto [score, label] = analyze(page);
          // Explicit membership: pages the mask drops are left out of both groups, even when
          // their analysis failed.
          auto [kept_scores, kept_labels] =
              ro::F::reduce_aligned(ro::F::members(ro::F::filter(page, keep(page))), score, label);
          auto [all_scores, all_labels] = ro::F::reduce_aligned(score, label);
          return std::make_tuple(assemble(kept_scores, kept_labels),
                                 assemble_all(all_scores, all_labels));
        },
        c.compile_options());
  };
  const OutcomeCounts n = check_schedules("reduce_aligned", make, 707, 12, {}, docs);
  EXPECT_GT(n[0], 0);
  EXPECT_GT(n[3], 0);
}
