// See page_poller.h.
#include "page_poller.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <string_view>

namespace rayorch::bench {
namespace {

// One GET of "/"; true when the answer was a whole 200 page.
bool get_page(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bool ok = false;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
    constexpr std::string_view request = "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
    (void)::send(fd, request.data(), request.size(), MSG_NOSIGNAL);
    std::string text;
    char buf[16384];
    for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;) {
      text.append(buf, static_cast<std::size_t>(n));
    }
    ok = text.rfind("HTTP/1.1 200", 0) == 0 && text.find("</html>") != std::string::npos;
  }
  ::close(fd);
  return ok;
}

}  // namespace

PagePoller::PagePoller(int port, std::chrono::milliseconds interval)
    : thread_([this, port, interval] {
        while (!stop_.load()) {
          if (get_page(port)) pages_.fetch_add(1);
          std::this_thread::sleep_for(interval);
        }
      }) {}

PagePoller::~PagePoller() {
  stop_ = true;
  thread_.join();
}

}  // namespace rayorch::bench
