#include "process_tree.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>

namespace rayorch::bench {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double cpu_of(const rusage& r) {
  return static_cast<double>(r.ru_utime.tv_sec + r.ru_stime.tv_sec) +
         static_cast<double>(r.ru_utime.tv_usec + r.ru_stime.tv_usec) / 1e6;
}

// (pid -> (parent pid, resident pages)) of every process, from /proc.
std::map<int, std::pair<int, long>> process_table() {
  std::map<int, std::pair<int, long>> table;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(entry.path() / "stat");
    std::string line;
    if (!std::getline(stat, line)) continue;
    // The command name may hold spaces and parentheses: fields follow the last ')'.
    const auto close = line.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(line.substr(close + 2));
    std::string state;
    int ppid = 0;
    rest >> state >> ppid;
    long rss_pages = 0;
    std::ifstream statm(entry.path() / "statm");
    long size = 0;
    statm >> size >> rss_pages;
    table[std::stoi(name)] = {ppid, rss_pages};
  }
  return table;
}

// Descendants of `root` (including it) in `table`.
std::vector<int> descendants(const std::map<int, std::pair<int, long>>& table, int root) {
  std::multimap<int, int> children;
  for (const auto& [pid, info] : table) children.emplace(info.first, pid);
  std::vector<int> out{root};
  for (std::size_t i = 0; i < out.size(); ++i) {
    auto [a, b] = children.equal_range(out[i]);
    for (auto it = a; it != b; ++it) out.push_back(it->second);
  }
  return out;
}

}  // namespace

TreeRun run_process_tree(const std::vector<std::string>& argv, const std::string& log_path,
                         int timeout_s, int sample_ms) {
  if (argv.empty()) throw std::invalid_argument("run_process_tree: empty command");
  // Orphans of the tree are reparented to this process, so they are reaped and counted here.
  if (::prctl(PR_SET_CHILD_SUBREAPER, 1) != 0)
    throw std::runtime_error(
        fmt::format("prctl(PR_SET_CHILD_SUBREAPER): {}", std::strerror(errno)));
  rusage before{};
  ::getrusage(RUSAGE_CHILDREN, &before);
  const int log_fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd < 0)
    throw std::runtime_error(fmt::format("cannot open {}: {}", log_path, std::strerror(errno)));
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const auto t0 = Clock::now();
  const pid_t child = ::fork();
  if (child < 0) {
    ::close(log_fd);
    throw std::runtime_error(fmt::format("fork: {}", std::strerror(errno)));
  }
  if (child == 0) {
    ::dup2(log_fd, 1);
    ::dup2(log_fd, 2);
    ::setpgid(0, 0);
    ::execvp(args[0], args.data());
    std::fprintf(stderr, "exec %s: %s\n", args[0], std::strerror(errno));
    ::_exit(127);
  }
  ::close(log_fd);

  TreeRun run;
  const long page = ::sysconf(_SC_PAGESIZE);
  const auto deadline = t0 + std::chrono::seconds(timeout_s);
  int status = 0;
  bool exited = false;
  while (!exited) {
    const auto table = process_table();
    long pages = 0;
    const auto tree = descendants(table, child);
    for (int pid : tree) {
      auto it = table.find(pid);
      if (it != table.end()) pages += it->second.second;
    }
    run.peak_rss_mib =
        std::max(run.peak_rss_mib, static_cast<double>(pages * page) / (1024.0 * 1024.0));
    run.peak_processes = std::max(run.peak_processes, tree.size());
    // Reap whatever finished (the command or reparented orphans).
    for (;;) {
      int s = 0;
      const pid_t done = ::waitpid(-1, &s, WNOHANG);
      if (done <= 0) break;
      if (done == child) {
        status = s;
        exited = true;
      }
    }
    if (!exited && Clock::now() > deadline) {
      run.timed_out = true;
      ::kill(-child, SIGKILL);
      ::kill(child, SIGKILL);
    }
    if (!exited) std::this_thread::sleep_for(std::chrono::milliseconds(sample_ms));
  }
  run.wall_seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;

  // Stragglers: ask, then force; reap every one so its CPU time is counted.
  auto stragglers = [&] {
    std::vector<int> mine;
    for (const auto& [pid, info] : process_table())
      if (info.first == ::getpid()) mine.push_back(pid);
    return mine;
  };
  const auto grace = Clock::now() + std::chrono::seconds(2);
  bool forced = false;
  for (auto left = stragglers(); !left.empty(); left = stragglers()) {
    const bool force = Clock::now() > grace;
    if (force && forced) {
      // Already sent SIGKILL: wait for them to go.
    } else {
      for (int pid : left) ::kill(pid, force ? SIGKILL : SIGTERM);
      forced = force;
    }
    while (::waitpid(-1, nullptr, WNOHANG) > 0) {
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (Clock::now() > grace + std::chrono::seconds(5)) break;  // unkillable: give up
  }
  while (::waitpid(-1, nullptr, WNOHANG) > 0) {
  }
  rusage after{};
  ::getrusage(RUSAGE_CHILDREN, &after);
  run.cpu_seconds = cpu_of(after) - cpu_of(before);
  return run;
}

}  // namespace rayorch::bench
