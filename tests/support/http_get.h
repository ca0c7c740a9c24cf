// A blocking HTTP request on 127.0.0.1 for tests of the live page: one request, the whole
// response read until the server closes the connection.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

namespace rayorch_testing {

struct HttpGetResult {
  int status = -1;  ///< -1: nothing listens on the port (connection refused)
  std::string body;
};

/// Sends `request` as it is and reads the response.
inline HttpGetResult http_raw(int port, const std::string& request) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return {};
  }
  (void)::send(fd, request.data(), request.size(), MSG_NOSIGNAL);
  std::string text;
  char buf[8192];
  for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;)
    text.append(buf, static_cast<std::size_t>(n));
  ::close(fd);
  HttpGetResult out;
  if (text.rfind("HTTP/1.1 ", 0) == 0) out.status = std::atoi(text.c_str() + 9);
  const std::size_t body = text.find("\r\n\r\n");
  if (body != std::string::npos) out.body = text.substr(body + 4);
  return out;
}

/// GET `target` ("/path?query") with extra `headers` ("Name: value\r\n" each).
inline HttpGetResult http_get(int port, const std::string& target,
                              const std::string& headers = "") {
  return http_raw(port, "GET " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\n" + headers + "\r\n");
}

}  // namespace rayorch_testing
