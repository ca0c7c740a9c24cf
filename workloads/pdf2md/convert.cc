// PDF directory -> Markdown directory. See convert.h.
#include "pdf2md/convert.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>

#include "common/files.h"
#include "common/output.h"
#include "common/run_summary.h"
#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace pdf2md {
namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;

// Temporary files carry this infix so a later run can recognise and remove the leftovers of
// an interrupted one without touching anything else in the directory.
constexpr std::string_view kTempInfix = ".pdf2md-tmp-";

using workloads::seconds_since;

// Probe files that test a directory's writability carry this prefix.
constexpr std::string_view kProbePrefix = ".pdf2md-probe-";

void require_output_file_location(const std::string& path, const std::string& what) {
  workloads::require_output_file_location(path, what, kProbePrefix);
}

// Temporary file + fsync + rename: a reader (or a later --resume) sees either no file or the
// whole file, even if the process is killed mid-write.
void write_atomically(const fs::path& target, std::string_view content) {
  rayorch::write_file_atomically(target.string(), content);
}

// The run journal in the output directory (--resume).
constexpr const char* kJournalName = ".pdf2md-journal";

void remove_stale_temporaries(const fs::path& dir) {
  workloads::remove_stale_temporaries(dir.string(), kTempInfix);
}

}  // namespace

std::vector<std::string> resolve_inputs(const std::vector<std::string>& inputs) {
  static const workloads::InputRules rules{
      {".pdf"},
      "no input given: name PDF files or directories",
      "no PDF files found in the inputs",
      [](const std::string& stem, const std::string& first, const std::string& second) {
        return fmt::format(
            "duplicate document name '{}': {} and {} would both be written as {}.md; rename "
            "one of them or convert them into different output directories",
            stem, first, second, stem);
      }};
  return workloads::resolve_inputs(inputs, rules);
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
  ConvertSummary summary;
  // Everything that can be wrong with the command is checked before anything is written.
  const std::vector<std::string> files = resolve_inputs(options.inputs);
  if (options.out_dir.empty()) throw InputError("no output directory given");
  const fs::path out(options.out_dir);
  require_output_file_location(options.trace_path, "trace file");
  require_output_file_location(options.report_path, "report file");
  workloads::create_output_dir(out, options.out_dir, kProbePrefix);
  remove_stale_temporaries(out);

  summary.documents = files.size();
  summary.out_dir = out.string();
  summary.failures_path = (out / "failures.jsonl").string();
  const std::string journal_path = (out / kJournalName).string();
  const std::string journal =
      workloads::prepare_run_journal(out, kJournalName, options.resume, options.journal);
  std::vector<std::string> stems;
  for (const std::string& f : files) stems.push_back(fs::path(f).stem().string());

  const auto startup = Clock::now();
  std::optional<rayorch::Executor<PdfToMarkdown>> built;
  try {
    built.emplace(compile_pipeline(options.pipeline));
  } catch (const rayorch::ExecutionError& e) {
    // Nothing has run yet: an engine that cannot load (say, a missing OCR language) is a
    // problem with the command, not a failed run.
    throw InputError(fmt::format("cannot start the pipeline: {}", e.what()));
  }
  rayorch::Executor<PdfToMarkdown>& executor = *built;
  summary.startup_seconds = seconds_since(startup);
  rayorch::RunOptions run_options = workloads::run_options_of(options);
  run_options.journal.path = journal;
  // The key names the options that shape a document's Markdown too: a document converted
  // with others is not restored but converted again (and its file replaced).
  const std::string key_suffix = fmt::format("|dpi={}|lang={}|tessdata={}", options.pipeline.dpi,
                                             options.pipeline.lang, options.pipeline.tessdata);
  run_options.journal.key = [&](std::size_t row) { return stems[row] + key_suffix; };
  run_options.journal.allow_other_inputs = true;  // a directory may gain documents
  run_options.dead_letters = summary.failures_path;
  run_options.dead_letter_fields = [&](std::size_t row) {
    return std::vector<std::pair<std::string, std::string>>{{"stem", stems[row]},
                                                            {"input", files[row]}};
  };
  const auto start = Clock::now();
  // Which delivered documents were computed and which restored: the observer's on_root
  // follows each delivery.
  std::vector<std::uint32_t> pages(files.size(), 0);
  run_options.observers.push_back(
      std::make_shared<workloads::RootObserver>([&](const rayorch::RootEvent& e) {
        if (e.outcome != rayorch::Outcome::present) return;
        if (e.restored) {
          summary.skipped.push_back(stems[e.row]);
          return;
        }
        if (summary.converted.empty()) summary.first_document_seconds = seconds_since(start);
        summary.converted.push_back(stems[e.row]);
        summary.pages += pages[e.row];
      }));
  // pdf2md's section of the engine's report, written with it at the end of the run.
  run_options.observers.push_back(std::make_shared<workloads::ReportSectionObserver>("pdf2md", [&] {
    summary.run_seconds = seconds_since(start);
    std::sort(summary.skipped.begin(), summary.skipped.end());
    return report_section(summary, options).dump();
  }));
  rayorch::RunResult<Markdown> result;
  try {
    result = executor.run(files, run_options, [&](std::size_t row, rayorch::Output<Markdown> doc) {
      if (doc.ok()) {
        const fs::path target = out / (stems[row] + ".md");
        // A restored document's file is usually there already, complete: leave it alone.
        if (workloads::read_file(target) != doc.value().text) {
          write_atomically(target, doc.value().text);
        }
        pages[row] = doc.value().pages;
      } else {
        const rayorch::OutputIssue& issue = doc.issue();
        summary.failures.push_back(FailedDocument{
            stems[row], files[row], std::string(rayorch::to_string(issue.outcome)), issue.cause});
      }
    });
  } catch (const std::invalid_argument& e) {
    // Raised before anything ran: the journal or the failure list cannot be used.
    if (std::string_view(e.what()).find("another pipeline") != std::string_view::npos) {
      throw InputError(fmt::format(
          "cannot resume: the run journal {} was written by another version of the pipeline; "
          "rerun without --resume to convert every document again",
          journal_path));
    }
    throw InputError(e.what());
  }
  summary.run_seconds = seconds_since(start);
  summary.stages = workloads::stage_summaries(result.metrics);
  std::sort(summary.skipped.begin(), summary.skipped.end());
  std::sort(summary.failures.begin(), summary.failures.end(),
            [](const FailedDocument& a, const FailedDocument& b) { return a.stem < b.stem; });
  return summary;
}

std::string format_summary(const ConvertSummary& s) {
  std::string out =
      fmt::format("pdf2md: {} documents: {} converted, {} failed, {} restored from the journal\n",
                  s.documents, s.converted.size(), s.failures.size(), s.skipped.size());
  if (s.run_seconds > 0) {
    out +=
        fmt::format("pages: {} in {:.2f} s = {:.2f} pages/s (engine startup {:.2f} s)\n", s.pages,
                    s.run_seconds, static_cast<double>(s.pages) / s.run_seconds, s.startup_seconds);
  }
  if (s.first_document_seconds >= 0) {
    out += fmt::format("first finished document after {:.2f} s\n", s.first_document_seconds);
  }
  out += workloads::format_stages(s.stages);
  out += fmt::format("markdown: {}/<stem>.md\n", s.out_dir);
  if (!s.failures.empty()) {
    out += fmt::format("failures ({}), listed in {}:\n", s.failures.size(), s.failures_path);
    for (const FailedDocument& f : s.failures) {
      out += fmt::format("  {} ({}): {}\n", f.stem, f.outcome, f.cause);
    }
  }
  return out;
}

}  // namespace pdf2md
