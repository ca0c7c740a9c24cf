// `bench isolation`: the cost of process-isolated pools per RPC. See bench.h.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "bench.h"
#include <fmt/format.h>

#include <rayorch/rayorch.h>

namespace rayorch::bench {
namespace {

struct Empty {
  std::vector<std::int64_t> run(ro::Column<std::int64_t> x) { return x.to_vector(); }
};

struct Echo {
  std::vector<std::string> run(ro::Column<std::string> x) { return x.to_vector(); }
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
  std::vector<std::string> payloads(o.payload_rpcs, std::string(o.payload_kib * 1024, 'x'));
  for (std::size_t i = 0; i < payloads.size(); ++i)
    payloads[i][0] = static_cast<char>('a' + i % 26);
  std::uint64_t rpcs_t = 0, rpcs_p = 0;
  const double th = best_seconds<Echo>(ro::Isolation::threads, 1, payloads, o.repeats, rpcs_t);
  const double pr = best_seconds<Echo>(ro::Isolation::process, 1, payloads, o.repeats, rpcs_p);
  const double th_us = th * 1e6 / static_cast<double>(rpcs_t);
  const double pr_us = pr * 1e6 / static_cast<double>(rpcs_p);
  // Each RPC moves the payload there and back.
  const double bytes = 2.0 * static_cast<double>(o.payload_kib) * 1024.0;
  const double gib_per_s = bytes / ((pr_us - th_us) * 1e-6) / (1024.0 * 1024.0 * 1024.0);
  t.add({fmt::format("echo {} KiB", o.payload_kib), "1", std::to_string(rpcs_p),
         fmt::format("{:.1f}", th_us), fmt::format("{:.1f}", pr_us),
         fmt::format("{:.1f}", pr_us - th_us)});
  rep.text = fmt::format(
      "bench isolation: one actor, one RPC in flight; best of {} runs per row; 'round trip' is "
      "processes minus threads per RPC\n\n{}\n"
      "target: an empty isolated RPC adds <= {:.0f} us (1 and 32 rows): {}\n"
      "payload: {:.2f} GiB/s through the worker protocol ({} KiB each way per RPC); a payload "
      "above 64 KiB is copied 3 times each way (encode into the frame, into the memory shared "
      "with the worker, decode out of it), a smaller one 4 times (the socket's 2 instead)\n",
      o.repeats, t.str(), o.round_trip_target_us, targets ? "met" : "MISSED", gib_per_s,
      o.payload_kib);
  rep.targets_met = targets;
  rep.json = {{"benchmark", "isolation"},
              {"machine", machine_info()},
              {"empty", rows_json},
              {"payload",
               {{"kib_each_way", o.payload_kib},
                {"threads_us_per_rpc", th_us},
                {"processes_us_per_rpc", pr_us},
                {"gib_per_s", gib_per_s},
                {"copies_each_way", 3}}},
              {"targets", {{{"name", "empty isolated RPC round trip"}, {"met", targets}}}}};
  return rep;
}

}  // namespace rayorch::bench
