// Converting a corpus (workloads/pdf2md/convert.cc): every document written with its pages in
// order, OCR started before a long document is fully rendered, inputs and output locations
// rejected before anything is written, and a PDF that crashes the renderer failing alone.
#include "pdf2md/convert.h"

#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "pdf2md/pdf2md.h"
#include "pdf2md/samples.h"
#include "support/workload_testing.h"
#include "workloads/pdf2md/pdf2md_testing.h"
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <rayorch/rayorch.h>

namespace fs = std::filesystem;
namespace ro = rayorch;

namespace {

using pdf2md_testing::kDpi;
using pdf2md_testing::options_for;
using pdf2md_testing::TempDir;
using workload_testing::read_file;
using workload_testing::read_jsonl;
using workload_testing::sorted;
using workload_testing::temporaries_in;

}  // namespace

TEST(Pdf2mdConvert, ConvertsCorpusWithPagesInOrderAndListsOnlyTheCorruptFile) {
  TempDir tmp;
  // Seed 8 gives documents of 1, 3, 1, 1, 4 and 6 pages: short ones and a long tail.
  const pdf2md::SampleCorpus corpus = pdf2md::make_samples(
      (tmp.path() / "in").string(), {.docs = 6, .seed = 8, .max_pages = 6, .corrupt = 1});
  ASSERT_EQ(corpus.documents.size(), 6u);
  ASSERT_LE(corpus.total_pages(), 20u);
  std::size_t longest = 0;
  for (const auto& d : corpus.documents) longest = std::max(longest, d.pages.size());
  ASSERT_GE(longest, 4u);

  const fs::path out = tmp.path() / "out";
  pdf2md::ConvertOptions c = options_for({(tmp.path() / "in").string()}, out);
  // Several input batches in flight, several pages per render and OCR call mixing documents.
  c.input_batch_size = 3;
  c.max_active_input_batches = 2;
  c.pipeline.render.batch_size = 3;
  c.pipeline.ocr.batch_size = 2;
  c.report_path = (tmp.path() / "report.json").string();
  c.trace_path = (tmp.path() / "trace.json").string();
  const pdf2md::ConvertSummary s = pdf2md::convert(c);

  EXPECT_EQ(s.documents, 7u);
  EXPECT_TRUE(s.skipped.empty());
  EXPECT_EQ(sorted(s.converted), (std::vector<std::string>{"doc-000", "doc-001", "doc-002",
                                                           "doc-003", "doc-004", "doc-005"}));
  EXPECT_EQ(s.pages, corpus.total_pages());
  ASSERT_EQ(s.failures.size(), 1u);
  EXPECT_EQ(s.failures[0].stem, "corrupt");

  for (const pdf2md::SampleDocument& doc : corpus.documents) {
    SCOPED_TRACE(doc.stem);
    const std::string md = read_file(out / (doc.stem + ".md"));
    EXPECT_TRUE(md.starts_with("# " + doc.stem + "\n"));
    EXPECT_NE(md.find(pdf2md::kCompleteMarker), std::string::npos);
    const std::vector<pdf2md::MarkdownPage> pages = pdf2md::split_pages(md);
    ASSERT_EQ(pages.size(), doc.pages.size());
    for (std::size_t i = 0; i < pages.size(); ++i) {
      EXPECT_EQ(pages[i].number, i + 1);
      // Every page carries different random sentences, so matching each section with the
      // text drawn on that page also proves the page order.
      const double accuracy = pdf2md::word_accuracy(doc.pages[i], pages[i].text);
      EXPECT_GE(accuracy, 0.95) << "page " << i + 1 << ":\n" << pages[i].text;
      if (i + 1 < pages.size()) {
        EXPECT_LT(pdf2md::word_accuracy(doc.pages[i + 1], pages[i].text), 0.5);
      }
    }
  }
  const pdf2md::CorpusCheck check = pdf2md::check_outputs(corpus, out.string());
  EXPECT_GE(check.accuracy, 0.95);

  const auto failures = read_jsonl(out / "failures.jsonl");
  ASSERT_EQ(failures.size(), 1u);
  EXPECT_EQ(failures[0].at("stem"), "corrupt");
  EXPECT_EQ(fs::path(failures[0].at("input").get<std::string>()).filename(), "corrupt.pdf");
  EXPECT_NE(failures[0].at("cause").get<std::string>().find("corrupt or not a PDF"),
            std::string::npos);
  EXPECT_FALSE(fs::exists(out / "corrupt.md"));
  EXPECT_TRUE(temporaries_in(out).empty());

  const auto report = nlohmann::json::parse(read_file(c.report_path));
  EXPECT_EQ(report.at("pdf2md").at("converted").size(), 6u);
  EXPECT_EQ(report.at("pdf2md").at("failed").size(), 1u);
  EXPECT_FALSE(report.at("calls").empty());
  for (const auto& call : report.at("calls")) {
    if (call.at("call").get<std::string>().starts_with("RenderPage")) {
      EXPECT_EQ(call.at("grain_dispatches"), corpus.total_pages()) << call.dump();
    }
  }
  EXPECT_FALSE(nlohmann::json::parse(read_file(c.trace_path)).at("traceEvents").empty());
}

