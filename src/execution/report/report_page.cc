// The report page: one self-contained HTML file drawn from a run's JSON report, with no
// script at all (so nothing in a report can run in it) and charts as inline SVG.
#include "rayorch/report_page.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>

#include "rayorch/atomic_file.h"

#include "execution/report/report_model.h"
#include "execution/report/svg.h"

namespace rayorch {
namespace {

using detail::escape_html;
using detail::ReportModel;

double busy_share(const detail::ReportCall& c, double elapsed) {
  return c.actors > 0 && elapsed > 0 ? c.busy_seconds / (static_cast<double>(c.actors) * elapsed)
                                     : 0.0;
}

// The one-line reading of where the run's time went, as an engineer reads the busy shares.
std::string verdict(const ReportModel& m) {
  if (m.calls.empty() || m.elapsed_seconds <= 0) return "The run did no work.";
  std::vector<const detail::ReportCall*> by_share;
  for (const auto& c : m.calls) by_share.push_back(&c);
  std::sort(by_share.begin(), by_share.end(), [&](auto* a, auto* b) {
    return busy_share(*a, m.elapsed_seconds) > busy_share(*b, m.elapsed_seconds);
  });
  const detail::ReportCall& top = *by_share.front();
  const double share = busy_share(top, m.elapsed_seconds);
  if (share < 0.5) {
    return fmt::format(
        "No stage was busy for half the run (the busiest, {}, {:.0f} %): the time went to "
        "start-up, admitting inputs or waiting on the driver, not to a stage.",
        top.call, 100 * share);
  }
  std::string line = fmt::format("{} bounded the run: its {} actor{} {} busy {:.0f} % of {:.2f} s",
                                 top.call, top.actors, top.actors == 1 ? "" : "s",
                                 top.actors == 1 ? "was" : "were", 100 * share, m.elapsed_seconds);
  if (by_share.size() > 1) {
    line += fmt::format("; the next, {}, {:.0f} %", by_share[1]->call,
                        100 * busy_share(*by_share[1], m.elapsed_seconds));
  }
  line += top.batch_size > 1 && top.mean_batch_fill < 0.5
              ? fmt::format(
                    ". Its batches were {:.0f} % full: more inputs in flight would fill "
                    "them before more actors help.",
                    100 * top.mean_batch_fill)
              : fmt::format(". More {} actors would shorten the run.", top.call);
  return line;
}

std::string summary_table(const ReportModel& m) {
  std::string rows;
  const auto row = [&](std::string_view name, const std::string& value) {
    rows += fmt::format("<tr><th>{}</th><td>{}</td></tr>", escape_html(name), escape_html(value));
  };
  row("elapsed", fmt::format("{:.2f} s", m.elapsed_seconds));
  row("parents delivered", std::to_string(m.roots_delivered));
  for (const auto& [outcome, n] : m.roots_by_outcome) {
    row(fmt::format("parents {}", outcome), std::to_string(n));
  }
  row("restored from the journal", std::to_string(m.roots_restored));
  row("values rebuilt", std::to_string(m.values_rebuilt));
  row("grains re-executed", std::to_string(m.grains_reexecuted));
  row("actors replaced", std::to_string(m.actors_replaced));
  if (m.aborted) row("stopped", m.error.empty() ? "aborted" : m.error);
  return "<table id='summary'>" + rows + "</table>";
}

std::string calls_section(const ReportModel& m) {
  std::string table =
      "<table id='calls'><tr><th>Call</th><th>Module</th><th>actors</th><th>RPCs</th>"
      "<th>grains</th><th>failed RPCs</th><th>batch</th><th>mean fill</th><th>busy</th></tr>";
  std::vector<detail::Bar> busy;
  for (const auto& c : m.calls) {
    table += fmt::format(
        "<tr class='call'><td class='call-name'>{}</td><td>{}</td><td>{}</td><td>{}</td>"
        "<td>{}</td><td>{}</td><td>{}</td><td>{:.0f} %</td><td>{:.2f} s</td></tr>",
        escape_html(c.call), escape_html(c.udf), c.actors, c.rpcs, c.grain_dispatches,
        c.failed_rpcs, c.batch_size, 100 * c.mean_batch_fill, c.busy_seconds);
    busy.push_back({c.call, busy_share(c, m.elapsed_seconds),
                    fmt::format("{:.0f} % busy", 100 * busy_share(c, m.elapsed_seconds))});
  }
  std::string fills;
  for (const auto& c : m.calls) {
    if (c.batch_size_histogram.empty()) continue;
    std::vector<std::pair<std::string, double>> buckets;
    for (const auto& [size, n] : c.batch_size_histogram) {
      buckets.emplace_back(std::to_string(size), static_cast<double>(n));
    }
    fills += fmt::format("<h3>{}</h3>", escape_html(c.call)) +
             detail::histogram(buckets, "grains per RPC (RPCs of each size)");
  }
  return "<h2>Stages</h2>" + table + "</table><h3>Actors busy, share of the run</h3>" +
         detail::bar_chart(busy, 1.0) + "<h2>Batch fill</h2>" + fills;
}

std::string pools_section(const ReportModel& m) {
  std::vector<detail::Series> series;
  std::string notes;
  for (const auto& p : m.pools) {
    std::vector<std::pair<double, double>> points;
    if (!p.actors_over_time.empty()) {
      for (const auto& [t, n] : p.actors_over_time) points.emplace_back(t, static_cast<double>(n));
    } else {
      // Without a sizing record, the pool grew as its actors started.
      std::vector<double> starts;
      for (const auto& [t, error] : p.starts) {
        if (error.empty()) starts.push_back(t);
      }
      std::sort(starts.begin(), starts.end());
      for (std::size_t i = 0; i < starts.size(); ++i) {
        points.emplace_back(std::max(0.0, starts[i]), static_cast<double>(i + 1));
      }
    }
    series.emplace_back(p.pool, std::move(points));
    for (const auto& [t, error] : p.starts) {
      if (!error.empty()) {
        notes += fmt::format("<li>{} at {:.2f} s: an actor failed to start: {}</li>",
                             escape_html(p.pool), t, escape_html(error));
      }
    }
    for (const std::string& r : p.resizes) {
      notes += fmt::format("<li>{}: {}</li>", escape_html(p.pool), escape_html(r));
    }
  }
  for (const std::string& n : m.node_losses) notes += "<li>" + escape_html(n) + "</li>";
  return "<h2>Pools over time</h2>" + detail::step_chart(series, m.elapsed_seconds, "actors") +
         (notes.empty() ? "" : "<ul id='pool-events'>" + notes + "</ul>");
}

std::string parents_section(const ReportModel& m) {
  std::string out = "<h2>Parents</h2>";
  std::vector<detail::Span> windows;
  for (const auto& b : m.input_batches) {
    windows.push_back({fmt::format("batch {} (rows {}-{})", b.index, b.first_row,
                                   b.first_row + b.rows - (b.rows > 0 ? 1 : 0)),
                       b.admitted_seconds, b.completed_seconds});
  }
  if (!windows.empty()) {
    out +=
        "<h3>Input batches, admitted to done</h3>" + detail::span_chart(windows, m.elapsed_seconds);
  }
  // Completion latency: a parent's completion less its input batch's admission.
  std::vector<std::pair<double, std::uint64_t>> latency;  // (seconds, row)
  std::vector<double> finished;
  for (const auto& b : m.input_batches) {
    for (std::uint64_t row = b.first_row; row < b.first_row + b.rows; ++row) {
      if (row >= m.root_completed_seconds.size() || m.root_completed_seconds[row] <= 0) continue;
      latency.emplace_back(m.root_completed_seconds[row] - b.admitted_seconds, row);
      finished.push_back(m.root_completed_seconds[row]);
    }
  }
  if (finished.empty()) {
    return out + "<p>Per-parent completion times are not recorded for streamed runs.</p>";
  }
  std::sort(finished.begin(), finished.end());
  std::vector<std::pair<double, double>> cumulative;
  for (std::size_t i = 0; i < finished.size(); ++i) {
    cumulative.emplace_back(finished[i], static_cast<double>(i + 1));
  }
  out += "<h3>Parents finished over time</h3>" +
         detail::step_chart({{"finished", cumulative}}, m.elapsed_seconds, "parents");
  std::sort(latency.begin(), latency.end(), std::greater<>());
  const double worst = latency.front().first;
  std::vector<std::pair<std::string, double>> buckets(8);
  for (std::size_t i = 0; i < buckets.size(); ++i) {
    buckets[i].first = fmt::format("≤{:.2g} s", worst * static_cast<double>(i + 1) / 8);
  }
  for (const auto& [s, row] : latency) {
    const std::size_t i =
        worst > 0 ? std::min<std::size_t>(7, static_cast<std::size_t>(8 * s / worst)) : 0;
    buckets[i].second += 1;
  }
  out += "<h3>Completion latency (admitted to done)</h3>" +
         detail::histogram(buckets, "parents per latency bucket") + "<ol id='slowest'>";
  for (std::size_t i = 0; i < std::min<std::size_t>(5, latency.size()); ++i) {
    out += fmt::format("<li>row {}: {:.2f} s</li>", latency[i].second, latency[i].first);
  }
  return out + "</ol>";
}

std::string sections(const ReportModel& m) {
  std::string out;
  for (const auto& [name, json] : m.sections) {
    out += fmt::format("<h2>{}</h2><pre class='section'>{}</pre>", escape_html(name),
                       escape_html(json));
  }
  return out;
}

constexpr const char* kStyle =
    "body{font:14px system-ui,sans-serif;margin:24px;max-width:980px;color:#222}"
    "table{border-collapse:collapse;margin:8px 0}td,th{padding:3px 10px;border-bottom:1px solid "
    "#ddd;text-align:left}#verdict{font-size:16px;padding:10px;background:#f4f6fa;"
    "border-left:4px solid #4e79a7}pre{background:#f7f7f7;padding:8px;overflow:auto}";

}  // namespace

std::string report_page_html(std::string_view report_json, std::string_view source) {
  const ReportModel m = detail::read_report(report_json, source);
  return fmt::format(
      "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
      "<meta http-equiv='Content-Security-Policy' content=\"default-src 'none'; style-src "
      "'unsafe-inline'\"><title>Run report: {0}</title><style>{1}</style></head><body>"
      "<h1>Run report</h1><p class='source'>{0}</p><p id='verdict'>{2}</p>{3}{4}{5}{6}{7}"
      "</body></html>\n",
      escape_html(source), kStyle, escape_html(verdict(m)), summary_table(m), calls_section(m),
      pools_section(m), parents_section(m), sections(m));
}

void write_report_page(const std::string& report_path, const std::string& page_path) {
  std::ifstream in(report_path, std::ios::binary);
  if (!in) throw std::invalid_argument(fmt::format("cannot read report {}", report_path));
  std::stringstream text;
  text << in.rdbuf();
  write_file_atomically(page_path, report_page_html(text.str(), report_path));
}

}  // namespace rayorch
