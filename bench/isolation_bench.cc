// `bench isolation`: the cost of process-isolated pools per RPC. See bench.h.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "bench.h"
#include <fmt/format.h>

#include <rayorch/rayorch.h>

namespace rayorch::bench {
namespace {

// A payload whose codec takes only std::string&: in an isolated pool it is encoded into a
// scratch string and then appended to the frame (one more copy each way than std::string's
// own codec, which writes straight into the frame).
struct StringOnlyBlob {
  std::string bytes;
};

}  // namespace
}  // namespace rayorch::bench

template <>
struct rayorch::Codec<rayorch::bench::StringOnlyBlob> {
  static void encode(const rayorch::bench::StringOnlyBlob& b, std::string& out) {
    Codec<std::string>::encode(b.bytes, out);
  }
  static rayorch::bench::StringOnlyBlob decode(std::string_view& in) {
    return {Codec<std::string>::decode(in)};
  }
};

namespace rayorch::bench {
namespace {

struct Empty {
  std::vector<std::int64_t> run(ro::Column<std::int64_t> x) { return x.to_vector(); }
};

template <class T>
struct Echo {
  std::vector<T> run(ro::Column<T> x) { return x.to_vector(); }
};

// Seconds of the fastest of `repeats` runs of `rows` on one executor (built once, so worker
// start-up is not measured), after one warm-up run.
template <class U, class T>
double best_seconds(ro::Isolation isolation, int batch, const std::vector<T>& rows, int repeats,
                    std::uint64_t& rpcs) {
  auto m = ro::Module<U>().batch_size(batch).isolation(isolation);
  auto program = ro::compile([&](ro::Port<T> x) { return m(x); });
  ro::Executor ex(program);
  ro::RunOptions o;
  o.progress = false;
  ex.run(std::vector<T>(rows.begin(), rows.begin() + std::min<std::size_t>(rows.size(), 64)), o);
  double best = std::numeric_limits<double>::infinity();
  for (int r = 0; r < repeats; ++r) {
    const auto start = std::chrono::steady_clock::now();
    auto result = ex.run(rows, o);
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    best = std::min(best, s);
    rpcs = 0;
    for (const auto& c : result.metrics.calls) rpcs += c.rpcs;
  }
  return best;
}

// Microseconds of the fastest memcpy of `bytes` between two buffers already touched (no page
// faults), the unit a copy of the payload costs on this machine.
double memcpy_us(std::size_t bytes, int repeats) {
  std::vector<char> from(bytes, 'x');
  std::vector<char> to(bytes, 'y');
  const int copies = static_cast<int>(std::clamp<std::size_t>((256u << 20) / bytes, 4, 4096));
  double best = std::numeric_limits<double>::infinity();
  for (int r = 0; r < std::max(repeats, 3); ++r) {
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < copies; ++i) {
      from[static_cast<std::size_t>(i) % bytes] = static_cast<char>(i);
      std::memcpy(to.data(), from.data(), bytes);
      // Keeps the copy from being optimised away.
      asm volatile("" : : "r"(to.data()) : "memory");
    }
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    best = std::min(best, s * 1e6 / copies);
  }
  return best;
}

struct EchoFigures {
  std::uint64_t rpcs = 0;
  double threads_us = 0;
  double processes_us = 0;
  double round_trip_us() const { return processes_us - threads_us; }
};

template <class T>
EchoFigures echo(const std::vector<T>& payloads, int repeats) {
  EchoFigures f;
  std::uint64_t rpcs_t = 0;
  const double th = best_seconds<Echo<T>>(ro::Isolation::threads, 1, payloads, repeats, rpcs_t);
  const double pr = best_seconds<Echo<T>>(ro::Isolation::process, 1, payloads, repeats, f.rpcs);
  f.threads_us = th * 1e6 / static_cast<double>(rpcs_t);
  f.processes_us = pr * 1e6 / static_cast<double>(f.rpcs);
  return f;
}

std::string size_name(std::size_t kib) {
  return kib % 1024 == 0 ? fmt::format("{} MiB", kib / 1024) : fmt::format("{} KiB", kib);
}

}  // namespace

