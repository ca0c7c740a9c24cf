// The progress display on stderr: a line redrawn in place on a terminal, plain lines at an
// interval in a log. Its text is progress_format.h's.
#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdio>

#include <fmt/format.h>

#include "execution/observers/observers.h"
#include "execution/observers/progress_format.h"

namespace rayorch::detail {
namespace {

constexpr std::string_view kPrefix = "[rayorch] ";

class ProgressLine final : public RunObserver {
 public:
  void on_progress(const ProgressEvent& e) override {
    // One column short of the width: a line that fills the last column wraps on some
    // terminals, and a wrapped line is not overwritten by the next update.
    const std::size_t width = terminal_width();
    const std::size_t room = width > kPrefix.size() + 1 ? width - kPrefix.size() - 1 : 1;
    std::fprintf(stderr, "\r\033[K%.*s%s%s", static_cast<int>(kPrefix.size()), kPrefix.data(),
                 format_progress(e, room).c_str(), e.final ? "\n" : "");
    std::fflush(stderr);
  }

 private:
  static std::size_t terminal_width() {
    struct winsize ws {};
    return ::ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0 ? ws.ws_col : 80;
  }
};

// Threading: progress events come from the run's driver thread only.
class ProgressLog final : public RunObserver {
 public:
  explicit ProgressLog(std::chrono::milliseconds interval)
      : interval_(std::chrono::duration<double>(interval).count()) {}

  void on_progress(const ProgressEvent& e) override {
    // Run time, not the wall clock, decides: a line per interval of the run, and the final
    // line only after a run long enough to have logged one (a short run logs nothing).
    if (e.final ? lines_ == 0 : e.elapsed_seconds < next_) return;
    while (next_ <= e.elapsed_seconds) next_ += interval_;
    ++lines_;
    const std::string line = fmt::format("{}{} {}{}\n", kPrefix, format_duration(e.elapsed_seconds),
                                         format_progress(e, 0), e.final ? " (done)" : "");
    std::fputs(line.c_str(), stderr);
    std::fflush(stderr);
  }

 private:
  double interval_;          // seconds, > 0
  double next_ = interval_;  // the run time of the next line
  std::size_t lines_ = 0;
};

}  // namespace

std::shared_ptr<RunObserver> make_progress_line() {
  return std::make_shared<ProgressLine>();
}

std::shared_ptr<RunObserver> make_progress_log(std::chrono::milliseconds interval) {
  return std::make_shared<ProgressLog>(interval);
}

}  // namespace rayorch::detail
