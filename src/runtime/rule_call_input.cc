// Structural rule: Call input. Decides a Grain from its input Items (rules 1-4, DESIGN 5).
#include "runtime/engine.h"
#include "runtime/engine_internal.h"

namespace rayorch::detail {

void Engine::on_call_input(int call, std::uint32_t entity, const Item& item) {
  Grain& g = grains_[call][entity];
  if (g.phase == GrainPhase::sealed) return;
  --g.unresolved;
  if (item.state == ItemState::dropped) g.has_drop = true;
  if (is_failure(item.state)) g.has_failure = true;
  if (g.has_failure) {
    // Rule 1. The deciding input is the lowest-index failed one, so its cause does not
    // depend on arrival order: decide as soon as every lower-index input is resolved.
    for (int in : p_.calls[call].inputs) {
      const Item& it = items_[in][entity];
      if (it.state == ItemState::unresolved) return;
      if (is_failure(it.state)) {
        seal_grain(call, entity, ItemState::suppressed, it.cause, GrainEvent::inputs_terminal);
        return;
      }
    }
  }
  if (g.unresolved > 0) return;  // Rule 2: wait.
  if (g.has_drop) {
    // Rule 3: the UDF is not called.
    seal_grain(call, entity, ItemState::dropped, -1, GrainEvent::inputs_terminal);
    return;
  }
  if (barrier_cause(call, entity) >= 0) {
    seal_suppressed_by_barrier(call, entity);
    return;
  }
  move_grain(call, entity, GrainEvent::inputs_ready);  // Rule 4.
  queues_[call].ready.push_back(entity);
}

}  // namespace rayorch::detail
