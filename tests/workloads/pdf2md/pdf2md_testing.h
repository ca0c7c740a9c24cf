// Helpers shared by the pdf2md workload tests (udfs_test, convert_test, convert_resume_test,
// the command's tests): the resolution they render at, their scratch directory, the options
// of a conversion and a run of the `rayorch pdf2md` command.
#pragma once

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "pdf2md/convert.h"
#include "support/workload_testing.h"
#include <fmt/format.h>

namespace pdf2md_testing {

// Low resolution keeps the test fast; the samples' large font still OCRs cleanly at it.
inline constexpr int kDpi = 100;

// A scratch directory named after this test.
class TempDir : public workload_testing::TempDir {
 public:
  TempDir() : workload_testing::TempDir("pdf2md-test") {}
};

inline pdf2md::ConvertOptions options_for(std::vector<std::string> inputs,
                                          const std::filesystem::path& out) {
  pdf2md::ConvertOptions c;
  c.inputs.paths = std::move(inputs);
  c.out_dir = out.string();
  c.pipeline.dpi = kDpi;
  c.progress = false;
  return c;
}

#ifdef RAYORCH_CLI_PATH
struct CommandRun {
  int status = -1;
  std::string stderr_text;
};

// Runs `rayorch pdf2md ARGS` with small pools at kDpi, quietly; its exit status and
// standard error (kept in SCRATCH/stderr.txt).
inline CommandRun run_pdf2md(const std::filesystem::path& scratch, const std::string& args) {
  const std::filesystem::path err = scratch / "stderr.txt";
  const std::string command =
      fmt::format("'{}' pdf2md {} --dpi {} --ocr-replicas 2 --no-progress -q 2>'{}'",
                  RAYORCH_CLI_PATH, args, kDpi, err.string());
  const int status = std::system(command.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, workload_testing::read_file(err)};
}
#endif

}  // namespace pdf2md_testing
