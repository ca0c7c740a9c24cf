// PoolState without a driver: every ActorEvent in every actor phase (the transitions it allows
// and those it refuses), the counts and invariants after each, and the measurements the sizing
// policy, the tail split and the held-actor restarts read.
#include "execution/run/pool_state.h"

#include <array>
#include <chrono>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

namespace rd = rayorch::detail;
using rd::ActorEvent;
using rd::ActorPhase;
using Kind = ActorEvent::Kind;
using Clock = rd::PoolState::Clock;
using namespace std::chrono_literals;

namespace {

const Clock::time_point kCreated = Clock::time_point{} + 1000s;

rd::PoolState make_pool(ActorPhase initial, int actors = 3, int slots = -1) {
  return rd::PoolState({.name = "Ocr",
                        .actors = actors,
                        .slots = slots < 0 ? actors : slots,
                        .initial = initial,
                        .sizes_itself = initial == ActorPhase::stopped,
                        .created = kCreated});
}

ActorEvent event(Kind kind, int actor, Clock::time_point at, std::string error = {}) {
  return {.kind = kind, .pool = 0, .actor = actor, .at = at, .error = std::move(error)};
}

// Events that bring actor 0 of a stopped pool to `phase`.
std::vector<ActorEvent> path_to(ActorPhase phase) {
  switch (phase) {
    case ActorPhase::stopped:
      return {};
    case ActorPhase::starting:
      return {event(Kind::starting, 0, kCreated + 1s)};
    case ActorPhase::ready:
      return {event(Kind::starting, 0, kCreated + 1s), event(Kind::ready, 0, kCreated + 3s)};
    case ActorPhase::held:
      return {event(Kind::starting, 0, kCreated + 1s), event(Kind::ready, 0, kCreated + 3s),
              event(Kind::held, 0, kCreated + 4s)};
    case ActorPhase::failed:
      return {event(Kind::starting, 0, kCreated + 1s),
              event(Kind::failed, 0, kCreated + 2s, "Module<Ocr>: no model")};
  }
  return {};
}

constexpr std::array kPhases{ActorPhase::stopped, ActorPhase::starting, ActorPhase::ready,
                             ActorPhase::held, ActorPhase::failed};
constexpr std::array kKinds{Kind::starting, Kind::ready,      Kind::failed, Kind::held,
                            Kind::resumed,  Kind::restarting, Kind::retired};

// The transition table of pool_state.h: where `kind` takes an actor in `from`, or nullopt.
std::optional<ActorPhase> allowed(ActorPhase from, Kind kind) {
  switch (kind) {
    case Kind::starting:
      if (from == ActorPhase::stopped) return ActorPhase::starting;
      break;
    case Kind::ready:
      if (from == ActorPhase::starting) return ActorPhase::ready;
      break;
    case Kind::failed:
      if (from == ActorPhase::starting) return ActorPhase::failed;
      break;
    case Kind::held:
      if (from == ActorPhase::ready) return ActorPhase::held;
      break;
    case Kind::resumed:
      if (from == ActorPhase::held) return ActorPhase::ready;
      break;
    case Kind::restarting:
      if (from == ActorPhase::ready || from == ActorPhase::held) return ActorPhase::starting;
      break;
    case Kind::retired:
      if (from == ActorPhase::ready) return ActorPhase::stopped;
      break;
  }
  return std::nullopt;
}

TEST(PoolState, EveryEventInEveryPhase) {
  int accepted = 0;
  int refused = 0;
  for (ActorPhase from : kPhases) {
    for (Kind kind : kKinds) {
      SCOPED_TRACE(fmt::format("{} in {}", rd::to_string(kind), rd::to_string(from)));
      rd::PoolState pool = make_pool(ActorPhase::stopped);
      for (const ActorEvent& e : path_to(from)) ASSERT_TRUE(pool.apply(e));
      ASSERT_EQ(pool.phase(0), from);
      const int starts_before = static_cast<int>(pool.starts().started.size());
      const auto to = allowed(from, kind);
      EXPECT_EQ(pool.apply(event(kind, 0, kCreated + 10s, "boom")), to.has_value());
      EXPECT_EQ(pool.phase(0), to.value_or(from));
      EXPECT_NO_THROW(pool.check());
      // Only a start (ready or failed) is recorded; the other actors never move.
      const bool start = to && (kind == Kind::ready || kind == Kind::failed);
      EXPECT_EQ(static_cast<int>(pool.starts().started.size()), starts_before + (start ? 1 : 0));
      EXPECT_EQ(pool.phase(1), ActorPhase::stopped);
      EXPECT_EQ(pool.phase(2), ActorPhase::stopped);
      to ? ++accepted : ++refused;
    }
  }
  // The table's eight transitions (restarting from two phases); the other 27 pairs refused.
  EXPECT_EQ(accepted, 8);
  EXPECT_EQ(refused, 27);
}

TEST(PoolState, CountsFollowThePhases) {
  rd::PoolState pool = make_pool(ActorPhase::stopped, 4);
  EXPECT_EQ(pool.count(ActorPhase::stopped), 4);
  EXPECT_EQ(pool.live(), 0);
  EXPECT_FALSE(pool.all_ready());
  for (int a = 0; a < 4; ++a) ASSERT_TRUE(pool.apply(event(Kind::starting, a, kCreated)));
  EXPECT_EQ(pool.count(ActorPhase::starting), 4);
  EXPECT_EQ(pool.live(), 4);
  ASSERT_TRUE(pool.apply(event(Kind::ready, 0, kCreated + 1s)));
  ASSERT_TRUE(pool.apply(event(Kind::ready, 1, kCreated + 1s)));
  ASSERT_TRUE(pool.apply(event(Kind::failed, 2, kCreated + 1s, "bad")));
  ASSERT_TRUE(pool.apply(event(Kind::held, 1, kCreated + 2s)));
  EXPECT_EQ(pool.count(ActorPhase::ready), 1);
  EXPECT_EQ(pool.count(ActorPhase::held), 1);
  EXPECT_EQ(pool.count(ActorPhase::failed), 1);
  EXPECT_EQ(pool.count(ActorPhase::starting), 1);
  // A failed actor no longer counts against the target; a held one still does.
  EXPECT_EQ(pool.live(), 3);
  ASSERT_TRUE(pool.apply(event(Kind::retired, 0, kCreated + 3s)));
  EXPECT_EQ(pool.count(ActorPhase::stopped), 1);
  EXPECT_EQ(pool.live(), 2);
  EXPECT_NO_THROW(pool.check());
}

TEST(PoolState, AllReadyOnlyWhenEveryActorIs) {
  rd::PoolState built = make_pool(ActorPhase::ready, 2);
  EXPECT_TRUE(built.all_ready());
  ASSERT_TRUE(built.apply(event(Kind::held, 1, kCreated + 1s)));
  EXPECT_FALSE(built.all_ready());
  ASSERT_TRUE(built.apply(event(Kind::resumed, 1, kCreated + 2s)));
  EXPECT_TRUE(built.all_ready());
  ASSERT_TRUE(built.apply(event(Kind::restarting, 0, kCreated + 3s)));
  EXPECT_FALSE(built.all_ready());
}

TEST(PoolState, InitialPhases) {
  // Built before the executor returned: ready, and started at its start.
  rd::PoolState built = make_pool(ActorPhase::ready, 2);
  EXPECT_EQ(built.count(ActorPhase::ready), 2);
  ASSERT_EQ(built.starts().started.size(), 2u);
  EXPECT_EQ(built.starts().started[1].actor, 1);
  EXPECT_EQ(built.starts().started[1].started_seconds, 0.0);
  EXPECT_EQ(built.target(), 2);
  EXPECT_FALSE(built.mean_startup_seconds());  // no start was measured
  // Eager start: starting, nothing recorded yet.
  rd::PoolState eager = make_pool(ActorPhase::starting, 2);
  EXPECT_EQ(eager.count(ActorPhase::starting), 2);
  EXPECT_TRUE(eager.starts().started.empty());
  // Self-sizing: stopped, target 0 until the policy sets one.
  rd::PoolState sized = make_pool(ActorPhase::stopped, 2);
  EXPECT_TRUE(sized.sizes_itself());
  EXPECT_EQ(sized.target(), 0);
  for (const rd::PoolState* p : {&built, &eager, &sized}) EXPECT_NO_THROW(p->check());
}

TEST(PoolState, StartsAreRecordedAndTimed) {
  rd::PoolState pool = make_pool(ActorPhase::starting, 3);
  ASSERT_TRUE(pool.apply(event(Kind::ready, 2, kCreated + 2s)));
  ASSERT_TRUE(pool.apply(event(Kind::failed, 0, kCreated + 5s, "Module<Ocr>: no model")));
  ASSERT_TRUE(pool.apply(event(Kind::ready, 1, kCreated + 4s)));
  const auto& started = pool.starts().started;
  ASSERT_EQ(started.size(), 3u);
  // In the order they were applied, timed from the executor's start.
  EXPECT_EQ(started[0].actor, 2);
  EXPECT_DOUBLE_EQ(started[0].started_seconds, 2.0);
  EXPECT_EQ(started[1].actor, 0);
  EXPECT_EQ(started[1].error, "Module<Ocr>: no model");
  EXPECT_TRUE(started[2].error.empty());
  // A failed start is not a start-up time; the two good ones average (2 + 4) / 2.
  ASSERT_TRUE(pool.mean_startup_seconds());
  EXPECT_DOUBLE_EQ(*pool.mean_startup_seconds(), 3.0);
  EXPECT_EQ(pool.first_error(), "Module<Ocr>: no model");
  // A restart is timed from when it was asked for, and ready_at moves.
  ASSERT_TRUE(pool.apply(event(Kind::restarting, 2, kCreated + 10s)));
  ASSERT_TRUE(pool.apply(event(Kind::ready, 2, kCreated + 16s)));
  EXPECT_DOUBLE_EQ(*pool.mean_startup_seconds(), 4.0);  // (2 + 4 + 6) / 3
  EXPECT_EQ(pool.ready_at(2), kCreated + 16s);
  EXPECT_NO_THROW(pool.check());
}

TEST(PoolState, ARefusedEventChangesNothing) {
  rd::PoolState pool = make_pool(ActorPhase::starting, 2);
  ASSERT_TRUE(pool.apply(event(Kind::ready, 0, kCreated + 1s)));
  // A second report of the same start, a resume of an actor never held, an actor out of range.
  EXPECT_FALSE(pool.apply(event(Kind::ready, 0, kCreated + 9s)));
  EXPECT_FALSE(pool.apply(event(Kind::resumed, 0, kCreated + 9s)));
  EXPECT_FALSE(pool.apply(event(Kind::ready, 2, kCreated + 9s)));
  EXPECT_FALSE(pool.apply(event(Kind::ready, -1, kCreated + 9s)));
  EXPECT_EQ(pool.starts().started.size(), 1u);
  EXPECT_EQ(pool.ready_at(0), kCreated + 1s);
  EXPECT_DOUBLE_EQ(*pool.mean_startup_seconds(), 1.0);
  EXPECT_NO_THROW(pool.check());
}

TEST(PoolState, CanNeverRun) {
  // Every actor failed.
  rd::PoolState all = make_pool(ActorPhase::starting, 2);
  ASSERT_TRUE(all.apply(event(Kind::failed, 0, kCreated, "a")));
  EXPECT_FALSE(all.can_never_run());  // actor 1 may still start
  ASSERT_TRUE(all.apply(event(Kind::failed, 1, kCreated, "b")));
  EXPECT_TRUE(all.can_never_run());
  EXPECT_EQ(all.first_error(), "a");
  EXPECT_EQ(all.tried(), 2);
  // A self-sizing pool: every actor it started failed, none is starting, none was ever ready.
  rd::PoolState sized = make_pool(ActorPhase::stopped, 4);
  ASSERT_TRUE(sized.apply(event(Kind::starting, 0, kCreated)));
  ASSERT_TRUE(sized.apply(event(Kind::failed, 0, kCreated + 1s, "c")));
  EXPECT_TRUE(sized.can_never_run());
  EXPECT_EQ(sized.tried(), 1);
  // Once one was ready, a later failure is not lasting proof.
  rd::PoolState once = make_pool(ActorPhase::stopped, 4);
  for (const ActorEvent& e : path_to(ActorPhase::ready)) ASSERT_TRUE(once.apply(e));
  ASSERT_TRUE(once.apply(event(Kind::restarting, 0, kCreated + 5s)));
  ASSERT_TRUE(once.apply(event(Kind::failed, 0, kCreated + 6s, "d")));
  EXPECT_FALSE(once.can_never_run());
}

TEST(PoolState, OverdueHoldsWaitAStartOrTheFloor) {
  rd::PoolState pool = make_pool(ActorPhase::starting, 3);
  // Starts of 4 s: a hold is overdue after 4 s.
  for (int a = 0; a < 3; ++a) ASSERT_TRUE(pool.apply(event(Kind::ready, a, kCreated + 4s)));
  ASSERT_TRUE(pool.apply(event(Kind::held, 0, kCreated + 10s)));
  ASSERT_TRUE(pool.apply(event(Kind::held, 2, kCreated + 12s)));
  EXPECT_TRUE(pool.overdue_holds(kCreated + 13s).empty());
  EXPECT_EQ(pool.overdue_holds(kCreated + 14s), std::vector<int>{0});
  EXPECT_EQ(pool.overdue_holds(kCreated + 16s), (std::vector<int>{0, 2}));
  ASSERT_TRUE(pool.apply(event(Kind::resumed, 0, kCreated + 16s)));
  EXPECT_EQ(pool.overdue_holds(kCreated + 16s), std::vector<int>{2});
  // Starts measured near zero: the floor (kHeldRestartFloor) applies.
  rd::PoolState quick = make_pool(ActorPhase::starting, 1);
  ASSERT_TRUE(quick.apply(event(Kind::ready, 0, kCreated)));
  ASSERT_TRUE(quick.apply(event(Kind::held, 0, kCreated + 1s)));
  EXPECT_TRUE(quick.overdue_holds(kCreated + 1s + 999ms).empty());
  EXPECT_EQ(quick.overdue_holds(kCreated + 2s), std::vector<int>{0});
}

TEST(PoolState, WaitingForAFirstActorStartsAndEndsWithTheEventsThatMakeIt) {
  // Eager start: waiting since the executor's start, until a first actor is ready.
  rd::PoolState pool = make_pool(ActorPhase::starting, 3);
  EXPECT_EQ(pool.unready_since(), kCreated);
  EXPECT_TRUE(pool.overdue_starts(kCreated + 9s, 10s).empty());
  EXPECT_EQ(pool.overdue_starts(kCreated + 10s, 10s), (std::vector<int>{0, 1, 2}));
  ASSERT_TRUE(pool.apply(event(Kind::failed, 1, kCreated + 2s, "no model")));
  EXPECT_EQ(pool.overdue_starts(kCreated + 10s, 10s), (std::vector<int>{0, 2}));
  ASSERT_TRUE(pool.apply(event(Kind::ready, 0, kCreated + 11s)));
  EXPECT_EQ(pool.unready_since(), std::nullopt);
  EXPECT_TRUE(pool.overdue_starts(kCreated + 100s, 10s).empty());  // actor 2 may take its time
  // A hold keeps the actor: the pool is not waiting while its only actor is held.
  ASSERT_TRUE(pool.apply(event(Kind::held, 0, kCreated + 12s)));
  EXPECT_EQ(pool.unready_since(), std::nullopt);
  // Its restart leaves none ready or held: waiting again, from the restart.
  ASSERT_TRUE(pool.apply(event(Kind::restarting, 0, kCreated + 20s)));
  EXPECT_EQ(pool.unready_since(), kCreated + 20s);
  EXPECT_TRUE(pool.overdue_starts(kCreated + 29s, 10s).empty());
  EXPECT_EQ(pool.overdue_starts(kCreated + 30s, 10s), (std::vector<int>{0, 2}));
  // Once every start failed, nothing is starting: nothing to wait for.
  ASSERT_TRUE(pool.apply(event(Kind::failed, 0, kCreated + 30s, "given up")));
  ASSERT_TRUE(pool.apply(event(Kind::failed, 2, kCreated + 30s, "given up")));
  EXPECT_EQ(pool.unready_since(), std::nullopt);
  pool.check();
  // Built before the pools returned, or a self-sizing pool not started: not waiting.
  EXPECT_EQ(make_pool(ActorPhase::ready).unready_since(), std::nullopt);
  rd::PoolState sizing = make_pool(ActorPhase::stopped);
  EXPECT_EQ(sizing.unready_since(), std::nullopt);
  ASSERT_TRUE(sizing.apply(event(Kind::starting, 1, kCreated + 5s)));
  EXPECT_EQ(sizing.unready_since(), kCreated + 5s);
  ASSERT_TRUE(sizing.apply(event(Kind::starting, 2, kCreated + 6s)));
  EXPECT_EQ(sizing.unready_since(), kCreated + 5s);  // the first start counts
  sizing.check();
}

TEST(PoolState, CallsAreMeasured) {
  rd::PoolState pool = make_pool(ActorPhase::ready, 2);
  EXPECT_FALSE(pool.call_cost().cost());
  pool.record_call(4, 1.0 + 0.5 * 4);
  pool.record_call(8, 1.0 + 0.5 * 8);
  EXPECT_DOUBLE_EQ(pool.busy_seconds(), 8.0);
  EXPECT_EQ(pool.grains_done(), 12u);
  const auto cost = pool.call_cost().cost();
  ASSERT_TRUE(cost);
  EXPECT_NEAR(cost->fixed_s, 1.0, 1e-9);
  EXPECT_NEAR(cost->per_grain_s, 0.5, 1e-9);
  EXPECT_TRUE(pool.one_slot_per_actor());
  EXPECT_FALSE(make_pool(ActorPhase::ready, 2, 4).one_slot_per_actor());
}

TEST(PoolState, TargetIsTheSizingPolicys) {
  rd::PoolState pool = make_pool(ActorPhase::stopped, 4);
  pool.set_target(3);
  EXPECT_EQ(pool.target(), 3);
  EXPECT_NO_THROW(pool.check());
  pool.set_target(-1);
  EXPECT_THROW(pool.check(), std::logic_error);
}

}  // namespace
