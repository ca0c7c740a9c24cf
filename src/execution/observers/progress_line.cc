// The progress line: one line on stderr, redrawn in place.
#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdio>

#include <fmt/format.h>

#include "execution/observers/observers.h"

namespace rayorch::detail {
namespace {

class ProgressLine final : public RunObserver {
 public:
  void on_progress(const ProgressEvent& e) override {
    // A lazy source's total is known only once it ended.
    std::string line = e.total_known ? fmt::format("roots {}/{}", e.roots_done, e.roots_total)
                                     : fmt::format("roots {}/?", e.roots_done);
    // Pools still starting (or short of actors that failed to start) say so first.
    for (const PoolProgress& p : e.pools) {
      if (p.ready == p.actors) continue;
      line += fmt::format(" | {} actors {}/{} ready", p.pool, p.ready, p.actors);
      if (p.failed > 0) line += fmt::format(" ({} failed)", p.failed);
    }
    for (const CallProgress& c : e.calls) {
      line +=
          fmt::format(" | {} done {} ready {} in-flight {}", c.call, c.done, c.ready, c.in_flight);
    }
    line += fmt::format(
        " | {:.1f} roots/s",
        e.elapsed_seconds > 0 ? static_cast<double>(e.roots_done) / e.elapsed_seconds : 0.0);
    std::fprintf(stderr, "\r\033[K%s%s", fit_to_terminal(line).c_str(), e.final ? "\n" : "");
    std::fflush(stderr);
  }

 private:
  // "[rayorch] " + the line, cut to the terminal's width so that it never wraps (a wrapped
  // line would not be overwritten by the next update).
  static std::string fit_to_terminal(const std::string& line) {
    std::string s = "[rayorch] " + line;
    struct winsize ws {};
    const std::size_t width =
        ::ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0 ? ws.ws_col : 80;
    if (s.size() >= width) s = s.substr(0, width > 4 ? width - 4 : 0) + "...";
    return s;
  }
};

}  // namespace

std::shared_ptr<RunObserver> make_progress_line() {
  return std::make_shared<ProgressLine>();
}

}  // namespace rayorch::detail
