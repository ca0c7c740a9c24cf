// A minimal HTTP/1.1 server on one thread, for the live page (live_page.h): GET requests
// only, one connection at a time, every response closes its connection. It serves a few
// small pages to a browser or two; it is not a general web server.
//
// Threading: the constructor binds and listens on the caller's thread, then one thread of
// its own accepts and answers; the handler runs on that thread. The destructor wakes it,
// joins it and closes the socket: after it returns, nothing listens on the port.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <thread>

#include "execution/unique_fd.h"

namespace rayorch::detail {

struct HttpRequest {
  std::string method;                        ///< "GET"
  std::string path;                          ///< "/", without the query
  std::map<std::string, std::string> query;  ///< decoded ?name=value pairs
  std::string authorization;                 ///< the Authorization header's value, or ""
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
};

class HttpEndpoint {
 public:
  using Handler = std::function<HttpResponse(const HttpRequest&)>;

  /// Listens on `host` (an IPv4 address or "localhost") and `port` (0: one the system
  /// picks). Throws std::invalid_argument naming the address when it cannot.
  HttpEndpoint(const std::string& host, int port, Handler handler);
  ~HttpEndpoint();
  HttpEndpoint(const HttpEndpoint&) = delete;
  HttpEndpoint& operator=(const HttpEndpoint&) = delete;

  /// The port listened on.
  int port() const { return port_; }

 private:
  void serve();
  void answer(int connection);

  Handler handler_;
  UniqueFd listener_;
  UniqueFd wake_read_, wake_write_;  // a pipe: a byte on it ends serve()
  int port_ = 0;
  std::thread thread_;
};

/// Whether `host` names a loopback address (127.0.0.0/8 or "localhost").
bool is_loopback_host(const std::string& host);

}  // namespace rayorch::detail
