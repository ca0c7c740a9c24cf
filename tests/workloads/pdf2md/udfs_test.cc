// The document pipeline (workloads/pdf2md/udfs.cc): its plan, typed failures of unreadable
// PDFs and pages, pages rendered as separate Grains batched across documents, a file replaced
// between runs; and the text helpers that split its Markdown into pages and score a page's
// words (split_pages, samples.cc's word_accuracy).
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "pdf2md/convert.h"
#include "pdf2md/pdf2md.h"
#include "pdf2md/samples.h"
#include "support/workload_testing.h"
#include "workloads/pdf2md/pdf2md_testing.h"
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <rayorch/rayorch.h>

namespace fs = std::filesystem;
namespace ro = rayorch;

namespace {

using pdf2md_testing::kDpi;
using pdf2md_testing::options_for;
using pdf2md_testing::TempDir;
using workload_testing::read_jsonl;

// A PDF whose page tree is damaged after the first page: it opens, reports `pages` pages and
// renders page 1, but poppler cannot find page 2 or any later page.
void write_pdf_broken_after_first_page(const fs::path& path, int pages) {
  std::vector<std::string> objects;
  std::string kids = "3 0 R 42";  // a number where a page reference belongs
  for (int i = 2; i < pages; ++i) kids += fmt::format(" {} 0 R", 2 + i);
  objects.push_back("<< /Type /Catalog /Pages 2 0 R >>");
  objects.push_back(fmt::format("<< /Type /Pages /Kids [{}] /Count {} >>", kids, pages));
  for (int i = 1; i < pages; ++i) {
    objects.push_back("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] >>");
  }
  std::string pdf = "%PDF-1.4\n";
  std::vector<std::size_t> offsets;
  for (std::size_t i = 0; i < objects.size(); ++i) {
    offsets.push_back(pdf.size());
    pdf += fmt::format("{} 0 obj\n{}\nendobj\n", i + 1, objects[i]);
  }
  const std::size_t xref = pdf.size();
  pdf += fmt::format("xref\n0 {}\n0000000000 65535 f \n", objects.size() + 1);
  for (std::size_t offset : offsets) pdf += fmt::format("{:010d} 00000 n \n", offset);
  pdf += fmt::format("trailer\n<< /Size {} /Root 1 0 R >>\nstartxref\n{}\n%%EOF\n",
                     objects.size() + 1, xref);
  std::ofstream(path, std::ios::binary) << pdf;
}

const ro::CallMetrics& call_metrics(const ro::RunMetrics& m, std::string_view udf) {
  for (const ro::CallMetrics& c : m.calls) {
    if (c.call.starts_with(udf)) return c;
  }
  throw std::runtime_error(fmt::format("no Call of {} in the metrics", udf));
}

// Index of the first RPC of `udf` in `rpcs` whose Grains include `key`; rpcs.size() if none.
std::size_t first_rpc_with(const std::vector<ro::RpcRecord>& rpcs, std::string_view udf,
                           const std::string& key) {
  for (std::size_t i = 0; i < rpcs.size(); ++i) {
    if (rpcs[i].call.starts_with(udf) &&
        std::find(rpcs[i].grains.begin(), rpcs[i].grains.end(), key) != rpcs[i].grains.end()) {
      return i;
    }
  }
  return rpcs.size();
}

std::string root_of(const std::string& key) {
  return key.substr(0, key.find('/'));
}

}  // namespace

TEST(Pdf2mdText, WordAccuracyCountsWordEditsIgnoringCaseAndPunctuation) {
  EXPECT_DOUBLE_EQ(pdf2md::word_accuracy("One two, three.", "one TWO three"), 1.0);
  EXPECT_DOUBLE_EQ(pdf2md::word_accuracy("a b c d e f g h i j", "a b c d e f g h i x"), 0.9);
  EXPECT_DOUBLE_EQ(pdf2md::word_accuracy("a b c d", "a c d"), 0.75);
  EXPECT_DOUBLE_EQ(pdf2md::word_accuracy("a b", "completely different text here"), 0.0);
}

TEST(Pdf2mdText, SplitPagesReadsHeadingsInFileOrder) {
  const auto pages = pdf2md::split_pages(
      "# doc\n\n## Page 1\n\nfirst\n\n## Page 2\n\nsecond line\n\n<!-- pdf2md: complete, 2 "
      "pages -->\n");
  ASSERT_EQ(pages.size(), 2u);
  EXPECT_EQ(pages[0].number, 1u);
  EXPECT_EQ(pages[1].number, 2u);
  EXPECT_DOUBLE_EQ(pdf2md::word_accuracy("second line", pages[1].text), 1.0);
}

