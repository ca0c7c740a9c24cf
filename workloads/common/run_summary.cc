// Run options, output directories and stage summaries of the workload commands. See
// run_summary.h.
#include "common/run_summary.h"

#include <system_error>

#include "common/files.h"
#include <fmt/format.h>

namespace workloads {
namespace fs = std::filesystem;

std::vector<StageSummary> stage_summaries(const rayorch::RunMetrics& metrics) {
  std::vector<StageSummary> stages;
  for (const rayorch::CallMetrics& m : metrics.calls) {
    stages.push_back(StageSummary{m.call, m.rpcs, m.grain_dispatches, m.busy_seconds});
  }
  return stages;
}

fs::path report_page_beside(const fs::path& report_path) {
  fs::path page = report_path;
  if (page.extension() == ".html") return page.string() + ".html";
  return page.replace_extension(".html");
}

std::string format_stages(const std::vector<StageSummary>& stages) {
  if (stages.empty()) return {};
  std::string out = "stages:";
  for (const StageSummary& st : stages) {
    out += fmt::format(" {} {} rpcs/{} grains busy {:.2f} s;", st.call, st.rpcs, st.grains,
                       st.busy_seconds);
  }
  out.back() = '\n';
  return out;
}

std::string prepare_run_journal(const fs::path& out, std::string_view name, bool resume,
                                bool journal) {
  if (resume && !journal) throw InputError("--resume needs the run journal; drop --no-journal");
  const fs::path path = out / name;
  if (!resume) {
    std::error_code ec;
    fs::remove(path, ec);
  }
  return journal ? path.string() : std::string();
}

void create_output_dir(const fs::path& out, const std::string& given,
                       std::string_view probe_prefix) {
  std::error_code ec;
  fs::create_directories(out, ec);
  if (ec || !fs::is_directory(out)) {
    throw InputError(fmt::format("cannot create output directory {}: {}", given,
                                 ec ? ec.message() : "a file of that name exists"));
  }
  require_writable_dir(out, "output directory", probe_prefix);
}

}  // namespace workloads
