// `rayorch bench compare`: this project and the peer baselines (bench/peers/*_peer.py) on
// the same corpus, in one invocation. The corpus goes to the peers as a JSON file; each peer
// writes its timings and every document's ordered page values, which must equal ours.
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "bench.h"
#include <fmt/format.h>

namespace rayorch::bench {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) {
    if (c == '\'')
      q += "'\\''";
    else
      q += c;
  }
  return q + "'";
}

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

struct SystemResult {
  std::string name;
  std::string version;
  bool ran = false;
  std::string error;
  double end_to_end = 0;
  double first_document = 0;
  double startup = 0;
  std::size_t mismatches = 0;
};

// Ray binds the machine's external address by default; every peer runs in a private network
// namespace that has only the loopback interface (needs root: unshare --net), and the Ray
// peer checks that every node address is 127.0.0.1. Returns "" when that is impossible.
std::string loopback_only_prefix() {
  if (::geteuid() != 0 || ::access("/usr/bin/unshare", X_OK) != 0) return {};
  return "unshare --net sh -c 'ip link set lo up && exec \"$0\" \"$@\"' ";
}

}  // namespace

Report run_compare(const CompareOptions& o) {
  const auto pages = make_corpus(o.workload.corpus);
  const auto docs = make_docs(pages);
  const std::uint64_t total_pages = sum_pages(pages);
  const fs::path root = find_root();
  const fs::path peer_dir = o.peer_dir.empty() ? root / "bench" / "peers" : fs::path(o.peer_dir);
  const std::string python =
      o.python.empty() ? (root / ".venv-peers" / "bin" / "python").string() : o.python;
  fs::path work;
  if (o.work_dir.empty()) {
    std::string tmpl = (fs::temp_directory_path() / "rayorch-compare-XXXXXX").string();
    if (mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("bench compare: mkdtemp failed");
    work = tmpl;
  } else {
    work = o.work_dir;
    fs::create_directories(work);
  }

  nlohmann::json corpus = {{"documents", nlohmann::json::array()},
                           {"costs_ms", costs_json(o.workload.costs)},
                           {"topology", topology_json(o.workload.topology)}};
  for (const Doc& d : docs) corpus["documents"].push_back({{"id", d.id}, {"pages", d.pages}});
  const fs::path corpus_path = work / "corpus.json";
  std::ofstream(corpus_path) << corpus.dump();

  std::vector<SystemResult> results;

  // This project: the clock includes building the actor pools, as the peers' clocks include
  // starting their actors.
  {
    SystemResult r;
    r.name = "rayorch";
    r.version = "local executor";
    const auto t0 = Clock::now();
    Harness h(o.workload);
    const double build = std::chrono::duration<double>(Clock::now() - t0).count();
    auto run = h.run(docs);
    r.end_to_end = std::chrono::duration<double>(Clock::now() - t0).count();
    r.first_document = build + stats_of(run.metrics.root_completed_seconds).min;
    r.ran = true;
    check_clean(run, pages, "compare (rayorch)");
    nlohmann::json out = {{"system", "rayorch"},
                          {"end_to_end_seconds", r.end_to_end},
                          {"first_document_seconds", r.first_document},
                          {"documents", nlohmann::json::object()}};
    for (std::size_t i = 0; i < docs.size(); ++i)
      out["documents"][std::to_string(i)] = run.outputs[i].value().pages;
    std::ofstream(work / "rayorch.json") << out.dump();
    results.push_back(r);
    note(fmt::format("compare: rayorch {:.3f} s, first document after {:.3f} s", r.end_to_end,
                     r.first_document));
  }

  std::stringstream list(o.peers);
  std::string peer;
  while (std::getline(list, peer, ',')) {
    if (peer.empty()) continue;
    SystemResult r;
    r.name = peer;
    const fs::path script = peer_dir / (peer + "_peer.py");
    const fs::path out_path = work / (peer + ".json");
    const fs::path log_path = work / (peer + ".log");
    if (!fs::exists(script)) {
      r.error = fmt::format("no peer script {}", script.string());
    } else if (access(python.c_str(), X_OK) != 0) {
      r.error = fmt::format("{} not found: run bench/peers/setup.sh first", python);
    } else if (loopback_only_prefix().empty()) {
      r.error =
          "peers run only in a private network namespace (unshare --net, as root), so that Ray "
          "never binds an external address; run the benchmark as root";
    } else {
      note(fmt::format("compare: running {} (log in {})", peer, log_path.string()));
      fs::remove(out_path);
      const std::string cmd =
          fmt::format("timeout {} {}{} {} --corpus {} --out {} > {} 2>&1", o.peer_timeout_s,
                      loopback_only_prefix(), shell_quote(python), shell_quote(script.string()),
                      shell_quote(corpus_path.string()), shell_quote(out_path.string()),
                      shell_quote(log_path.string()));
      const int status = std::system(cmd.c_str());
      const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      if (code != 0 || !fs::exists(out_path)) {
        r.error = code == 124 ? fmt::format("timed out after {} s", o.peer_timeout_s)
                              : fmt::format("exit code {}; see {}", code, log_path.string());
      } else {
        nlohmann::json j = nlohmann::json::parse(std::ifstream(out_path));
        r.ran = true;
        r.version = j.value("version", "");
        r.end_to_end = j.value("end_to_end_seconds", 0.0);
        r.first_document = j["first_document_seconds"].is_number()
                               ? j["first_document_seconds"].get<double>()
                               : r.end_to_end;
        r.startup = j.value("startup_seconds", 0.0);
        const auto& got = j["documents"];
        for (std::size_t i = 0; i < docs.size(); ++i) {
          const std::string key = std::to_string(i);
          const DocResult want = expected_result(static_cast<std::uint32_t>(i), pages[i]);
          if (!got.contains(key) || got[key].get<std::vector<std::uint64_t>>() != want.pages)
            ++r.mismatches;
        }
        if (got.size() != docs.size()) r.mismatches += 1;
      }
    }
    if (!r.error.empty()) note(fmt::format("compare: {} did not run: {}", peer, r.error));
    results.push_back(r);
  }

  const SystemResult& ours = results.front();
  double best_e2e = 0, best_first = 0;
  bool any_peer = false;
  bool identical = true;
  for (std::size_t i = 1; i < results.size(); ++i) {
    const SystemResult& r = results[i];
    if (!r.ran) continue;
    if (!any_peer || r.end_to_end < best_e2e) best_e2e = r.end_to_end;
    if (!any_peer || r.first_document < best_first) best_first = r.first_document;
    any_peer = true;
    if (r.mismatches) identical = false;
  }

  Table table({"system", "version", "end-to-end s", "first doc s", "pages/s", "e2e / rayorch",
               "first doc / rayorch", "start-up s", "outputs"});
  nlohmann::json systems = nlohmann::json::array();
  for (const SystemResult& r : results) {
    if (!r.ran) {
      table.add({r.name, r.version, "-", "-", "-", "-", "-", "-", "not run: " + r.error});
      systems.push_back({{"system", r.name}, {"ran", false}, {"error", r.error}});
      continue;
    }
    table.add({r.name, r.version, fmt::format("{:.3f}", r.end_to_end),
               fmt::format("{:.3f}", r.first_document),
               fmt::format("{:.0f}", static_cast<double>(total_pages) / r.end_to_end),
               fmt::format("{:.2f}x", r.end_to_end / ours.end_to_end),
               fmt::format("{:.2f}x", r.first_document / ours.first_document),
               &r == &ours ? "-" : fmt::format("{:.2f}", r.startup),
               r.mismatches ? fmt::format("{} DIFFER", r.mismatches) : "identical"});
    systems.push_back({{"system", r.name},
                       {"version", r.version},
                       {"ran", true},
                       {"end_to_end_seconds", r.end_to_end},
                       {"first_document_seconds", r.first_document},
                       {"startup_seconds", r.startup},
                       {"pages_per_second", static_cast<double>(total_pages) / r.end_to_end},
                       {"ratio_to_rayorch", r.end_to_end / ours.end_to_end},
                       {"first_document_ratio_to_rayorch", r.first_document / ours.first_document},
                       {"mismatched_documents", r.mismatches}});
  }
  const double e2e_ratio = any_peer ? ours.end_to_end / best_e2e : 0;
  const double first_ratio = any_peer ? ours.first_document / best_first : 0;
  const bool e2e_ok = any_peer && e2e_ratio <= 0.8;
  const bool first_ok = any_peer && first_ratio <= 0.1;

  Report rep;
  rep.targets_met = e2e_ok && first_ok;
  rep.checks_passed = identical;
  rep.text = fmt::format(
      "bench compare: {}\nclocks start after each runtime's start-up (ray.init, imports; shown "
      "apart) and include building actor pools; work files in {}\n\n{}\n",
      describe_workload(o.workload, pages), work.string(), table.str());
  if (any_peer) {
    rep.text += fmt::format(
        "every peer's per-document ordered outputs identical to rayorch: {}\n"
        "target end-to-end <= 0.8x the fastest peer: {} ({:.3f}x)\n"
        "target first finished document <= 0.1x the fastest peer: {} ({:.4f}x)\n",
        identical ? "yes" : "NO", e2e_ok ? "met" : "MISSED", e2e_ratio, first_ok ? "met" : "MISSED",
        first_ratio);
  } else {
    rep.text += "no peer ran: targets not evaluated (bench/peers/setup.sh installs them)\n";
  }
  rep.json = {
      {"benchmark", "compare"},
      {"machine", machine_info()},
      {"workload", workload_json(o.workload, pages)},
      {"work_dir", work.string()},
      {"systems", systems},
      {"outputs_identical", identical},
      {"targets",
       {{"end_to_end_vs_fastest_peer", {{"value", e2e_ratio}, {"max", 0.8}, {"met", e2e_ok}}},
        {"first_document_vs_fastest_peer",
         {{"value", first_ratio}, {"max", 0.1}, {"met", first_ok}}}}}};
  return rep;
}

}  // namespace rayorch::bench
