#include "compare_results.h"

#include <algorithm>
#include <map>

#include "workload.h"
#include <fmt/format.h>

namespace rayorch::bench {

void read_result(const nlohmann::json& j, const std::vector<std::uint32_t>& pages, int ocr_actors,
                 int ocr_batch, Measured& m) {
  m.version = j.value("version", "");
  m.e2e = j.value("end_to_end_seconds", 0.0);
  m.first =
      j["first_document_seconds"].is_number() ? j["first_document_seconds"].get<double>() : m.e2e;
  m.init = j.value("startup_seconds", 0.0);
  m.driver_cpu = j.value("driver_cpu_seconds", 0.0);
  m.run_driver_cpu = j.value("run_driver_cpu_seconds", 0.0);
  const auto done = j.value("document_completion_seconds", std::vector<double>{});
  const Stats d = stats_of(done);
  m.done_mean = d.mean;
  m.done_p50 = d.median;
  m.done_p95 = d.p95;
  const auto ready = j.value("ocr_ready_seconds", std::vector<double>{});
  m.ramp = ready.empty() ? 0 : *std::max_element(ready.begin(), ready.end());
  double first_start = 0, last_end = 0, busy = 0, rows = 0;
  const auto& batches = j["ocr_batches"];
  for (std::size_t i = 0; i < batches.size(); ++i) {
    const double n = batches[i][0], s = batches[i][1], e = batches[i][2];
    first_start = i == 0 ? s : std::min(first_start, s);
    last_end = i == 0 ? e : std::max(last_end, e);
    busy += e - s;
    rows += n;
  }
  m.ocr_batches = static_cast<double>(batches.size());
  m.ocr_fill = batches.empty() ? 0 : rows / (m.ocr_batches * ocr_batch);
  m.steady = last_end - first_start;
  m.tail = batches.empty() ? 0 : m.e2e - last_end;
  m.busy_share = m.steady > 0 ? busy / (ocr_actors * m.steady) : 0;
  const auto& got = j["documents"];
  for (std::size_t i = 0; i < pages.size(); ++i) {
    const std::string key = std::to_string(i);
    const DocResult want = expected_result(static_cast<std::uint32_t>(i), pages[i]);
    if (!got.contains(key) || got[key].get<std::vector<std::uint64_t>>() != want.pages)
      ++m.mismatches;
  }
  if (got.size() != pages.size()) m.mismatches += 1;
  m.actors = read_actor_timeline(j);
  m.calls = j.value("calls", nlohmann::json::array());
  if (m.actors) m.own = own_busy(*m.actors);
}

std::string spread(const std::vector<double>& v, const char* f) {
  if (v.empty()) return "-";
  const Stats s = stats_of(v);
  if (v.size() == 1) return fmt::format(fmt::runtime(f), s.median);
  return fmt::format(fmt::runtime(std::string(f) + " [" + f + "-" + f + "]"), s.median, s.min,
                     s.max);
}

Summary summarize(const std::vector<Measured>& runs) {
  Summary s;
  std::map<std::string, std::vector<double>> v;
  for (const Measured& m : runs) {
    if (!m.ran) {
      s.error = m.error;
      continue;
    }
    s.ran = true;
    s.version = m.version;
    s.e2e.push_back(m.e2e);
    v["first"].push_back(m.first);
    v["init"].push_back(m.init);
    v["ramp"].push_back(m.ramp);
    v["steady"].push_back(m.steady);
    v["tail"].push_back(m.tail);
    v["mean"].push_back(m.done_mean);
    v["p50"].push_back(m.done_p50);
    v["p95"].push_back(m.done_p95);
    v["batches"].push_back(m.ocr_batches);
    v["fill"].push_back(m.ocr_fill);
    v["busy"].push_back(m.busy_share);
    v["cpu"].push_back(m.cpu);
    v["dcpu"].push_back(m.driver_cpu);
    v["rdcpu"].push_back(m.run_driver_cpu);
    v["rss"].push_back(m.rss_mib);
    if (m.actors) {
      v["own_least"].push_back(m.own.least);
      v["own_median"].push_back(m.own.median);
      if (!s.actors) s.actors = m.actors, s.actors_e2e = m.e2e;
    }
    if (s.calls.empty() && !m.calls.empty()) s.calls = m.calls;
    s.mismatches = std::max(s.mismatches, m.mismatches);
    s.exit_failed = s.exit_failed || !m.exit_note.empty();
  }
  if (!s.ran) return s;
  s.first = median_of(v["first"]);
  s.init = median_of(v["init"]);
  s.ramp = median_of(v["ramp"]);
  s.steady = median_of(v["steady"]);
  s.tail = median_of(v["tail"]);
  s.done_mean = median_of(v["mean"]);
  s.done_p50 = median_of(v["p50"]);
  s.done_p95 = median_of(v["p95"]);
  s.ocr_batches = median_of(v["batches"]);
  s.ocr_fill = median_of(v["fill"]);
  s.busy = median_of(v["busy"]);
  s.cpu = median_of(v["cpu"]);
  s.driver_cpu = median_of(v["dcpu"]);
  s.run_driver_cpu = median_of(v["rdcpu"]);
  s.rss = median_of(v["rss"]);
  s.own_least = median_of(v["own_least"]);
  s.own_median = median_of(v["own_median"]);
  return s;
}

}  // namespace rayorch::bench
