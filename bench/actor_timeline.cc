#include "actor_timeline.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace rayorch::bench {

double ActorTimeline::ocr_end() const {
  double end = 0;
  for (const Actor& a : actors)
    for (const auto& b : a.batches) end = std::max(end, b[2]);
  return end;
}

std::optional<ActorTimeline> read_actor_timeline(const nlohmann::json& result) {
  if (!result.contains("ocr_actors")) return std::nullopt;
  ActorTimeline t;
  for (const auto& a : result.at("ocr_actors")) {
    ActorTimeline::Actor actor;
    actor.ready = a.at("ready").get<double>();
    for (const auto& b : a.at("batches"))
      actor.batches.push_back(
          {b.at(0).get<double>(), b.at(1).get<double>(), b.at(2).get<double>()});
    t.actors.push_back(std::move(actor));
  }
  return t;
}

OwnBusy own_busy(const ActorTimeline& timeline) {
  const double end = timeline.ocr_end();
  std::vector<double> shares;
  OwnBusy out;
  for (const auto& a : timeline.actors) {
    if (a.ready >= end) {
      ++out.ready_after_end;
      continue;
    }
    double busy = 0;
    double last = a.ready;
    for (const auto& b : a.batches) {
      busy += std::max(0.0, std::min(b[2], end) - std::max(b[1], a.ready));
      last = std::max(last, b[2]);
    }
    shares.push_back(busy / (end - a.ready));
    if (shares.size() == 1 || shares.back() < out.least) {
      out.least = shares.back();
      out.least_ready = a.ready;
      out.least_idle_at_end = end - std::min(last, end);
    }
  }
  if (shares.empty()) return out;
  std::sort(shares.begin(), shares.end());
  out.counted = static_cast<int>(shares.size());
  out.least = shares.front();
  const std::size_t n = shares.size();
  out.median = n % 2 ? shares[n / 2] : (shares[n / 2 - 1] + shares[n / 2]) / 2;
  return out;
}

namespace {

char digit(double count) {
  const long n = std::lround(count);
  return n >= 10 ? '+' : static_cast<char>('0' + std::max(0L, n));
}

}  // namespace

std::string actors_over_time(const ActorTimeline& timeline, double e2e, int width) {
  if (e2e <= 0 || width <= 0) return "";
  const double step = e2e / width;
  std::string ready(static_cast<std::size_t>(width), '0'), busy = ready;
  for (int col = 0; col < width; ++col) {
    const double from = col * step, to = from + step;
    double ready_count = 0, busy_seconds = 0;
    for (const auto& a : timeline.actors) {
      if (a.ready <= to) ++ready_count;
      for (const auto& b : a.batches)
        busy_seconds += std::max(0.0, std::min(b[2], to) - std::max(b[1], from));
    }
    ready[static_cast<std::size_t>(col)] = digit(ready_count);
    busy[static_cast<std::size_t>(col)] = digit(busy_seconds / step);
  }
  return fmt::format("  ready |{}|\n  busy  |{}|\n  0 s {:>{}} {:.0f} s\n", ready, busy, "",
                     std::max(0, width - 6), e2e);
}

}  // namespace rayorch::bench
