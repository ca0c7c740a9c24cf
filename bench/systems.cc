#include "systems.h"

#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "bench.h"
#include <fmt/format.h>

namespace rayorch::bench {
namespace {

namespace fs = std::filesystem;

// The repository root: the working directory or an ancestor of the executable that holds
// the peer scripts.
fs::path find_root() {
  std::vector<fs::path> candidates{fs::current_path()};
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    for (fs::path p = exe.parent_path(); !p.empty() && p != p.root_path(); p = p.parent_path())
      candidates.push_back(p);
  }
  for (const fs::path& c : candidates) {
    if (fs::exists(c / "bench" / "peers" / "ray_peer.py")) return c;
  }
  return fs::current_path();
}

}  // namespace

std::string SystemSpec::script_name() const {
  std::string name = peer;
  std::replace(name.begin(), name.end(), '-', '_');
  return name + "_peer.py";
}

std::vector<SystemSpec> parse_systems(const std::string& peers, bool with_self) {
  std::vector<SystemSpec> out;
  // The local executor runs on threads in one process, the peers on a local Ray: a
  // deployment difference, named in its label.
  if (with_self) out.push_back({"rayorch (local; deployment difference)", "", "", "rayorch"});
  std::stringstream list(peers);
  std::string item;
  while (std::getline(list, item, ',')) {
    if (item.empty()) continue;
    SystemSpec s;
    const auto colon = item.find(':');
    s.peer = item.substr(0, colon);
    s.arm = colon == std::string::npos ? "" : item.substr(colon + 1);
    if (s.peer == kRayorchOnRay) {
      if (!s.arm.empty())
        throw std::invalid_argument(fmt::format("bench: system '{}' has no arms; write {}", item,
                                                std::string(kRayorchOnRay)));
      s.family = s.peer;
      s.label = "rayorch (on Ray)";
      s.project_python = true;
    } else {
      s.family = s.peer == "ray" ? "ray-data" : s.peer;
      s.label = s.family + (s.arm.empty() ? "" : " (" + s.arm + ")");
    }
    out.push_back(s);
  }
  return out;
}

std::size_t target_system(const std::vector<SystemSpec>& systems, const std::vector<bool>& ran) {
  for (std::size_t i = 0; i < systems.size() && i < ran.size(); ++i)
    if (systems[i].family == kRayorchOnRay && ran[i]) return i;
  return 0;
}

SystemEnv make_system_env(const std::string& python, const std::string& project_python,
                          const std::string& peer_dir, const std::string& work_dir, int timeout_s) {
  SystemEnv env;
  const fs::path root = find_root();
  env.peer_dir = peer_dir.empty() ? root / "bench" / "peers" : fs::path(peer_dir);
  env.python = python.empty() ? (root / ".venv-peers" / "bin" / "python").string() : python;
  env.project_python =
      project_python.empty() ? (root / ".venv" / "bin" / "python").string() : project_python;
  if (work_dir.empty()) {
    std::string tmpl = (fs::temp_directory_path() / "rayorch-compare-XXXXXX").string();
    if (mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("bench: mkdtemp failed");
    env.work = tmpl;
  } else {
    env.work = work_dir;
    fs::create_directories(env.work);
  }
  std::error_code ec;
  env.self = fs::read_symlink("/proc/self/exe", ec);
  if (ec) throw std::runtime_error("bench: cannot find this executable (/proc/self/exe)");
  env.timeout_s = timeout_s;
  return env;
}

SystemRun run_system(const SystemEnv& env, const SystemSpec& s, const fs::path& corpus,
                     const std::string& tag) {
  SystemRun run;
  const fs::path out_path = env.work / (tag + ".json");
  const fs::path log_path = env.work / (tag + ".log");
  const fs::path events = env.work / (tag + ".events");
  fs::remove(out_path);
  fs::remove_all(events);
  fs::create_directories(events);
  std::vector<std::string> argv;
  if (s.peer.empty()) {
    argv = {env.self.string(), "bench", "compare-system", "--corpus",
            corpus.string(),   "--out", out_path.string()};
  } else {
    const fs::path script = env.peer_dir / s.script_name();
    const std::string& python = env.python_for(s);
    if (!fs::exists(script)) {
      run.error = fmt::format("no peer script {}", script.string());
    } else if (::access(python.c_str(), X_OK) != 0) {
      run.error = s.project_python
                      ? fmt::format(
                            "{} not found: {} runs with the project's Python (rayorch_cpp and "
                            "Ray); run scripts/python-env.sh or pass --project-python",
                            python, s.label)
                      : fmt::format("{} not found: run bench/peers/setup.sh first", python);
    } else if (::geteuid() != 0 || ::access("/usr/bin/unshare", X_OK) != 0) {
      run.error =
          "peers run only in a private network namespace (unshare --net, as root), so that Ray "
          "never binds an external address; run the benchmark as root";
    } else {
      // Ray binds the machine's external address by default: every peer runs in a private
      // network namespace with only loopback, and checks that before starting Ray.
      argv = {"unshare",
              "--net",
              "sh",
              "-c",
              "ip link set lo up && exec \"$0\" \"$@\"",
              python,
              script.string(),
              "--corpus",
              corpus.string(),
              "--out",
              out_path.string(),
              "--events-dir",
              events.string()};
      if (!s.arm.empty()) {
        argv.push_back("--arm");
        argv.push_back(s.arm);
      }
      for (const std::string& extra : env.extra_args) argv.push_back(extra);
    }
  }
  if (!run.error.empty()) return run;
  note(fmt::format("running {} (log in {})", s.label, log_path.string()));
  run.tree = run_process_tree(argv, log_path.string(), env.timeout_s, 20);
  if (run.tree.timed_out) {
    run.error = fmt::format("timed out after {} s", env.timeout_s);
  } else if (!fs::exists(out_path)) {
    run.error = fmt::format("exit code {}; see {}", run.tree.exit_code, log_path.string());
  } else {
    try {
      run.result = nlohmann::json::parse(std::ifstream(out_path));
      run.ran = true;
      // A complete result written before the process failed on its way out (Daft's native
      // runner has crashed at exit here) stands, with the failure noted.
      if (run.tree.exit_code != 0)
        run.exit_note = fmt::format("exited with code {} after writing its result; see {}",
                                    run.tree.exit_code, log_path.string());
    } catch (const std::exception& e) {
      run.error = fmt::format("unreadable result {} (exit code {}): {}", out_path.string(),
                              run.tree.exit_code, e.what());
    }
  }
  return run;
}

double load_average() {
  std::ifstream f("/proc/loadavg");
  double one = 0;
  f >> one;
  return one;
}

bool has_partitions(const SystemSpec& system) {
  return system.arm == "groupby" && (system.family == "ray-data" || system.family == "daft");
}

std::vector<int> default_partition_candidates(int assemble_replicas) {
  const int a = std::max(1, assemble_replicas);
  std::vector<int> out = {std::max(1, a / 2), a, 2 * a, 4 * a};
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace rayorch::bench
