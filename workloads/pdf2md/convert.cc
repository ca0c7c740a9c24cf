// PDF directory -> Markdown directory. See convert.h.
#include "pdf2md/convert.h"

#include <algorithm>
#include <filesystem>

#include "common/convert_driver.h"
#include "common/files.h"
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <rayorch/atomic_file.h>

namespace pdf2md {
namespace fs = std::filesystem;

namespace {

// Temporary files carry ".pdf2md-tmp-" so a later run can recognise and remove the leftovers
// of an interrupted one without touching anything else in the directory; probe files that
// test a directory's writability carry ".pdf2md-probe-".
constexpr workloads::ConvertNaming kNaming{
    .probe_prefix = ".pdf2md-probe-",
    .temp_infix = ".pdf2md-tmp-",
    .journal_name = ".pdf2md-journal",
    .report_name = "pdf2md",
    .input_field = "stem",
    .redo = "convert every document again",
};

}  // namespace

std::vector<std::string> resolve_inputs(const workloads::InputSelection& inputs) {
  static const workloads::InputRules rules{
      {".pdf"},
      "no input given: name PDF files, folders or glob patterns, or a --manifest",
      "no PDF files found in the inputs",
      [](const std::string& stem, const std::string& first, const std::string& second) {
        return fmt::format(
            "duplicate document name '{}': {} and {} would both be written as {}.md; rename "
            "one of them or convert them into different output directories",
            stem, first, second, stem);
      }};
  return workloads::select_inputs(inputs, rules);
}

namespace {

// What pdf2md did, as the "pdf2md" section of the JSON report.
nlohmann::json report_section(const ConvertSummary& summary, const ConvertOptions& options) {
  std::vector<FailedDocument> failures = summary.failures;
  std::sort(failures.begin(), failures.end(),
            [](const FailedDocument& a, const FailedDocument& b) { return a.stem < b.stem; });
  nlohmann::json failed = nlohmann::json::array();
  for (const FailedDocument& f : failures) {
    failed.push_back({{"stem", f.stem}, {"outcome", f.outcome}, {"cause", f.cause}});
  }
  return {
      {"documents", summary.documents},
      {"converted", summary.converted},
      {"skipped", summary.skipped},
      {"failed", failed},
      {"pages", summary.pages},
      {"startup_seconds", summary.startup_seconds},
      {"run_seconds", summary.run_seconds},
      {"pages_per_second",
       summary.run_seconds > 0 ? static_cast<double>(summary.pages) / summary.run_seconds : 0.0},
      {"first_document_seconds", summary.first_document_seconds},
      {"dpi", options.pipeline.dpi},
      {"render_isolation",
       options.pipeline.render_isolation == ro::Isolation::process ? "process" : "threads"},
  };
}

}  // namespace

ConvertSummary convert(const ConvertOptions& options) {
  // Everything that can be wrong with the command is checked before anything is written.
  workloads::ConvertDriver<PdfToMarkdown, FailedDocument> driver(
      kNaming, options, resolve_inputs(options.inputs), &FailedDocument::stem);
  driver.prepare_output();
  driver.start_engines(compile_pipeline(options.pipeline));

  ConvertSummary summary;
  summary.documents = driver.files().size();
  summary.out_dir = driver.out().string();
  summary.failures_path = driver.failures_path();
  const auto take_tally = [&](const workloads::ConvertTally<FailedDocument>& t) {
    workloads::copy_tally(t, summary, &ConvertSummary::converted, &ConvertSummary::skipped,
                          &ConvertSummary::first_document_seconds);
  };
  // The key names the options that shape a document's Markdown too: a document converted
  // with others is not restored but converted again (and its file replaced).
  const std::string key_suffix = fmt::format("|dpi={}|lang={}|tessdata={}", options.pipeline.dpi,
                                             options.pipeline.lang, options.pipeline.tessdata);
  // One Markdown file per document, committed with its journal record (docs/IO.md): after a
  // crash and --resume each document's file is there once, complete; a restored document's
  // file is left alone, or written again from the journal when it is missing.
  driver.write_through(rayorch::file_per_root(
      [&](const rayorch::SinkRoot& root) { return driver.stems()[root.row] + ".md"; },
      [](const rayorch::SinkRoot& root, std::string& out) {
        out += root.as<Markdown>().value().text;
      }));
  std::vector<std::uint32_t> pages(driver.files().size(), 0);
  driver.run(
      key_suffix, [&](std::size_t row, const Markdown& doc) { pages[row] = doc.pages; },
      [&](std::size_t row) { summary.pages += pages[row]; },
      [&](const workloads::ConvertTally<FailedDocument>& t) {
        take_tally(t);
        return report_section(summary, options).dump();
      });
  take_tally(driver.tally());
  return summary;
}

std::string format_summary(const ConvertSummary& s) {
  std::string out =
      fmt::format("pdf2md: {} documents: {} converted, {} failed, {} restored from the journal{}\n",
                  s.documents, s.converted.size(), s.failures.size(), s.skipped.size(),
                  workloads::dropped_on_purpose(s.dropped.size()));
  if (s.run_seconds > 0) {
    out +=
        fmt::format("pages: {} in {:.2f} s = {:.2f} pages/s (engine startup {:.2f} s)\n", s.pages,
                    s.run_seconds, static_cast<double>(s.pages) / s.run_seconds, s.startup_seconds);
  }
  out += workloads::format_summary_tail("document", s.first_document_seconds, s.stages,
                                        fmt::format("markdown: {}/<stem>.md\n", s.out_dir),
                                        s.failures, s.failures_path, &FailedDocument::stem);
  return out;
}

}  // namespace pdf2md
