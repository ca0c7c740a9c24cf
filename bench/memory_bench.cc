// `rayorch bench memory`: how much memory a fan-out with large child payloads keeps resident,
// and whether that grows with the size of the input.
//
//   list       one RPC per source              -> `children` frame descriptors (8 bytes each)
//   expand                                      -> one child per frame
//   decode     batched across sources          -> a `payload_kib` KiB payload per frame
//   summarise  batched across sources          -> 16 bytes per frame
//   reduce                                      -> the summaries of one source, in frame order
//   fold       one RPC per source              -> 24 bytes per source
//
// The payloads are the only large values, and each has a single consumer, so an engine that
// releases a value once nothing needs it holds only the frames between decode and
// summarise; one that keeps values until their input batch retires holds every admitted
// source's frames. Each source count runs in a forked child: the kernel's high-water mark of
// resident memory then belongs to that run alone.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <numeric>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "bench.h"
#include "memory_workload.h"
#include <fmt/format.h>

namespace rayorch::bench {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;
constexpr double kGiB = kMiB * 1024.0;

// The workload (list -> expand -> decode -> summarise -> reduce -> fold) is in
// memory_workload.h.
using memory_workload::direct_fingerprint;
using memory_workload::Fingerprint;
using memory_workload::g_frame_bytes;
using memory_workload::g_frame_bytes_peak;
using memory_workload::g_queued_peak;
using memory_workload::MemoryPipeline;

// ---- one size in a child process -----------------------------------------------------------

// A "Key:   123 kB" line of /proc/self/status, in KiB (-1 when absent).
long status_kib(const char* key) {
  std::ifstream in("/proc/self/status");
  std::string line;
  const std::size_t n = std::strlen(key);
  while (std::getline(in, line)) {
    if (line.compare(0, n, key) == 0 && line.size() > n && line[n] == ':')
      return std::strtol(line.c_str() + n + 1, nullptr, 10);
  }
  return -1;
}

void write_all(int fd, const std::string& s) {
  std::size_t done = 0;
  while (done < s.size()) {
    const ssize_t w = ::write(fd, s.data() + done, s.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;
    done += static_cast<std::size_t>(w);
  }
}

std::string read_all(int fd) {
  std::string s;
  char buf[4096];
  for (;;) {
    const ssize_t r = ::read(fd, buf, sizeof buf);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    s.append(buf, static_cast<std::size_t>(r));
  }
  return s;
}

// Peak resident memory of this process so far: getrusage's high-water mark and VmHWM.
nlohmann::json peak_rss_json() {
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  const long hwm = status_kib("VmHWM");
  const double maxrss_mib = static_cast<double>(ru.ru_maxrss) / 1024.0;
  const double hwm_mib = hwm < 0 ? 0.0 : static_cast<double>(hwm) / 1024.0;
  return {{"peak_rss_mib", std::max(maxrss_mib, hwm_mib)},
          {"ru_maxrss_mib", maxrss_mib},
          {"vm_hwm_mib", hwm_mib}};
}

// Runs one size and returns its figures; called in the child only.
nlohmann::json run_size(std::size_t sources, const MemoryOptions& o, int fd) {
  nlohmann::json j = {{"sources", sources}};
  j["rss_at_start_mib"] = static_cast<double>(status_kib("VmRSS")) / 1024.0;

  // A run whose values all stay alive can exceed the machine; stop it before it does.
  std::jthread watchdog(
      [&, cap_kib = static_cast<long>(o.rss_cap_mib) * 1024](std::stop_token stop) {
        while (!stop.stop_requested()) {
          const long rss = status_kib("VmRSS");
          if (rss > cap_kib) {
            nlohmann::json over = j;
            over.update(peak_rss_json());
            over["error"] = fmt::format(
                "stopped: resident memory passed the cap of {} MiB (--rss-cap)", o.rss_cap_mib);
            write_all(fd, over.dump());
            _exit(3);
          }
          std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
      });

  std::vector<int> videos(sources);
  std::iota(videos.begin(), videos.end(), 0);
  MemoryPipeline pipeline(o);
  auto program = ro::compile(pipeline);
  ro::RunResult<Fingerprint> r;
  {
    ro::Executor ex(program);
    ro::RunOptions ro_opts;
    ro_opts.input_batch_size = o.input_batch_size;
    ro_opts.max_active_input_batches = o.max_active_input_batches;
    ro_opts.progress = false;
    r = ex.run(videos, ro_opts);
  }
  watchdog.request_stop();
  watchdog.join();
  j.update(peak_rss_json());
  j["wall_seconds"] = r.metrics.elapsed_seconds;
  j["peak_live_payload_mib"] = static_cast<double>(g_frame_bytes_peak.load()) / kMiB;
  j["live_payload_after_run_mib"] = static_cast<double>(g_frame_bytes.load()) / kMiB;
  j["peak_frames_awaiting_summary"] = g_queued_peak.load();
  j["peak_active_input_batches"] = r.metrics.peak_active_input_batches;
  nlohmann::json calls = nlohmann::json::array();
  for (const auto& c : r.metrics.calls) {
    calls.push_back({{"call", c.call},
                     {"actors", c.actors},
                     {"rpcs", c.rpcs},
                     {"mean_batch", c.rpcs == 0 ? 0.0
                                                : static_cast<double>(c.grain_dispatches) /
                                                      static_cast<double>(c.rpcs)},
                     {"busy_seconds", c.busy_seconds}});
  }
  j["calls"] = calls;

  // Checked after the peak is taken: the direct computation holds one frame at a time.
  std::vector<std::uint8_t> buf(o.payload_kib * 1024);
  std::size_t wrong = 0;
  std::string first_wrong;
  for (std::size_t i = 0; i < sources; ++i) {
    const auto& out = r.outputs[i];
    const bool good = out.ok() && out.value() == direct_fingerprint(videos[i], o, buf);
    if (!good && wrong++ == 0)
      first_wrong = fmt::format("source {}: {}", i, out.ok() ? "values differ" : out.issue().cause);
  }
  j["wrong_outputs"] = wrong;
  j["output_ok"] = wrong == 0;
  if (wrong != 0) j["first_wrong_output"] = first_wrong;
  return j;
}

// Forks, runs one size in the child and returns what it reported.
nlohmann::json run_in_child(std::size_t sources, const MemoryOptions& o) {
  int fds[2];
  if (pipe(fds) != 0) throw std::runtime_error(fmt::format("pipe: {}", std::strerror(errno)));
  // Buffered output would otherwise be written twice, once by each process.
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error(fmt::format("fork: {}", std::strerror(errno)));
  if (pid == 0) {
    ::close(fds[0]);
    int code = 0;
    std::string text;
    try {
      text = run_size(sources, o, fds[1]).dump();
    } catch (const std::exception& e) {
      text = nlohmann::json{{"sources", sources}, {"error", e.what()}}.dump();
      code = 2;
    }
    write_all(fds[1], text);
    // No atexit handlers or static destructors: they belong to the parent's copy.
    _exit(code);
  }
  ::close(fds[1]);
  const std::string text = read_all(fds[0]);
  ::close(fds[0]);
  // wait4 gives the kernel's own account of the child's peak, even when it died early.
  int status = 0;
  struct rusage ru {};
  while (wait4(pid, &status, 0, &ru) < 0 && errno == EINTR) {
  }
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    j = {{"sources", sources}};
    if (WIFSIGNALED(status))
      j["error"] = fmt::format("the child was killed by signal {} ({})", WTERMSIG(status),
                               strsignal(WTERMSIG(status)));
    else
      j["error"] = fmt::format("the child exited with status {} and reported nothing",
                               WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  }
  j["wait4_maxrss_mib"] = static_cast<double>(ru.ru_maxrss) / 1024.0;
  if (!j.contains("peak_rss_mib")) j["peak_rss_mib"] = j["wait4_maxrss_mib"];
  return j;
}

std::string gib(double bytes) {
  if (bytes >= kGiB) return fmt::format("{:.2f} GiB", bytes / kGiB);
  if (bytes >= kMiB) return fmt::format("{:.1f} MiB", bytes / kMiB);
  return fmt::format("{:.0f} KiB", bytes / 1024.0);
}

}  // namespace

Report run_memory(const MemoryOptions& o) {
  if (o.sources.empty()) throw std::invalid_argument("bench memory: --sources is empty");
  if (o.payload_kib == 0) throw std::invalid_argument("bench memory: --payload-kib must be >= 1");
  const double payload_per_source =
      static_cast<double>(o.children) * static_cast<double>(o.payload_kib) * 1024.0;
  const std::size_t smallest = *std::min_element(o.sources.begin(), o.sources.end());
  const std::size_t largest = *std::max_element(o.sources.begin(), o.sources.end());
  // What stays resident when values live until their input batch retires.
  const std::size_t admitted_rows =
      o.input_batch_size == 0 ? largest
                              : std::min(largest, o.input_batch_size * o.max_active_input_batches);
  const double admitted_payload = static_cast<double>(admitted_rows) * payload_per_source;

  std::vector<nlohmann::json> results;
  for (std::size_t n : o.sources) {
    note(fmt::format("memory: {} sources ({} of payload) in a child process", n,
                     gib(static_cast<double>(n) * payload_per_source)));
    results.push_back(run_in_child(n, o));
    const auto& j = results.back();
    if (j.contains("error"))
      note(fmt::format("memory: {} sources: {}", n, j["error"].get<std::string>()));
    else
      note(fmt::format("memory: {} sources: peak RSS {:.1f} MiB, {:.2f} s", n,
                       j["peak_rss_mib"].get<double>(), j["wall_seconds"].get<double>()));
  }

  Report rep;
  Table t({"sources", "payload total", "peak RSS MiB", "wall s", "output check",
           "peak live payload MiB", "peak frames awaiting summary"});
  double peak_max = 0, peak_smallest = 0, peak_largest = 0;
  bool all_ran = true;
  for (const auto& j : results) {
    const auto n = j["sources"].get<std::size_t>();
    const bool ran = !j.contains("error");
    const bool ok = ran && j["output_ok"].get<bool>();
    all_ran = all_ran && ran;
    if (!ok) rep.checks_passed = false;
    const double peak = j.value("peak_rss_mib", 0.0);
    peak_max = std::max(peak_max, peak);
    if (n == smallest) peak_smallest = peak;
    if (n == largest) peak_largest = peak;
    t.add(
        {std::to_string(n), gib(static_cast<double>(n) * payload_per_source),
         j.contains("peak_rss_mib") ? fmt::format("{:.1f}", peak) : "-",
         ran ? fmt::format("{:.3f}", j["wall_seconds"].get<double>()) : "-",
         ran ? (ok ? "ok" : fmt::format("FAILED ({} wrong)", j["wrong_outputs"].get<std::size_t>()))
             : "did not finish",
         ran ? fmt::format("{:.1f}", j["peak_live_payload_mib"].get<double>()) : "-",
         ran ? std::to_string(j["peak_frames_awaiting_summary"].get<std::int64_t>()) : "-"});
  }
  const bool rss_ok = all_ran && peak_max <= o.rss_target_mib;
  const double growth = peak_smallest > 0 ? peak_largest / peak_smallest : 0.0;
  // One size has nothing to compare with: the growth target does not apply.
  const bool one_size = smallest == largest;
  const bool growth_ok =
      one_size || (all_ran && peak_smallest > 0 && growth <= 1.0 + o.growth_target);
  rep.targets_met = rss_ok && growth_ok;

  std::string problems;
  for (const auto& j : results) {
    if (j.contains("error"))
      problems += fmt::format("{} sources: {}\n", j["sources"].get<std::size_t>(),
                              j["error"].get<std::string>());
    else if (j.contains("first_wrong_output"))
      problems +=
          fmt::format("{} sources: wrong output, first at {}\n", j["sources"].get<std::size_t>(),
                      j["first_wrong_output"].get<std::string>());
  }
  rep.text = fmt::format(
      "bench memory: per source {} frames of {} KiB ({}); list -> expand -> decode {}x batch {} "
      "-> summarise {}x batch {} -> reduce -> fold; {} sources per input batch, {} input batches "
      "active; each size in its own process\n"
      "payload of the admitted input batches (resident if values live until their input batch "
      "retires): {}\n\n{}\n{}"
      "target peak RSS <= {:.0f} MiB at every size: {} (largest {:.1f} MiB)\n"
      "target peak at {} sources within {:.0f}% of the peak at {} sources: {}\n",
      o.children, o.payload_kib, gib(payload_per_source), o.decode_replicas, o.decode_batch,
      o.summary_replicas, o.summary_batch,
      o.input_batch_size == 0 ? std::string("all") : std::to_string(o.input_batch_size),
      o.max_active_input_batches, gib(admitted_payload), t.str(), problems, o.rss_target_mib,
      rss_ok ? "met" : "MISSED", peak_max, largest, o.growth_target * 100, smallest,
      one_size ? std::string("n/a (one size)")
               : fmt::format("{} ({:.2f}x)", growth_ok ? "met" : "MISSED", growth));
  rep.json = {
      {"benchmark", "memory"},
      {"machine", machine_info()},
      {"workload",
       {{"children", o.children},
        {"payload_kib", o.payload_kib},
        {"payload_bytes_per_source", payload_per_source},
        {"input_batch_size", o.input_batch_size},
        {"max_active_input_batches", o.max_active_input_batches},
        {"decode", {{"replicas", o.decode_replicas}, {"batch_size", o.decode_batch}}},
        {"summarise", {{"replicas", o.summary_replicas}, {"batch_size", o.summary_batch}}},
        {"admitted_payload_bytes", admitted_payload},
        {"rss_cap_mib", o.rss_cap_mib}}},
      {"rss_measure",
       "max of getrusage(RUSAGE_SELF).ru_maxrss and VmHWM, read in a forked child after its run; "
       "wait4's ru_maxrss of the same child alongside"},
      {"sizes", results},
      {"targets",
       {{"peak_rss_mib", {{"value", peak_max}, {"max", o.rss_target_mib}, {"met", rss_ok}}},
        {"peak_growth",
         {{"value", growth},
          {"max", 1.0 + o.growth_target},
          {"smallest_sources", smallest},
          {"largest_sources", largest},
          {"applies", !one_size},
          {"met", growth_ok}}}}}};
  return rep;
}

}  // namespace rayorch::bench
