// Runs one command as a child process and measures its whole process tree: the CPU seconds
// of every descendant and the peak of their summed resident memory. Peers start helper
// processes (Ray's raylet, GCS and workers) that outlive their parent or are reparented;
// the caller becomes a child subreaper so those orphans come back to it to be reaped and
// counted.
//
// Threading: call from one thread at a time (it waits for children of the whole process,
// so nothing else in the process may wait for children meanwhile).
#pragma once

#include <string>
#include <vector>

namespace rayorch::bench {

struct TreeRun {
  int exit_code = -1;      ///< the command's exit status; -1 when killed by a signal
  bool timed_out = false;  ///< killed after the timeout
  double wall_seconds = 0;
  double cpu_seconds = 0;   ///< user + system of every process of the tree
  double peak_rss_mib = 0;  ///< peak of the tree's summed resident memory (sampled)
  std::size_t peak_processes = 0;
};

/// Runs `argv` (argv[0] is looked up in PATH) with stdout and stderr appended to `log_path`,
/// sampling the tree's memory every `sample_ms`. After the command exits, its remaining
/// descendants get SIGTERM, then SIGKILL after two seconds, and are reaped.
TreeRun run_process_tree(const std::vector<std::string>& argv, const std::string& log_path,
                         int timeout_s, int sample_ms = 50);

}  // namespace rayorch::bench
