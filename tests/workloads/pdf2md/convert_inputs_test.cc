// What `rayorch pdf2md` reads (workloads/common/input_selection.h through the command): a
// quoted glob pattern, a JSON-lines manifest in its own order, a corpus split over jobs with
// --shard and --row-range (every document converted by exactly one job, each the same as in
// one run of the whole corpus), bad selections refused before anything is written, and two
// jobs refused one output directory.
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "common/output_lock.h"
#include "pdf2md/samples.h"
#include "support/workload_testing.h"
#include "workloads/pdf2md/pdf2md_testing.h"
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <rayorch/sink_reader.h>

#ifdef RAYORCH_CLI_PATH

namespace {
namespace fs = std::filesystem;
using pdf2md_testing::TempDir;
using workload_testing::read_file;

using pdf2md_testing::CommandRun;
using pdf2md_testing::run_pdf2md;

// The Markdown files a run wrote, by stem.
std::map<std::string, std::string> markdown_in(const fs::path& out) {
  std::map<std::string, std::string> docs;
  for (const std::string& part : rayorch::read_committed_output(out.string()).parts) {
    docs.emplace(fs::path(part).stem().string(), read_file(part));
  }
  return docs;
}

class Pdf2mdInputs : public ::testing::Test {
 protected:
  void SetUp() override {
    corpus_ = pdf2md::make_samples((tmp_.path() / "in").string(),
                                   {.docs = 5, .seed = 3, .max_pages = 2, .corrupt = 0});
  }
  const fs::path& dir() const { return tmp_.path(); }
  const pdf2md::SampleCorpus& corpus() const { return corpus_; }

 private:
  TempDir tmp_;
  pdf2md::SampleCorpus corpus_;
};

TEST_F(Pdf2mdInputs, AGlobAManifestAndShardsConvertEveryDocumentOnce) {
  // One run over a quoted pattern: the oracle.
  const CommandRun whole = run_pdf2md(
      dir(), fmt::format("'{}/in/*.pdf' -o '{}'", dir().string(), (dir() / "whole").string()));
  ASSERT_EQ(whole.status, 0) << whole.stderr_text;
  const std::map<std::string, std::string> expected = markdown_in(dir() / "whole");
  ASSERT_EQ(expected.size(), corpus().documents.size());

  // A manifest beside the corpus, its paths relative to it, in reverse order, split over 3 jobs.
  {
    std::ofstream m(dir() / "in" / "docs.jsonl");
    for (auto it = corpus().documents.rbegin(); it != corpus().documents.rend(); ++it) {
      m << fmt::format("{{\"id\": {}, \"file\": \"{}\"}}\n", it - corpus().documents.rbegin(),
                       fs::path(it->pdf).filename().string());
    }
  }
  std::map<std::string, std::string> converted;
  for (int i = 0; i < 3; ++i) {
    const fs::path out = dir() / fmt::format("shard-{}", i);
    const CommandRun job =
        run_pdf2md(dir(), fmt::format("--manifest '{}' --path-field file --shard {}/3 -o '{}'",
                                      (dir() / "in" / "docs.jsonl").string(), i, out.string()));
    ASSERT_EQ(job.status, 0) << job.stderr_text;
    EXPECT_TRUE(rayorch::read_committed_output(out.string()).complete);
    // Job i converts manifest rows i, i+3, ...: documents n-1-i, n-1-i-3, ... of the corpus.
    std::set<std::string> stems;
    for (auto& [stem, md] : markdown_in(out)) {
      stems.insert(stem);
      EXPECT_TRUE(converted.emplace(stem, md).second) << stem << " converted by two jobs";
    }
    std::set<std::string> wanted;
    const std::size_t n = corpus().documents.size();
    for (std::size_t row = i; row < n; row += 3)
      wanted.insert(corpus().documents[n - 1 - row].stem);
    EXPECT_EQ(stems, wanted) << "job " << i;
  }
  EXPECT_EQ(converted, expected);

  // A row range past the end is an empty share: nothing to do, and the output says so.
  const CommandRun none = run_pdf2md(dir(), fmt::format("'{}/in' --row-range 50: -o '{}'",
                                                        dir().string(), (dir() / "none").string()));
  ASSERT_EQ(none.status, 0) << none.stderr_text;
  const rayorch::CommittedOutput empty = rayorch::read_committed_output((dir() / "none").string());
  EXPECT_TRUE(empty.complete);
  EXPECT_TRUE(empty.parts.empty());
}

TEST_F(Pdf2mdInputs, BadSelectionsAreRefusedBeforeAnythingIsWritten) {
  std::ofstream(dir() / "bad.jsonl") << "{\"path\": \"in/doc-000.pdf\"}\n{\"path\": in/x.pdf}\n";
  std::ofstream(dir() / "gone.jsonl") << "{\"path\": \"in/missing.pdf\"}\n";
  const struct {
    std::string args;
    std::string says;
  } cases[] = {
      {"--shard 3/3", "shard '3/3' must be I/N with 0 <= I < N"},
      {"--row-range 4:2", "row range '4:2' must be START:STOP"},
      {fmt::format("--manifest '{}'", (dir() / "bad.jsonl").string()),
       "bad.jsonl, line 2: not valid JSON"},
      {fmt::format("--manifest '{}'", (dir() / "gone.jsonl").string()),
       "gone.jsonl, line 1: input not found: " + (dir() / "in" / "missing.pdf").string()},
      {fmt::format("'{}/in/*.djvu'", dir().string()), "no file matches the pattern"},
      {"", "no input given: name PDF files, folders or glob patterns, or a --manifest"},
  };
  for (const auto& c : cases) {
    const fs::path out = dir() / "out";
    const CommandRun run = run_pdf2md(dir(), c.args + fmt::format(" -o '{}'", out.string()));
    EXPECT_EQ(run.status, 2) << c.args << ": " << run.stderr_text;
    EXPECT_NE(run.stderr_text.find(c.says), std::string::npos) << c.args << ": " << run.stderr_text;
    EXPECT_FALSE(fs::exists(out)) << c.args;
  }
}

TEST_F(Pdf2mdInputs, TwoJobsCannotWriteOneOutputDirectoryAtOnce) {
  // Job 0 of a split runs; job 1 pointed at the same folder is refused while it does.
  const fs::path out = dir() / "shared";
  fs::create_directories(out);
  const workloads::OutputLock running(out, "pdf2md");
  const CommandRun second =
      run_pdf2md(dir(), fmt::format("'{}/in' --shard 1/2 -o '{}'", dir().string(), out.string()));
  EXPECT_EQ(second.status, 2) << second.stderr_text;
  EXPECT_NE(second.stderr_text.find("is in use by another pdf2md run"), std::string::npos)
      << second.stderr_text;
  EXPECT_TRUE(fs::is_empty(out));
}

}  // namespace

#endif  // RAYORCH_CLI_PATH
