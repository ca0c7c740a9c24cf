// The document workload end to end: generated PDFs with known text are rendered, OCR'd across
// documents, gathered back per document and written as Markdown.
#include "pdf2md/pdf2md.h"

#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "pdf2md/convert.h"
#include "pdf2md/samples.h"
#include "support/workload_testing.h"
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <rayorch/codec.h>
#include <rayorch/detail/journal.h>
#include <rayorch/rayorch.h>

namespace fs = std::filesystem;
namespace ro = rayorch;

namespace {

// Low resolution keeps the test fast; the samples' large font still OCRs cleanly at it.
constexpr int kDpi = 100;

// A scratch directory named after this test.
class TempDir : public workload_testing::TempDir {
 public:
  TempDir() : workload_testing::TempDir("pdf2md-test") {}
};

using workload_testing::read_file;
using workload_testing::read_jsonl;
using workload_testing::sorted;
using workload_testing::temporaries_in;

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

pdf2md::ConvertOptions options_for(std::vector<std::string> inputs, const fs::path& out) {
  pdf2md::ConvertOptions c;
  c.inputs = std::move(inputs);
  c.out_dir = out.string();
  c.pipeline.dpi = kDpi;
  c.progress = false;
  return c;
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

TEST(Pdf2mdConvert, ResumeRestoresJournaledDocumentsAndConvertsTheRest) {
  TempDir tmp;
  const fs::path in = tmp.path() / "in";
  const fs::path out = tmp.path() / "out";
  const pdf2md::SampleCorpus corpus =
      pdf2md::make_samples(in.string(), {.docs = 4, .seed = 1, .max_pages = 2, .corrupt = 1});

  // A first run that only got through two documents.
  pdf2md::ConvertSummary first = pdf2md::convert(
      options_for({(in / "doc-000.pdf").string(), (in / "doc-001.pdf").string()}, out));
  ASSERT_EQ(sorted(first.converted), (std::vector<std::string>{"doc-000", "doc-001"}));
  EXPECT_TRUE(fs::exists(out / ".pdf2md-journal"));
  const std::string kept = read_file(out / "doc-000.md");
  const std::string lost = read_file(out / "doc-001.md");
  const auto kept_time = fs::last_write_time(out / "doc-000.md");

  // What an interruption (or a user) can leave behind: a lost output, a partial file of a
  // document the journal does not know, and the temporary file of a write that never
  // reached its rename.
  fs::remove(out / "doc-001.md");
  std::ofstream(out / "doc-002.md") << "# doc-002\n\n## Page 1\n\nDocument 2 pa";
  std::ofstream(out / ".doc-003.md.pdf2md-tmp-999") << "# doc-003\n";

  // The directory has more documents now: the journal's records still count.
  pdf2md::ConvertOptions again = options_for({in.string()}, out);
  again.resume = true;
  again.report_path = (tmp.path() / "report.json").string();
  const pdf2md::ConvertSummary second = pdf2md::convert(again);
  EXPECT_EQ(second.documents, 5u);
  EXPECT_EQ(second.skipped, (std::vector<std::string>{"doc-000", "doc-001"}));
  EXPECT_EQ(sorted(second.converted), (std::vector<std::string>{"doc-002", "doc-003"}));
  ASSERT_EQ(second.failures.size(), 1u);
  EXPECT_EQ(second.failures[0].stem, "corrupt");
  const auto report = nlohmann::json::parse(read_file(again.report_path));
  EXPECT_EQ(sorted(report.at("pdf2md").at("converted").get<std::vector<std::string>>()),
            (std::vector<std::string>{"doc-002", "doc-003"}));
  EXPECT_EQ(report.at("pdf2md").at("skipped").get<std::vector<std::string>>(),
            (std::vector<std::string>{"doc-000", "doc-001"}));
  EXPECT_EQ(report.at("roots_restored"), 2);

  // A complete output stays untouched; a lost one comes back from the journal, unconverted.
  EXPECT_EQ(read_file(out / "doc-000.md"), kept);
  EXPECT_EQ(fs::last_write_time(out / "doc-000.md"), kept_time);
  EXPECT_EQ(read_file(out / "doc-001.md"), lost);
  EXPECT_TRUE(temporaries_in(out).empty());
  const pdf2md::CorpusCheck check = pdf2md::check_outputs(corpus, out.string());
  for (const pdf2md::DocumentCheck& d : check.documents) {
    EXPECT_TRUE(d.present && d.pages_in_order) << d.stem;
    EXPECT_GE(d.accuracy, 0.95) << d.stem;
  }
  EXPECT_EQ(check.failed_listed, (std::vector<std::string>{"corrupt"}));

  // Nothing left to do but the document that can never succeed: it is tried again.
  const pdf2md::ConvertSummary third = pdf2md::convert(again);
  EXPECT_TRUE(third.converted.empty());
  EXPECT_EQ(third.skipped.size(), 4u);
  ASSERT_EQ(third.failures.size(), 1u);
  EXPECT_EQ(third.failures[0].stem, "corrupt");
  const auto failures = read_jsonl(out / "failures.jsonl");
  ASSERT_EQ(failures.size(), 1u);
  EXPECT_EQ(failures[0].at("stem"), "corrupt");
  EXPECT_EQ(failures[0].at("key").get<std::string>().rfind("corrupt|dpi=", 0), 0u);
  EXPECT_EQ(failures[0].at("outcome"), "suppressed");  // its document could not be opened
  EXPECT_EQ(failures[0].at("call").get<std::string>().rfind("OpenPdf", 0), 0u);
  EXPECT_EQ(failures[0].at("restored"), false);

  // Other pipeline options: the journal's documents do not match them, so nothing restores.
  pdf2md::ConvertOptions other = again;
  other.pipeline.dpi = kDpi + 20;
  const pdf2md::ConvertSummary redone = pdf2md::convert(other);
  EXPECT_TRUE(redone.skipped.empty());
  EXPECT_EQ(redone.converted.size(), 4u);

  // Without --resume the journal starts over: everything is converted again.
  const pdf2md::ConvertSummary fresh = pdf2md::convert(options_for({in.string()}, out));
  EXPECT_TRUE(fresh.skipped.empty());
  EXPECT_EQ(fresh.converted.size(), 4u);
}

TEST(Pdf2mdConvert, NoJournalKeepsNoneAndCannotResume) {
  TempDir tmp;
  const fs::path in = tmp.path() / "in";
  const fs::path out = tmp.path() / "out";
  pdf2md::make_samples(in.string(), {.docs = 2, .seed = 2, .max_pages = 1});
  ASSERT_EQ(pdf2md::convert(options_for({in.string()}, out)).converted.size(), 2u);
  ASSERT_TRUE(fs::exists(out / ".pdf2md-journal"));

  // A run without a journal converts everything and leaves no journal behind, not even the
  // old one, which would describe the earlier outputs.
  pdf2md::ConvertOptions plain = options_for({in.string()}, out);
  plain.journal = false;
  const pdf2md::ConvertSummary s = pdf2md::convert(plain);
  EXPECT_EQ(s.converted.size(), 2u);
  EXPECT_TRUE(s.skipped.empty());
  EXPECT_FALSE(fs::exists(out / ".pdf2md-journal"));

  plain.resume = true;
  try {
    pdf2md::convert(plain);
    ADD_FAILURE() << "resume without a journal was accepted";
  } catch (const pdf2md::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--no-journal"), std::string::npos) << e.what();
  }
}

#ifdef RAYORCH_CLI_PATH
// The stems of the documents recorded finished (present) in a pdf2md run journal, read by
// the journal's own rule: records up to the first whose length or checksum does not hold.
std::set<std::string> journaled_documents(const fs::path& journal) {
  const std::string bytes = read_file(journal);
  std::set<std::string> present;
  std::string_view rest = bytes;
  while (rest.size() >= 8) {
    std::string_view f = rest;
    const auto len = ro::detail::get_le<std::uint32_t>(f, "length");
    const auto sum = ro::detail::get_le<std::uint32_t>(f, "checksum");
    if (len == 0 || f.size() < len || ro::detail::crc32(f.substr(0, len)) != sum) break;
    std::string_view in = f.substr(0, len);
    if (in[0] == 'R') {
      in.remove_prefix(1);
      const std::string key = ro::Codec<std::string>::decode(in);
      (void)ro::Codec<std::uint32_t>::decode(in);  // outputs
      if (ro::Codec<std::uint8_t>::decode(in) == 0) {
        present.insert(key);
      } else {
        present.erase(key);  // a later record replaces an earlier one
      }
    }
    rest.remove_prefix(8 + len);
  }
  return present;
}

// `rayorch pdf2md` in a child process is killed with SIGKILL once it has written a number of
// documents the seed picks (from its output, not a delay), then resumed with --resume: every
// document is complete with the Markdown of an uninterrupted run, no partial or temporary
// file is left, and the documents the journal held at the kill are restored, not converted
// again. RAYORCH_TEST_SEED=<seed> replays a run.
TEST(Pdf2mdConvert, ResumesAfterSigkillWithEveryDocumentCompleteAndNoneRedone) {
  const char* given = std::getenv("RAYORCH_TEST_SEED");
  const unsigned seed = given != nullptr && *given != '\0'
                            ? static_cast<unsigned>(std::stoul(given))
                            : std::random_device{}();
  std::printf("ResumesAfterSigkill seed %u (replay: RAYORCH_TEST_SEED=%u)\n", seed, seed);
  std::fflush(stdout);
  std::mt19937 rng(seed);
  TempDir tmp;
  const fs::path in = tmp.path() / "in";
  const pdf2md::SampleCorpus corpus =
      pdf2md::make_samples(in.string(), {.docs = 8, .seed = 3, .max_pages = 3, .corrupt = 1});
  const fs::path reference = tmp.path() / "reference";
  const pdf2md::ConvertSummary uninterrupted =
      pdf2md::convert(options_for({in.string()}, reference));
  ASSERT_EQ(uninterrupted.converted.size(), 8u);

  int killed = 0;
  for (int point = 0; point < 2; ++point) {
    const std::size_t kill_after = 1 + rng() % 5;  // documents written before the kill
    SCOPED_TRACE(
        fmt::format("point {}: kill after {} documents, seed {}", point, kill_after, seed));
    const fs::path out = tmp.path() / fmt::format("out-{}", point);
    const std::string dpi = std::to_string(kDpi);
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      ::execl(RAYORCH_CLI_PATH, RAYORCH_CLI_PATH, "pdf2md", in.c_str(), "-o", out.c_str(), "--dpi",
              dpi.c_str(), "--no-progress", "--quiet", "--ocr-replicas", "1", "--render-replicas",
              "1", "--input-batch-size", "2", static_cast<char*>(nullptr));
      ::_exit(127);
    }
    // Watch the output directory; kill as soon as enough documents are there.
    int status = 0;
    bool exited = false;
    while (true) {
      std::size_t written = 0;
      std::error_code ec;
      for (const auto& e : fs::directory_iterator(out, ec)) {
        const std::string name = e.path().filename().string();
        if (name.ends_with(".md") && !name.starts_with(".")) ++written;
      }
      if (written >= kill_after) break;
      if (::waitpid(child, &status, WNOHANG) == child) {
        exited = true;
        break;
      }
      ::usleep(1000);
    }
    if (!exited) {
      ::kill(child, SIGKILL);
      ASSERT_EQ(::waitpid(child, &status, 0), child);
    }
    ASSERT_FALSE(exited && !(WIFEXITED(status) && WEXITSTATUS(status) <= 1))
        << "pdf2md failed on its own, status " << status;
    if (WIFSIGNALED(status)) ++killed;
    std::set<std::string> recorded;  // stems
    for (const std::string& key : journaled_documents(out / ".pdf2md-journal")) {
      recorded.insert(key.substr(0, key.find('|')));
    }

    pdf2md::ConvertOptions resume = options_for({in.string()}, out);
    resume.resume = true;
    const pdf2md::ConvertSummary s = pdf2md::convert(resume);
    // The journal's documents were restored, the others converted, each once.
    EXPECT_EQ(std::set<std::string>(s.skipped.begin(), s.skipped.end()), recorded);
    std::set<std::string> done(s.skipped.begin(), s.skipped.end());
    for (const std::string& stem : s.converted) {
      EXPECT_EQ(recorded.count(stem), 0u) << stem << " was recorded finished but converted again";
      EXPECT_TRUE(done.insert(stem).second) << stem << " converted twice";
    }
    EXPECT_EQ(done.size(), 8u);
    // Every document complete, as an uninterrupted run wrote it; nothing partial or
    // temporary; the corrupt file listed once.
    std::set<std::string> names;
    for (const auto& e : fs::directory_iterator(out)) names.insert(e.path().filename().string());
    std::set<std::string> expected_names = {"failures.jsonl", ".pdf2md-journal"};
    for (const auto& d : corpus.documents) {
      expected_names.insert(d.stem + ".md");
      EXPECT_EQ(read_file(out / (d.stem + ".md")), read_file(reference / (d.stem + ".md")))
          << d.stem;
    }
    EXPECT_EQ(names, expected_names);
    EXPECT_TRUE(temporaries_in(out).empty());
    const auto failures = read_jsonl(out / "failures.jsonl");
    ASSERT_EQ(failures.size(), 1u);
    EXPECT_EQ(failures[0].at("stem"), "corrupt");
  }
  std::printf("ResumesAfterSigkill: %d of 2 runs killed\n", killed);
}
#endif

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
  const auto files = pdf2md::resolve_inputs(
      {(tmp.path() / "a").string(), (tmp.path() / "a" / "report.pdf").string()});
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
