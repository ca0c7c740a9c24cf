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

// An output counts as complete only if it ends with the marker Assemble appends last.
bool output_complete(const fs::path& md) {
  std::ifstream in(md, std::ios::binary | std::ios::ate);
  if (!in) return false;
  const std::streamoff size = in.tellg();
  const std::streamoff tail = std::min<std::streamoff>(size, 256);
  std::string buf(static_cast<std::size_t>(tail), '\0');
  in.seekg(size - tail);
  in.read(buf.data(), tail);
  return in.good() && buf.find(kCompleteMarker) != std::string::npos;
}

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
  std::vector<std::string> todo;
  std::vector<std::string> stems;
  for (const std::string& f : files) {
    const std::string stem = fs::path(f).stem().string();
    if (options.resume && output_complete(out / (stem + ".md"))) {
      summary.skipped.push_back(stem);
    } else {
      todo.push_back(f);
      stems.push_back(stem);
    }
  }

  std::optional<rayorch::RunMetrics> metrics;
  if (!todo.empty()) {
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
    const auto start = Clock::now();
    // pdf2md's section of the engine's report, written with it at the end of the run.
    run_options.observers.push_back(
        std::make_shared<workloads::ReportSectionObserver>("pdf2md", [&] {
          summary.run_seconds = seconds_since(start);
          return report_section(summary, options).dump();
        }));
    auto result =
        executor.run(todo, run_options, [&](std::size_t row, rayorch::Output<Markdown> doc) {
          if (doc.ok()) {
            write_atomically(out / (stems[row] + ".md"), doc.value().text);
            if (summary.converted.empty()) summary.first_document_seconds = seconds_since(start);
            summary.converted.push_back(stems[row]);
            summary.pages += doc.value().pages;
          } else {
            const rayorch::OutputIssue& issue = doc.issue();
            summary.failures.push_back(
                FailedDocument{stems[row], todo[row],
                               std::string(rayorch::to_string(issue.outcome)), issue.cause});
          }
        });
    summary.run_seconds = seconds_since(start);
    summary.stages = workloads::stage_summaries(result.metrics);
    metrics = std::move(result.metrics);
  }

  std::sort(summary.failures.begin(), summary.failures.end(),
            [](const FailedDocument& a, const FailedDocument& b) { return a.stem < b.stem; });
  std::string jsonl;
  for (const FailedDocument& f : summary.failures) {
    jsonl +=
        nlohmann::json{
            {"stem", f.stem}, {"input", f.input}, {"outcome", f.outcome}, {"cause", f.cause}}
            .dump();
    jsonl += '\n';
  }
  write_atomically(summary.failures_path, jsonl);

  if (!options.report_path.empty() && !metrics) {
    // Nothing ran (every document was already complete): the report is pdf2md's alone.
    write_atomically(options.report_path,
                     nlohmann::json{{"pdf2md", report_section(summary, options)}}.dump(2) + "\n");
  }
  return summary;
}

std::string format_summary(const ConvertSummary& s) {
  std::string out =
      fmt::format("pdf2md: {} documents: {} converted, {} failed, {} skipped (already complete)\n",
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
