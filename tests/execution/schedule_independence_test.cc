// DESIGN 5, "Contract": for fixed per-Grain outcomes, the outputs and their order are the
// same for every legal schedule. Each pipeline runs under deterministic pseudo-random
// combinations of replicas, batch sizes, input batch sizes, active-batch limits, reservation
// policies and queue orders, on the local executor (real threads, varying completion order)
// and on the SyncExecutor, and must match a reference SyncExecutor run with default options.
// Some schedules make pools size themselves (DESIGN 6.1, self-sizing pools): by the policy, or
// resized at random by the test hook, so actors join and retire at random times.
#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "support/executor_testing.h"
#include <gtest/gtest.h>

#include <rayorch/rayorch.h>

namespace ro = rayorch;
using executor_testing::Rng;

namespace {

constexpr int kModules = 8;

// One schedule: per-Module replicas and batch sizes plus the run options.
struct Config {
  int replicas[kModules];
  int batch[kModules];
  int min_auto[kModules];         // -1: a fixed pool; else auto_replicas(min_auto, replicas)
  std::uint64_t resize_seed = 0;  // LocalBackend::random_resize_seed
  std::size_t input_batch_size = 0;
  std::size_t max_active = 1;
  std::optional<ro::Reservation> reservation;
  ro::QueueOrder order = ro::QueueOrder::fifo;
  bool streaming = false;

  static Config defaults() {
    Config c;
    for (int i = 0; i < kModules; ++i) {
      c.replicas[i] = 1;
      c.batch[i] = 1;
      c.min_auto[i] = -1;
    }
    return c;
  }

  static Config sample(Rng& rng, std::size_t rows) {
    Config c;
    for (int i = 0; i < kModules; ++i) {
      c.replicas[i] = rng.between(1, 8);
      c.batch[i] = rng.chance(50) ? rng.between(1, 8) : rng.between(9, 64);
    }
    c.input_batch_size =
        rng.chance(20) ? 0 : static_cast<std::size_t>(rng.between(1, static_cast<int>(rows)));
    c.max_active = static_cast<std::size_t>(rng.between(1, 4));
    const int r = rng.between(1, 10);
    if (r <= 2) c.reservation = ro::Reservation::elastic;
    if (r >= 9) c.reservation = ro::Reservation::parent_bound;
    c.order = rng.chance(15) ? ro::QueueOrder::lifo : ro::QueueOrder::fifo;
    c.streaming = rng.chance(30);
    // Drawn last, so the schedules above stay those of the seeds before.
    const bool sizing = rng.chance(40);
    for (int i = 0; i < kModules; ++i)
      c.min_auto[i] = sizing && rng.chance(70) ? rng.between(0, 1) : -1;
    if (sizing && rng.chance(75))
      c.resize_seed = static_cast<std::uint64_t>(rng.between(1, 1 << 20));
    return c;
  }

  ro::RunOptions options() const {
    ro::RunOptions o;
    o.input_batch_size = input_batch_size;
    o.max_active_input_batches = max_active;
    o.reservation = reservation;
    o.queue_order = order;
    o.progress = false;
    return o;
  }

