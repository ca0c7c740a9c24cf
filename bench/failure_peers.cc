// `bench failure --peers ...`: the same clean and poisoned corpora on the peers (and, as
// `rayorch-ray`, on this project's Ray backend). The reference stops a poisoned document's
// siblings as this project does (GroupFailure); Ray
// Data and Daft cannot, so their scripts filter after the regroup: every page goes through
// OCR and a document with a failed page is dropped before it is assembled.
#include <fstream>

#include "bench.h"
#include "systems.h"
#include <fmt/format.h>

namespace rayorch::bench {
namespace {

namespace fs = std::filesystem;

// Rows that went through the OCR UDF, from the system's OCR batch log.
double ocr_rows(const nlohmann::json& result) {
  double rows = 0;
  for (const auto& b : result["ocr_batches"]) rows += b[0].get<double>();
  return rows;
}

// Documents that differ from what they should be: healthy ones must equal their expected
// pages, poisoned ones must be absent.
std::size_t wrong_documents(const nlohmann::json& result, const std::vector<std::uint32_t>& pages,
                            const std::vector<bool>& poisoned) {
  std::size_t wrong = 0;
  const auto& got = result["documents"];
  for (std::size_t i = 0; i < pages.size(); ++i) {
    const std::string key = std::to_string(i);
    if (i < poisoned.size() && poisoned[i]) {
      if (got.contains(key)) ++wrong;
    } else {
      const DocResult want = expected_result(static_cast<std::uint32_t>(i), pages[i]);
      if (!got.contains(key) || got[key].get<std::vector<std::uint64_t>>() != want.pages) ++wrong;
    }
  }
  return wrong;
}

fs::path write_corpus(const fs::path& path, const FailureOptions& o,
                      const std::vector<std::uint32_t>& pages, const std::vector<bool>& poison) {
  nlohmann::json corpus = {{"documents", nlohmann::json::array()},
                           {"costs_ms", costs_json(o.workload.costs)},
                           {"topology", topology_json(o.workload.topology)},
                           {"input_batch_size", o.workload.input_batch_size},
                           {"max_active_input_batches", o.workload.max_active_input_batches}};
  for (std::size_t i = 0; i < pages.size(); ++i) {
    corpus["documents"].push_back(
        {{"id", i}, {"pages", pages[i]}, {"poison", i < poison.size() && poison[i]}});
  }
  std::ofstream(path) << corpus.dump();
  return path;
}

}  // namespace

void run_failure_peers(const FailureOptions& o, const std::vector<std::uint32_t>& pages,
                       const std::vector<bool>& poisoned, Report& rep) {
  SystemEnv env =
      make_system_env(o.python, o.project_python, o.peer_dir, o.work_dir, o.peer_timeout_s);
  const fs::path clean_corpus = write_corpus(env.work / "clean.json", o, pages, {});
  const fs::path poisoned_corpus = write_corpus(env.work / "poisoned.json", o, pages, poisoned);
  std::uint64_t siblings = 0, triggers = 0, healthy_pages = 0;
  for (std::size_t i = 0; i < pages.size(); ++i) {
    if (poisoned[i]) {
      siblings += pages[i] - 1;
      ++triggers;
    } else {
      healthy_pages += pages[i];
    }
  }
  Table t({"system", "clean s", "poisoned s", "wall-time change", "siblings kept out of OCR",
           "non-trigger OCR rows (poisoned run)", "outputs"});
  nlohmann::json systems = nlohmann::json::array();
  const int repeats = std::max(1, o.repeats);
  for (const SystemSpec& s : parse_systems(o.peers, false)) {
    std::vector<double> clean_wall, bad_wall, change, kept, non_trigger;
    std::size_t wrong = 0;
    std::string error;
    for (int rep_i = 0; rep_i < repeats && error.empty(); ++rep_i) {
      SystemRun clean, bad;
      // Alternate which run goes first, so a drift of the machine favours neither.
      for (int k = 0; k < 2 && error.empty(); ++k) {
        const bool do_clean = (k == 0) == (rep_i % 2 == 0);
        const std::string tag =
            fmt::format("failure-{}{}-{}-{}", s.peer, s.arm.empty() ? "" : "-" + s.arm,
                        do_clean ? "clean" : "poisoned", rep_i);
        SystemRun r = run_system(env, s, do_clean ? clean_corpus : poisoned_corpus, tag);
        if (!r.ran) error = r.error;
        (do_clean ? clean : bad) = std::move(r);
      }
      if (!error.empty()) break;
      const double cw = clean.result.value("end_to_end_seconds", 0.0);
      const double bw = bad.result.value("end_to_end_seconds", 0.0);
      clean_wall.push_back(cw);
      bad_wall.push_back(bw);
      change.push_back(cw > 0 ? (bw - cw) / cw : 0);
      const double rows = ocr_rows(bad.result);
      const double siblings_in = rows - static_cast<double>(healthy_pages + triggers);
      kept.push_back(siblings ? (static_cast<double>(siblings) - siblings_in) /
                                    static_cast<double>(siblings)
                              : 0);
      non_trigger.push_back(rows - static_cast<double>(triggers));
      wrong +=
          wrong_documents(clean.result, pages, {}) + wrong_documents(bad.result, pages, poisoned);
    }
    if (!error.empty()) {
      note(fmt::format("failure: {} did not run: {}", s.label, error));
      t.add({s.label, "-", "-", "-", "-", "-", "not run: " + error});
      systems.push_back({{"system", s.label}, {"ran", false}, {"error", error}});
      continue;
    }
    if (wrong) rep.checks_passed = false;
    t.add({s.label, fmt::format("{:.3f}", median_of(clean_wall)),
           fmt::format("{:.3f}", median_of(bad_wall)),
           fmt::format("{:+.1f}%", 100 * median_of(change)),
           fmt::format("{:.1f}%", 100 * median_of(kept)),
           fmt::format("{:.0f}", median_of(non_trigger)),
           wrong ? fmt::format("{} WRONG", wrong) : "as expected"});
    systems.push_back({{"system", s.label},
                       {"ran", true},
                       {"clean_wall_seconds", median_of(clean_wall)},
                       {"poisoned_wall_seconds", median_of(bad_wall)},
                       {"wall_time_change", median_of(change)},
                       {"siblings_kept_out_fraction", median_of(kept)},
                       {"non_trigger_ocr_rows", median_of(non_trigger)},
                       {"wrong_documents", wrong}});
  }
  rep.text += fmt::format(
      "\npeers on the same corpora ({} paired runs each; each system in its own process tree, "
      "Ray in a private loopback-only network namespace; this project on Ray and the reference "
      "stop siblings with GroupFailure, Ray Data and Daft filter after the regroup; siblings "
      "kept out from each "
      "system's OCR batch log):\n\n{}",
      repeats, t.str());
  rep.json["peers"] = systems;
}

}  // namespace rayorch::bench
