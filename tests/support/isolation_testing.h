// Helpers shared by the tests of process-isolated actors (tests/execution/backends/
// process_isolation_*_test.cc): quiet run options, and a UDF that crashes, aborts, exits, is
// killed, hangs or allocates without bound on one input and records every instance's pid.
#pragma once

#include <signal.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <rayorch/rayorch.h>

namespace isolation_testing {

namespace ro = rayorch;

inline ro::RunOptions quiet() {
  ro::RunOptions o;
  o.progress = false;
  return o;
}

inline void append_line(const std::string& path, const std::string& line) {
  std::ofstream(path, std::ios::app) << line << "\n";
}

// Triggers `mode` on input `trigger`; records every instance's pid in `pid_file`.
struct Poison {
  Poison(std::string m, int t, std::string pid_file) : mode(std::move(m)), trigger(t) {
    if (!pid_file.empty()) append_line(pid_file, std::to_string(::getpid()));
  }
  std::vector<std::string> run(ro::Column<int> x) {
    std::vector<std::string> out;
    for (int v : x) {
      if (v == trigger) {
        std::fprintf(stderr, "poison: about to %s on %d\n", mode.c_str(), v);
        std::fflush(stderr);
        if (mode == "segv") std::raise(SIGSEGV);
        if (mode == "abort") std::abort();
        if (mode == "exit") std::_Exit(3);
        if (mode == "sigkill") ::kill(::getpid(), SIGKILL);  // as the OOM killer would
        if (mode == "hang") {
          for (;;) ::pause();
        }
        if (mode == "alloc") {
          std::vector<std::unique_ptr<char[]>> hog;
          for (;;) hog.emplace_back(new char[16 << 20]);
        }
      }
      out.push_back("v" + std::to_string(v * 3));
    }
    return out;
  }
  std::string mode;
  int trigger;
};

}  // namespace isolation_testing
