// What `rayorch pdf2md` shows of a run (workloads/common/convert_driver.h through the
// command): the report page written beside the JSON report by default (and not with
// --no-report-page), the live page's URL printed at the start with --live, and a bad --live
// address refused before anything is written.
#include <filesystem>
#include <string>

#include "pdf2md/samples.h"
#include "support/workload_testing.h"
#include "workloads/pdf2md/pdf2md_testing.h"
#include <fmt/format.h>
#include <gtest/gtest.h>

#ifdef RAYORCH_CLI_PATH

namespace {
namespace fs = std::filesystem;
using pdf2md_testing::TempDir;
using workload_testing::read_file;

using pdf2md_testing::CommandRun;
using pdf2md_testing::run_pdf2md;

class Pdf2mdReportPage : public ::testing::Test {
 protected:
  void SetUp() override {
    pdf2md::make_samples((tmp_.path() / "in").string(),
                         {.docs = 2, .seed = 5, .max_pages = 2, .corrupt = 0});
  }
  const fs::path& dir() const { return tmp_.path(); }

 private:
  TempDir tmp_;
};

TEST_F(Pdf2mdReportPage, ThePageIsWrittenBesideTheReportAndTheLiveUrlPrinted) {
  const CommandRun run =
      run_pdf2md(dir(), fmt::format("'{0}/in' -o '{0}/out' --report '{0}/run.json' "
                                    "--live 0",
                                    dir().string()));
  ASSERT_EQ(run.status, 0) << run.stderr_text;
  const std::string page = read_file(dir() / "run.html");
  EXPECT_NE(page.find("<h1>Run report</h1>"), std::string::npos);
  EXPECT_NE(page.find("<h2>pdf2md</h2>"), std::string::npos) << "the workload's section";
  EXPECT_NE(run.stderr_text.find("live page: http://127.0.0.1:"), std::string::npos)
      << run.stderr_text;

  const CommandRun none = run_pdf2md(dir(), fmt::format("'{0}/in' -o '{0}/out2' --report "
                                                        "'{0}/again.json' --no-report-page",
                                                        dir().string()));
  ASSERT_EQ(none.status, 0) << none.stderr_text;
  EXPECT_TRUE(fs::exists(dir() / "again.json"));
  EXPECT_FALSE(fs::exists(dir() / "again.html"));
}

TEST_F(Pdf2mdReportPage, ABadLiveAddressIsAUsageErrorBeforeAnythingIsWritten) {
  for (const char* address : {"host:port", "1:2:x", "99999", ":80"}) {
    const CommandRun run = run_pdf2md(
        dir(), fmt::format("'{0}/in' -o '{0}/out' --live '{1}'", dir().string(), address));
    EXPECT_EQ(run.status, 2) << address << ": " << run.stderr_text;
    EXPECT_NE(run.stderr_text.find("--live takes PORT, HOST:PORT or HOST"), std::string::npos)
        << address << ": " << run.stderr_text;
    EXPECT_FALSE(fs::exists(dir() / "out")) << address;
  }
  // An address that parses but cannot be listened on fails the run before any document.
  const CommandRun run =
      run_pdf2md(dir(), fmt::format("'{0}/in' -o '{0}/out' --live 'not-an-ip:0'", dir().string()));
  EXPECT_EQ(run.status, 2) << run.stderr_text;
  EXPECT_NE(run.stderr_text.find("'not-an-ip' is not an IPv4 address"), std::string::npos)
      << run.stderr_text;
}

}  // namespace

#endif  // RAYORCH_CLI_PATH
