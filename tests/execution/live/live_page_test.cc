// The live page (RunOptions::live, src/execution/live/live_page.cc): listening before the
// first input with its URL reported, serving the run as it progresses (read from inside the
// run, so the order is causal, not timed), gone when the run returns, refusing a request
// without the token, and a bad address refused before anything runs.
#include <atomic>
#include <stdexcept>
#include <string>
#include <vector>

#include "support/http_get.h"
#include <gtest/gtest.h>

#include <rayorch/rayorch.h>

namespace {

namespace ro = rayorch;
using rayorch_testing::http_get;

std::atomic<int> g_port{0};
std::vector<std::string> g_pages;  // the page as the UDF fetched it, one per call
std::atomic<int> g_calls{0};

int port_of(const std::string& url) {  // "http://127.0.0.1:PORT/..."
  const std::size_t colon = url.rfind(':');
  return std::stoi(url.substr(colon + 1));
}

struct PageReader {  // fetches the live page at every call (one row per call)
  std::vector<ro::Row<int>> run(ro::Column<int> xs) {
    ++g_calls;
    g_pages.push_back(http_get(g_port.load(), "/").body);
    std::vector<ro::Row<int>> out;
    for (int x : xs) {
      if (x == 2)
        out.push_back(ro::RecordFailure{"two is bad"});
      else
        out.push_back(x + 1);
    }
    return out;
  }
};

struct TokenCheck {  // asks for the page without, with a wrong and with the token
  std::vector<ro::Row<int>> run(ro::Column<int> xs) {
    const int port = g_port.load();
    g_pages.push_back(std::to_string(http_get(port, "/").status));
    g_pages.push_back(std::to_string(http_get(port, "/?token=wrong").status));
    g_pages.push_back(std::to_string(http_get(port, "/?token=s3cret").status));
    g_pages.push_back(
        std::to_string(http_get(port, "/", "Authorization: token s3cret\r\n").status));
    return {xs.begin(), xs.end()};
  }
};

class LivePage : public ::testing::Test {
 protected:
  void SetUp() override {
    g_port = 0;
    g_pages.clear();
    g_calls = 0;
  }
};

TEST_F(LivePage, ServesTheRunAsItProgressesAndIsGoneAfterIt) {
  ro::Module<PageReader> reader = ro::Module<PageReader>().batch_size(1);
  auto program = ro::compile([&](ro::Port<int> x) { return reader(x); });
  ro::Executor ex(program);
  std::string url;
  ro::RunOptions options{.progress = false};
  options.live.enabled = true;
  options.live.on_listen = [&](const std::string& u) {
    url = u;
    g_port = port_of(u);
  };
  const auto result = ex.run(std::vector<int>{1, 2, 3}, options);
  ASSERT_EQ(result.outputs.size(), 3u);
  ASSERT_EQ(url.rfind("http://127.0.0.1:", 0), 0u) << url;
  EXPECT_EQ(url.find("token"), std::string::npos) << "loopback needs no token: " << url;
  ASSERT_EQ(g_pages.size(), 3u);
  for (const std::string& page : g_pages) {
    EXPECT_NE(page.find("<h1>Live run</h1>"), std::string::npos) << page.substr(0, 300);
    EXPECT_NE(page.find("PageReader#0"), std::string::npos);
    EXPECT_NE(page.find("<script nonce="), std::string::npos);
  }
  // One actor, one row per RPC: each call runs after the root before it was delivered.
  EXPECT_NE(g_pages[0].find("0 of 3 parents delivered"), std::string::npos);
  EXPECT_NE(g_pages[1].find("1 of 3 parents delivered"), std::string::npos);
  EXPECT_NE(g_pages[2].find("2 of 3 parents delivered"), std::string::npos);
  EXPECT_NE(g_pages[2].find("<th>parents failed</th><td>1</td>"), std::string::npos)
      << "row 2's failure is not on the page";
  EXPECT_NE(g_pages[2].find("<td>PageReader#0</td><td>failed</td><td class='cause'>two is "
                            "bad</td><td>1</td><td>1 (row 1)</td>"),
            std::string::npos)
      << "the failure is not grouped on the page";
  EXPECT_EQ(http_get(g_port.load(), "/").status, -1) << "the endpoint outlived its run";
}

TEST_F(LivePage, ARequestWithoutTheTokenIsRefused) {
  ro::Module<TokenCheck> check;
  auto program = ro::compile([&](ro::Port<int> x) { return check(x); });
  ro::Executor ex(program);
  ro::RunOptions options{.progress = false};
  options.live = {.enabled = true, .token = "s3cret", .on_listen = [](const std::string& u) {
                    EXPECT_NE(u.find("?token=s3cret"), std::string::npos) << u;
                    g_port = port_of(u);
                  }};
  (void)ex.run(std::vector<int>{1}, options);
  EXPECT_EQ(g_pages, (std::vector<std::string>{"403", "403", "200", "200"}));
}

TEST_F(LivePage, AnAddressThatCannotBeListenedOnFailsBeforeAnyInput) {
  ro::Module<PageReader> reader;
  auto program = ro::compile([&](ro::Port<int> x) { return reader(x); });
  ro::Executor ex(program);
  ro::RunOptions options{.progress = false};
  options.live = {.enabled = true, .host = "example", .on_listen = [](const std::string&) {}};
  try {
    (void)ex.run(std::vector<int>{1}, options);
    ADD_FAILURE() << "a host name was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("'example' is not an IPv4 address"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(g_calls.load(), 0) << "a UDF ran before the live page failed";
  EXPECT_FALSE(ex.closed());
  ro::testing::SyncExecutor sync(program);
  options.live.host = "127.0.0.1";
  options.live.port = 70000;
  EXPECT_THROW((void)sync.run(std::vector<int>{1}, options), std::invalid_argument);
  EXPECT_EQ(g_calls.load(), 0);
}

}  // namespace
