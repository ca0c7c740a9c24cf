// The benchmark programs behind `rayorch bench ...`. Each returns a readable table and one
// JSON object; none of them is a test (they print figures, they assert nothing on time).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "workload.h"
#include <nlohmann/json.hpp>

namespace rayorch::bench {

/// The simulated stage costs as JSON (milliseconds), shared by reports and peer inputs.
inline nlohmann::json costs_json(const Costs& c) {
  return {{"render_per_page", c.render_per_page},
          {"ocr_per_batch", c.ocr_per_batch},
          {"ocr_per_page", c.ocr_per_page},
          {"assemble_per_doc", c.assemble_per_doc},
          {"assemble_per_page", c.assemble_per_page}};
}

/// The constructors' model loads as JSON (milliseconds).
inline nlohmann::json startup_json(const StartupCosts& s) {
  return {{"render_ms", s.render_ms},
          {"ocr_ms", s.ocr_ms},
          {"ocr_slow_ms", s.ocr_slow_ms},
          {"ocr_slow_every", s.ocr_slow_every}};
}

/// Actor counts and batch size as JSON.
inline nlohmann::json topology_json(const Topology& t) {
  return {{"render_replicas", t.render_replicas},
          {"ocr_replicas", t.ocr_replicas},
          {"ocr_batch", t.ocr_batch},
          {"ocr_batch_wait_ms", t.ocr_batch_wait_ms},
          {"assemble_replicas", t.assemble_replicas},
          {"ray_tasks_in_flight", t.ray_tasks_in_flight},
          {"ray_colocate", t.ray_colocate},
          {"auto_replicas", t.auto_replicas},
          {"budget_cpus", t.budget_cpus},
          {"peer_defaults", t.peer_defaults}};
}

/// What a benchmark produced.
struct Report {
  nlohmann::json json;  ///< one object; "targets" lists each target with "met"
  std::string text;     ///< the readable tables
  bool targets_met = true;
  bool checks_passed = true;  ///< output checks (identical outputs), never timing
};

/// The workload and how it is run.
struct WorkloadOptions {
  CorpusSpec corpus;
  Costs costs;
  Topology topology;
  StartupCosts startup;  ///< model loads of the constructors (the startup regime)
  std::size_t input_batch_size = 64;
  std::size_t max_active_input_batches = 4;
};

/// `bench engine`: the semantic runtime alone (detail::Engine driven with no-op commits, one
/// thread) and the local executor with no-op UDFs.
struct EngineBenchOptions {
  CorpusSpec corpus{.documents = 20000};
  int batch = 64;  ///< batch size of every Call
  int local_ocr_replicas = 2;
  std::size_t input_batch_size = 0;  ///< 0: the whole corpus is one input batch
  int repeats = 3;
  /// When non-empty, a directory for a run journal: the local runs are also timed with one,
  /// and the restore of the finished journal.
  std::string journal_dir;
  /// The local runs serve the live page (RunOptions::live), and a client asks for it every
  /// 100 ms (ten times as often as the page itself does), to measure what it costs the driver.
  bool live = false;
};
Report run_engine_bench(const EngineBenchOptions& options);

/// `bench ablation`: parent-bound batching, elastic LIFO and elastic FIFO (the full system).
struct AblationOptions {
  WorkloadOptions workload;
  int repeats = 3;
};
Report run_ablation(const AblationOptions& options);

/// `bench failure`: a clean run against one where page 0 of the largest documents returns
/// ro::GroupFailure, in paired repetitions.
struct FailureOptions {
  WorkloadOptions workload;
  double poison_fraction = 0.05;
  int repeats = 3;
  /// Peers run on the same clean and poisoned corpora ("<peer>[:<arm>]", comma-separated;
  /// empty: none), with the Python, scripts, work directory and timeout of `bench compare`.
  std::string peers;
  std::string python;
  std::string project_python;
  std::string peer_dir;
  std::string work_dir;
  int peer_timeout_s = 900;
};
Report run_failure(const FailureOptions& options);

/// Appends the peers' rows of `bench failure` to `report` (failure_peers.cc).
void run_failure_peers(const FailureOptions& options, const std::vector<std::uint32_t>& pages,
                       const std::vector<bool>& poisoned, Report& report);

/// `bench scaling`: the same input at several OCR replica counts.
struct ScalingOptions {
  WorkloadOptions workload;
  std::string replicas = "4,8,16,32,64";
  int repeats = 1;
};
Report run_scaling(const ScalingOptions& options);

/// `bench compare`: this project against the peer scripts on the same corpus, every system
/// in its own process tree. `peers` lists "<peer>[:<arm>]" (bench/peers/<peer>_peer.py);
/// "rayorch-ray" is this project on Ray, and the targets are evaluated with it when it ran.
struct CompareOptions {
  WorkloadOptions workload;
  std::string regime = "overhead";    ///< overhead | realistic | payload | startup | untuned
  std::size_t payload_max_bytes = 0;  ///< payload regime: largest page payload (0: none)
  std::string peers = "rayorch-ray,ray:groupby,ray:driver,daft:groupby,daft:driver,reference";
  std::vector<std::string> peer_args;  ///< extra arguments for every peer script
  int repeats = 1;
  std::string python;          ///< empty: <repo>/.venv-peers/bin/python
  std::string project_python;  ///< rayorch-ray's; empty: <repo>/.venv/bin/python
  std::string peer_dir;        ///< empty: <repo>/bench/peers
  std::string work_dir;        ///< where the corpus and outputs are written; empty: a temp dir
  int peer_timeout_s = 900;
  /// Nonzero: before measuring, tune the groupby partitions of the Ray Data and Daft groupby
  /// arms on a corpus drawn with this seed (it must differ from the measured one), and
  /// measure each arm with its fastest count.
  std::uint64_t tune_seed = 0;
  std::vector<int> tune_partitions;  ///< candidates; empty: default_partition_candidates
  /// The untuned regime (workload.topology.auto_replicas): the grid of fixed allocations of
  /// workload.topology.budget_cpus that this project's self-sizing pools are measured against
  /// (every render count with every assemble count, OCR gets the rest).
  std::vector<int> grid_render = {2, 3, 4, 5, 6};
  std::vector<int> grid_assemble = {1, 2};
  /// The untuned regime: every peer runs the grid too (each allocation once, before the
  /// measured runs); its fastest allocation is its best tuned one.
  bool peer_grid = false;
};
Report run_compare(const CompareOptions& options);

/// `bench compare-system`: this project as one system of `bench compare`, in its own
/// process: reads the corpus file, writes a result in the peers' format.
void run_compare_system(const std::string& corpus_path, const std::string& out_path);
/// Where `bench compare-system` writes its run's JSON report (beside its result, out_path
/// + ".report.json") and the report page drawn from it (".report.html").
std::string report_of(const std::string& out_path);
std::string report_page_of(const std::string& report_path);

/// `bench memory`: peak resident memory of a fan-out whose children carry large payloads.
/// Each source (a "video" id) lists `children` frame descriptors; the frames are expanded,
/// decoded into `payload_kib` KiB payloads, summarised into 16 bytes each, reduced back
/// into their source and folded into one small value per source. Every source count runs
/// with the same input batching in its own child process, so each peak RSS is its own.
struct MemoryOptions {
  std::vector<std::size_t> sources = {16, 64};
  std::size_t children = 2000;  ///< frames per source
  std::size_t payload_kib = 64;
  std::size_t input_batch_size = 8;
  std::size_t max_active_input_batches = 2;
  int decode_replicas = 2;
  int decode_batch = 64;
  int summary_replicas = 2;
  int summary_batch = 64;
  double rss_target_mib = 256;      ///< target: peak RSS at every size
  double growth_target = 0.20;      ///< target: largest size's peak over the smallest's, minus 1
  std::size_t rss_cap_mib = 12288;  ///< a child stops itself when its RSS passes this
};
Report run_memory(const MemoryOptions& options);

/// `bench isolation`: what a process-isolated pool costs per RPC. An empty UDF (it returns
/// its input) with batch sizes 1 and 32, one actor, so one RPC is in flight at a time: the
/// time per RPC on worker processes and on threads, whose difference is the round trip of
/// the worker protocol; and an echo of payloads of each size in `payload_kib`, once with a
/// codec that writes straight into the frame (std::string's) and once with one that only
/// takes std::string& (one more copy each way), against a plain memcpy of the same size.
struct IsolationOptions {
  std::size_t rpcs = 20000;               ///< RPCs per empty-call measurement
  std::size_t payload_rpcs = 400;         ///< most RPCs per payload measurement
  std::size_t payload_mib_per_run = 256;  ///< fewer RPCs for large payloads: this much per run
  std::vector<std::size_t> payload_kib = {64, 1024, 8192};
  int repeats = 3;                   ///< best of
  double round_trip_target_us = 50;  ///< target: added time per empty RPC
};
Report run_isolation(const IsolationOptions& options);

/// One executor (actor pools built once) running the simulated pipeline.
struct Harness {
  explicit Harness(const WorkloadOptions& w);
  ro::RunResult<DocResult> run(const std::vector<Doc>& docs) { return executor.run(docs, base); }
  ro::RunResult<DocResult> run(const std::vector<Doc>& docs, const ro::RunOptions& o) {
    return executor.run(docs, o);
  }

