// The checks a run's options pass before anything runs.
#pragma once

#include "rayorch/run_options.h"

namespace rayorch::detail {

/// Throws std::invalid_argument when `options` cannot start a run: a trace or report path
/// that is a directory or lies in a directory that does not exist or is not writable,
/// max_active_input_batches below 1, or a null observer. Touches no file.
void check_run_options(const RunOptions& options);

}  // namespace rayorch::detail
