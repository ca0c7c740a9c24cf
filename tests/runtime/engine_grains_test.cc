// The Grain lifecycle of the semantic runtime (DESIGN 5, src/runtime/engine_grains.cc), a
// closed table: every (phase, event) pair either follows an edge of the design or is
// rejected.
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "support/runtime_harness.h"
#include <gtest/gtest.h>

#include "runtime/engine.h"

namespace {

using namespace runtime_test;
using rd::GrainEvent;
using rd::GrainPhase;

TEST(GrainLifecycle, EveryPhaseEventPairFollowsTheDesignEdges) {
  const std::vector<GrainPhase> phases = {GrainPhase::waiting, GrainPhase::ready,
                                          GrainPhase::in_flight, GrainPhase::sealed};
  const std::vector<GrainEvent> events = {GrainEvent::inputs_ready, GrainEvent::inputs_terminal,
                                          GrainEvent::suppress,     GrainEvent::reserve,
                                          GrainEvent::commit,       GrainEvent::requeue};
  // DESIGN 5: WAITING -> READY (inputs present) -> IN_FLIGHT (reserved) -> SEALED (report
  // committed); WAITING -> SEALED (inputs terminal, or a barrier when they resolve);
  // READY -> SEALED (suppressed); IN_FLIGHT -> READY (retry); IN_FLIGHT -> SEALED also when a
  // failed batch or a barrier seals it. Nothing leaves SEALED.
  const std::map<std::pair<GrainPhase, GrainEvent>, GrainPhase> legal = {
      {{GrainPhase::waiting, GrainEvent::inputs_ready}, GrainPhase::ready},
      {{GrainPhase::waiting, GrainEvent::inputs_terminal}, GrainPhase::sealed},
      {{GrainPhase::waiting, GrainEvent::suppress}, GrainPhase::sealed},
      {{GrainPhase::ready, GrainEvent::reserve}, GrainPhase::in_flight},
      {{GrainPhase::ready, GrainEvent::suppress}, GrainPhase::sealed},
      {{GrainPhase::in_flight, GrainEvent::commit}, GrainPhase::sealed},
      {{GrainPhase::in_flight, GrainEvent::requeue}, GrainPhase::ready},
      {{GrainPhase::in_flight, GrainEvent::suppress}, GrainPhase::sealed},
  };
  int checked = 0;
  for (GrainPhase p : phases) {
    for (GrainEvent e : events) {
      const auto it = legal.find({p, e});
      const std::optional<GrainPhase> got = rd::grain_transition(p, e);
      SCOPED_TRACE(std::string(phase_name(p)) + " + event " + std::to_string(static_cast<int>(e)));
      if (it == legal.end()) {
        EXPECT_FALSE(got.has_value()) << "illegal edge accepted, leads to " << phase_name(*got);
      } else {
        ASSERT_TRUE(got.has_value()) << "legal edge rejected";
        EXPECT_EQ(*got, it->second);
      }
      ++checked;
    }
  }
  EXPECT_EQ(checked, 24);
}

}  // namespace