  std::string describe() const {
    std::string s = "replicas/batch";
    for (int i = 0; i < kModules; ++i) {
      s += " " + std::to_string(replicas[i]) + "/" + std::to_string(batch[i]);
    }
    s += " input_batch_size " + std::to_string(input_batch_size) + " max_active " +
         std::to_string(max_active);
    if (reservation) {
      s += *reservation == ro::Reservation::elastic ? " elastic" : " parent_bound";
    }
    if (order == ro::QueueOrder::lifo) s += " lifo";
    if (streaming) s += " streaming";
    for (int i = 0; i < kModules; ++i) {
      if (min_auto[i] >= 0) s += " auto" + std::to_string(i) + ":" + std::to_string(min_auto[i]);
    }
    if (resize_seed != 0) s += " resize_seed " + std::to_string(resize_seed);
    return s;
  }
};

template <class U, class... A>
ro::Module<U> module(const Config& c, int index, A&&... args) {
  ro::Module<U> m = ro::Module<U>(std::forward<A>(args)...).batch_size(c.batch[index]);
  if (c.min_auto[index] >= 0)
    m.auto_replicas(std::min(c.min_auto[index], c.replicas[index]), c.replicas[index]);
  else
    m.replicas(c.replicas[index]);
  return m;
}

// Perturbs completion order between actors without sleeping.
void jitter(int v) {
  for (int i = 0; i < (v % 4); ++i) std::this_thread::yield();
}

template <class T>
struct IsMulti : std::false_type {};
template <class... O>
struct IsMulti<std::tuple<std::vector<ro::Output<O>>...>> : std::true_type {};

// Runs `ex` on `cols` collecting every row delivered by the streaming callback, which must
// deliver each row exactly once.
template <class Ex, class T, class... Cols>
std::vector<ro::Output<T>> run_streaming(Ex& ex, const ro::RunOptions& o, const std::string& ctx,
                                         const Cols&... cols) {
  std::vector<ro::Output<T>> out;
  std::vector<int> seen;
  const std::size_t rows = std::get<0>(std::forward_as_tuple(cols...)).size();
  out.assign(rows, ro::Output<T>(ro::OutputIssue{ro::Outcome::dropped, "never delivered"}));
  seen.assign(rows, 0);
  ex.run(cols..., o, [&](std::size_t row, ro::Output<T> value) {
    ++seen[row];
    out[row] = std::move(value);
  });
  for (std::size_t r = 0; r < rows; ++r) EXPECT_EQ(seen[r], 1) << ctx << " row " << r;
  return out;
}

// How many reference outputs had each outcome (present, dropped, failed, suppressed), so a
// test can show that its data exercises the paths it is about.
using OutcomeCounts = std::array<int, 4>;

template <class T>
void count_outcomes(const std::vector<ro::Output<T>>& outputs, OutcomeCounts& counts) {
  for (const auto& o : outputs) ++counts[o.ok() ? 0 : static_cast<int>(o.issue().outcome)];
}
template <class... T>
void count_outcomes(const std::tuple<std::vector<ro::Output<T>>...>& outputs,
                    OutcomeCounts& counts) {
  std::apply([&](const auto&... column) { (count_outcomes(column, counts), ...); }, outputs);
}

// Runs the pipeline built by `make` under `configs` sampled schedules and compares every
// run with the default-options SyncExecutor reference.
template <class Make, class... Cols>
OutcomeCounts check_schedules(const std::string& name, const Make& make, std::uint64_t seed,
                              int configs, const std::vector<bool>& cause_decidable,
                              const Cols&... cols) {
  const std::size_t rows = std::get<0>(std::forward_as_tuple(cols...)).size();
  auto reference_program = make(Config::defaults());
  ro::testing::SyncExecutor reference(reference_program);
  ro::RunOptions quiet;
  quiet.progress = false;
  const auto expected = reference.run(cols..., quiet).outputs;
  OutcomeCounts counts{};
  count_outcomes(expected, counts);
  Rng rng(seed);
  for (int i = 0; i < configs; ++i) {
    const Config c = Config::sample(rng, rows);
    const std::string ctx = name + " [" + std::to_string(i) + "] " + c.describe();
    auto program = make(c);
    const ro::RunOptions o = c.options();
    {
      ro::testing::SyncExecutor sync(program);
      executor_testing::expect_same_outputs(expected, sync.run(cols..., o).outputs, cause_decidable,
                                            ctx + " sync");
    }
    ro::LocalBackend backend;
    backend.random_resize_seed = c.resize_seed;
    backend.budget.cpus = 64;  // the policy is not starved on a small machine
    ro::Executor local(program, backend);
    using Outputs = std::remove_cvref_t<decltype(expected)>;
    if constexpr (!IsMulti<Outputs>::value) {
      if (c.streaming) {
        using T = std::remove_cvref_t<decltype(expected[0].value())>;
        executor_testing::expect_same_outputs(
            expected, run_streaming<decltype(local), T>(local, o, ctx, cols...), cause_decidable,
            ctx + " local");
        continue;
      }
    }
    auto result = local.run(cols..., o);
    executor_testing::expect_same_outputs(expected, result.outputs, cause_decidable,
                                          ctx + " local");
    EXPECT_LE(result.metrics.peak_active_input_batches, c.max_active) << ctx;
    EXPECT_EQ(result.metrics.root_completed_seconds.size(), rows) << ctx;
    if (::testing::Test::HasFailure()) break;  // one failing schedule is enough to read
  }
  return counts;
}

std::vector<int> make_docs(std::uint64_t seed, int n, int max_value) {
  Rng rng(seed);
  std::vector<int> docs;
  for (int i = 0; i < n; ++i) docs.push_back(rng.between(0, max_value));
  return docs;
}

std::string join(const ro::Group<int>& g) {
  std::string s;
  for (int v : g) s += std::to_string(v) + ",";
  return s;
}

// ---- UDFs -----------------------------------------------------------------------------

// Children of doc d: d*100 + i for i < d % 7 (including empty expansions).
struct PagesOf {
  std::vector<std::vector<int>> run(ro::Column<int> docs) {
    std::vector<std::vector<int>> out;
    for (int d : docs) {
      std::vector<int> pages;
      for (int i = 0; i < d % 7; ++i) pages.push_back(d * 100 + i);
      out.push_back(std::move(pages));
    }
    return out;
  }
};

// A per-page result that fails some pages; the cause names only the document, so every
// failure inside one document has the same cause.
struct Ocr {
  std::vector<ro::Row<int>> run(ro::Column<int> pages) {
    std::vector<ro::Row<int>> out;
    for (int p : pages) {
      jitter(p);
      if (p % 13 == 5) {
        out.push_back(ro::RecordFailure{"unreadable page in doc " + std::to_string(p / 100)});
      } else {
        out.push_back(p * 3 + 1);
      }
    }
    return out;
  }
};

struct Summarize {
  std::vector<std::string> run(ro::Column<ro::Group<int>> groups) {
    std::vector<std::string> out;
    for (const auto& g : groups) out.push_back(std::to_string(g.size()) + ":" + join(g));
    return out;
  }
};

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
    return ro::compile([&](ro::Port<int> doc) {
      return summarize(ro::F::reduce(ocr(ro::F::expand(pages(doc)))));
    });
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

TEST(ScheduleIndependence, NestedExpandReduce) {
  const auto docs = make_docs(12, 36, 99);
  auto make = [](const Config& c) {
    auto sections = module<SectionsOf>(c, 0);
    auto lines = module<LinesOf>(c, 1);
    auto work = module<LineWork>(c, 2);
    auto per_section = module<SumGroup>(c, 3);
    auto per_doc = module<Summarize>(c, 4);
    return ro::compile([&](ro::Port<int> doc) {
      auto section = ro::F::expand(sections(doc));
      auto line = ro::F::expand(lines(section));
      return per_doc(ro::F::reduce(per_section(ro::F::reduce(work(line)))));
    });
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
    return ro::compile([&](ro::Port<int> doc) {
      auto page = ro::F::expand(pages(doc));
      auto kept = ro::F::filter(page, keep(page));
      auto summary = summarize(ro::F::reduce(ocr(kept)));
      // A root-level filter: dropped rows are DROPPED outputs, in source order.
      return std::make_tuple(summary, ro::F::filter(doc, keep_doc(doc)));
    });
  };
  const OutcomeCounts n = check_schedules("filter", make, 303, 12, {}, docs);
  EXPECT_GT(n[0], 0);
  EXPECT_GT(n[1], 0);
  EXPECT_GT(n[3], 0);
}

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
    return ro::compile([&](ro::Port<int> doc) {
      auto page = ro::F::expand(pages(doc));
      auto [score, label] = analyze(page);
      // Explicit membership: pages the mask drops are left out of both groups, even when
      // their analysis failed.
      auto [kept_scores, kept_labels] =
          ro::F::reduce_aligned(ro::F::members(ro::F::filter(page, keep(page))), score, label);
      auto [all_scores, all_labels] = ro::F::reduce_aligned(score, label);
      return std::make_tuple(assemble(kept_scores, kept_labels),
                             assemble_all(all_scores, all_labels));
    });
  };
  const OutcomeCounts n = check_schedules("reduce_aligned", make, 707, 12, {}, docs);
  EXPECT_GT(n[0], 0);
  EXPECT_GT(n[3], 0);
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
