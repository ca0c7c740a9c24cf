// The UDF instance of a co-located pool (DESIGN 5.12): one actor of the pool holds one
// instance of each member Module, built in member order, and each Call's invoker runs on its
// own Module's instance. Nothing else of a Call changes: its batch size, recovery policy,
// metrics and trace rows stay its own; the members share the pool's actors, so an actor runs
// one member's Call at a time.
//
// Threading and ownership: an instance is owned by the one actor that built it and used from
// that actor's thread only, as any UDF instance.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "rayorch/detail/erased.h"

namespace rayorch::detail {

class CoLocatedInstance final : public UdfInstance {
 public:
  explicit CoLocatedInstance(std::vector<std::unique_ptr<UdfInstance>> members)
      : members_(std::move(members)) {}

  UdfInstance& member(std::size_t k) { return *members_.at(k); }

 private:
  std::vector<std::unique_ptr<UdfInstance>> members_;  // per member Module, never null
};

/// The factory of a co-located pool: every member's factory, in member order. A member whose
/// constructor throws fails the actor's start, as a lone Module's would.
inline Factory colocated_factory(std::vector<Factory> members) {
  return [members = std::move(members)]() -> std::unique_ptr<UdfInstance> {
    std::vector<std::unique_ptr<UdfInstance>> built;
    built.reserve(members.size());
    for (const Factory& make : members) built.push_back(make());
    return std::make_unique<CoLocatedInstance>(std::move(built));
  };
}

/// The invoker of a Call whose Module is member `k` of a co-located pool: `inner` runs on that
/// member's instance.
inline Invoker member_invoker(Invoker inner, std::size_t k) {
  return [inner = std::move(inner), k](UdfInstance& instance, std::span<const ColumnInput> in) {
    return inner(static_cast<CoLocatedInstance&>(instance).member(k), in);
  };
}

}  // namespace rayorch::detail
