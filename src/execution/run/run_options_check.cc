// The checks a run's options pass before anything runs. See run_options_check.h.
#include "execution/run/run_options_check.h"

#include <unistd.h>

#include <filesystem>
#include <stdexcept>
#include <string_view>

#include <fmt/format.h>

namespace rayorch::detail {

namespace {

// The file the trace or report is written to at the end of the run must be creatable then;
// checking here fails the run before any input is admitted instead of after all the work.
void check_output_path(std::string_view what, const std::string& path) {
  if (path.empty()) return;
  namespace fs = std::filesystem;
  const fs::path p(path);
  const fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
  std::error_code ec;
  if (fs::is_directory(p, ec)) {
    throw std::invalid_argument(
        fmt::format("RunOptions.{} '{}' is a directory; give a file path such as '{}/{}.json'",
                    what, path, path, what == "trace_path" ? "trace" : "report"));
  }
  if (!fs::is_directory(dir, ec) || ::access(dir.c_str(), W_OK) != 0) {
    throw std::invalid_argument(fmt::format(
        "RunOptions.{} '{}': the directory '{}' does not exist or is not writable; create it "
        "or choose another path (checked before any input is admitted)",
        what, path, dir.string()));
  }
}

}  // namespace

void check_run_options(const RunOptions& options) {
  check_output_path("trace_path", options.trace_path);
  check_output_path("report_path", options.report_path);
  if (options.max_active_input_batches < 1) {
    throw std::invalid_argument(
        fmt::format("RunOptions.max_active_input_batches must be >= 1, got {}",
                    options.max_active_input_batches));
  }
  for (std::size_t i = 0; i < options.observers.size(); ++i) {
    if (!options.observers[i]) {
      throw std::invalid_argument(
          fmt::format("RunOptions.observers[{}] is null; pass a std::shared_ptr to an object "
                      "derived from rayorch::RunObserver",
                      i));
    }
  }
}

}  // namespace rayorch::detail
