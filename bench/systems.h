// The systems a comparison runs: this project's local executor (`bench compare-system`, in
// its own process), this project on Ray (bench/peers/rayorch_ray_peer.py, with the project's
// Python) and the peer scripts of bench/peers, each in its own measured process tree, every
// script in a private network namespace that has only loopback (Ray binds the machine's
// external address by default).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "process_tree.h"
#include <nlohmann/json.hpp>

namespace rayorch::bench {

/// The peer name of this project on Ray (script bench/peers/rayorch_ray_peer.py).
inline constexpr const char* kRayorchOnRay = "rayorch-ray";

/// One system: this project's local executor (empty `peer`) or a peer script with an arm,
/// written "<peer>[:<arm>]" on command lines.
struct SystemSpec {
  std::string label;
  std::string peer;
  std::string arm;
  /// What targets compare: "rayorch" (the local executor), "rayorch-ray" (this project on
  /// Ray), "ray-data", "daft", "reference".
  std::string family;
  /// The script imports this project's package (rayorch_cpp): it runs with the project's
  /// Python, not the peers'.
  bool project_python = false;

  /// This project, on any deployment (never a peer that targets compare against).
  bool is_this_project() const { return family == "rayorch" || family == "rayorch-ray"; }
  /// The script's file name: "<peer>_peer.py", dashes of the peer name as underscores.
  std::string script_name() const;
};

/// Parses a comma-separated peer list; with `with_self`, this project's local executor comes
/// first. "rayorch-ray" is this project on Ray.
std::vector<SystemSpec> parse_systems(const std::string& peers, bool with_self);

/// The system the targets are evaluated with: this project on Ray when it ran (the same
/// deployment as the peers), else the local executor (index 0). `ran[i]` says whether
/// `systems[i]` produced a result.
std::size_t target_system(const std::vector<SystemSpec>& systems, const std::vector<bool>& ran);

/// Whether `system` regroups pages with a groupby whose partition count is a knob
/// (`--partitions` of bench/peers/common.py): the Ray Data and Daft groupby arms.
bool has_partitions(const SystemSpec& system);

/// The partition counts tuning tries when none are given: the assemble actors times 1/2, 1,
/// 2 and 4 (at least 1 each, no repeats, ascending).
std::vector<int> default_partition_candidates(int assemble_replicas);

/// Where the peers and the Pythons are, where results go.
struct SystemEnv {
  std::filesystem::path peer_dir;
  std::string python;          ///< the peers' Python (reference, Ray Data, Daft)
  std::string project_python;  ///< the project's Python (rayorch_cpp), for this project on Ray
  std::filesystem::path work;
  std::filesystem::path self;  ///< this executable
  int timeout_s = 900;
  std::vector<std::string> extra_args;  ///< for every peer script

  /// The interpreter `system`'s script runs with.
  const std::string& python_for(const SystemSpec& system) const {
    return system.project_python ? project_python : python;
  }
};

/// Resolves defaults: bench/peers of the repository, .venv-peers's Python for the peers,
/// .venv's Python for this project on Ray, a fresh temporary work directory.
SystemEnv make_system_env(const std::string& python, const std::string& project_python,
                          const std::string& peer_dir, const std::string& work_dir, int timeout_s);

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
