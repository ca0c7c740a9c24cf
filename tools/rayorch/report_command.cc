// `rayorch report`: a run's JSON report drawn as one self-contained HTML page.
#include <cstdio>
#include <exception>
#include <memory>
#include <string>

#include "commands.h"
#include "common/run_summary.h"

#include <rayorch/report_page.h>

namespace rayorch::cli {

void add_report_command(CLI::App& app) {
  auto report = std::make_shared<std::string>();
  auto page = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand(
      "report",
      "Draw a run's JSON report (--report FILE of any command) as one HTML page that opens "
      "with no network: which stage bounded the run, stages, batch fill, pools over time, "
      "parents finished over time and their latency (docs/REPORT.md)");
  cmd->footer(
      "Exit status: 0 the page was written; 2 the report is missing, not a report, "
      "or malformed (the error names the field), or the page cannot be written.");
  cmd->add_option("report", *report, "the JSON report")->required();
  cmd->add_option("-o,--output", *page,
                  "the HTML page to write (default: REPORT with .html for its extension)");
  cmd->callback([report, page] {
    const std::string out = page->empty() ? workloads::report_page_beside(*report).string() : *page;
    try {
      write_report_page(*report, out);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "rayorch report: error: %s\n", e.what());
      throw CLI::RuntimeError(kUsage);
    }
    std::fprintf(stdout, "rayorch report: wrote %s\n", out.c_str());
  });
}

}  // namespace rayorch::cli
