// `rayorch bench ablation | failure`: the simulated document workload on the local executor
// under different policies and failures (`scaling` is in scaling.cc).
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "bench.h"
#include <fmt/format.h>

namespace rayorch::bench {

nlohmann::json machine_info() {
  nlohmann::json m;
  m["cores"] = std::thread::hardware_concurrency();
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) m["cpu"] = line.substr(colon + 2);
      break;
    }
  }
  // The load average tells a reader whether other work shared the cores.
  double load[3] = {0, 0, 0};
  if (getloadavg(load, 3) == 3) m["loadavg_1min"] = load[0];
  return m;
}

void note(const std::string& line) {
  std::fprintf(stderr, "[bench] %s\n", line.c_str());
}

Harness::Harness(const WorkloadOptions& w)
    : pipeline(w.costs, w.topology, model_loads(w.startup)),
      program(ro::compile(pipeline)),
      executor(program) {
  base.input_batch_size = w.input_batch_size;
  base.max_active_input_batches = w.max_active_input_batches;
  base.progress = false;
}

const ro::CallMetrics& call_metrics(const ro::RunMetrics& m, const char* udf) {
  for (const auto& c : m.calls) {
    if (c.udf.find(udf) != std::string::npos) return c;
  }
  throw std::logic_error(fmt::format("no Call of {} in the metrics", udf));
}

void check_clean(const ro::RunResult<DocResult>& r, const std::vector<std::uint32_t>& pages,
                 const char* what) {
  for (std::size_t i = 0; i < pages.size(); ++i) {
    const auto& out = r.outputs[i];
    if (!out.ok() || !(out.value() == expected_result(static_cast<std::uint32_t>(i), pages[i]))) {
      throw std::runtime_error(fmt::format("{}: document {} has a wrong output ({})", what, i,
                                           out.ok() ? "values differ" : out.issue().cause));
    }
  }
}

namespace {
std::string secs(double s) {
  return fmt::format("{:.3f}", s);
}
}  // namespace

std::uint64_t sum_pages(const std::vector<std::uint32_t>& pages) {
  std::uint64_t n = 0;
  for (auto p : pages) n += p;
  return n;
}

std::string describe_workload(const WorkloadOptions& w, const std::vector<std::uint32_t>& pages,
                              const std::string& ocr_replicas) {
  const Costs& c = w.costs;
  const Topology& t = w.topology;
  return fmt::format(
             "{} documents, {} pages (max {}), seed {}; render {}x {} ms/page; OCR {}x batch {} "
             "({} ms/batch + {} ms/page); assemble {}x ({} ms/doc + {} ms/page); input batches of "
             "{} "
             "rows, {} active",
             pages.size(), sum_pages(pages), *std::max_element(pages.begin(), pages.end()),
             w.corpus.seed, t.render_replicas, c.render_per_page,
             ocr_replicas.empty() ? std::to_string(t.ocr_replicas) : ocr_replicas, t.ocr_batch,
             c.ocr_per_batch, c.ocr_per_page, t.assemble_replicas, c.assemble_per_doc,
             c.assemble_per_page,
             w.input_batch_size == 0 ? std::string("all") : std::to_string(w.input_batch_size),
             w.max_active_input_batches) +
         (t.auto_replicas
              ? fmt::format("; this project's pools size themselves (replicas=auto) within {} "
                            "CPUs, one per actor (the peers: {})",
                            t.budget_cpus,
                            t.peer_defaults ? "their own defaults on a Ray of as many CPUs"
                                            : "the actor counts above")
              : std::string()) +
         describe_startup(w.startup);
}

std::string describe_startup(const StartupCosts& s) {
  if (s.render_ms <= 0 && s.ocr_ms <= 0 && (s.ocr_slow_every <= 0 || s.ocr_slow_ms <= 0)) return "";
  std::string slow = s.ocr_slow_every > 0
                         ? fmt::format(" (one in {}: {} ms)", s.ocr_slow_every, s.ocr_slow_ms)
                         : "";
  return fmt::format("; model loads: render {} ms, OCR {} ms{} per constructor", s.render_ms,
                     s.ocr_ms, slow);
}

