// The live page's HTTP endpoint (src/execution/live/http_endpoint.cc): requests parsed
// (path, decoded query, Authorization), non-GET and garbage refused, a handler's exception
// answered as 500, and nothing listening once the endpoint is gone.
#include "execution/live/http_endpoint.h"

#include <sys/socket.h>

#include <stdexcept>
#include <string>

#include "support/http_get.h"
#include <gtest/gtest.h>

namespace {

namespace rd = rayorch::detail;
using rayorch_testing::http_get;

TEST(HttpEndpoint, ParsesThePathQueryAndAuthorization) {
  rd::HttpRequest seen;
  rd::HttpEndpoint endpoint("127.0.0.1", 0, [&](const rd::HttpRequest& r) {
    seen = r;
    if (r.path == "/boom") throw std::runtime_error("handler failed");
    return rd::HttpResponse{200, "text/plain", "hello " + r.path};
  });
  ASSERT_GT(endpoint.port(), 0);
  const auto ok =
      http_get(endpoint.port(), "/a%20b?token=x%2By&flag&n=1+2", "Authorization: token abc\r\n");
  EXPECT_EQ(ok.status, 200);
  EXPECT_EQ(ok.body, "hello /a b");
  EXPECT_EQ(seen.method, "GET");
  EXPECT_EQ(seen.query.at("token"), "x+y");
  EXPECT_EQ(seen.query.at("flag"), "");
  EXPECT_EQ(seen.query.at("n"), "1 2");
  EXPECT_EQ(seen.authorization, "token abc");
  const auto failed = http_get(endpoint.port(), "/boom");
  EXPECT_EQ(failed.status, 500);
  EXPECT_NE(failed.body.find("handler failed"), std::string::npos);
}

TEST(HttpEndpoint, RefusesWhatIsNotAGet) {
  int calls = 0;
  rd::HttpEndpoint endpoint("127.0.0.1", 0, [&](const rd::HttpRequest&) {
    ++calls;
    return rd::HttpResponse{};
  });
  const auto post = rayorch_testing::http_raw(endpoint.port(), "POST / HTTP/1.1\r\n\r\n");
  EXPECT_EQ(post.status, 405);
  const auto garbage = rayorch_testing::http_raw(endpoint.port(), "hello\r\n\r\n");
  EXPECT_EQ(garbage.status, 400);
  EXPECT_EQ(calls, 0) << "the handler saw a request that is not a GET";
  EXPECT_EQ(http_get(endpoint.port(), "/").status, 200);
  EXPECT_EQ(calls, 1);
}

TEST(HttpEndpoint, NothingListensOnceItIsGone) {
  int port = 0;
  {
    rd::HttpEndpoint endpoint("127.0.0.1", 0,
                              [](const rd::HttpRequest&) { return rd::HttpResponse{}; });
    port = endpoint.port();
    EXPECT_EQ(http_get(port, "/").status, 200);
  }
  EXPECT_EQ(http_get(port, "/").status, -1);
}

TEST(HttpEndpoint, BadAddressesAreRefusedNamingThem) {
  const auto handler = [](const rd::HttpRequest&) { return rd::HttpResponse{}; };
  try {
    rd::HttpEndpoint endpoint("not-an-address", 0, handler);
    ADD_FAILURE() << "a host name was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("'not-an-address' is not an IPv4 address"),
              std::string::npos)
        << e.what();
  }
  rd::HttpEndpoint taken("127.0.0.1", 0, handler);
  try {
    rd::HttpEndpoint again("127.0.0.1", taken.port(), handler);
    ADD_FAILURE() << "a port in use was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("cannot listen there"), std::string::npos) << e.what();
  }
  EXPECT_THROW(rd::HttpEndpoint("127.0.0.1", 70000, handler), std::invalid_argument);
}

TEST(HttpEndpoint, LoopbackHosts) {
  EXPECT_TRUE(rd::is_loopback_host("127.0.0.1"));
  EXPECT_TRUE(rd::is_loopback_host("127.3.4.5"));
  EXPECT_TRUE(rd::is_loopback_host("localhost"));
  EXPECT_FALSE(rd::is_loopback_host("0.0.0.0"));
  EXPECT_FALSE(rd::is_loopback_host("10.0.0.1"));
  EXPECT_FALSE(rd::is_loopback_host("128.0.0.1"));
}

}  // namespace
