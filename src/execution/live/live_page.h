// The live page (RunOptions::live): an observer that keeps a LiveModel from the run's
// events and serves it, drawn as the report page plus where the run stands now, on an HTTP
// endpoint that listens from the observer's construction until the run ends.
#pragma once

#include <memory>

#include "rayorch/observer.h"
#include "rayorch/run_options.h"

namespace rayorch::detail {

/// Listens at once (throws std::invalid_argument naming the address when it cannot) and
/// reports the URL through `options.on_listen`, or on stderr.
std::shared_ptr<RunObserver> make_live_page(const LiveOptions& options);

}  // namespace rayorch::detail
