// The systems a comparison runs: this project (`bench compare-system`, in its own process)
// and the peer scripts of bench/peers, each in its own measured process tree, the peers in a
// private network namespace that has only loopback (Ray binds the machine's external address
// by default).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "process_tree.h"
#include <nlohmann/json.hpp>

namespace rayorch::bench {

/// One system: this project (empty `peer`) or a peer script with an arm, written
/// "<peer>[:<arm>]" on command lines.
struct SystemSpec {
  std::string label;
  std::string peer;
  std::string arm;
  std::string family;  ///< "rayorch", "ray-data", "daft", "reference": what targets compare
};

/// Parses a comma-separated peer list; with `with_self`, this project comes first.
std::vector<SystemSpec> parse_systems(const std::string& peers, bool with_self);

/// Where the peers and their Python are, where results go.
struct SystemEnv {
  std::filesystem::path peer_dir;
  std::string python;
  std::filesystem::path work;
  std::filesystem::path self;  ///< this executable
  int timeout_s = 900;
  std::vector<std::string> extra_args;  ///< for every peer script
};

/// Resolves defaults: bench/peers of the repository, .venv-peers's Python, a fresh temporary
/// work directory.
SystemEnv make_system_env(const std::string& python, const std::string& peer_dir,
                          const std::string& work_dir, int timeout_s);

/// What one run of a system produced.
struct SystemRun {
  bool ran = false;
  std::string error;      ///< why it did not run or failed
  std::string exit_note;  ///< the result stands, but the process then failed (how)
  TreeRun tree;
  nlohmann::json result;  ///< the system's result file (bench/peers/common.py write_result)
};

/// Runs `system` on the corpus file; `tag` names its result, log and events files.
SystemRun run_system(const SystemEnv& env, const SystemSpec& system,
                     const std::filesystem::path& corpus, const std::string& tag);

/// The 1-minute load average of the machine.
double load_average();

}  // namespace rayorch::bench
