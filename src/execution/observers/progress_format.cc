// The progress display's text. See progress_format.h.
#include "execution/observers/progress_format.h"

#include <cmath>
#include <cstdint>
#include <vector>

#include <fmt/format.h>

namespace rayorch::detail {
namespace {

// How much a line says, from the most to the least; each level keeps what the next drops.
enum class Detail {
  full,          // "OcrPage#2 done 900 queued 430 in-flight 16 busy 97%"
  short_labels,  // "OcrPage#2 900 q430 f16 97%"
  names_cut,     // Call and pool names cut to kCutName characters
  busy_only,     // idle Calls (nothing queued or in flight, not the bottleneck) folded
  bottleneck,    // the bottleneck alone; the other Calls and the pools folded
};
constexpr std::size_t kCutName = 8;

std::string name_at(std::string_view name, Detail detail) {
  if (detail < Detail::names_cut || name.size() <= kCutName) return std::string(name);
  return fmt::format("{}~", name.substr(0, kCutName - 1));
}

// Roots done of the total, the rate of this run's roots and the time left at that rate.
std::string roots_text(const ProgressEvent& e, Detail detail) {
  std::string s = e.total_known ? fmt::format("roots {}/{}", e.roots_done, e.roots_total)
                                : fmt::format("roots {}/?", e.roots_done);
  if (e.total_known && e.roots_total > 0 && detail == Detail::full) {
    s += fmt::format(" ({:.0f}%)", 100.0 * static_cast<double>(e.roots_done) /
                                       static_cast<double>(e.roots_total));
  }
  if (e.roots_restored > 0 && detail == Detail::full) {
    s += fmt::format(" ({} restored)", e.roots_restored);
  }
  const std::size_t computed = e.roots_done - std::min(e.roots_done, e.roots_restored);
  const double rate =
      e.elapsed_seconds > 0 ? static_cast<double>(computed) / e.elapsed_seconds : 0.0;
  s += detail == Detail::full ? fmt::format(" {:.3g} roots/s", rate)
                              : fmt::format(" {:.3g}/s", rate);
  if (e.total_known && !e.final && rate > 0 && e.roots_done < e.roots_total) {
    s += " ETA " + format_duration(static_cast<double>(e.roots_total - e.roots_done) / rate);
  }
  return s;
}

std::string pool_text(const PoolProgress& p, Detail detail) {
  std::string s = detail == Detail::full
                      ? fmt::format("{} actors {}/{} ready", p.pool, p.ready, p.actors)
                      : fmt::format("{} {}/{} up", name_at(p.pool, detail), p.ready, p.actors);
  if (p.failed > 0) s += fmt::format(" ({} failed)", p.failed);
  return s;
}

std::string call_text(const CallProgress& c, bool bottleneck, Detail detail) {
  const std::string name = (bottleneck ? "*" : "") + name_at(c.call, detail);
  const long busy = std::lround(100 * c.busy_share);
  if (detail == Detail::full) {
    return fmt::format("{} done {} queued {} in-flight {} busy {}%", name, c.done, c.ready,
                       c.in_flight, busy);
  }
  return fmt::format("{} {} q{} f{} {}%", name, c.done, c.ready, c.in_flight, busy);
}

std::string line_at(const ProgressEvent& e, Detail detail) {
  std::string line = roots_text(e, detail);
  // Pools still starting (or short of actors that failed to start) say so first.
  std::size_t folded = 0;
  for (const PoolProgress& p : e.pools) {
    if (p.ready == p.actors) continue;
    if (detail == Detail::bottleneck) {
      ++folded;
    } else {
      line += " | " + pool_text(p, detail);
    }
  }
  const std::optional<std::size_t> bottleneck = bottleneck_call(e.calls);
  for (std::size_t i = 0; i < e.calls.size(); ++i) {
    const CallProgress& c = e.calls[i];
    const bool is_bottleneck = bottleneck == i;
    const bool idle = c.ready == 0 && c.in_flight == 0;
    if (!is_bottleneck && (detail == Detail::bottleneck || (detail == Detail::busy_only && idle))) {
      ++folded;
      continue;
    }
    line += " | " + call_text(c, is_bottleneck, detail);
  }
  if (folded > 0) line += fmt::format(" | +{}", folded);
  return line;
}

}  // namespace

std::optional<std::size_t> bottleneck_call(std::span<const CallProgress> calls) {
  std::optional<std::size_t> best;
  for (std::size_t i = 0; i < calls.size(); ++i) {
    if (calls[i].busy_share <= 0) continue;
    if (!best || calls[i].busy_share >= calls[*best].busy_share) best = i;
  }
  return best;
}

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0 || seconds > 1e9) return "?";
  const auto total = static_cast<std::uint64_t>(std::llround(seconds));
  const std::uint64_t h = total / 3600, m = total / 60 % 60, s = total % 60;
  return h > 0 ? fmt::format("{}:{:02}:{:02}", h, m, s) : fmt::format("{}:{:02}", m, s);
}

std::string format_progress(const ProgressEvent& e, std::size_t width) {
  std::string line;
  for (Detail detail : {Detail::full, Detail::short_labels, Detail::names_cut, Detail::busy_only,
                        Detail::bottleneck}) {
    line = line_at(e, detail);
    if (width == 0 || line.size() <= width) return line;
  }
  if (width <= 3) return line.substr(0, width);
  return line.substr(0, width - 3) + "...";
}

}  // namespace rayorch::detail
