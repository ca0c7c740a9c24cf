// One pool's runtime state: the transitions of its actors and its measurements. See
// pool_state.h.
#include "execution/run/pool_state.h"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

namespace rayorch::detail {
namespace {

using Kind = ActorEvent::Kind;

double seconds_between(PoolState::Clock::time_point from, PoolState::Clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

}  // namespace

const char* to_string(ActorPhase phase) {
  switch (phase) {
    case ActorPhase::stopped:
      return "stopped";
    case ActorPhase::starting:
      return "starting";
    case ActorPhase::ready:
      return "ready";
    case ActorPhase::held:
      return "held";
    case ActorPhase::failed:
      return "failed";
  }
  return "unknown";
}

PoolState::PoolState(Options options)
    : options_(std::move(options)),
      actors_(static_cast<std::size_t>(std::max(options_.actors, 0)),
              Actor{.phase = options_.initial,
                    .asked = options_.created,
                    .ready_at = options_.created,
                    .held_since = options_.created}),
      target_(options_.initial == ActorPhase::stopped ? 0 : options_.actors),
      starts_{.pool = options_.name, .actors = options_.actors, .started = {}} {
  counts_[static_cast<std::size_t>(options_.initial)] = actors();
  if (options_.initial == ActorPhase::ready) {
    // Built before the executor returned: started at its start.
    ever_ready_ = actors() > 0;
    for (int a = 0; a < actors(); ++a)
      starts_.started.push_back({.actor = a, .started_seconds = 0.0, .error = {}});
  }
  note_waiting(options_.created);
}

bool PoolState::apply(const ActorEvent& event) {
  if (!apply_phase(event)) return false;
  note_waiting(event.at);
  return true;
}

bool PoolState::apply_phase(const ActorEvent& event) {
  if (event.actor < 0 || event.actor >= actors()) return false;
  Actor& actor = actors_[static_cast<std::size_t>(event.actor)];
  switch (event.kind) {
    case Kind::starting:
      if (actor.phase != ActorPhase::stopped) return false;
      actor.asked = event.at;
      move(actor, ActorPhase::starting);
      return true;
    case Kind::ready:
      if (actor.phase != ActorPhase::starting) return false;
      actor.ready_at = event.at;
      ever_ready_ = true;
      startup_seconds_ += seconds_between(actor.asked, event.at);
      ++startups_;
      record_start(event);
      move(actor, ActorPhase::ready);
      return true;
    case Kind::failed:
      if (actor.phase != ActorPhase::starting) return false;
      record_start(event);
      move(actor, ActorPhase::failed);
      return true;
    case Kind::held:
      if (actor.phase != ActorPhase::ready) return false;
      actor.held_since = event.at;
      move(actor, ActorPhase::held);
      return true;
    case Kind::resumed:
      if (actor.phase != ActorPhase::held) return false;
      move(actor, ActorPhase::ready);
      return true;
    case Kind::restarting:
      if (actor.phase != ActorPhase::ready && actor.phase != ActorPhase::held) return false;
      actor.asked = event.at;
      move(actor, ActorPhase::starting);
      return true;
    case Kind::retired:
      if (actor.phase != ActorPhase::ready) return false;
      move(actor, ActorPhase::stopped);
      return true;
  }
  return false;
}

bool PoolState::waits_for_first_actor() const {
  return count(ActorPhase::starting) > 0 && count(ActorPhase::ready) + count(ActorPhase::held) == 0;
}

void PoolState::note_waiting(Clock::time_point at) {
  if (!waits_for_first_actor()) {
    unready_since_.reset();
  } else if (!unready_since_) {
    unready_since_ = at;
  }
}

void PoolState::move(Actor& actor, ActorPhase to) {
  --counts_[static_cast<std::size_t>(actor.phase)];
  ++counts_[static_cast<std::size_t>(to)];
  actor.phase = to;
}

void PoolState::record_start(const ActorEvent& event) {
  starts_.started.push_back(
      {.actor = event.actor,
       .started_seconds = std::max(0.0, seconds_between(options_.created, event.at)),
       .error = event.kind == Kind::failed ? event.error : std::string{}});
}

void PoolState::check() const {
  std::array<int, 5> tally{};
  for (const Actor& a : actors_) ++tally[static_cast<std::size_t>(a.phase)];
  for (std::size_t p = 0; p < tally.size(); ++p) {
    if (tally[p] != counts_[p]) {
      throw std::logic_error(fmt::format("pool {}: {} actors are {} but the count says {}",
                                         options_.name, tally[p],
                                         to_string(static_cast<ActorPhase>(p)), counts_[p]));
    }
  }
  const auto finished = static_cast<int>(starts_.started.size());
  const int failed = count(ActorPhase::failed);
  const auto failed_starts =
      static_cast<int>(std::count_if(starts_.started.begin(), starts_.started.end(),
                                     [](const ActorStartMetrics& s) { return !s.error.empty(); }));
  if (failed_starts != failed) {
    throw std::logic_error(fmt::format("pool {}: {} failed actors but {} failed starts recorded",
                                       options_.name, failed, failed_starts));
  }
  if (startups_ > finished - failed_starts) {
    throw std::logic_error(fmt::format("pool {}: {} start-up times for {} successful starts",
                                       options_.name, startups_, finished - failed_starts));
  }
  if (ever_ready_ != (finished > failed_starts)) {
    throw std::logic_error(
        fmt::format("pool {}: some actor became ready is {}, but {} of {} "
                    "recorded starts succeeded",
                    options_.name, ever_ready_, finished - failed_starts, finished));
  }
  if (target_ < 0) throw std::logic_error(fmt::format("pool {}: negative target", options_.name));
  if (waits_for_first_actor() != unready_since_.has_value()) {
    throw std::logic_error(
        fmt::format("pool {}: {} starting, {} ready, {} held, but it {} waiting for a first actor",
                    options_.name, count(ActorPhase::starting), count(ActorPhase::ready),
                    count(ActorPhase::held), unready_since_ ? "is" : "is not"));
  }
}

bool PoolState::can_never_run() const {
  const int failed = count(ActorPhase::failed);
  const bool all_failed = actors() > 0 && failed == actors();
  const bool started_failed = failed > 0 && count(ActorPhase::starting) == 0 && !ever_ready_;
  return all_failed || started_failed;
}

int PoolState::tried() const {
  return actors() - count(ActorPhase::stopped);
}

std::string PoolState::first_error() const {
  for (const ActorStartMetrics& s : starts_.started) {
    if (!s.error.empty()) return s.error;
  }
  return {};
}

std::vector<int> PoolState::overdue_holds(Clock::time_point now) const {
  std::vector<int> overdue;
  if (count(ActorPhase::held) == 0) return overdue;
  const auto wait =
      std::max(std::chrono::duration_cast<Clock::duration>(
                   std::chrono::duration<double>(mean_startup_seconds().value_or(0.0))),
               std::chrono::duration_cast<Clock::duration>(kHeldRestartFloor));
  for (std::size_t a = 0; a < actors_.size(); ++a) {
    if (actors_[a].phase == ActorPhase::held && now - actors_[a].held_since >= wait)
      overdue.push_back(static_cast<int>(a));
  }
  return overdue;
}

std::vector<int> PoolState::overdue_starts(Clock::time_point now, Clock::duration timeout) const {
  std::vector<int> overdue;
  if (!unready_since_ || now - *unready_since_ < timeout) return overdue;
  for (std::size_t a = 0; a < actors_.size(); ++a) {
    if (actors_[a].phase == ActorPhase::starting) overdue.push_back(static_cast<int>(a));
  }
  return overdue;
}

void PoolState::record_call(std::size_t grains, double seconds) {
  busy_seconds_ += seconds;
  grains_done_ += grains;
  call_cost_.add(grains, seconds);
}

std::optional<double> PoolState::mean_startup_seconds() const {
  if (startups_ == 0) return std::nullopt;
  return startup_seconds_ / startups_;
}

}  // namespace rayorch::detail
