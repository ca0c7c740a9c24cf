// The options and the ending that the `rayorch bench` subcommands share
// (bench_commands.cc): the common flags, the simulated workload's
// options, --quick defaults, the peers' options, and printing a report.
#pragma once

#include "bench.h"
#include <CLI/CLI.hpp>

namespace rayorch::cli {

/// --json, --quick, --strict.
struct Common {
  bool json = false;
  bool quick = false;
  bool strict = false;
};

/// Adds --json, --quick and --strict to `sub`.
void add_common(CLI::App* sub, Common& c);

/// Options of the corpus, the costs and the topology, with the subcommand's defaults shown.
void add_workload(CLI::App* sub, bench::WorkloadOptions& w);

// Applies --quick to the values the user did not set.
template <class T>
void quick_default(CLI::App* sub, const char* option, T& value, T quick) {
  if (sub->get_option(option)->count() == 0) value = quick;
}

// --quick for the sleep-based scenarios: a small corpus with cheap OCR batches.
template <class Workload>
void quick_workload(CLI::App* sub, Workload& w) {
  quick_default(sub, "--docs", w.corpus.documents, std::size_t{24});
  quick_default(sub, "--max-pages", w.corpus.max_pages, std::uint32_t{40});
  quick_default(sub, "--ocr-ms-per-batch", w.costs.ocr_per_batch, 2.0);
}

/// Prints `r` (tables, or JSON with --json); throws CLI::RuntimeError when an output check
/// failed, or a target was missed with --strict.
void finish(const bench::Report& r, const Common& c);

// Where the peers and the Pythons are, where their files go: the options `bench compare`
// and `bench failure --peers` share (their options structs name them alike).
template <class Options>
void add_peer_options(CLI::App* sub, Options& o) {
  sub->add_option("--python", o.python, "Python of the peers (default .venv-peers/bin/python)");
  sub->add_option("--project-python", o.project_python,
                  "Python of this project on Ray, rayorch-ray (default .venv/bin/python: it "
                  "needs rayorch_cpp and Ray)");
  sub->add_option("--peer-dir", o.peer_dir, "Directory of the peer scripts");
  sub->add_option("--work-dir", o.work_dir, "Directory for the corpora, outputs and peer logs");
  sub->add_option("--peer-timeout", o.peer_timeout_s, "Seconds before a peer's run is stopped")
      ->capture_default_str();
}

}  // namespace rayorch::cli
