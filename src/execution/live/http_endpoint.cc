// See http_endpoint.h.
#include "execution/live/http_endpoint.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string_view>

#include <fmt/format.h>

namespace rayorch::detail {
namespace {

// A request line and headers larger than this are refused: the page asks for little.
constexpr std::size_t kMaxRequestBytes = 16 * 1024;
// A client that sends no complete request within this is dropped, so a stalled browser tab
// cannot hold the one connection the endpoint serves at a time.
constexpr int kRequestTimeoutMs = 2000;

std::string_view reason(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    default:
      return "Error";
  }
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string percent_decode(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '+') {
      out += ' ';
    } else if (s[i] == '%' && i + 2 < s.size() && hex_digit(s[i + 1]) >= 0 &&
               hex_digit(s[i + 2]) >= 0) {
      out += static_cast<char>(hex_digit(s[i + 1]) * 16 + hex_digit(s[i + 2]));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

// Parses "GET /path?a=b HTTP/1.1\r\nHeader: v\r\n..."; false when it is not a request.
bool parse_request(std::string_view text, HttpRequest& request) {
  const std::size_t line_end = text.find("\r\n");
  const std::string_view line = text.substr(0, line_end);
  const std::size_t sp1 = line.find(' ');
  const std::size_t sp2 = line.rfind(' ');
  if (sp1 == std::string_view::npos || sp2 <= sp1) return false;
  request.method = std::string(line.substr(0, sp1));
  const std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  const std::size_t q = target.find('?');
  request.path = percent_decode(target.substr(0, q));
  if (q != std::string_view::npos) {
    std::string_view rest = target.substr(q + 1);
    while (!rest.empty()) {
      const std::size_t amp = rest.find('&');
      const std::string_view pair = rest.substr(0, amp);
      const std::size_t eq = pair.find('=');
      request.query[percent_decode(pair.substr(0, eq))] =
          eq == std::string_view::npos ? "" : percent_decode(pair.substr(eq + 1));
      rest = amp == std::string_view::npos ? std::string_view{} : rest.substr(amp + 1);
    }
  }
  std::size_t pos = line_end == std::string_view::npos ? text.size() : line_end + 2;
  while (pos < text.size()) {
    const std::size_t end = text.find("\r\n", pos);
    const std::string_view header = text.substr(pos, end - pos);
    if (header.empty()) break;
    const std::size_t colon = header.find(':');
    if (colon != std::string_view::npos) {
      std::string name(header.substr(0, colon));
      for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      std::string_view value = header.substr(colon + 1);
      while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
      if (name == "authorization") request.authorization = std::string(value);
    }
    if (end == std::string_view::npos) break;
    pos = end + 2;
  }
  return true;
}

void send_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // the client went away: nothing to tell it
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
}

}  // namespace

bool is_loopback_host(const std::string& host) {
  if (host == "localhost") return true;
  in_addr addr{};
  return ::inet_pton(AF_INET, host.c_str(), &addr) == 1 && (ntohl(addr.s_addr) >> 24) == 127;
}

HttpEndpoint::HttpEndpoint(const std::string& host, int port, Handler handler)
    : handler_(std::move(handler)) {
  const std::string address = fmt::format("{}:{}", host, port);
  if (port < 0 || port > 65535) {
    throw std::invalid_argument(
        fmt::format("live page address {}: the port must be 0 (any free one) to 65535", address));
  }
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  const std::string ip = host == "localhost" ? "127.0.0.1" : host;
  if (::inet_pton(AF_INET, ip.c_str(), &addr.sin_addr) != 1) {
    throw std::invalid_argument(fmt::format(
        "live page address {}: '{}' is not an IPv4 address; give one such as 127.0.0.1 (this "
        "machine only) or 0.0.0.0 (every interface, with a token)",
        address, host));
  }
  listener_ = UniqueFd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  const int on = 1;
  ::setsockopt(listener_.get(), SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
  if (!listener_ || ::bind(listener_.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(listener_.get(), 16) != 0) {
    throw std::invalid_argument(fmt::format(
        "live page address {}: cannot listen there ({}); choose another port, or 0 to let the "
        "system pick one",
        address, std::strerror(errno)));
  }
  socklen_t len = sizeof addr;
  ::getsockname(listener_.get(), reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.sin_port);
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    throw std::runtime_error(fmt::format("live page: pipe2 failed: {}", std::strerror(errno)));
  }
  wake_read_ = UniqueFd(fds[0]);
  wake_write_ = UniqueFd(fds[1]);
  thread_ = std::thread([this] { serve(); });
}

HttpEndpoint::~HttpEndpoint() {
  const char byte = 0;
  while (::write(wake_write_.get(), &byte, 1) < 0 && errno == EINTR) {
  }
  thread_.join();
}

void HttpEndpoint::serve() {
  for (;;) {
    pollfd fds[2] = {{listener_.get(), POLLIN, 0}, {wake_read_.get(), POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[1].revents != 0) return;
    if ((fds[0].revents & POLLIN) == 0) continue;
    UniqueFd connection(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
    if (connection) answer(connection.get());
  }
}

void HttpEndpoint::answer(int connection) {
  std::string text;
  char buf[4096];
  while (text.find("\r\n\r\n") == std::string::npos) {
    pollfd fds[2] = {{connection, POLLIN, 0}, {wake_read_.get(), POLLIN, 0}};
    const int ready = ::poll(fds, 2, kRequestTimeoutMs);
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0 || fds[1].revents != 0) return;  // timed out, or the endpoint stops
    const ssize_t n = ::recv(connection, buf, sizeof buf, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    text.append(buf, static_cast<std::size_t>(n));
    if (text.size() > kMaxRequestBytes) break;
  }
  HttpRequest request;
  HttpResponse response;
  if (text.size() > kMaxRequestBytes || !parse_request(text, request)) {
    response = {400, "text/plain; charset=utf-8", "not an HTTP request this endpoint reads\n"};
  } else if (request.method != "GET") {
    response = {405, "text/plain; charset=utf-8", "only GET is served\n"};
  } else {
    try {
      response = handler_(request);
    } catch (const std::exception& e) {
      response = {500, "text/plain; charset=utf-8", fmt::format("{}\n", e.what())};
    }
  }
  send_all(connection, fmt::format("HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\n"
                                   "Cache-Control: no-store\r\nConnection: close\r\n\r\n",
                                   response.status, reason(response.status), response.content_type,
                                   response.body.size()));
  send_all(connection, response.body);
}

}  // namespace rayorch::detail