TEST(Pdf2mdPipeline, ExplainShowsOpenExpandRenderOcrReduceAndPerDocumentAssembly) {
  const std::string plan = pdf2md::compile_pipeline().explain();
  EXPECT_NE(plan.find("worker-output by OpenPdf"), std::string::npos) << plan;
  EXPECT_NE(plan.find("expanded-output-layout"), std::string::npos) << plan;
  // The source path reaches the page Domain (d1) as a view, and pages render one Grain each.
  EXPECT_NE(plan.find("broadcast d1 <- [p0] => broadcast-effect"), std::string::npos) << plan;
  const std::size_t render = plan.find("worker-output by RenderPage");
  ASSERT_NE(render, std::string::npos) << plan;
  const std::size_t line = plan.rfind('\n', render) + 1;
  EXPECT_NE(plan.substr(line, render - line).find("call_output d1 "), std::string::npos) << plan;
  EXPECT_NE(plan.find("worker-output by OcrPage"), std::string::npos) << plan;
  EXPECT_NE(plan.find("reduce-effect"), std::string::npos) << plan;
  EXPECT_NE(plan.find("worker-output by Assemble"), std::string::npos) << plan;
}

TEST(Pdf2mdPipeline, UnreadablePdfsAreTypedFailuresThatNeverReachOcr) {
  TempDir tmp;
  const fs::path corrupt = tmp.path() / "corrupt.pdf";
  std::ofstream(corrupt) << "%PDF-1.7\nthis is not a PDF body\n";
  const fs::path missing = tmp.path() / "missing.pdf";
  pdf2md::PipelineConfig config;
  config.dpi = kDpi;
  config.ocr.replicas = 1;
  ro::testing::SyncExecutor ex(pdf2md::compile_pipeline(config));
  auto r = ex.run({corrupt.string(), missing.string()});
  ASSERT_EQ(r.outputs.size(), 2u);
  ASSERT_FALSE(r.outputs[0].ok());
  EXPECT_NE(r.outputs[0].issue().cause.find("corrupt or not a PDF"), std::string::npos)
      << r.outputs[0].issue().cause;
  ASSERT_FALSE(r.outputs[1].ok());
  EXPECT_NE(r.outputs[1].issue().cause.find("not a readable file"), std::string::npos)
      << r.outputs[1].issue().cause;
  // They fail at the cheap open: nothing of them is rendered, let alone OCR'd.
  for (const ro::RpcRecord& rpc : ex.rpcs()) {
    EXPECT_EQ(rpc.call.find("RenderPage"), std::string::npos) << rpc.to_string();
    EXPECT_EQ(rpc.call.find("OcrPage"), std::string::npos) << rpc.to_string();
  }
}

TEST(Pdf2mdPipeline, PagesAreRenderedAsSeparateGrainsBatchedAcrossDocuments) {
  TempDir tmp;
  // Seed 10 gives documents of 1, 6 and 1 pages.
  const pdf2md::SampleCorpus corpus = pdf2md::make_samples(
      (tmp.path() / "in").string(), {.docs = 3, .seed = 10, .max_pages = 8, .corrupt = 0});
  ASSERT_EQ(corpus.documents.size(), 3u);
  ASSERT_EQ(corpus.documents[1].pages.size(), 6u);
  std::vector<std::string> paths;
  std::set<std::string> pages;
  for (std::size_t d = 0; d < corpus.documents.size(); ++d) {
    paths.push_back(corpus.documents[d].pdf);
    for (std::size_t p = 0; p < corpus.documents[d].pages.size(); ++p) {
      pages.insert(fmt::format("{}/{}", d, p));
    }
  }
  pdf2md::PipelineConfig config;
  config.dpi = kDpi;
  config.render.batch_size = 3;
  config.ocr.replicas = 1;
  ro::testing::SyncExecutor ex(pdf2md::compile_pipeline(config));
  auto r = ex.run(paths);
  for (std::size_t d = 0; d < corpus.documents.size(); ++d) {
    ASSERT_TRUE(r.outputs[d].ok()) << r.outputs[d].issue().cause;
    EXPECT_EQ(r.outputs[d].value().pages, corpus.documents[d].pages.size());
  }

  // Every page is one render Grain, rendered once; RPCs hold up to three pages of any
  // documents, and some hold pages of two documents.
  std::multiset<std::string> rendered;
  bool mixed = false;
  std::size_t render_rpcs = 0;
  for (const ro::RpcRecord& rpc : ex.rpcs()) {
    if (!rpc.call.starts_with("RenderPage")) continue;
    ++render_rpcs;
    EXPECT_LE(rpc.grains.size(), 3u) << rpc.to_string();
    std::set<std::string> documents;
    for (const std::string& key : rpc.grains) {
      rendered.insert(key);
      documents.insert(root_of(key));
    }
    mixed = mixed || documents.size() > 1;
  }
  EXPECT_EQ(rendered, std::multiset<std::string>(pages.begin(), pages.end()));
  EXPECT_TRUE(mixed);
  const ro::CallMetrics& render = call_metrics(r.metrics, "RenderPage");
  EXPECT_EQ(render.grain_dispatches, pages.size());
  EXPECT_EQ(render.rpcs, render_rpcs);
  ASSERT_FALSE(render.batch_size_histogram.empty());
  EXPECT_EQ(render.batch_size_histogram.rbegin()->first, 3u);

  // The long document's first page is OCR'd before its last page is rendered.
  const std::size_t first_ocr = first_rpc_with(ex.rpcs(), "OcrPage", "1/0");
  const std::size_t last_render = first_rpc_with(ex.rpcs(), "RenderPage", "1/5");
  ASSERT_LT(first_ocr, ex.rpcs().size());
  ASSERT_LT(last_render, ex.rpcs().size());
  EXPECT_LT(first_ocr, last_render);
}