TEST(Pdf2mdConvert, FirstPageOfALongDocumentReachesOcrBeforeItsLastPageIsRendered) {
  TempDir tmp;
  // Seed 2 gives one document of 8 pages.
  const pdf2md::SampleCorpus corpus = pdf2md::make_samples(
      (tmp.path() / "in").string(), {.docs = 1, .seed = 2, .max_pages = 8, .corrupt = 0});
  ASSERT_EQ(corpus.total_pages(), 8u);
  pdf2md::ConvertOptions c = options_for({(tmp.path() / "in").string()}, tmp.path() / "out");
  c.pipeline.render = {1, 2};
  c.pipeline.ocr = {2, 1};
  c.report_path = (tmp.path() / "report.json").string();
  c.trace_path = (tmp.path() / "trace.json").string();
  const pdf2md::ConvertSummary s = pdf2md::convert(c);
  ASSERT_EQ(s.converted.size(), 1u);
  EXPECT_GE(pdf2md::check_outputs(corpus, (tmp.path() / "out").string()).accuracy, 0.95);

  // One renderer takes the pages in order, two per RPC: four RPCs, the last holding page 8.
  const auto report = nlohmann::json::parse(read_file(c.report_path));
  for (const auto& call : report.at("calls")) {
    if (call.at("call").get<std::string>().starts_with("RenderPage")) {
      EXPECT_EQ(call.at("rpcs"), 4) << call.dump();
      EXPECT_EQ(call.at("batch_size_histogram"), nlohmann::json({{"2", 4}})) << call.dump();
    }
  }
  // Start times, not durations: OCR of a page of the first render RPC starts before the RPC
  // rendering page 8 does.
  double first_ocr_start = -1;
  double last_render_start = -1;
  const auto trace = nlohmann::json::parse(read_file(c.trace_path));
  for (const auto& ev : trace.at("traceEvents")) {
    if (ev.value("ph", "") != "X") continue;
    const std::string name = ev.at("name");
    const double ts = ev.at("ts");
    if (name.starts_with("OcrPage") && (first_ocr_start < 0 || ts < first_ocr_start)) {
      first_ocr_start = ts;
    }
    if (name.starts_with("RenderPage")) last_render_start = std::max(last_render_start, ts);
  }
  ASSERT_GE(first_ocr_start, 0);
  ASSERT_GE(last_render_start, 0);
  EXPECT_LT(first_ocr_start, last_render_start);
}

