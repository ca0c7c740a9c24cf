// `rayorch pdf2md`, `rayorch make-samples` and `rayorch check-samples`: the document
// workload on the command line.
#include <algorithm>
#include <cstdio>
#include <exception>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "commands.h"
#include "pdf2md/convert.h"
#include "pdf2md/samples.h"
#include "workload_commands.h"
#include <fmt/format.h>
#include <fmt/ranges.h>

namespace rayorch::cli {
namespace {

constexpr const char* kExitCodes =
    "Exit status: 0 every document was converted (or restored by --resume); 1 the run finished "
    "but some documents failed (listed in OUTDIR/failures.jsonl); 2 bad command line, missing "
    "or unreadable input, duplicate document names, unwritable output, or an OCR language "
    "that cannot be loaded (nothing is converted); 3 the run stopped on an unrecoverable "
    "error (documents finished before it are complete; rerun with --resume).";

struct Pdf2mdArgs {
  pdf2md::ConvertOptions convert;
  bool quiet = false;
  bool no_progress = false;
};

// Earlier releases opened documents in a "meta" stage; its options keep working, unlisted.
void add_hidden_stage_aliases(CLI::App* cmd, const std::string& stage, pdf2md::StageConfig& cfg) {
  cmd->add_option("--" + stage + "-replicas", cfg.replicas)->check(CLI::Range(1, 256))->group("");
  cmd->add_option("--" + stage + "-batch", cfg.batch_size)->check(CLI::Range(1, 4096))->group("");
}

void run_pdf2md(Pdf2mdArgs& args) {
  args.convert.progress = !args.no_progress;
  run_conversion(
      "pdf2md", [&] { return pdf2md::convert(args.convert); }, pdf2md::format_summary, args.quiet,
      fmt::format("documents finished before the error are complete in {}; rerun with --resume "
                  "to convert the rest\n",
                  args.convert.out_dir));
}

void add_pdf2md(CLI::App& app) {
  auto args = std::make_shared<Pdf2mdArgs>();
  // One single-threaded OCR engine per core saturates the machine. A page renders in a tenth
  // of its OCR time or less, so one renderer per eight OCR engines keeps them fed without
  // taking a core from them on small machines.
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  args->convert.pipeline.ocr.replicas = cores;
  args->convert.pipeline.render.replicas = std::max(1, cores / 8);
  CLI::App* cmd = app.add_subcommand(
      "pdf2md",
      "Convert PDFs to Markdown: list each document's pages, render and OCR every page on its "
      "own, batched across documents, write each document as OUTDIR/<stem>.md as soon as its "
      "own pages are done");
  cmd->footer(kExitCodes);
  pdf2md::ConvertOptions& c = args->convert;
  add_input_options(cmd, c.inputs,
                    "PDF files, folders (searched recursively for *.pdf), glob patterns; "
                    "document names (file stems) must be unique");
  cmd->add_option("-o,--output", c.out_dir, "output directory (created if missing)")->required();
  cmd->add_option("--dpi", c.pipeline.dpi, "rendering resolution")
      ->check(CLI::Range(30, 1200))
      ->capture_default_str();
  add_stage_options(cmd, "open", "document opener (page count, no rendering)", c.pipeline.open,
                    "documents");
  add_hidden_stage_aliases(cmd, "meta", c.pipeline.open);
  add_stage_options(cmd, "render", "page renderer", c.pipeline.render, "pages (of any documents)");
  cmd->add_option("--isolation", c.pipeline.render_isolation,
                  "where pages render: process (worker processes, so a PDF that crashes the "
                  "renderer fails alone) or threads")
      ->transform(CLI::CheckedTransformer(
          std::map<std::string, rayorch::Isolation>{{"process", rayorch::Isolation::process},
                                                    {"threads", rayorch::Isolation::threads}},
          CLI::ignore_case))
      ->default_str("process");
  add_stage_options(cmd, "ocr", "OCR engine", c.pipeline.ocr, "pages");
  add_stage_options(cmd, "assemble", "Markdown assembly", c.pipeline.assemble);
  cmd->add_option("--lang", c.pipeline.lang, "Tesseract language")->capture_default_str();
  cmd->add_option("--tessdata", c.pipeline.tessdata,
                  "Tesseract data directory (default: Tesseract's own)");
  cmd->add_option("--input-batch-size", c.input_batch_size,
                  "documents per input batch (0: all in one). With --max-active-batches it "
                  "bounds how many documents are in flight")
      ->capture_default_str();
  cmd->add_option("--max-active-batches", c.max_active_input_batches,
                  "input batches in flight at once")
      ->check(CLI::Range(std::size_t{1}, std::size_t{1024}))
      ->capture_default_str();
  cmd->add_flag("--resume", c.resume,
                "continue an interrupted conversion: documents recorded finished in the run "
                "journal OUTDIR/.pdf2md-journal are not converted again (every run keeps one "
                "unless --no-journal; without --resume it starts over)");
  cmd->add_flag_callback(
         "--no-journal", [&c] { c.journal = false; },
         "keep no run journal (OUTDIR/.pdf2md-journal): a later --resume cannot skip the documents "
         "this run finishes")
      ->excludes("--resume");
  add_run_output_options(cmd, c, args->no_progress, args->quiet);
  cmd->callback([args] { run_pdf2md(*args); });
}

void add_make_samples(CLI::App& app) {
  auto dir = std::make_shared<std::string>();
  auto options = std::make_shared<pdf2md::SampleOptions>();
  CLI::App* cmd = app.add_subcommand(
      "make-samples",
      "Generate PDFs with known text (long-tailed page counts) plus corrupt files, with "
      "OUTDIR/expected/<stem>.txt and OUTDIR/manifest.json to check conversions against");
  cmd->add_option("outdir", *dir, "directory to write the corpus into")->required();
  cmd->add_option("--docs", options->docs, "readable documents")
      ->check(CLI::Range(0, 100000))
      ->capture_default_str();
  cmd->add_option("--seed", options->seed, "random seed")->capture_default_str();
  cmd->add_option("--max-pages", options->max_pages, "longest document")
      ->check(CLI::Range(1, 10000))
      ->capture_default_str();
  cmd->add_option("--corrupt", options->corrupt, "corrupt files")
      ->check(CLI::Range(0, 1000))
      ->capture_default_str();
  cmd->callback([dir, options] {
    const pdf2md::SampleCorpus corpus =
        run_or_usage("make-samples", [&] { return pdf2md::make_samples(*dir, *options); });
    std::size_t longest = 0;
    for (const auto& d : corpus.documents) longest = std::max(longest, d.pages.size());
    std::fputs(fmt::format("make-samples: {} documents, {} pages (longest {}), {} corrupt in {}\n",
                           corpus.documents.size(), corpus.total_pages(), longest,
                           corpus.corrupt.size(), *dir)
                   .c_str(),
               stdout);
  });
}

void add_check_samples(CLI::App& app) {
  auto samples = std::make_shared<std::string>();
  auto out = std::make_shared<std::string>();
  auto min_accuracy = std::make_shared<double>(0.95);
  CLI::App* cmd = app.add_subcommand(
      "check-samples",
      "Compare a pdf2md output directory with the known text of a make-samples corpus");
  cmd->footer(
      "Exit status: 0 every document is present, its pages in order, with word accuracy >= "
      "--min-accuracy, and exactly the corrupt files are listed as failed; 1 otherwise; 2 bad "
      "command line or unreadable corpus.");
  cmd->add_option("samples", *samples, "the make-samples directory")->required();
  cmd->add_option("outdir", *out, "the pdf2md output directory")->required();
  cmd->add_option("--min-accuracy", *min_accuracy, "required word accuracy per document")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  cmd->callback([samples, out, min_accuracy] {
    pdf2md::CorpusCheck check;
    pdf2md::SampleCorpus corpus;
    run_or_usage("check-samples", [&] {
      corpus = pdf2md::load_samples(*samples);
      check = pdf2md::check_outputs(corpus, *out);
    });
    bool ok = true;
    std::size_t docs_bad = 0;
    for (const pdf2md::DocumentCheck& d : check.documents) {
      const bool good = d.present && d.pages_in_order && d.accuracy >= *min_accuracy;
      if (!good) {
        ok = false;
        ++docs_bad;
        std::fputs(fmt::format("  {}: {}\n", d.stem,
                               !d.present ? "missing"
                               : !d.pages_in_order
                                   ? "pages missing or out of order"
                                   : fmt::format("word accuracy {:.1f}%", 100 * d.accuracy))
                       .c_str(),
                   stdout);
      }
    }
    std::vector<std::string> listed = check.failed_listed;
    std::vector<std::string> expected = corpus.corrupt;
    std::sort(listed.begin(), listed.end());
    std::sort(expected.begin(), expected.end());
    const bool failures_ok = listed == expected;
    if (!failures_ok) {
      ok = false;
      std::fputs(fmt::format("  failures.jsonl lists [{}], expected [{}]\n",
                             fmt::join(listed, ", "), fmt::join(expected, ", "))
                     .c_str(),
                 stdout);
    }
    std::fputs(fmt::format("check-samples: {} documents, {} pages, word accuracy {:.2f}%, {} "
                           "below {:.0f}%, failures listed {}: {}\n",
                           check.documents.size(), corpus.total_pages(), 100 * check.accuracy,
                           docs_bad, 100 * *min_accuracy, failures_ok ? "as expected" : "WRONG",
                           ok ? "OK" : "FAILED")
                   .c_str(),
               stdout);
    if (!ok) throw CLI::RuntimeError(kSomeFailed);
  });
}

}  // namespace

void add_pdf2md_commands(CLI::App& app) {
  add_pdf2md(app);
  add_make_samples(app);
  add_check_samples(app);
}

}  // namespace rayorch::cli
