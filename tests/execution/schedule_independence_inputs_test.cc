// DESIGN 5, "Contract": for fixed per-Grain outcomes, the outputs and their order are the
// same for every legal schedule. Each pipeline runs under deterministic pseudo-random
// combinations of replicas, batch sizes, input batch sizes, active-batch limits, reservation
// policies and queue orders, on the local executor (real threads, varying completion order)
// and on the SyncExecutor, and must match a reference SyncExecutor run with default options.
// Some schedules make pools size themselves (DESIGN 6.1.7): by the policy, or
// resized at random by the test hook, so actors join and retire at random times
// (support/schedule_independence.h).
//
// Here: Calls with several inputs, a title broadcast down two levels next to a Call's own
// inputs (optimised and not), and root Calls over two source columns.
#include <string>
#include <utility>
#include <vector>

#include "support/executor_testing.h"
#include "support/schedule_independence.h"
#include <gtest/gtest.h>

#include <rayorch/rayorch.h>

namespace ro = rayorch;
using executor_testing::Rng;
using schedule_independence::check_schedules;
using schedule_independence::Config;
using schedule_independence::jitter;
using schedule_independence::join;
using schedule_independence::make_docs;
using schedule_independence::module;
using schedule_independence::Ocr;
using schedule_independence::OutcomeCounts;
using schedule_independence::PagesOf;

namespace {

struct Title {
  std::vector<ro::Row<std::string>> run(ro::Column<int> docs) {
    std::vector<ro::Row<std::string>> out;
    for (int d : docs) {
      if (d % 11 == 3) {
        out.push_back(ro::RecordFailure{"no title for doc " + std::to_string(d)});
      } else {
        out.push_back("doc" + std::to_string(d));
      }
    }
    return out;
  }
};

struct Combine {
  std::vector<std::string> run(ro::Column<int> pages, ro::Column<std::string> titles) {
    std::vector<std::string> out;
    for (std::size_t i = 0; i < pages.size(); ++i) {
      jitter(pages[i]);
      out.push_back(titles[i] + "/" + std::to_string(pages[i]));
    }
    return out;
  }
};

struct LinesOfPage {
  std::vector<std::vector<int>> run(ro::Column<int> pages) {
    std::vector<std::vector<int>> out;
    for (int p : pages) {
      std::vector<int> v;
      for (int l = 0; l < p % 3; ++l) v.push_back(l);
      out.push_back(std::move(v));
    }
    return out;
  }
};

// Three Port inputs: a line, the document's title and the document value, broadcast down
// two levels.
struct Tag {
  std::vector<std::string> run(ro::Column<int> lines, ro::Column<std::string> titles,
                               ro::Column<int> docs, std::string separator) {
    std::vector<std::string> out;
    for (std::size_t i = 0; i < lines.size(); ++i) {
      out.push_back(titles[i] + separator + std::to_string(docs[i]) + separator +
                    std::to_string(lines[i]));
    }
    return out;
  }
};

struct JoinStrings {
  std::vector<std::string> run(ro::Column<ro::Group<std::string>> groups) {
    std::vector<std::string> out;
    for (const auto& g : groups) {
      std::string s = "[";
      for (const auto& v : g) s += v + ";";
      out.push_back(s + "]");
    }
    return out;
  }
};

struct Final {
  std::vector<std::string> run(ro::Column<ro::Group<std::string>> a,
                               ro::Column<ro::Group<std::string>> b) {
    std::vector<std::string> out;
    for (std::size_t i = 0; i < a.size(); ++i) {
      std::string s;
      for (const auto& v : a[i]) s += v + " ";
      s += "|";
      for (const auto& v : b[i]) s += v + " ";
      out.push_back(s);
    }
    return out;
  }
};

}  // namespace

TEST(ScheduleIndependence, BroadcastAndMultiInputCalls) {
  const auto docs = make_docs(14, 36, 149);
  for (bool optimize : {true, false}) {
    auto make = [optimize](const Config& c) {
      auto title = module<Title>(c, 0);
      auto pages = module<PagesOf>(c, 1);
      auto combine = module<Combine>(c, 2);
      auto lines = module<LinesOfPage>(c, 3);
      auto tag = module<Tag>(c, 4);
      auto join_strings = module<JoinStrings>(c, 5);
      auto final_ = module<Final>(c, 6);
      return ro::compile(
          [&](ro::Port<int> doc) {
            auto t = title(doc);
            auto page = ro::F::expand(pages(doc));
            auto combined = combine(page, ro::F::broadcast(t, page));
            auto line = ro::F::expand(lines(page));
            // A chain of broadcasts (collapsed when optimising) and a direct two-level one.
            auto line_title = ro::F::broadcast(ro::F::broadcast(t, page), line);
            auto tagged = tag(line, line_title, ro::F::broadcast(doc, line), std::string("~"));
            auto per_page = join_strings(ro::F::reduce(tagged));
            return final_(ro::F::reduce(combined), ro::F::reduce(per_page));
          },
          {.optimize = optimize});
    };
    const OutcomeCounts n = check_schedules(optimize ? "broadcast" : "broadcast unoptimised", make,
                                            optimize ? 404 : 405, 7, {}, docs);
    EXPECT_GT(n[0], 0);
    EXPECT_GT(n[3], 0);
  }
}

namespace {

// A root Call over two source columns whose list output is expanded.
struct Mix {
  std::vector<std::vector<int>> run(ro::Column<int> a, ro::Column<std::string> b) {
    std::vector<std::vector<int>> out;
    for (std::size_t i = 0; i < a.size(); ++i) {
      std::vector<int> v;
      for (std::size_t k = 0; k < b[i].size(); ++k) v.push_back(a[i] * 100 + static_cast<int>(k));
      out.push_back(std::move(v));
    }
    return out;
  }
};

struct Label {
  std::vector<std::string> run(ro::Column<ro::Group<int>> sums, ro::Column<std::string> names,
                               ro::Column<int> ids) {
    std::vector<std::string> out;
    for (std::size_t i = 0; i < sums.size(); ++i) {
      out.push_back(names[i] + "#" + std::to_string(ids[i]) + "=" + join(sums[i]));
    }
    return out;
  }
};

}  // namespace

TEST(ScheduleIndependence, MultiInputRootCalls) {
  const auto ids = make_docs(15, 40, 199);
  std::vector<std::string> names;
  Rng rng(16);
  for (std::size_t i = 0; i < ids.size(); ++i) names.push_back(std::string(rng.between(0, 6), 'x'));
  auto make = [](const Config& c) {
    auto mix = module<Mix>(c, 0);
    auto ocr = module<Ocr>(c, 1);
    auto label = module<Label>(c, 2);
    return ro::compile([&](ro::Port<int> id, ro::Port<std::string> name) {
      return label(ro::F::reduce(ocr(ro::F::expand(mix(id, name)))), name, id);
    });
  };
  const OutcomeCounts n = check_schedules("multi-input", make, 505, 12, {}, ids, names);
  EXPECT_GT(n[0], 0);
  EXPECT_GT(n[3], 0);
}
