// PDF directory -> Markdown directory. See convert.h.
#include "pdf2md/convert.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace pdf2md {
namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;

// Temporary files carry this infix so a later run can recognise and remove the leftovers of
// an interrupted one without touching anything else in the directory.
constexpr std::string_view kTempInfix = ".pdf2md-tmp-";

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

bool is_pdf_name(const fs::path& p) {
  std::string ext = p.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return ext == ".pdf";
}

void require_readable(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) {
    throw InputError(fmt::format("cannot read input {}: {}", p.string(), std::strerror(errno)));
  }
}

// Creates a file in `dir` and removes it: the only reliable writability test (permissions,
// read-only mounts, full quotas and ACLs all show up here).
void require_writable_dir(const fs::path& dir, const std::string& what) {
  std::string probe = (dir / ".pdf2md-probe-XXXXXX").string();
  const int fd = ::mkstemp(probe.data());
  if (fd < 0) {
    throw InputError(fmt::format("{} {} is not writable: {}", what,
                                 dir.empty() ? "." : dir.string(), std::strerror(errno)));
  }
  ::close(fd);
  ::unlink(probe.c_str());
}

void require_output_file_location(const std::string& path, const std::string& what) {
  if (path.empty()) return;
  fs::path parent = fs::path(path).parent_path();
  if (parent.empty()) parent = ".";
  std::error_code ec;
  if (!fs::is_directory(parent, ec)) {
    throw InputError(
        fmt::format("{} {}: directory {} does not exist", what, path, parent.string()));
  }
  require_writable_dir(parent, what + " directory");
}

void write_all(int fd, std::string_view content, const fs::path& tmp) {
  while (!content.empty()) {
    const ssize_t n = ::write(fd, content.data(), content.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error(
          fmt::format("cannot write {}: {}", tmp.string(), std::strerror(errno)));
    }
    content.remove_prefix(static_cast<std::size_t>(n));
  }
}

// Temporary file + fsync + rename: a reader (or a later --resume) sees either no file or the
// whole file, even if the process is killed mid-write.
void write_atomically(const fs::path& target, std::string_view content) {
  const fs::path tmp = target.parent_path() /
                       fmt::format(".{}{}{}", target.filename().string(), kTempInfix, ::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    throw std::runtime_error(
        fmt::format("cannot create {}: {}", tmp.string(), std::strerror(errno)));
  }
  try {
    write_all(fd, content, tmp);
    if (::fsync(fd) != 0) {
      throw std::runtime_error(
          fmt::format("cannot sync {}: {}", tmp.string(), std::strerror(errno)));
    }
  } catch (...) {
    ::close(fd);
    ::unlink(tmp.c_str());
    throw;
  }
  ::close(fd);
  if (::rename(tmp.c_str(), target.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    throw std::runtime_error(
        fmt::format("cannot move {} into place: {}", target.string(), std::strerror(err)));
  }
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
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.starts_with('.') && name.find(kTempInfix) != std::string::npos) {
      fs::remove(entry.path(), ec);
    }
  }
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

std::vector<std::string> resolve_inputs(const std::vector<std::string>& inputs) {
  if (inputs.empty()) throw InputError("no input given: name PDF files or directories");
  std::map<std::string, std::string> by_identity;  // canonical path -> path as found
  for (const std::string& input : inputs) {
    const fs::path p(input);
    std::error_code ec;
    const fs::file_status st = fs::status(p, ec);
    if (ec || !fs::exists(st)) {
      throw InputError(fmt::format("input not found: {}", input));
    }
    std::vector<fs::path> found;
    if (fs::is_directory(st)) {
      fs::recursive_directory_iterator it(p, fs::directory_options::follow_directory_symlink, ec);
      for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
        std::error_code fec;
        if (it->is_regular_file(fec) && is_pdf_name(it->path())) found.push_back(it->path());
      }
      if (ec) {
        throw InputError(fmt::format("cannot read input directory {}: {}", input, ec.message()));
      }
    } else if (fs::is_regular_file(st)) {
      found.push_back(p);
    } else {
      throw InputError(fmt::format("input {} is neither a file nor a directory", input));
    }
    for (const fs::path& f : found) {
      require_readable(f);
      std::error_code cec;
      fs::path id = fs::weakly_canonical(f, cec);
      if (cec) id = fs::absolute(f);
      by_identity.emplace(id.string(), f.lexically_normal().string());
    }
  }
  std::vector<std::string> files;
  for (auto& [id, path] : by_identity) files.push_back(path);
  std::sort(files.begin(), files.end());
  std::map<std::string, std::string> by_stem;
  for (const std::string& f : files) {
    const std::string stem = fs::path(f).stem().string();
    auto [it, inserted] = by_stem.emplace(stem, f);
    if (!inserted) {
      throw InputError(fmt::format(
          "duplicate document name '{}': {} and {} would both be written as {}.md; rename one "
          "of them or convert them into different output directories",
          stem, it->second, f, stem));
    }
  }
  if (files.empty()) throw InputError("no PDF files found in the inputs");
  return files;
}

ConvertSummary convert(const ConvertOptions& options) {
  ConvertSummary summary;
  // Everything that can be wrong with the command is checked before anything is written.
  const std::vector<std::string> files = resolve_inputs(options.inputs);
  if (options.out_dir.empty()) throw InputError("no output directory given");
  const fs::path out(options.out_dir);
  require_output_file_location(options.trace_path, "trace file");
  require_output_file_location(options.report_path, "report file");
  {
    std::error_code ec;
    fs::create_directories(out, ec);
    if (ec || !fs::is_directory(out)) {
      throw InputError(fmt::format("cannot create output directory {}: {}", options.out_dir,
                                   ec ? ec.message() : "a file of that name exists"));
    }
  }
  require_writable_dir(out, "output directory");
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
    rayorch::RunOptions run_options;
    run_options.input_batch_size = options.input_batch_size;
    run_options.max_active_input_batches = options.max_active_input_batches;
    run_options.progress = options.progress;
    run_options.trace_path = options.trace_path;
    run_options.report_path = options.report_path;
    const auto start = Clock::now();
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
    for (const rayorch::CallMetrics& m : result.metrics.calls) {
      summary.stages.push_back(StageSummary{m.call, m.rpcs, m.grain_dispatches, m.busy_seconds});
    }
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

  if (!options.report_path.empty()) {
    // Extends the engine's report (when this run produced one) with what pdf2md did.
    nlohmann::json report = nlohmann::json::object();
    if (metrics) report = nlohmann::json::parse(read_file(options.report_path), nullptr, false);
    if (report.is_discarded()) report = nlohmann::json::object();
    nlohmann::json failed = nlohmann::json::array();
    for (const FailedDocument& f : summary.failures) {
      failed.push_back({{"stem", f.stem}, {"outcome", f.outcome}, {"cause", f.cause}});
    }
    report["pdf2md"] = {
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
    };
    write_atomically(options.report_path, report.dump(2) + "\n");
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
  if (!s.stages.empty()) {
    out += "stages:";
    for (const StageSummary& st : s.stages) {
      out += fmt::format(" {} {} rpcs/{} grains busy {:.2f} s;", st.call, st.rpcs, st.grains,
                         st.busy_seconds);
    }
    out.back() = '\n';
  }
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
