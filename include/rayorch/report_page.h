// The report page: a run's JSON report (RunOptions::report_path) drawn as one self-contained
// HTML file (docs/REPORT.md): which stage bounded the run, stages' busy shares and batch
// fill, pools over time, input batches and parents finished over time, completion latency
// and the slowest parents, and every observer's section. The page has no script and loads
// nothing (a Content-Security-Policy forbids it); every text from the report is escaped.
#pragma once

#include <string>
#include <string_view>

namespace rayorch {

/// The page for a report's text; `source` names it (in the page and in errors). Throws
/// std::invalid_argument naming `source` and what is wrong: JSON that breaks (where), not a
/// report, a version this build does not read, a field missing or of the wrong type.
std::string report_page_html(std::string_view report_json, std::string_view source);

/// Reads the report at `report_path` and writes its page to `page_path` atomically. Throws
/// std::invalid_argument as report_page_html, or when the report cannot be read; what
/// write_file_atomically throws when the page cannot be written.
void write_report_page(const std::string& report_path, const std::string& page_path);

}  // namespace rayorch
