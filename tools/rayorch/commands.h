// Subcommand registration for the `rayorch` command. Each family lives in its own file.
#pragma once

#include <CLI/CLI.hpp>

namespace rayorch::cli {

/// `rayorch explain`: prints compiled plans of the bundled example pipelines.
void add_explain_command(CLI::App& app);
/// `rayorch report`: a run's JSON report as an HTML page.
void add_report_command(CLI::App& app);
/// `rayorch pdf2md` and `rayorch make-samples`: the document workload.
void add_pdf2md_commands(CLI::App& app);
/// `rayorch video2jsonl`, `rayorch make-videos` and `rayorch check-videos`: the video workload.
void add_video_commands(CLI::App& app);
/// `rayorch bench ...`: benchmarks.
void add_bench_commands(CLI::App& app);
/// `rayorch bench video`: the video workload end to end (built with the video workload).
void add_video_bench_command(CLI::App& bench);

/// Exit codes shared by subcommands.
enum ExitCode : int {
  kOk = 0,
  kSomeFailed = 1,  ///< the run finished but some documents failed (see failures.jsonl)
  kUsage = 2,       ///< bad command line or input
  kAborted = 3,     ///< the run stopped on an unrecoverable error
};

}  // namespace rayorch::cli
