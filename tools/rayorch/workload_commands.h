// What the workload commands (pdf2md_commands.cc, video_commands.cc) share: stage options,
// the run-file and output flags, and how a conversion or a corpus tool sets the exit status.
#pragma once

#include <cstdio>
#include <exception>
#include <stdexcept>
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

/// A CLI11 check that runs `parse` on the text, so a bad value is a usage error (its message
/// the parser's) before anything is read.
template <class Parse>
CLI::Validator parsed(Parse parse) {
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

/// The live page's address from `--live`: PORT, HOST:PORT or HOST (port 0: the system picks
/// one). Throws std::invalid_argument saying what is wrong.
inline rayorch::LiveOptions parse_live_address(const std::string& text) {
  rayorch::LiveOptions live{.enabled = true};
  const std::size_t colon = text.rfind(':');
  const bool digits_only =
      !text.empty() && text.find_first_not_of("0123456789") == std::string::npos;
  std::string port = digits_only ? text : colon == std::string::npos ? "0" : text.substr(colon + 1);
  if (!digits_only && colon != std::string::npos) live.host = text.substr(0, colon);
  if (!digits_only && colon == std::string::npos) live.host = text;
  if (live.host.empty() || port.empty() || port.size() > 5 ||
      port.find_first_not_of("0123456789") != std::string::npos || std::stoi(port) > 65535) {
    throw std::invalid_argument(
        "--live takes PORT, HOST:PORT or HOST (e.g. 0 for any free port "
        "on 127.0.0.1, or 0.0.0.0:8765), not '" +
        text + "'");
  }
  live.port = std::stoi(port);
  return live;
}

/// --trace, --report, --no-report-page, --live, --no-progress and -q/--quiet, into a
/// workload's convert options (trace_path, report_path, report_page, live).
template <class Options>
void add_run_output_options(CLI::App* cmd, Options& c, bool& no_progress, bool& quiet) {
  cmd->add_option("--trace", c.trace_path, "write a Chrome trace of every call to FILE");
  cmd->add_option("--report", c.report_path,
                  "write a JSON metrics report to FILE, and its report page beside it (FILE "
                  "with .html for its extension)");
  cmd->add_flag_callback(
      "--no-report-page", [&c] { c.report_page = false; },
      "do not write the report page beside the --report file");
  cmd->add_option_function<std::string>(
         "--live", [&c](const std::string& s) { c.live = parse_live_address(s); },
         "serve a live page of the run while it lasts, at [HOST:]PORT (0: any free port; the "
         "URL is printed at the start; a HOST other than 127.0.0.1 needs the printed token)")
      ->type_name("[HOST:]PORT")
      ->check(parsed(parse_live_address));
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
