// The untuned regime's grid of fixed allocations and its per-Call report. See
// compare_untuned.h.
#include "compare_untuned.h"

#include <algorithm>
#include <stdexcept>

#include "bench.h"
#include "compare_results.h"
#include <fmt/format.h>

namespace rayorch::bench {

std::vector<Allocation> allocation_grid(int budget_cpus, const std::vector<int>& renders,
                                        const std::vector<int>& assembles) {
  std::vector<Allocation> grid;
  for (int r : renders)
    for (int a : assembles)
      if (r >= 1 && a >= 1 && budget_cpus - r - a >= 1) grid.push_back({r, budget_cpus - r - a, a});
  if (grid.empty())
    throw std::invalid_argument(fmt::format(
        "the untuned regime's grid is empty: no render count of --grid-render and assemble "
        "count of --grid-assemble leaves an OCR actor within --budget-cpus {}; lower the counts "
        "or raise the budget",
        budget_cpus));
  return grid;
}

AllocationGrid run_allocation_grid(const SystemEnv& env, const SystemSpec& system,
                                   const std::vector<Allocation>& grid, const Topology& base,
                                   const std::vector<std::uint32_t>& pages,
                                   const CorpusWriter& write_corpus) {
  AllocationGrid out;
  Table table({"render", "OCR", "assemble", "E2E s", "outputs"});
  out.json = nlohmann::json::array();
  for (const Allocation& a : grid) {
    Topology t = base;
    t.auto_replicas = false;
    t.peer_defaults = false;
    t.render_replicas = a.render;
    t.ocr_replicas = a.ocr;
    t.assemble_replicas = a.assemble;
    const std::string who =
        system.peer.empty() ? "" : system.peer + (system.arm.empty() ? "" : "-" + system.arm) + "-";
    const std::string tag = fmt::format("grid-{}r{}-o{}-a{}", who, a.render, a.ocr, a.assemble);
    const auto corpus = env.work / ("corpus-" + tag + ".json");
    write_corpus(t, corpus);
    note(fmt::format("compare: untuned grid, {}: render {} / OCR {} / assemble {}", system.label,
                     a.render, a.ocr, a.assemble));
    const SystemRun r = run_system(env, system, corpus, tag);
    AllocationGrid::Point p{a, false, 0, r.error};
    if (r.ran) {
      Measured m;
      try {
        read_result(r.result, pages, a.ocr, t.ocr_batch, m);
        p.e2e = m.e2e;
        p.ran = m.mismatches == 0;
        if (!p.ran) p.error = fmt::format("{} documents differ", m.mismatches);
      } catch (const std::exception& e) {
        p.error = e.what();
      }
    }
    if (p.ran && (!out.best || p.e2e < out.points[*out.best].e2e)) out.best = out.points.size();
    table.add({std::to_string(a.render), std::to_string(a.ocr), std::to_string(a.assemble),
               p.ran ? fmt::format("{:.3f}", p.e2e) : "-",
               p.ran ? "identical" : "not used: " + p.error});
    out.json.push_back({{"render", a.render},
                        {"ocr", a.ocr},
                        {"assemble", a.assemble},
                        {"ran", p.ran},
                        {"e2e_seconds", p.e2e},
                        {"error", p.error}});
    out.points.push_back(std::move(p));
  }
  std::string best = "no allocation ran";
  if (out.best) {
    const auto& b = out.points[*out.best];
    best = fmt::format("render {} / OCR {} / assemble {}, {:.3f} s", b.allocation.render,
                       b.allocation.ocr, b.allocation.assemble, b.e2e);
  }
  out.text = fmt::format(
      "the grid of fixed allocations ({}, one run each, the measured corpus):\n{}fastest: {}\n",
      system.label, table.str(), best);
  return out;
}

void untuned_targets(const AllocationGrid& grid, const std::vector<PeerGrid>& peer_grids,
                     const std::vector<SystemSpec>& systems, const std::vector<Summary>& sums,
                     std::size_t mine, Report& rep, nlohmann::json& targets, std::string& lines) {
  const Summary& local = sums.at(0);
  if (!local.ran || !grid.best) {
    lines +=
        "target replicas=auto within 5% of the grid's fastest allocation: not evaluated "
        "(no run)\n";
    rep.targets_met = false;
  } else {
    const double best = grid.points[*grid.best].e2e;
    const double ratio = median_of(local.e2e) / best;
    const bool met = ratio <= 1.05;
    rep.targets_met = rep.targets_met && met;
    lines += fmt::format(
        "target replicas=auto (local executor) within 5% of the grid's fastest allocation "
        "({:.3f} s): {} ({:.3f}x)\n",
        best, met ? "met" : "MISSED", ratio);
    targets["auto_vs_best_fixed_allocation"] = {{"value", ratio}, {"max", 1.05}, {"met", met}};
  }
  const Summary& ours = sums.at(mine);
  for (std::size_t i = 0; i < systems.size(); ++i) {
    if (systems[i].is_this_project() || !sums[i].ran) continue;
    if (!ours.ran) continue;
    const double ratio = median_of(ours.e2e) / median_of(sums[i].e2e);
    const bool met = ratio < 1.0;
    rep.targets_met = rep.targets_met && met;
    lines += fmt::format(
        "target {} (replicas=auto) ahead of {} (as run): {} "
        "({:.3f}x)\n",
        systems[mine].label, systems[i].label, met ? "met" : "MISSED", ratio);
    targets["auto_vs_" + systems[i].label] = {{"value", ratio}, {"max", 1.0}, {"met", met}};
  }
  for (const PeerGrid& g : peer_grids) {
    const std::string& peer = g.label;
    if (!ours.ran || !g.grid.best) {
      lines += fmt::format(
          "{} (replicas=auto) against {} at its fastest allocation: not "
          "evaluated (no run)\n",
          systems[mine].label, peer);
      continue;
    }
    const AllocationGrid::Point& b = g.grid.points[*g.grid.best];
    lines += fmt::format(
        "{} (replicas=auto) against {} at its fastest allocation of the grid (render {} / OCR "
        "{} / assemble {}, {:.3f} s): {:.3f}x\n",
        systems[mine].label, peer, b.allocation.render, b.allocation.ocr, b.allocation.assemble,
        b.e2e, median_of(ours.e2e) / b.e2e);
  }
}

namespace {

// The actors held at `at`: the last (time, actors) sample at or before it.
int held_at(const std::vector<std::pair<double, int>>& samples, double at) {
  int n = samples.empty() ? 0 : samples.front().second;
  for (const auto& [t, k] : samples) {
    if (t > at) break;
    n = k;
  }
  return n;
}

}  // namespace

std::string calls_over_time(const nlohmann::json& calls, int width) {
  if (!calls.is_array() || calls.empty()) return "";
  std::string out;
  for (const auto& c : calls) {
    const double run = c.value("run_seconds", 0.0);
    std::vector<std::pair<double, int>> samples;
    for (const auto& s : c.at("actors_over_time"))
      samples.emplace_back(s.at(0).get<double>(), s.at(1).get<int>());
    std::sort(samples.begin(), samples.end());
    double held = 0;  // actor-seconds over [0, run]
    for (std::size_t i = 0; i < samples.size(); ++i) {
      const double from = std::max(0.0, samples[i].first);
      const double to = i + 1 < samples.size() ? samples[i + 1].first : run;
      if (to > from) held += (to - from) * samples[i].second;
    }
    std::string plot;
    int most = 0;
    for (int col = 0; col < width; ++col) {
      const int n = held_at(samples, run * (col + 0.5) / width);
      most = std::max(most, n);
      plot += n >= 10 ? '+' : static_cast<char>('0' + n);
    }
    const double busy = c.value("busy_seconds", 0.0);
    out += fmt::format(
        "  {:<14}|{}| most {}; busy {:.1f} actor-s, {:.1f}% of the target's {:.1f} actor-s\n",
        c.value("call", std::string("?")), plot, most, busy, held > 0 ? 100 * busy / held : 0.0,
        held);
  }
  return out;
}

}  // namespace rayorch::bench
