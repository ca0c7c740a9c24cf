// What produced a Port: shared by the logical program, the plan and explain().
#pragma once

#include <cstdint>

namespace rayorch::detail {

/// What produced a Port.
enum class PortKind : std::uint8_t { source, call_output, expand, reduce, broadcast, filter };

/// Lower-case name of a Port kind, as printed by explain().
const char* to_string(PortKind kind);

}  // namespace rayorch::detail
