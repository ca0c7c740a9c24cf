// The observers of one run. See run_events.h.
#include "execution/run/run_events.h"

#include <unistd.h>

#include <cstdio>
#include <exception>

#include "execution/live/live_page.h"
#include "execution/observers/observers.h"
#include "execution/run/run_recorder.h"

namespace rayorch::detail {

RunEvents::RunEvents(const RunOptions& options)
    : observers_(options.observers), last_progress_(std::chrono::steady_clock::now()) {
  if (options.progress && ::isatty(STDERR_FILENO) == 1) {
    observers_.push_back(make_progress_line());
  } else if (options.progress && options.progress_log_interval.count() > 0) {
    observers_.push_back(make_progress_log(options.progress_log_interval));
  }
  if (!options.trace_path.empty()) observers_.push_back(make_chrome_trace(options.trace_path));
  if (!options.report_path.empty()) observers_.push_back(make_json_report(options.report_path));
  if (options.live.enabled) observers_.push_back(make_live_page(options.live));
  for (const auto& o : observers_) {
    wants_parents_ = wants_parents_ || o->wants_rpc_parents();
    wants_roots_ = wants_roots_ || o->wants_rpc_roots();
  }
}

void RunEvents::run_start(const RunStartEvent& e) {
  for (const auto& o : observers_) o->on_run_start(e);
}

void RunEvents::root(const RootEvent& e) {
  for (const auto& o : observers_) o->on_root(e);
}

void RunEvents::rpc(const RpcEvent& e) {
  for (const auto& o : observers_) o->on_rpc(e);
}

void RunEvents::pool_resize(const PoolResizeEvent& e) {
  for (const auto& o : observers_) o->on_pool_resize(e);
}

void RunEvents::actor_start(const ActorStartEvent& e) {
  for (const auto& o : observers_) o->on_actor_start(e);
}

bool RunEvents::progress_due() {
  if (observers_.empty()) return false;
  const auto now = std::chrono::steady_clock::now();
  if (now - last_progress_ < std::chrono::milliseconds(250)) return false;
  last_progress_ = now;
  return true;
}

void RunEvents::progress(const ProgressEvent& e) {
  for (const auto& o : observers_) o->on_progress(e);
}

void RunEvents::end(RunRecorder& recorder, bool aborted, const std::string& error,
                    std::size_t roots_delivered) {
  if (ended_) return;
  ended_ = true;
  auto record = [&](const char* what) {
    std::string message = what;
    try {
      throw;
    } catch (const std::exception& e) {
      message += e.what();
    } catch (...) {
      message += "an exception that is not a std::exception";
    }
    std::fprintf(stderr, "rayorch: %s\n", message.c_str());
    recorder.file_error(std::move(message));
  };
  std::vector<ReportSection> sections;
  for (const auto& o : observers_) {
    try {
      ReportSection s = o->report_section();
      if (!s.name.empty()) sections.push_back(std::move(s));
    } catch (...) {
      record("an observer's report section failed: ");
    }
  }
  const RunEndEvent e{.metrics = recorder.metrics(),
                      .aborted = aborted,
                      .error = error,
                      .roots_delivered = roots_delivered,
                      .sections = sections};
  for (const auto& o : observers_) {
    try {
      o->on_run_end(e);
    } catch (...) {
      record("");
    }
  }
}

}  // namespace rayorch::detail
