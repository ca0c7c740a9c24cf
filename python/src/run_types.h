// The engine's run options and run metrics as Python classes (rayorch/run_options.h,
// rayorch/journal.h, rayorch/metrics.h), with the C++ field names.
#pragma once

#include <nanobind/nanobind.h>

namespace rayorch::python {

/// Binds RunOptions and JournalOptions (set by the package before a run).
void bind_run_options(nanobind::module_& m);

/// Binds RunMetrics, CallMetrics and InputBatchMetrics (read-only, returned by a run).
void bind_run_metrics(nanobind::module_& m);

}  // namespace rayorch::python
