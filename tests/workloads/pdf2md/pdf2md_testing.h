// Helpers shared by the pdf2md workload tests (udfs_test, convert_test, convert_resume_test):
// the resolution they render at, their scratch directory and the options of a conversion.
#pragma once

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "pdf2md/convert.h"
#include "support/workload_testing.h"

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

}  // namespace pdf2md_testing
