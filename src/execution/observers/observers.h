// The built-in observers (rayorch/observer.h): progress line and log, Chrome trace, JSON report.
// RunEvents (execution/run/run_events.h) adds each when its RunOptions field asks for it.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "rayorch/observer.h"

namespace rayorch::detail {

/// The one-line progress display on stderr, redrawn in place and abbreviated to the
/// terminal's width (progress_format.h). Call only when stderr is a terminal.
std::shared_ptr<RunObserver> make_progress_line();

/// The progress for a log (stderr not a terminal): a plain line on stderr per `interval` (> 0)
/// of run time, with the run time first, and a last one at the end of a run that logged one.
std::shared_ptr<RunObserver> make_progress_log(std::chrono::milliseconds interval);

/// Writes every RPC as a Chrome-trace "complete" event (pid = pool, tid = worker) to
/// `path` at the end of the run, atomically; an aborted run's trace says so.
std::shared_ptr<RunObserver> make_chrome_trace(std::string path);

/// Writes the run's metrics and every observer's report section to `path` as JSON at the
/// end of the run, atomically; an aborted run's report says so.
std::shared_ptr<RunObserver> make_json_report(std::string path);

}  // namespace rayorch::detail