TEST(Pdf2mdPipeline, APageThatCannotBeRenderedFailsItsDocumentAndSkipsItsRemainingPages) {
  TempDir tmp;
  const pdf2md::SampleCorpus corpus = pdf2md::make_samples(
      (tmp.path() / "in").string(), {.docs = 1, .seed = 1, .max_pages = 1, .corrupt = 0});
  const fs::path broken = tmp.path() / "in" / "broken.pdf";
  write_pdf_broken_after_first_page(broken, 6);
  pdf2md::PipelineConfig config;
  config.dpi = kDpi;
  config.render.batch_size = 1;
  config.ocr.replicas = 1;
  ro::testing::SyncExecutor ex(pdf2md::compile_pipeline(config));
  auto r = ex.run({corpus.documents[0].pdf, broken.string()});
  ASSERT_EQ(r.outputs.size(), 2u);
  ASSERT_TRUE(r.outputs[0].ok()) << r.outputs[0].issue().cause;
  ASSERT_FALSE(r.outputs[1].ok());
  EXPECT_NE(r.outputs[1].issue().cause.find("cannot render page 2 of"), std::string::npos)
      << r.outputs[1].issue().cause;

  // One page per render RPC: the GroupFailure of page 2 seals pages 3 to 6 before any of
  // them reaches the renderer.
  for (int p = 2; p < 6; ++p) {
    EXPECT_EQ(first_rpc_with(ex.rpcs(), "RenderPage", fmt::format("1/{}", p)), ex.rpcs().size())
        << "page " << p + 1 << " was rendered";
  }
  const ro::CallMetrics& render = call_metrics(r.metrics, "RenderPage");
  EXPECT_EQ(render.grain_dispatches, 3u);  // the other document's page, pages 1 and 2
  EXPECT_EQ(render.suppressed_by_barrier, 4u);

  // On the command's path the document is listed with that cause; the other is written.
  const fs::path out = tmp.path() / "out";
  const pdf2md::ConvertSummary s =
      pdf2md::convert(options_for({(tmp.path() / "in").string()}, out));
  EXPECT_EQ(s.converted, (std::vector<std::string>{corpus.documents[0].stem}));
  const auto failures = read_jsonl(out / "failures.jsonl");
  ASSERT_EQ(failures.size(), 1u);
  EXPECT_EQ(failures[0].at("stem"), "broken");
  EXPECT_NE(failures[0].at("cause").get<std::string>().find("cannot render page 2 of"),
            std::string::npos)
      << failures[0].dump();
  EXPECT_FALSE(fs::exists(out / "broken.md"));
}

TEST(Pdf2mdPipeline, AReusedExecutorRendersAFileReplacedBetweenRuns) {
  TempDir tmp;
  const pdf2md::SampleCorpus corpus = pdf2md::make_samples(
      (tmp.path() / "in").string(), {.docs = 2, .seed = 3, .max_pages = 1, .corrupt = 0});
  const fs::path path = tmp.path() / "same.pdf";
  pdf2md::PipelineConfig config;
  config.dpi = kDpi;
  config.ocr.replicas = 1;
  ro::testing::SyncExecutor ex(pdf2md::compile_pipeline(config));
  for (const pdf2md::SampleDocument& doc : corpus.documents) {
    SCOPED_TRACE(doc.stem);
    // Replaced the way tools write files (a new file renamed over the old one), so a
    // document kept open from the first run would still read the first file.
    const fs::path staged = tmp.path() / "staged.pdf";
    fs::copy_file(doc.pdf, staged, fs::copy_options::overwrite_existing);
    fs::rename(staged, path);
    auto r = ex.run({path.string()});
    ASSERT_TRUE(r.outputs[0].ok()) << r.outputs[0].issue().cause;
    const auto md_pages = pdf2md::split_pages(r.outputs[0].value().text);
    ASSERT_EQ(md_pages.size(), 1u);
    EXPECT_GE(pdf2md::word_accuracy(doc.pages[0], md_pages[0].text), 0.95) << md_pages[0].text;
  }
}
