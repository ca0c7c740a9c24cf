// A run the live page's browser test (live_page.sh) steps through: three rows, one at a
// time on one actor, each finishing only once the test creates GATE/release-ROW, so the
// page can be read at chosen points of the run rather than at chosen times.
// Writes GATE/url (the live page's URL) when the endpoint listens and GATE/delivered-ROW as
// each row is delivered. Usage: live_page_run GATE HOST
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <rayorch/rayorch.h>

namespace {

namespace ro = rayorch;
namespace fs = std::filesystem;

fs::path g_gate;  // set once in main, before the run

void touch(const fs::path& p, const std::string& text) {
  const fs::path tmp = p.string() + ".tmp";
  std::ofstream(tmp) << text;
  fs::rename(tmp, p);
}

struct WaitForRelease {  // finishes row x once GATE/release-x exists
  std::vector<ro::Row<int>> run(ro::Column<int> xs) {
    std::vector<ro::Row<int>> out;
    for (int x : xs) {
      const fs::path release = g_gate / ("release-" + std::to_string(x));
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(2);
      while (!fs::exists(release)) {
        if (std::chrono::steady_clock::now() > deadline) {
          throw std::runtime_error("no " + release.string() + " within 2 minutes");
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
      out.push_back(x * 10);
    }
    return out;
  }
};

struct Delivered final : ro::RunObserver {
  void on_root(const ro::RootEvent& e) override {
    touch(g_gate / ("delivered-" + std::to_string(e.row)), "");
  }
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: live_page_run GATE HOST\n");
    return 2;
  }
  g_gate = argv[1];
  ro::Module<WaitForRelease> wait = ro::Module<WaitForRelease>().batch_size(1);
  auto program = ro::compile([&](ro::Port<int> x) { return wait(x); });
  ro::Executor ex(program);
  ro::RunOptions options{.progress = false};
  options.observers.push_back(std::make_shared<Delivered>());
  options.live = {.enabled = true, .host = argv[2], .on_listen = [](const std::string& url) {
                    touch(g_gate / "url", url);
                  }};
  const auto result = ex.run(std::vector<int>{0, 1, 2}, options);
  return result.outputs.size() == 3 ? 0 : 1;
}
