// What the workload commands (pdf2md_commands.cc, video_commands.cc) share: stage options,
// the run-file and output flags, and how a conversion or a corpus tool sets the exit status.
#pragma once

#include <cstdio>
#include <exception>
#include <string>

#include "commands.h"
#include "common/files.h"
#include "common/input_selection.h"

namespace rayorch::cli {

/// --STAGE-replicas and --STAGE-batch for one stage's StageConfig (replicas, batch_size).
template <class StageConfig>
void add_stage_options(CLI::App* cmd, const std::string& stage, const std::string& what,
                       StageConfig& cfg, const std::string& items = "items") {
  cmd->add_option("--" + stage + "-replicas", cfg.replicas, what + " actors")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  cmd->add_option("--" + stage + "-batch", cfg.batch_size, what + " " + items + " per call")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
}

/// The positional inputs (`what`: what they may be) and --manifest, --path-field, --shard,
/// --row-range: what the command reads and this job's share of it (input_selection.h).
inline void add_input_options(CLI::App* cmd, workloads::InputSelection& inputs,
                              const std::string& what) {
  cmd->add_option("inputs", inputs.paths,
                  what + "; quote a glob pattern (corpus/**/*.pdf) to have it expanded here");
  cmd->add_option("--manifest", inputs.manifests,
                  "a JSON-lines manifest: one object per line naming a file in --path-field "
                  "(relative paths from the manifest's folder), read in its order after the "
                  "inputs; or a JSON-lines sink's output folder. Repeatable")
      ->type_name("FILE");
  cmd->add_option("--path-field", inputs.path_field, "the manifest field holding a file's path")
      ->capture_default_str();
  // Checked while parsing, so a bad value is a usage error before anything is read.
  const auto parsed = [](auto parse) {
    return CLI::Validator(
        [parse](std::string& text) {
          try {
            parse(text);
            return std::string();
          } catch (const std::exception& e) {
            return std::string(e.what());
          }
        },
        "");
  };
  cmd->add_option_function<std::string>(
         "--shard", [&inputs](const std::string& s) { inputs.shard = workloads::parse_shard(s); },
         "read inputs I, I+N, I+2N, ... of the input list (N jobs, I = 0..N-1, each with its own "
         "output directory, read every input once)")
      ->type_name("I/N")
      ->check(parsed(workloads::parse_shard));
  cmd->add_option_function<std::string>(
         "--row-range",
         [&inputs](const std::string& s) { inputs.row_range = workloads::parse_row_range(s); },
         "read inputs START..STOP-1 of the input list (counted from 0; STOP empty: to the end)")
      ->type_name("START:STOP")
      ->check(parsed(workloads::parse_row_range));
}

/// --trace, --report, --no-progress and -q/--quiet.
inline void add_run_output_options(CLI::App* cmd, std::string& trace_path, std::string& report_path,
                                   bool& no_progress, bool& quiet) {
  cmd->add_option("--trace", trace_path, "write a Chrome trace of every call to FILE");
  cmd->add_option("--report", report_path, "write a JSON metrics report to FILE");
  cmd->add_flag("--no-progress", no_progress, "no progress line on the terminal");
  cmd->add_flag("-q,--quiet", quiet, "print the summary only when something failed");
}

/// Runs `convert()` for `rayorch COMMAND` and sets the exit status: a workloads::InputError
/// (nothing was processed) exits kUsage; any other exception stops the run with kAborted,
/// after `after_abort` (what is complete despite it); a summary with failures exits
/// kSomeFailed. The summary `format` makes is printed unless `quiet` and nothing failed.
template <class Convert, class Format>
void run_conversion(const char* command, Convert&& convert, Format&& format, bool quiet,
                    const std::string& after_abort) {
  decltype(convert()) summary;
  try {
    summary = convert();
  } catch (const workloads::InputError& e) {
    std::fprintf(stderr, "rayorch %s: error: %s\n", command, e.what());
    throw CLI::RuntimeError(kUsage);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rayorch %s: the run stopped: %s\n", command, e.what());
    std::fputs(after_abort.c_str(), stderr);
    throw CLI::RuntimeError(kAborted);
  }
  if (!quiet || !summary.failures.empty()) {
    std::fputs(format(summary).c_str(), stdout);
    std::fflush(stdout);
  }
  if (!summary.failures.empty()) throw CLI::RuntimeError(kSomeFailed);
}

/// Runs `work()` for `rayorch COMMAND`; any exception is reported and exits kUsage.
template <class Work>
auto run_or_usage(const char* command, Work&& work) {
  try {
    return work();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rayorch %s: error: %s\n", command, e.what());
    throw CLI::RuntimeError(kUsage);
  }
}

}  // namespace rayorch::cli
