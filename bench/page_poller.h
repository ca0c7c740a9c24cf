// A client that keeps asking a live page (RunOptions::live) for itself, as a browser tab
// showing it does, on a thread of its own: what `bench engine --live` measures the driver
// against.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>

namespace rayorch::bench {

class PagePoller {
 public:
  /// Starts polling http://127.0.0.1:`port`/ every `interval` until destroyed.
  PagePoller(int port, std::chrono::milliseconds interval);
  ~PagePoller();
  PagePoller(const PagePoller&) = delete;
  PagePoller& operator=(const PagePoller&) = delete;

  /// Pages received whole (status 200) so far.
  std::uint64_t pages() const { return pages_.load(); }

 private:
  std::atomic<bool> stop_{false};
  std::atomic<std::uint64_t> pages_{0};
  std::thread thread_;
};

}  // namespace rayorch::bench
