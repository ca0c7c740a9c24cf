// The `rayorch` command: subcommands for the workloads, plans and benchmarks. A workload's
// commands exist when the build has that workload (RAYORCH_WITH_PDF2MD, RAYORCH_WITH_VIDEO).
#include <cstdio>
#include <exception>

#include "commands.h"

int main(int argc, char** argv) {
  CLI::App app{"rayorch: lineage-controlled multi-grain dataflows"};
  app.require_subcommand(1);
  rayorch::cli::add_explain_command(app);
  rayorch::cli::add_report_command(app);
#ifdef RAYORCH_WITH_PDF2MD
  rayorch::cli::add_pdf2md_commands(app);
#endif
#ifdef RAYORCH_WITH_VIDEO
  rayorch::cli::add_video_commands(app);
#endif
  rayorch::cli::add_bench_commands(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::RuntimeError& e) {
    // Subcommands end with CLI::RuntimeError(code) to set the exit status.
    return e.get_exit_code();
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : rayorch::cli::kUsage;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rayorch: error: %s\n", e.what());
    return rayorch::cli::kAborted;
  }
  return rayorch::cli::kOk;
}