Report run_isolation(const IsolationOptions& o) {
  Report rep;
  Table t(
      {"call", "rows per RPC", "RPCs", "threads us/RPC", "processes us/RPC", "round trip us/RPC"});
  nlohmann::json rows_json = nlohmann::json::array();
  bool targets = true;
  for (int batch : {1, 32}) {
    std::vector<std::int64_t> rows(o.rpcs * static_cast<std::size_t>(batch));
    for (std::size_t i = 0; i < rows.size(); ++i) rows[i] = static_cast<std::int64_t>(i);
    std::uint64_t rpcs_t = 0, rpcs_p = 0;
    const double th = best_seconds<Empty>(ro::Isolation::threads, batch, rows, o.repeats, rpcs_t);
    const double pr = best_seconds<Empty>(ro::Isolation::process, batch, rows, o.repeats, rpcs_p);
    const double th_us = th * 1e6 / static_cast<double>(rpcs_t);
    const double pr_us = pr * 1e6 / static_cast<double>(rpcs_p);
    const double added = pr_us - th_us;
    const bool met = added <= o.round_trip_target_us;
    targets = targets && met;
    t.add({"empty", std::to_string(batch), std::to_string(rpcs_p), fmt::format("{:.1f}", th_us),
           fmt::format("{:.1f}", pr_us), fmt::format("{:.1f}", added)});
    rows_json.push_back({{"call", "empty"},
                         {"rows_per_rpc", batch},
                         {"rpcs", rpcs_p},
                         {"threads_us_per_rpc", th_us},
                         {"processes_us_per_rpc", pr_us},
                         {"round_trip_us", added},
                         {"target_us", o.round_trip_target_us},
                         {"met", met}});
  }

  // Echoes of large payloads: the round trip moves the payload there and back.
  Table p({"payload each way", "codec", "RPCs", "threads us/RPC", "processes us/RPC",
           "round trip us/RPC", "GiB/s", "memcpy us", "round trip in memcpys"});
  nlohmann::json payload_json = nlohmann::json::array();
  for (const std::size_t kib : o.payload_kib) {
    const std::size_t bytes = kib * 1024;
    if (bytes == 0) continue;
    const std::size_t budget = o.payload_mib_per_run << 20;
    const std::size_t n =
        std::clamp<std::size_t>(budget / bytes, 4, std::max<std::size_t>(o.payload_rpcs, 4));
    std::vector<std::string> strings(n, std::string(bytes, 'x'));
    for (std::size_t i = 0; i < n; ++i) strings[i][0] = static_cast<char>('a' + i % 26);
    // Both inputs exist during both measurements, so each runs with the same memory held
    // (fresh pages for new values cost as much as a copy).
    std::vector<StringOnlyBlob> blobs;
    blobs.reserve(n);
    for (const std::string& s : strings) blobs.push_back({s});
    const double copy_us = memcpy_us(bytes, o.repeats);
    const EchoFigures sink = echo(strings, o.repeats);
    const EchoFigures scratch = echo(blobs, o.repeats);
    for (const auto& [codec, f, extra] : {std::tuple{"writes to the frame", sink, 0},
                                          std::tuple{"std::string& only", scratch, 1}}) {
      const double rt = f.round_trip_us();
      const double gib_per_s = 2.0 * static_cast<double>(bytes) / (rt * 1e-6) / (1u << 30);
      p.add({size_name(kib), codec, std::to_string(f.rpcs), fmt::format("{:.1f}", f.threads_us),
             fmt::format("{:.1f}", f.processes_us), fmt::format("{:.1f}", rt),
             fmt::format("{:.2f}", gib_per_s), fmt::format("{:.1f}", copy_us),
             fmt::format("{:.1f}", rt / copy_us)});
      payload_json.push_back({{"kib_each_way", kib},
                              {"codec", codec},
                              {"rpcs", f.rpcs},
                              {"threads_us_per_rpc", f.threads_us},
                              {"processes_us_per_rpc", f.processes_us},
                              {"round_trip_us", rt},
                              {"gib_per_s", gib_per_s},
                              {"memcpy_us", copy_us},
                              {"round_trip_in_memcpys", rt / copy_us},
                              // The encoder's (plus a scratch string's) and the decoder's.
                              {"copies_each_way", 2 + extra}});
    }
  }
  rep.text = fmt::format(
      "bench isolation: one actor, one RPC in flight; best of {} runs per row; 'round trip' is "
      "processes minus threads per RPC\n\n{}\n"
      "target: an empty isolated RPC adds <= {:.0f} us (1 and 32 rows): {}\n\n"
      "payload echo (GiB/s: both ways over the round trip; 'memcpy us': one copy of the "
      "payload between warm buffers)\n\n{}\n"
      "a payload is written by its encoder straight into the memory shared with the worker "
      "and copied out of it by its decoder: 2 copies each way, 4 per round trip; a codec that "
      "takes only std::string& adds one each way (a scratch string)\n",
      o.repeats, t.str(), o.round_trip_target_us, targets ? "met" : "MISSED", p.str());
  rep.targets_met = targets;
  rep.json = {{"benchmark", "isolation"},
              {"machine", machine_info()},
              {"empty", rows_json},
              {"payload", payload_json},
              {"targets", {{{"name", "empty isolated RPC round trip"}, {"met", targets}}}}};
  return rep;
}

}  // namespace rayorch::bench
