// Structural rule: filter. Passes the source Item on where its mask is true (DESIGN 5).
#include "runtime/engine.h"

namespace rayorch::detail {

void Engine::on_filter(int filter, std::uint32_t entity) {
  const PlanFilter& pf = p_.filters[filter];
  const Item& out = items_[pf.output][entity];
  if (out.state != ItemState::unresolved) return;
  const Item& src = items_[pf.source][entity];
  if (src.state == ItemState::unresolved) return;
  if (src.state != ItemState::present) {
    publish_failure(pf.output, entity, src.state, src.cause);
  } else {
    const Item& mask = items_[pf.mask][entity];
    if (mask.state == ItemState::unresolved) return;
    if (mask.state != ItemState::present) {
      publish_failure(pf.output, entity, mask.state, mask.cause);
    } else if ((mask.flags & kTruth) != 0) {
      publish(pf.output, entity, ItemState::present, src.block, src.row, -1, src.flags & kTruth);
    } else {
      publish_failure(pf.output, entity, ItemState::dropped, -1);
    }
  }
  maybe_release(pf.source, entity);
  maybe_release(pf.mask, entity);
}

}  // namespace rayorch::detail
