// `rayorch bench compare`: this project and the peer baselines (bench/peers/*_peer.py) on
// the same corpus, in one invocation, every system in its own process tree.
//
// The corpus goes to every system as a JSON file; each writes its timings, its OCR actors'
// readiness and batches, and every document's ordered page values, which must equal the
// expected ones. Repeats are interleaved (system order rotates) so slow drifts of the machine
// hit every system alike; the machine's load is recorded before every run.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>

#include "bench.h"
#include "compare_results.h"
#include "compare_untuned.h"
#include "systems.h"
#include <fmt/format.h>

namespace rayorch::bench {
namespace {

namespace fs = std::filesystem;

}  // namespace

Report run_compare(const CompareOptions& o) {
  const auto pages = make_corpus(o.workload.corpus);
  const auto docs = make_docs(pages);
  const std::uint64_t total_pages = sum_pages(pages);
  SystemEnv env =
      make_system_env(o.python, o.project_python, o.peer_dir, o.work_dir, o.peer_timeout_s);
  env.extra_args = o.peer_args;
  const fs::path& work = env.work;

  auto write_corpus = [&](const std::vector<Doc>& documents, const fs::path& path,
                          const Topology& topology) {
    nlohmann::json corpus = {{"documents", nlohmann::json::array()},
                             {"costs_ms", costs_json(o.workload.costs)},
                             {"topology", topology_json(topology)},
                             {"input_batch_size", o.workload.input_batch_size},
                             {"max_active_input_batches", o.workload.max_active_input_batches},
                             {"payload", {{"max_bytes", o.payload_max_bytes}}},
                             {"startup", startup_json(o.workload.startup)}};
    for (const Doc& d : documents)
      corpus["documents"].push_back({{"id", d.id}, {"pages", d.pages}});
    std::ofstream(path) << corpus.dump();
  };
  const fs::path corpus_path = work / "corpus.json";
  write_corpus(docs, corpus_path, o.workload.topology);

  std::vector<SystemSpec> systems = parse_systems(o.peers, true);
  // A peer's grid runs at the grid's actor counts, never at its own defaults: its label
  // stays plain.
  const std::vector<SystemSpec> plain = systems;
  if (o.workload.topology.peer_defaults) {
    for (SystemSpec& s : systems)
      if (!s.peer.empty() && s.family != kRayorchOnRay) s.label += " [own defaults]";
  }
  // Per system: extra arguments the tuning chose (groupby partitions).
  std::vector<std::vector<std::string>> tuned_args(systems.size());
  nlohmann::json tuning_json = nlohmann::json::array();
  std::string tuning_text;
  if (o.tune_seed != 0) {
    if (o.tune_seed == o.workload.corpus.seed) {
      throw std::invalid_argument(fmt::format(
          "--tune-seed {} is the measured corpus's seed; tune on another seed (--seed sets "
          "the measured one)",
          o.tune_seed));
    }
    WorkloadOptions tune_workload = o.workload;
    tune_workload.corpus.seed = o.tune_seed;
    const auto tune_pages = make_corpus(tune_workload.corpus);
    const fs::path tune_path = work / "tuning-corpus.json";
    write_corpus(make_docs(tune_pages), tune_path, o.workload.topology);
    const std::vector<int> candidates =
        o.tune_partitions.empty()
            ? default_partition_candidates(o.workload.topology.assemble_replicas)
            : o.tune_partitions;
    Table table({"system", "partitions", "E2E s (tuning corpus)", "outputs"});
    std::string chosen;
    for (std::size_t k = 0; k < systems.size(); ++k) {
      if (!has_partitions(systems[k])) continue;
      std::optional<std::pair<double, int>> best;
      nlohmann::json tried = nlohmann::json::array();
      for (int p : candidates) {
        SystemEnv tune_env = env;
        tune_env.extra_args.insert(tune_env.extra_args.end(), {"--partitions", std::to_string(p)});
        note(fmt::format("compare: tuning {} with {} partitions", systems[k].label, p));
        const SystemRun r =
            run_system(tune_env, systems[k], tune_path,
                       fmt::format("tune-{}-{}-p{}", systems[k].peer, systems[k].arm, p));
        Measured m;
        if (r.ran) {
          try {
            read_result(r.result, tune_pages, o.workload.topology.ocr_replicas,
                        o.workload.topology.ocr_batch, m);
            m.ran = m.mismatches == 0;
            if (!m.ran) m.error = fmt::format("{} documents differ", m.mismatches);
          } catch (const std::exception& e) {
            m.error = e.what();
          }
        } else {
          m.error = r.error;
        }
        table.add({systems[k].label, std::to_string(p), m.ran ? fmt::format("{:.3f}", m.e2e) : "-",
                   m.ran ? "identical" : "not used: " + m.error});
        tried.push_back({{"partitions", p}, {"ran", m.ran}, {"e2e_seconds", m.e2e}});
        if (m.ran && (!best || m.e2e < best->first)) best = std::make_pair(m.e2e, p);
      }
      if (best) tuned_args[k] = {"--partitions", std::to_string(best->second)};
      chosen += fmt::format("{}: {}\n", systems[k].label,
                            best ? fmt::format("{} partitions", best->second)
                                 : std::string("no candidate ran; measured with the default"));
      tuning_json.push_back({{"system", systems[k].label},
                             {"candidates", tried},
                             {"chosen", best ? nlohmann::json(best->second) : nlohmann::json()}});
    }
    tuning_text = fmt::format(
        "groupby partitions tuned on a corpus with seed {} (the measured one has seed {}); each "
        "arm is measured with its fastest count:\n{}{}\n",
        o.tune_seed, o.workload.corpus.seed,
        tuning_json.empty() ? std::string("(no groupby arm among the systems)\n") : table.str(),
        chosen.empty() ? "" : "chosen:\n" + chosen);
  }
  // The untuned regime: the grid of fixed allocations, before the measured runs.
  std::optional<AllocationGrid> grid;
  if (o.workload.topology.auto_replicas) {
    if (systems.empty() || systems[0].family != "rayorch")
      throw std::logic_error("the untuned regime needs this project's local executor");
    grid = run_allocation_grid(
        env, systems[0],
        allocation_grid(o.workload.topology.budget_cpus, o.grid_render, o.grid_assemble),
        o.workload.topology, pages,
        [&](const Topology& t, const fs::path& path) { write_corpus(docs, path, t); });
  }
  std::vector<PeerGrid> peer_grids;
  for (std::size_t k = 0; grid && o.peer_grid && k < systems.size(); ++k) {
    if (systems[k].is_this_project()) continue;
    peer_grids.push_back(
        {plain[k].label,
         run_allocation_grid(
             env, plain[k],
             allocation_grid(o.workload.topology.budget_cpus, o.grid_render, o.grid_assemble),
             o.workload.topology, pages,
             [&](const Topology& t, const fs::path& path) { write_corpus(docs, path, t); })});
  }
  std::vector<std::vector<Measured>> runs(systems.size());
  const int repeats = std::max(1, o.repeats);
  for (int rep = 0; rep < repeats; ++rep) {
    for (std::size_t k = 0; k < systems.size(); ++k) {
      const std::size_t index = (k + static_cast<std::size_t>(rep)) % systems.size();
      const SystemSpec& s = systems[index];
      Measured m;
      m.load = load_average();
      const std::string tag = fmt::format("{}{}-{}", s.peer.empty() ? "rayorch-local" : s.peer,
                                          s.arm.empty() ? "" : "-" + s.arm, rep);
      note(fmt::format("compare: run {}/{}", rep + 1, repeats));
      SystemEnv run_env = env;
      run_env.extra_args.insert(run_env.extra_args.end(), tuned_args[index].begin(),
                                tuned_args[index].end());
      SystemRun r = run_system(run_env, s, corpus_path, tag);
      m.cpu = r.tree.cpu_seconds;
      m.rss_mib = r.tree.peak_rss_mib;
      m.error = r.error;
      m.exit_note = r.exit_note;
      if (!r.exit_note.empty()) note(fmt::format("compare: {} {}", s.label, r.exit_note));
      if (r.ran) {
        try {
          read_result(r.result, pages, o.workload.topology.ocr_replicas,
                      o.workload.topology.ocr_batch, m);
          m.ran = true;
        } catch (const std::exception& e) {
          m.error = fmt::format("unreadable result of {}: {}", s.label, e.what());
        }
      }
      if (!m.error.empty()) note(fmt::format("compare: {} did not run: {}", s.label, m.error));
      runs[index].push_back(std::move(m));
    }
  }

  // Medians over the runs that ran.
  std::vector<Summary> sums(systems.size());
  double max_load = 0;
  for (std::size_t i = 0; i < systems.size(); ++i) {
    sums[i] = summarize(runs[i]);
    for (const Measured& m : runs[i]) max_load = std::max(max_load, m.load);
  }

  Table timing({"system", "version", "E2E s (median [min-max])", "init s", "ramp-up s", "steady s",
                "tail s", "first doc s", "doc done mean/p50/p95 s", "outputs"});
  Table resources({"system", "OCR batches", "batch fill", "OCR busy",
                   "OCR busy from own readiness least/median", "CPU s (tree)", "driver CPU s",
                   "driver CPU s (E2E window)", "peak RSS MiB (tree)"});
  std::string plots;
  nlohmann::json sys_json = nlohmann::json::array();
  bool identical = true;
  for (std::size_t i = 0; i < systems.size(); ++i) {
    const Summary& s = sums[i];
    if (!s.ran) {
      timing.add({systems[i].label, "-", "-", "-", "-", "-", "-", "-", "-", "not run: " + s.error});
      sys_json.push_back({{"system", systems[i].label},
                          {"family", systems[i].family},
                          {"ran", false},
                          {"error", s.error}});
      continue;
    }
    if (s.mismatches) identical = false;
    timing.add({systems[i].label, s.version, spread(s.e2e), fmt::format("{:.2f}", s.init),
                fmt::format("{:.2f}", s.ramp), fmt::format("{:.2f}", s.steady),
                fmt::format("{:.2f}", s.tail), fmt::format("{:.3f}", s.first),
                fmt::format("{:.2f}/{:.2f}/{:.2f}", s.done_mean, s.done_p50, s.done_p95),
                (s.mismatches ? fmt::format("{} DIFFER", s.mismatches) : "identical") +
                    (s.exit_failed ? " (crashed after writing its result)" : "")});
    resources.add(
        {systems[i].label, fmt::format("{:.0f}", s.ocr_batches),
         fmt::format("{:.1f}%", 100 * s.ocr_fill), fmt::format("{:.1f}%", 100 * s.busy),
         s.actors ? fmt::format("{:.1f}% / {:.1f}%", 100 * s.own_least, 100 * s.own_median) : "-",
         fmt::format("{:.2f}", s.cpu), fmt::format("{:.2f}", s.driver_cpu),
         fmt::format("{:.2f}", s.run_driver_cpu), fmt::format("{:.0f}", s.rss)});
    if (s.actors)
      plots += fmt::format("{}: OCR actors ready / busy over its run\n{}", systems[i].label,
                           actors_over_time(*s.actors, s.actors_e2e));
    if (grid && !s.calls.empty())
      plots += fmt::format("{}: each pool's target actors over its run\n{}", systems[i].label,
                           calls_over_time(s.calls));
    const Stats e = stats_of(s.e2e);
    sys_json.push_back(
        {{"system", systems[i].label},
         {"family", systems[i].family},
         // The local executor (threads in one process) against peers on Ray.
         {"deployment_difference", systems[i].family == "rayorch"},
         {"version", s.version},
         {"ran", true},
         {"runs", s.e2e.size()},
         {"end_to_end_seconds", {{"median", e.median}, {"min", e.min}, {"max", e.max}}},
         {"init_seconds", s.init},
         {"ramp_up_seconds", s.ramp},
         {"steady_seconds", s.steady},
         {"tail_seconds", s.tail},
         {"first_document_seconds", s.first},
         {"document_done_seconds",
          {{"mean", s.done_mean}, {"p50", s.done_p50}, {"p95", s.done_p95}}},
         {"ocr_batches", s.ocr_batches},
         {"ocr_batch_fill", s.ocr_fill},
         {"ocr_busy_share", s.busy},
         {"ocr_busy_from_own_readiness",
          s.actors ? nlohmann::json{{"least", s.own_least}, {"median", s.own_median}}
                   : nlohmann::json()},
         {"cpu_seconds_tree", s.cpu},
         {"driver_cpu_seconds", s.driver_cpu},
         {"run_driver_cpu_seconds", s.run_driver_cpu},
         {"peak_rss_mib_tree", s.rss},
         {"pages_per_second", static_cast<double>(total_pages) / e.median},
         {"mismatched_documents", s.mismatches},
         {"crashed_after_result", s.exit_failed}});
  }

  // Targets: this project against the best arm of each peer family, on the same deployment
  // (this project on Ray) when that ran, else with the local executor.
  std::vector<bool> ran(systems.size());
  for (std::size_t i = 0; i < systems.size(); ++i) ran[i] = sums[i].ran;
  const std::size_t mine_index = target_system(systems, ran);
  const Summary& ours = sums[mine_index];
  const bool same_deployment = systems[mine_index].family == kRayorchOnRay;
  auto best = [&](const std::string& family, auto metric) -> std::optional<double> {
    std::optional<double> b;
    for (std::size_t i = 0; i < systems.size(); ++i) {
      if (systems[i].family != family || !sums[i].ran) continue;
      const double x = metric(sums[i]);
      if (!b || x < *b) b = x;
    }
    return b;
  };
  // The least of `metric` over every peer that ran (this project's systems excluded).
  auto least_of_peers = [&](auto metric) -> std::optional<double> {
    std::optional<double> b;
    for (std::size_t i = 0; i < systems.size(); ++i) {
      if (systems[i].is_this_project() || !sums[i].ran) continue;
      const double x = metric(sums[i]);
      if (!b || x < *b) b = x;
    }
    return b;
  };
  auto e2e_of = [](const Summary& s) { return median_of(s.e2e); };
  Report rep;
  rep.checks_passed = identical;
  nlohmann::json targets = nlohmann::json::object();
  std::string lines = fmt::format(
      "targets evaluated with {}{}\n", systems[mine_index].label,
      same_deployment ? " (the peers' deployment: a local Ray)"
                      : " (a deployment difference: add rayorch-ray to --peers to compare on Ray)");
  auto target = [&](const std::string& name, const std::string& what, std::optional<double> peer,
                    double mine, double max_ratio) {
    if (!ours.ran || !peer || *peer <= 0) {
      lines += fmt::format("target {}: not evaluated (no run)\n", what);
      return;
    }
    const double ratio = mine / *peer;
    const bool met = ratio <= max_ratio;
    rep.targets_met = rep.targets_met && met;
    lines += fmt::format("target {} <= {}x: {} ({:.3f}x)\n", what, max_ratio,
                         met ? "met" : "MISSED", ratio);
    targets[name] = {{"value", ratio}, {"max", max_ratio}, {"met", met}};
  };
  // The targets hold in one regime each: E2E, driver CPU and first document in the
  // realistic regime, peak memory in the payload regime; the overhead regime is figures only.
  if (o.regime == "overhead") lines += "overhead regime: figures only, no targets\n";
  if (ours.ran && o.regime == "realistic") {
    const double mine = e2e_of(ours);
    target("e2e_vs_ray_data", "E2E vs Ray Data's best arm", best("ray-data", e2e_of), mine, 0.87);
    target("e2e_vs_daft", "E2E vs Daft's best arm", best("daft", e2e_of), mine, 0.8);
    target("e2e_vs_reference", "E2E vs the reference", best("reference", e2e_of), mine, 0.9);
    target("driver_cpu_vs_reference", "driver CPU-seconds vs the reference",
           best("reference", [](const Summary& s) { return s.driver_cpu; }), ours.driver_cpu, 0.2);
    // The same without what every Ray driver spends before its clock starts (importing Ray,
    // ray.init): the scheduler's own share.
    target("run_driver_cpu_vs_reference", "driver CPU-seconds in the E2E window vs the reference",
           best("reference", [](const Summary& s) { return s.run_driver_cpu; }),
           ours.run_driver_cpu, 0.2);
    target("first_document_vs_every_peer", "time to first document vs every peer's",
           least_of_peers([](const Summary& s) { return s.first; }), ours.first, 0.1);
  }
  if (ours.ran && o.regime == "startup") {
    const double mine = e2e_of(ours);
    target("e2e_vs_reference", "E2E vs the reference", best("reference", e2e_of), mine, 0.8);
    target("e2e_vs_ray_data", "E2E vs Ray Data's best arm", best("ray-data", e2e_of), mine, 0.85);
    const bool busy = ours.actors && ours.own_least >= 0.95;
    rep.targets_met = rep.targets_met && busy;
    std::string least;
    if (ours.actors) {
      // Which actor (of the first run) and where its idle time went.
      const OwnBusy b = own_busy(*ours.actors);
      least = fmt::format(
          "; the least busy actor was ready at {:.1f} s and its last batch ended {:.1f} s before "
          "the end of the OCR work",
          b.least_ready, b.least_idle_at_end);
    }
    lines += fmt::format(
        "target every OCR actor busy >= 95% from its own readiness to the end of the OCR work: "
        "{} (least {:.1f}%{})\n",
        busy ? "met" : "MISSED", 100 * ours.own_least, least);
    targets["ocr_busy_from_own_readiness"] = {
        {"value", ours.own_least}, {"min", 0.95}, {"met", busy}};
  }
  if (grid) untuned_targets(*grid, peer_grids, systems, sums, mine_index, rep, targets, lines);
  if (ours.ran && o.regime == "payload") {
    target("peak_rss_vs_best_peer", "peak RSS vs the best peer's",
           least_of_peers([](const Summary& s) { return s.rss; }), ours.rss, 0.5);
  }

  rep.text = fmt::format(
      "bench compare --regime {}: {}{}\n"
      "{} interleaved repeat(s); medians; the machine's 1-minute load average before runs: up to "
      "{:.2f}; work files in {}\n"
      "clocks start after each runtime's start-up (init: imports, ray.init) and include building "
      "actor pools; ramp-up is when the last OCR actor was ready, steady the first to the last "
      "OCR batch, tail the last OCR batch to the last document\n"
      "deployment: the peers{} run on a local Ray in a private loopback-only network namespace "
      "(Daft: the runner its arm names); this project's local executor (threads in one process) "
      "is a deployment difference, not only a scheduling one\n\n{}\n{}\n",
      o.regime, describe_workload(o.workload, pages),
      o.payload_max_bytes > 0
          ? fmt::format("; OCR results carry {}-{} KiB payloads", o.payload_max_bytes / 16 / 1024,
                        o.payload_max_bytes / 1024)
          : "",
      repeats, max_load, work.string(),
      std::any_of(systems.begin(), systems.end(),
                  [](const SystemSpec& s) { return s.family == kRayorchOnRay; })
          ? " and this project on Ray (rayorch-ray: the same pipeline on rayorch_cpp's Ray "
            "backend)"
          : "",
      timing.str(), resources.str());
  if (!plots.empty()) rep.text += plots + "\n";
  rep.text += fmt::format(
      "every system's per-document ordered outputs identical to the "
      "expected ones: {}\n",
      identical ? "yes" : "NO");
  rep.text += lines;
  if (!tuning_text.empty()) rep.text = tuning_text + "\n" + rep.text;
  for (auto g = peer_grids.rbegin(); g != peer_grids.rend(); ++g)
    rep.text = g->grid.text + "\n" + rep.text;
  if (grid) rep.text = grid->text + "\n" + rep.text;
  rep.json = {{"benchmark", "compare"},
              {"tuning", {{"seed", o.tune_seed}, {"systems", tuning_json}}},
              {"regime", o.regime},
              {"machine", machine_info()},
              {"max_load_average", max_load},
              {"repeats", repeats},
              {"workload", workload_json(o.workload, pages)},
              {"payload_max_bytes", o.payload_max_bytes},
              {"work_dir", work.string()},
              {"systems", sys_json},
              {"outputs_identical", identical},
              {"targets_system", systems[mine_index].label},
              {"targets_same_deployment", same_deployment},
              {"targets", targets}};
  if (grid) {
    rep.json["untuned"] = {{"budget_cpus", o.workload.topology.budget_cpus},
                           {"grid", grid->json},
                           {"best", grid->best ? grid->json[*grid->best] : nlohmann::json()},
                           {"peer_grids", nlohmann::json::array()}};
    for (const PeerGrid& g : peer_grids) {
      rep.json["untuned"]["peer_grids"].push_back(
          {{"system", g.label},
           {"grid", g.grid.json},
           {"best", g.grid.best ? g.grid.json[*g.grid.best] : nlohmann::json()}});
    }
  }
  return rep;
}

}  // namespace rayorch::bench