  SimPipeline pipeline;
  ro::Compiled<SimPipeline> program;
  ro::Executor<SimPipeline> executor;
  ro::RunOptions base;  ///< input batching from the WorkloadOptions, no progress line
};

/// The metrics of the Call whose UDF name contains `udf`.
const ro::CallMetrics& call_metrics(const ro::RunMetrics& m, const char* udf);

/// Throws unless every document's output is its expected ordered page list.
void check_clean(const ro::RunResult<DocResult>& r, const std::vector<std::uint32_t>& pages,
                 const char* what);

/// Total pages of a corpus.
std::uint64_t sum_pages(const std::vector<std::uint32_t>& pages);

/// One line describing the workload (`ocr_replicas` replaces the OCR actor count when set),
/// and the same as JSON.
std::string describe_workload(const WorkloadOptions& w, const std::vector<std::uint32_t>& pages,
                              const std::string& ocr_replicas = "");
/// "; model loads: ..." for a workload whose constructors load models, else "".
std::string describe_startup(const StartupCosts& s);
nlohmann::json workload_json(const WorkloadOptions& w, const std::vector<std::uint32_t>& pages);

/// Facts about this machine recorded next to every figure.
nlohmann::json machine_info();

/// Prints `line` on stderr (progress of a long benchmark).
void note(const std::string& line);

}  // namespace rayorch::bench
