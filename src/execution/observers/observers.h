// The built-in observers (rayorch/observer.h): progress line, Chrome trace, JSON report.
// RunEvents (execution/run/run_events.h) adds each when its RunOptions field asks for it.
#pragma once

#include <memory>
#include <string>

#include "rayorch/observer.h"

namespace rayorch::detail {

/// The one-line progress display on stderr, redrawn in place and cut to the terminal's
/// width. Call only when stderr is a terminal.
std::shared_ptr<RunObserver> make_progress_line();

/// Writes every RPC as a Chrome-trace "complete" event (pid = pool, tid = worker) to
/// `path` at the end of the run, atomically; an aborted run's trace says so.
std::shared_ptr<RunObserver> make_chrome_trace(std::string path);

/// Writes the run's metrics and every observer's report section to `path` as JSON at the
/// end of the run, atomically; an aborted run's report says so.
std::shared_ptr<RunObserver> make_json_report(std::string path);

}  // namespace rayorch::detail
