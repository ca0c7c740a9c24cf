// What a run's results depend on, as one number: the run journal (execution/journal/) keeps it
// to refuse a journal written by another program.
#pragma once

#include <cstdint>

#include "program/plan.h"

namespace rayorch::detail {

/// A digest of the Calls (UDF types, static arguments, wiring), the type of every Port and the
/// sources and outputs; not pool sizes, batch sizes or other tuning, which change no result.
std::uint64_t plan_fingerprint(const RuntimePlan& plan);

}  // namespace rayorch::detail