nlohmann::json workload_json(const WorkloadOptions& w, const std::vector<std::uint32_t>& pages) {
  return {{"documents", pages.size()},
          {"pages", sum_pages(pages)},
          {"max_pages", *std::max_element(pages.begin(), pages.end())},
          {"seed", w.corpus.seed},
          {"median_pages", w.corpus.median_pages},
          {"sigma", w.corpus.sigma},
          {"costs_ms", costs_json(w.costs)},
          {"topology", topology_json(w.topology)},
          {"startup_ms", startup_json(w.startup)},
          {"input_batch_size", w.input_batch_size},
          {"max_active_input_batches", w.max_active_input_batches}};
}

// ---- ablation ------------------------------------------------------------------------------

Report run_ablation(const AblationOptions& o) {
  const auto pages = make_corpus(o.workload.corpus);
  const auto docs = make_docs(pages);
  Harness h(o.workload);
  struct Config {
    const char* name;
    ro::Reservation reservation;
    ro::QueueOrder order;
    std::vector<double> wall, first, mean_done, p95_done;
    double ocr_rpcs = 0, ocr_mean_batch = 0;
  };
  std::vector<Config> configs = {
      {"parent-bound batching",
       ro::Reservation::parent_bound,
       ro::QueueOrder::fifo,
       {},
       {},
       {},
       {}},
      {"elastic, LIFO queues", ro::Reservation::elastic, ro::QueueOrder::lifo, {}, {}, {}, {}},
      {"full system (elastic, FIFO)",
       ro::Reservation::elastic,
       ro::QueueOrder::fifo,
       {},
       {},
       {},
       {}},
  };
  const int repeats = std::max(1, o.repeats);
  for (int rep = 0; rep < repeats; ++rep) {
    // Interleaved, in a rotating order, so slow drifts of the machine hit every config.
    for (std::size_t k = 0; k < configs.size(); ++k) {
      Config& c = configs[(k + static_cast<std::size_t>(rep)) % configs.size()];
      ro::RunOptions ro_opts = h.base;
      ro_opts.reservation = c.reservation;
      ro_opts.queue_order = c.order;
      auto r = h.run(docs, ro_opts);
      check_clean(r, pages, c.name);
      const auto done = stats_of(r.metrics.root_completed_seconds);
      c.wall.push_back(r.metrics.elapsed_seconds);
      c.first.push_back(done.min);
      c.mean_done.push_back(done.mean);
      c.p95_done.push_back(done.p95);
      const auto& ocr = call_metrics(r.metrics, "OcrUdf");
      c.ocr_rpcs = static_cast<double>(ocr.rpcs);
      c.ocr_mean_batch = static_cast<double>(ocr.grain_dispatches) / static_cast<double>(ocr.rpcs);
      note(fmt::format("ablation: {} run {}/{}: {:.3f} s", c.name, rep + 1, repeats,
                       r.metrics.elapsed_seconds));
    }
  }
  const double full = median_of(configs.back().wall);
  Table t({"configuration", "wall s", "runs min-max", "slowdown", "first doc s", "mean doc done s",
           "p95 doc done s", "OCR RPCs", "mean OCR batch"});
  nlohmann::json rows = nlohmann::json::array();
  bool fastest = true;
  for (const Config& c : configs) {
    const double wall = median_of(c.wall);
    if (&c != &configs.back() && wall <= full) fastest = false;
    const auto range = stats_of(c.wall);
    t.add({c.name, secs(wall), fmt::format("{:.3f}-{:.3f}", range.min, range.max),
           fmt::format("{:.2f}x", wall / full), secs(median_of(c.first)),
           secs(median_of(c.mean_done)), secs(median_of(c.p95_done)),
           fmt::format("{:.0f}", c.ocr_rpcs), fmt::format("{:.1f}", c.ocr_mean_batch)});
    rows.push_back({{"configuration", c.name},
                    {"wall_seconds", wall},
                    {"wall_seconds_runs", c.wall},
                    {"slowdown", wall / full},
                    {"first_document_seconds", median_of(c.first)},
                    {"mean_document_done_seconds", median_of(c.mean_done)},
                    {"p95_document_done_seconds", median_of(c.p95_done)},
                    {"ocr_rpcs", c.ocr_rpcs},
                    {"ocr_mean_batch", c.ocr_mean_batch}});
  }
  Report rep;
  rep.targets_met = fastest;
  rep.text = fmt::format(
      "bench ablation: {}\nmedian of {} interleaved runs per configuration\n\n{}\n"
      "target full system fastest: {}\n",
      describe_workload(o.workload, pages), repeats, t.str(), fastest ? "met" : "MISSED");
  rep.json = {{"benchmark", "ablation"},
              {"machine", machine_info()},
              {"workload", workload_json(o.workload, pages)},
              {"repeats", repeats},
              {"configurations", rows},
              {"targets", {{"full_system_fastest", {{"met", fastest}}}}}};
  return rep;
}

