// The OCR actors of one system's run of `bench compare`, one by one: when each became ready
// and the batches it ran. The startup regime judges a pool by how busy each actor is from its
// own readiness, and shows how many actors were ready and busy over the run.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace rayorch::bench {

/// Seconds since the system's clock started.
struct ActorTimeline {
  struct Actor {
    double ready = 0;
    std::vector<std::array<double, 3>> batches;  ///< rows, start, end
  };
  std::vector<Actor> actors;
  /// The end of the OCR work: the last batch's end over every actor (0: no batch).
  double ocr_end() const;
};

/// The "ocr_actors" list of a result file (bench/peers/common.py write_result), or nothing
/// when the system did not write one.
std::optional<ActorTimeline> read_actor_timeline(const nlohmann::json& result);

/// How busy each actor was from its own readiness to the end of the OCR work: the least and
/// the median share over the actors ready before that end; the others are counted apart
/// (they were ready too late to get any work).
struct OwnBusy {
  double least = 0;
  double median = 0;
  /// The least busy actor: when it became ready, and how long before the end of the OCR work
  /// its last batch ended (the tail it sat idle while others ran the last batches).
  double least_ready = 0;
  double least_idle_at_end = 0;
  int counted = 0;
  int ready_after_end = 0;
};
OwnBusy own_busy(const ActorTimeline& timeline);

/// A small text plot: per column of `width` over [0, e2e], the actors ready at its end and
/// the actors busy on average in it (a digit each; '+' for 10 or more).
std::string actors_over_time(const ActorTimeline& timeline, double e2e, int width = 60);

}  // namespace rayorch::bench