TEST(Pdf2mdConvert, DuplicateDocumentNamesAreRejectedBeforeAnythingIsWritten) {
  TempDir tmp;
  fs::create_directories(tmp.path() / "a");
  fs::create_directories(tmp.path() / "b" / "deeper");
  std::ofstream(tmp.path() / "a" / "report.pdf") << "%PDF-1.7\n";
  std::ofstream(tmp.path() / "b" / "deeper" / "report.PDF") << "%PDF-1.7\n";
  const fs::path out = tmp.path() / "out";
  try {
    pdf2md::convert(options_for({(tmp.path() / "a").string(), (tmp.path() / "b").string()}, out));
    FAIL() << "expected InputError";
  } catch (const pdf2md::InputError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("duplicate document name 'report'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("a/report.pdf"), std::string::npos) << msg;
    EXPECT_NE(msg.find("deeper/report.PDF"), std::string::npos) << msg;
  }
  EXPECT_FALSE(fs::exists(out));

  // The same file named twice (directly and through its directory) is one document.
  const auto files = pdf2md::resolve_inputs(workloads::InputSelection{
      .paths = {(tmp.path() / "a").string(), (tmp.path() / "a" / "report.pdf").string()}});
  EXPECT_EQ(files.size(), 1u);
}

TEST(Pdf2mdConvert, MissingInputIsRejectedBeforeAnythingIsWritten) {
  TempDir tmp;
  std::ofstream(tmp.path() / "x.pdf") << "%PDF-1.7\n";
  const fs::path out = tmp.path() / "out";
  try {
    pdf2md::convert(
        options_for({(tmp.path() / "x.pdf").string(), (tmp.path() / "nope.pdf").string()}, out));
    FAIL() << "expected InputError";
  } catch (const pdf2md::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("input not found"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("nope.pdf"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(out));
  fs::create_directories(tmp.path() / "empty");
  EXPECT_THROW(pdf2md::convert(options_for({(tmp.path() / "empty").string()}, out)),
               pdf2md::InputError);
  EXPECT_FALSE(fs::exists(out));
}

TEST(Pdf2mdConvert, UnwritableOutputDirectoryIsRejectedBeforeAnythingIsWritten) {
  TempDir tmp;
  std::ofstream(tmp.path() / "x.pdf") << "%PDF-1.7\n";
  const std::vector<std::string> inputs{(tmp.path() / "x.pdf").string()};

  // A path through a regular file can never be created, whoever runs the test.
  std::ofstream(tmp.path() / "plain-file") << "x";
  try {
    pdf2md::convert(options_for(inputs, tmp.path() / "plain-file" / "out"));
    FAIL() << "expected InputError";
  } catch (const pdf2md::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot create output directory"), std::string::npos)
        << e.what();
  }

  // A trace location that cannot be written is caught up front too, not after the run.
  pdf2md::ConvertOptions bad_trace = options_for(inputs, tmp.path() / "out-trace");
  bad_trace.trace_path = (tmp.path() / "no-such-dir" / "trace.json").string();
  EXPECT_THROW(pdf2md::convert(bad_trace), pdf2md::InputError);
  EXPECT_FALSE(fs::exists(tmp.path() / "out-trace"));

  // Permission bits do not stop root, so the read-only case only runs for other users.
  if (::geteuid() != 0) {
    const fs::path ro_dir = tmp.path() / "read-only";
    fs::create_directories(ro_dir);
    fs::permissions(ro_dir, fs::perms::owner_read | fs::perms::owner_exec);
    try {
      pdf2md::convert(options_for(inputs, ro_dir));
      ADD_FAILURE() << "expected InputError";
    } catch (const pdf2md::InputError& e) {
      EXPECT_NE(std::string(e.what()).find("not writable"), std::string::npos) << e.what();
    }
    fs::permissions(ro_dir, fs::perms::owner_all);
    EXPECT_TRUE(fs::is_empty(ro_dir));
  }
}

// Rendering runs in worker processes by default: a PDF that crashes the renderer (here the
// test-only trigger RAYORCH_PDF2MD_TEST_CRASH_ON, standing in for a PDF that crashes
// poppler) fails alone, with a cause naming the signal, and every other document converts.
TEST(Pdf2mdConvert, APdfThatCrashesTheRendererFailsAloneAndTheRestConvert) {
  TempDir tmp;
  const pdf2md::SampleCorpus corpus = pdf2md::make_samples(
      (tmp.path() / "in").string(), {.docs = 4, .seed = 8, .max_pages = 3, .corrupt = 0});
  ASSERT_EQ(corpus.documents.size(), 4u);
  const std::string crashing = corpus.documents[1].stem;
  ::setenv("RAYORCH_PDF2MD_TEST_CRASH_ON", (crashing + ".pdf").c_str(), 1);
  const fs::path out = tmp.path() / "out";
  pdf2md::ConvertOptions c = options_for({(tmp.path() / "in").string()}, out);
  ASSERT_EQ(c.pipeline.render_isolation, ro::Isolation::process);  // the default
  c.pipeline.render.batch_size = 2;
  const pdf2md::ConvertSummary s = pdf2md::convert(c);
  EXPECT_EQ(s.converted.size(), 3u);
  ASSERT_EQ(s.failures.size(), 1u);
  EXPECT_EQ(s.failures[0].stem, crashing);
  for (const pdf2md::SampleDocument& doc : corpus.documents) {
    EXPECT_EQ(fs::exists(out / (doc.stem + ".md")), doc.stem != crashing) << doc.stem;
  }
  const auto failures = read_jsonl(out / "failures.jsonl");
  ASSERT_EQ(failures.size(), 1u);
  EXPECT_EQ(failures[0].at("stem"), crashing);
  const std::string cause = failures[0].at("cause").get<std::string>();
  EXPECT_NE(cause.find("worker crashed: SIGSEGV"), std::string::npos) << cause;
  EXPECT_NE(cause.find("crashing the renderer on"), std::string::npos) << cause;

#ifdef RAYORCH_CLI_PATH
  // The command converts the same corpus and exits with status 1 (some documents failed).
  const fs::path cli_out = tmp.path() / "cli-out";
  const std::string command =
      fmt::format("'{}' pdf2md '{}' -o '{}' --dpi {} --render-batch 2 --no-progress -q",
                  RAYORCH_CLI_PATH, (tmp.path() / "in").string(), cli_out.string(), kDpi);
  const int status = std::system(command.c_str());
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 1);
  EXPECT_EQ(read_jsonl(cli_out / "failures.jsonl").size(), 1u);
  for (const pdf2md::SampleDocument& doc : corpus.documents) {
    EXPECT_EQ(fs::exists(cli_out / (doc.stem + ".md")), doc.stem != crashing) << doc.stem;
  }
#endif
  ::unsetenv("RAYORCH_PDF2MD_TEST_CRASH_ON");
}