// ---- failure -------------------------------------------------------------------------------

Report run_failure(const FailureOptions& o) {
  const auto pages = make_corpus(o.workload.corpus);
  const auto poisoned = largest_documents(pages, o.poison_fraction);
  std::vector<bool> mask(pages.size(), false);
  std::uint64_t siblings = 0, poisoned_pages = 0;
  for (std::size_t i : poisoned) {
    mask[i] = true;
    siblings += pages[i] - 1;
    poisoned_pages += pages[i];
  }
  const std::uint64_t total_pages = sum_pages(pages);
  const std::uint64_t healthy_pages = total_pages - poisoned_pages;
  const auto clean_docs = make_docs(pages);
  const auto poisoned_docs = make_docs(pages, mask);
  Harness h(o.workload);

  struct Pair {
    double clean_wall = 0, poisoned_wall = 0;
    std::uint64_t clean_ocr_grains = 0, poisoned_ocr_grains = 0;
    std::uint64_t clean_ocr_rpcs = 0, poisoned_ocr_rpcs = 0;
    std::uint64_t clean_assemble_rpcs = 0, poisoned_assemble_rpcs = 0;
    std::uint64_t suppressed_by_barrier = 0;
    std::uint64_t never_dispatched = 0;
  };
  std::vector<Pair> pairs;
  std::uint64_t mismatched = 0;
  const int repeats = std::max(1, o.repeats);
  for (int rep = 0; rep < repeats; ++rep) {
    Pair p;
    std::optional<ro::RunResult<DocResult>> clean, bad;
    // Alternate which run goes first, so a drift of the machine does not favour one side.
    for (int k = 0; k < 2; ++k) {
      const bool do_clean = (k == 0) == (rep % 2 == 0);
      if (do_clean)
        clean = h.run(clean_docs);
      else
        bad = h.run(poisoned_docs);
    }
    check_clean(*clean, pages, "failure (clean run)");
    for (std::size_t i = 0; i < pages.size(); ++i) {
      const auto& out = bad->outputs[i];
      if (mask[i]) {
        if (out.ok() || out.issue().cause.find("unreadable") == std::string::npos) ++mismatched;
      } else if (!(out == clean->outputs[i])) {
        ++mismatched;
      }
    }
    p.clean_wall = clean->metrics.elapsed_seconds;
    p.poisoned_wall = bad->metrics.elapsed_seconds;
    const auto& co = call_metrics(clean->metrics, "OcrUdf");
    const auto& bo = call_metrics(bad->metrics, "OcrUdf");
    p.clean_ocr_grains = co.grain_dispatches;
    p.poisoned_ocr_grains = bo.grain_dispatches;
    p.clean_ocr_rpcs = co.rpcs;
    p.poisoned_ocr_rpcs = bo.rpcs;
    p.clean_assemble_rpcs = call_metrics(clean->metrics, "AssembleUdf").rpcs;
    p.poisoned_assemble_rpcs = call_metrics(bad->metrics, "AssembleUdf").rpcs;
    p.suppressed_by_barrier = bo.suppressed_by_barrier;
    // Every healthy page is dispatched exactly once (no retries under the abort policy), so
    // what remains of the dispatches are the triggers and the siblings that entered the UDF.
    const std::uint64_t siblings_in_udf =
        bo.grain_dispatches - healthy_pages - static_cast<std::uint64_t>(poisoned.size());
    p.never_dispatched = siblings - siblings_in_udf;
    pairs.push_back(p);
    note(
        fmt::format("failure: pair {}/{}: clean {:.3f} s, poisoned {:.3f} s, {} of {} siblings "
                    "never dispatched",
                    rep + 1, repeats, p.clean_wall, p.poisoned_wall, p.never_dispatched, siblings));
  }

  auto med = [&](auto field) {
    std::vector<double> v;
    for (const Pair& p : pairs) v.push_back(static_cast<double>(field(p)));
    return median_of(v);
  };
  const double never = med([](const Pair& p) { return p.never_dispatched; });
  const double never_fraction = siblings ? never / static_cast<double>(siblings) : 0.0;
  const double clean_wall = med([](const Pair& p) { return p.clean_wall; });
  const double poisoned_wall = med([](const Pair& p) { return p.poisoned_wall; });
  const double reduction =
      med([](const Pair& p) { return (p.clean_wall - p.poisoned_wall) / p.clean_wall; });
  // The paper's figure at 4 OCR actors.
  const bool fraction_ok = never_fraction >= 0.265;
  const bool faster = reduction > 0;
  const bool identical = mismatched == 0;

  Table t({"run", "wall s", "OCR Grains in UDF", "OCR RPCs", "assemble RPCs"});
  t.add({"clean", secs(clean_wall),
         fmt::format("{:.0f}", med([](const Pair& p) { return p.clean_ocr_grains; })),
         fmt::format("{:.0f}", med([](const Pair& p) { return p.clean_ocr_rpcs; })),
         fmt::format("{:.0f}", med([](const Pair& p) { return p.clean_assemble_rpcs; }))});
  t.add({"poisoned", secs(poisoned_wall),
         fmt::format("{:.0f}", med([](const Pair& p) { return p.poisoned_ocr_grains; })),
         fmt::format("{:.0f}", med([](const Pair& p) { return p.poisoned_ocr_rpcs; })),
         fmt::format("{:.0f}", med([](const Pair& p) { return p.poisoned_assemble_rpcs; }))});

  Report rep;
  rep.targets_met = fraction_ok && faster;
  rep.checks_passed = identical;
  rep.text = fmt::format(
      "bench failure: {}\npage 0 of the {} largest documents ({:.0f}%: {} pages, {} siblings) "
      "returns ro::GroupFailure; median of {} paired runs\n\n{}\n"
      "poisoned-parent siblings never dispatched: {:.0f} of {} ({:.1f}%); sealed by the "
      "barrier (including in-flight rejections): {:.0f}\n"
      "non-trigger OCR Grains in the UDF: clean {:.0f}, poisoned {:.0f}\n"
      "wall-time reduction: {:.1f}%\n"
      "healthy documents identical to the clean run, poisoned ones suppressed: {}\n"
      "target >= 26.5% of siblings never dispatched (the paper's figure at 4 actors): {}\ntarget "
      "wall time reduced: {}\n",
      describe_workload(o.workload, pages), poisoned.size(), o.poison_fraction * 100,
      poisoned_pages, siblings, repeats, t.str(), never, siblings, never_fraction * 100,
      med([](const Pair& p) { return p.suppressed_by_barrier; }),
      med([&](const Pair& p) { return p.clean_ocr_grains - poisoned.size(); }),
      med([&](const Pair& p) { return p.poisoned_ocr_grains - poisoned.size(); }), reduction * 100,
      identical ? "yes" : fmt::format("NO ({} mismatches)", mismatched),
      fraction_ok ? "met" : "MISSED", faster ? "met" : "MISSED");
  nlohmann::json runs = nlohmann::json::array();
  for (const Pair& p : pairs) {
    runs.push_back({{"clean_wall_seconds", p.clean_wall},
                    {"poisoned_wall_seconds", p.poisoned_wall},
                    {"clean_ocr_grains", p.clean_ocr_grains},
                    {"poisoned_ocr_grains", p.poisoned_ocr_grains},
                    {"clean_ocr_rpcs", p.clean_ocr_rpcs},
                    {"poisoned_ocr_rpcs", p.poisoned_ocr_rpcs},
                    {"suppressed_by_barrier", p.suppressed_by_barrier},
                    {"siblings_never_dispatched", p.never_dispatched}});
  }
  rep.json = {{"benchmark", "failure"},
              {"machine", machine_info()},
              {"workload", workload_json(o.workload, pages)},
              {"poisoned_documents", poisoned.size()},
              {"poisoned_pages", poisoned_pages},
              {"siblings", siblings},
              {"siblings_never_dispatched", never},
              {"siblings_never_dispatched_fraction", never_fraction},
              {"clean_wall_seconds", clean_wall},
              {"poisoned_wall_seconds", poisoned_wall},
              {"wall_time_reduction", reduction},
              {"healthy_outputs_identical", identical},
              {"pairs", runs},
              {"targets",
               {{"siblings_never_dispatched_fraction",
                 {{"value", never_fraction}, {"min", 0.265}, {"met", fraction_ok}}},
                {"wall_time_reduced", {{"value", reduction}, {"met", faster}}}}}};
  if (!o.peers.empty()) run_failure_peers(o, pages, mask, rep);
  return rep;
}

}  // namespace rayorch::bench
