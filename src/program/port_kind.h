// What produced a Port, and what each kind means: one table shared by the logical program,
// the compiler, the plan and explain().
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace rayorch::detail {

/// What produced a Port.
enum class PortKind : std::uint8_t { source, call_output, expand, reduce, broadcast, filter };

/// The semantics of one Port kind (DESIGN 4, 5). Where kinds differ in how they are checked
/// or executed (Domain assignment, the engine's effects), the code switches on the kind.
struct PortKindInfo {
  PortKind kind;
  const char* name;  ///< as printed by explain() (the kind column) and to_string
  const char* rule;  ///< the plan effect that publishes its Items, as printed by explain()
  /// A worker reports its Items: only such a Port can be expanded (the worker splits the
  /// list), and its Call guards a reduce that depends on it.
  bool worker_output;
  /// Its Item is its source's Item passed on unchanged (or DROPPED where a filter's mask is
  /// false), so a mask's boolean is reported by the source's producer.
  bool forwards_value;
};

inline constexpr std::array<PortKindInfo, 6> kPortKinds = {{
    {PortKind::source, "source", "source-admission", false, false},
    {PortKind::call_output, "call_output", "worker-output", true, false},
    {PortKind::expand, "expand", "expanded-output-layout", false, false},
    {PortKind::reduce, "reduce", "reduce-effect", false, false},
    {PortKind::broadcast, "broadcast", "broadcast-effect", false, true},
    {PortKind::filter, "filter", "filter-effect", false, true},
}};

/// The table row of a Port kind.
constexpr const PortKindInfo& port_kind_info(PortKind kind) {
  return kPortKinds[static_cast<std::size_t>(kind)];
}

constexpr bool port_kinds_indexed_by_kind() {
  for (std::size_t i = 0; i < kPortKinds.size(); ++i) {
    if (static_cast<std::size_t>(kPortKinds[i].kind) != i) return false;
  }
  return true;
}
static_assert(port_kinds_indexed_by_kind(), "kPortKinds must list the kinds in enum order");

/// Lower-case name of a Port kind, as printed by explain().
constexpr const char* to_string(PortKind kind) {
  return port_kind_info(kind).name;
}

}  // namespace rayorch::detail
