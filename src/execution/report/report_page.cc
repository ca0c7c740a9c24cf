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

#include "execution/report/page_html.h"
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

// "12 ms", "1.40 s": a duration as a reader compares them.
std::string seconds_text(double s) {
  return s < 1.0 ? fmt::format("{:.1f} ms", 1e3 * s) : fmt::format("{:.2f} s", s);
}

std::string calls_section(const ReportModel& m) {
  std::string table =
      "<table id='calls'><tr><th>Call</th><th>Module</th><th>actors</th><th>RPCs</th>"
      "<th>grains</th><th>failed RPCs</th><th>batch</th><th>mean fill</th><th>busy</th>"
      "<th>RPC p50 / p90 / p99 / max</th></tr>";
  std::vector<detail::Bar> busy;
  for (const auto& c : m.calls) {
    table += fmt::format(
        "<tr class='call'><td class='call-name'>{}</td><td>{}</td><td>{}</td><td>{}</td>"
        "<td>{}</td><td>{}</td><td>{}</td><td>{:.0f} %</td><td>{:.2f} s</td><td>{}</td></tr>",
        escape_html(c.call), escape_html(c.udf), c.actors, c.rpcs, c.grain_dispatches,
        c.failed_rpcs, c.batch_size, 100 * c.mean_batch_fill, c.busy_seconds,
        c.rpc_seconds.size() == 4
            ? fmt::format("{} / {} / {} / {}", seconds_text(c.rpc_seconds[0]),
                          seconds_text(c.rpc_seconds[1]), seconds_text(c.rpc_seconds[2]),
                          seconds_text(c.rpc_seconds[3]))
            : std::string("-"));
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
  // The stages' windows over the run: when each Call's actors were at work, and how many.
  std::vector<detail::Series> over_time;
  for (const auto& c : m.calls) {
    if (c.busy_over_time.empty()) continue;
    std::vector<std::pair<double, double>> points;
    for (std::size_t i = 0; i < c.busy_over_time.size(); ++i) {
      points.emplace_back(static_cast<double>(i) * c.busy_bucket_seconds, c.busy_over_time[i]);
    }
    over_time.emplace_back(c.call, std::move(points));
  }
  const std::string windows =
      over_time.empty() ? ""
                        : "<h3 id='busy-over-time'>Actors busy per Call over time</h3>" +
                              detail::step_chart(over_time, m.elapsed_seconds, "actors busy");
  return "<h2>Stages</h2>" + table + "</table><h3>Actors busy, share of the run</h3>" +
         detail::bar_chart(busy, 1.0) + windows + "<h2>Batch fill</h2>" + fills;
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

// The paper's picture: for parents evenly spaced by row, when each stage worked on them,
// so that one sees a parent's stages follow each other and other parents' overlap them.
std::string stage_windows(const ReportModel& m) {
  if (m.parent_windows.empty()) return "";
  std::vector<std::string> calls;
  for (const detail::ReportCall& c : m.calls) calls.push_back(c.call);
  std::vector<detail::WindowRow> rows;
  for (const detail::ReportParentWindows& p : m.parent_windows) {
    rows.push_back({fmt::format("parent {}", p.row), p.windows});
  }
  return "<h3 id='stage-windows'>Stage windows per parent (first to last RPC of each Call for "
         "it)</h3>" +
         detail::window_chart(rows, calls, m.elapsed_seconds);
}

// Points of a curve over parents at most (the chart is about 600 pixels wide).
constexpr std::size_t kCurvePoints = 600;
// Rows of the input batches' chart at most.
constexpr std::size_t kSpanRows = 64;

std::string parents_section(const ReportModel& m) {
  std::string out = "<h2>Parents</h2>";
  // One row per input batch up to kSpanRows, else per run of consecutive batches (from the
  // first's admission to the last completion among them): the chart stays readable.
  std::vector<detail::Span> windows;
  const std::size_t batches = m.input_batches.size();
  const std::size_t per_row = (batches + kSpanRows - 1) / kSpanRows;
  for (std::size_t first = 0; first < batches; first += per_row) {
    const std::size_t last = std::min(batches, first + per_row) - 1;
    const detail::ReportInputBatch& a = m.input_batches[first];
    const detail::ReportInputBatch& z = m.input_batches[last];
    double completed = 0;
    for (std::size_t i = first; i <= last; ++i) {
      completed = std::max(completed, m.input_batches[i].completed_seconds);
    }
    const std::uint64_t last_row = z.first_row + z.rows - (z.rows > 0 ? 1 : 0);
    windows.push_back(
        {first == last
             ? fmt::format("batch {} (rows {}-{})", a.index, a.first_row, last_row)
             : fmt::format("batches {}-{} (rows {}-{})", a.index, z.index, a.first_row, last_row),
         a.admitted_seconds, completed});
  }
  if (!windows.empty()) {
    out +=
        "<h3>Input batches, admitted to done</h3>" + detail::span_chart(windows, m.elapsed_seconds);
  }
  out += stage_windows(m);
  std::vector<double> finished;
  for (const double t : m.root_completed_seconds) {
    if (t > 0) finished.push_back(t);
  }
  if (finished.empty()) {
    return out +
           "<p>No per-parent completion time is recorded (a streamed run, or none "
           "finished yet).</p>";
  }
  // Completion latency: a parent's completion less its input batch's admission.
  std::vector<std::pair<double, std::uint64_t>> latency;  // (seconds, row)
  for (const auto& b : m.input_batches) {
    for (std::uint64_t row = b.first_row; row < b.first_row + b.rows; ++row) {
      if (row >= m.root_completed_seconds.size() || m.root_completed_seconds[row] <= 0) continue;
      latency.emplace_back(m.root_completed_seconds[row] - b.admitted_seconds, row);
    }
  }
  std::sort(finished.begin(), finished.end());
  // One point per parent up to kCurvePoints, then evenly spaced ranks: the curve keeps its
  // shape at the chart's resolution and the page its size, whatever the number of parents.
  std::vector<std::pair<double, double>> cumulative;
  const std::size_t points = std::min(finished.size(), kCurvePoints);
  for (std::size_t k = 1; k <= points; ++k) {
    const std::size_t i = (k * finished.size() + points - 1) / points - 1;
    cumulative.emplace_back(finished[i], static_cast<double>(i + 1));
  }
  out += "<h3>Parents finished over time</h3>" +
         detail::step_chart({{"finished", cumulative}}, m.elapsed_seconds, "parents");
  if (latency.empty()) return out;
  std::sort(latency.begin(), latency.end(), std::greater<>());
  const double worst = latency.front().first;
  std::vector<std::pair<std::string, double>> buckets(8);
  for (std::size_t i = 0; i < buckets.size(); ++i) {
    const double upper = worst * static_cast<double>(i + 1) / 8;
    buckets[i].first =
        upper >= 10 ? fmt::format("≤{:.0f} s", upper) : fmt::format("≤{:.2g} s", upper);
  }
  for (const auto& [s, row] : latency) {
    const std::size_t i =
        worst > 0 ? std::min<std::size_t>(7, static_cast<std::size_t>(8 * s / worst)) : 0;
    buckets[i].second += 1;
  }
  out += "<h3>Completion latency (admitted to done)</h3>" +
         detail::histogram(buckets, "parents per latency bucket") +
         "<h3>Slowest parents (Entity key: the source row)</h3><ol id='slowest'>";
  for (std::size_t i = 0; i < std::min<std::size_t>(5, latency.size()); ++i) {
    out += fmt::format("<li>parent {}: {:.2f} s</li>", latency[i].second, latency[i].first);
  }
  return out + "</ol>";
}

// The children per parent at one expansion: the given counts, or ranges when there are many.
std::vector<std::pair<std::string, double>> fan_out_buckets(
    const std::map<std::uint64_t, std::uint64_t>& hist) {
  std::vector<std::pair<std::string, double>> out;
  if (hist.size() <= 12) {
    for (const auto& [children, parents] : hist) {
      out.emplace_back(std::to_string(children), static_cast<double>(parents));
    }
    return out;
  }
  const std::uint64_t most = hist.rbegin()->first;
  const std::uint64_t width = (most + 10) / 10;
  for (std::uint64_t lo = 0; lo <= most; lo += width) {
    out.emplace_back(fmt::format("{}-{}", lo, lo + width - 1), 0.0);
  }
  for (const auto& [children, parents] : hist) {
    out[children / width].second += static_cast<double>(parents);
  }
  return out;
}

// The children a parent's list had at the given rank of the parents (nearest rank).
std::uint64_t fan_out_at(const detail::ReportExpand& x, double q) {
  const auto rank = static_cast<std::uint64_t>(std::ceil(q * static_cast<double>(x.parents)));
  std::uint64_t seen = 0;
  for (const auto& [children, parents] : x.fan_out_histogram) {
    seen += parents;
    if (seen >= std::max<std::uint64_t>(rank, 1)) return children;
  }
  return 0;
}

// Per expansion, how many children its parents had: the input-dependent shape of the work.
std::string fan_out_section(const ReportModel& m) {
  std::string out;
  for (const detail::ReportExpand& x : m.expands) {
    if (x.parents == 0) continue;
    out += fmt::format(
        "<h3>{} p{}</h3><p class='fan-out'>{} parents made {} children: {:.1f} per parent, "
        "median {}, p90 {}, most {}</p>",
        escape_html(x.call), x.port, x.parents, x.children,
        static_cast<double>(x.children) / static_cast<double>(x.parents), fan_out_at(x, 0.5),
        fan_out_at(x, 0.9), fan_out_at(x, 1.0));
    out += detail::histogram(fan_out_buckets(x.fan_out_histogram), "parents by children made");
  }
  return out.empty() ? "" : "<h2 id='fan-out'>Fan-out per expansion</h2>" + out;
}

// Failed parents by the Call and cause that decided them: what to fix first, and where.
std::string failures_section(const ReportModel& m) {
  if (m.failures.empty()) return "";
  std::vector<const detail::ReportFailureGroup*> groups;
  for (const auto& g : m.failures) groups.push_back(&g);
  std::stable_sort(groups.begin(), groups.end(),
                   [](auto* a, auto* b) { return a->roots > b->roots; });
  std::string rows;
  for (const auto* g : groups) {
    std::string examples;
    for (const auto& [entity, row] : g->examples) {
      examples += fmt::format("{}{} (row {})", examples.empty() ? "" : ", ",
                              entity.empty() ? "-" : escape_html(entity), row);
    }
    rows += fmt::format(
        "<tr class='failure'><td>{}</td><td>{}</td><td class='cause'>{}</td><td>{}</td>"
        "<td>{}</td></tr>",
        g->call.empty() ? "-" : escape_html(g->call), escape_html(g->outcome),
        escape_html(g->cause), g->roots, examples);
  }
  return "<h2>Failures</h2><table id='failures'><tr><th>Call</th><th>outcome</th>"
         "<th>cause</th><th>parents</th><th>examples (Entity key)</th></tr>" +
         rows + "</table>";
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
    "border-left:4px solid #4e79a7}pre{background:#f7f7f7;padding:8px;overflow:auto}"
    "#live-status{color:#2a7a2a}#live-status.ended{color:#a33}";

}  // namespace

namespace detail {

std::string report_page_html(const ReportModel& m, std::string_view source,
                             const LivePageParts* live) {
  // The report page runs no script at all; the live page runs exactly one, its own (the
  // nonce), which may only fetch the page again from where it came.
  const std::string policy = live == nullptr ? "default-src 'none'; style-src 'unsafe-inline'"
                                             : fmt::format(
                                                   "default-src 'none'; style-src 'unsafe-inline'; "
                                                   "script-src 'nonce-{}'; connect-src 'self'",
                                                   live->nonce);
  return fmt::format(
      "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
      "<meta http-equiv='Content-Security-Policy' content=\"{0}\"><title>{1}: {2}</title>"
      "<style>{3}</style></head><body><h1>{1}</h1><p class='source'>{2}</p>{4}"
      "<div id='page'>{5}<p "
      "id='verdict'>{6}</p>{7}{8}{9}{10}{11}{12}{13}</div>{14}</body></html>\n",
      policy, live == nullptr ? "Run report" : "Live run", escape_html(source), kStyle,
      live == nullptr ? ""
                      : "<p id='live-status'>Live: redrawn every second while the run lasts.</p>",
      live == nullptr ? "" : live->now_html, escape_html(verdict(m)), summary_table(m),
      calls_section(m), failures_section(m), pools_section(m), parents_section(m),
      fan_out_section(m), sections(m),
      live == nullptr ? ""
                      : fmt::format("<script nonce='{}'>{}</script>", live->nonce, live->script));
}

}  // namespace detail

std::string report_page_html(std::string_view report_json, std::string_view source) {
  return detail::report_page_html(detail::read_report(report_json, source), source, nullptr);
}

void write_report_page(const std::string& report_path, const std::string& page_path) {
  std::ifstream in(report_path, std::ios::binary);
  if (!in) throw std::invalid_argument(fmt::format("cannot read report {}", report_path));
  std::stringstream text;
  text << in.rdbuf();
  write_file_atomically(page_path, report_page_html(text.str(), report_path));
}

}  // namespace rayorch
