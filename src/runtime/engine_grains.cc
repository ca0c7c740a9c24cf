// The Grain state machine (DESIGN 5) and GroupFailure barriers: transitions, sealing, and
// what a sealed Grain releases or decides.
#include <stdexcept>

#include <fmt/format.h>

#include "runtime/engine.h"

namespace rayorch::detail {

std::optional<GrainPhase> grain_transition(GrainPhase phase, GrainEvent event) {
  switch (phase) {
    case GrainPhase::waiting:
      if (event == GrainEvent::inputs_ready) return GrainPhase::ready;
      if (event == GrainEvent::inputs_terminal) return GrainPhase::sealed;
      if (event == GrainEvent::suppress) return GrainPhase::sealed;
      return std::nullopt;
    case GrainPhase::ready:
      if (event == GrainEvent::reserve) return GrainPhase::in_flight;
      if (event == GrainEvent::suppress) return GrainPhase::sealed;
      return std::nullopt;
    case GrainPhase::in_flight:
      if (event == GrainEvent::commit) return GrainPhase::sealed;
      if (event == GrainEvent::requeue) return GrainPhase::ready;
      if (event == GrainEvent::suppress) return GrainPhase::sealed;
      return std::nullopt;
    case GrainPhase::sealed:
      return std::nullopt;
  }
  return std::nullopt;
}

std::uint32_t Engine::barrier_key(int call, std::uint32_t entity) const {
  const PlanCall& pc = p_.calls[call];
  return pc.barrier_domain == pc.domain ? entity : parent_[pc.domain][entity];
}

std::int32_t Engine::barrier_cause(int call, std::uint32_t entity) const {
  const auto& b = barriers_[call];
  const std::uint32_t key = barrier_key(call, entity);
  return key < b.size() ? b[key] : -1;
}

void Engine::set_barrier(int call, std::uint32_t entity, std::int32_t cause) {
  auto& b = barriers_[call];
  const std::uint32_t key = barrier_key(call, entity);
  if (key >= b.size()) b.resize(parent_[p_.calls[call].barrier_domain].size(), -1);
  if (b[key] < 0) b[key] = cause;  // the first GroupFailure's cause is kept
}

void Engine::move_grain(int call, std::uint32_t entity, GrainEvent event) {
  Grain& g = grains_[call][entity];
  const std::optional<GrainPhase> next = grain_transition(g.phase, event);
  if (!next) {
    throw std::logic_error(
        fmt::format("internal error: illegal Grain transition of {} at {}: "
                    "phase {} cannot take event {}",
                    p_.calls[call].name, entity_key(p_.calls[call].domain, entity),
                    static_cast<int>(g.phase), static_cast<int>(event)));
  }
  g.phase = *next;
}

void Engine::seal_grain(int call, std::uint32_t entity, ItemState outputs_state, std::int32_t cause,
                        GrainEvent event) {
  move_grain(call, entity, event);
  for (int out : p_.calls[call].outputs) publish_failure(out, entity, outputs_state, cause);
  grain_sealed(call, entity);
}

void Engine::grain_sealed(int call, std::uint32_t entity) {
  ++grains_sealed_;
  ++counters_[call].sealed;
  release_grain_inputs(call, entity);
  if (reduce_.guarded[call].empty()) return;
  const std::uint32_t parent = parent_[p_.calls[call].domain][entity];
  // The last Grain of a guard Call under this parent: a waiting group may be decided now.
  if (--reduce_.unsealed[call][parent] > 0) return;
  for (int r : reduce_.guarded[call]) {
    if (!reduce_.progress[r][parent].published &&
        expand_.expansions[p_.reduces[r].child_domain][parent].state == 1)
      advance_reduce(r, parent);
  }
}

void Engine::seal_suppressed_by_barrier(int call, std::uint32_t entity) {
  ++counters_[call].suppressed_by_barrier;
  seal_grain(call, entity, ItemState::suppressed, barrier_cause(call, entity),
             GrainEvent::suppress);
}

}  // namespace rayorch::detail
