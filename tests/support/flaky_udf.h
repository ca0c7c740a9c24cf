// Shared by the recovery tests (tests/runtime/recovery_*_test.cc): a UDF whose failures are a
// deterministic function of the Grain's input value and of how many attempts have touched
// that value, and a run of it through testing::SyncExecutor recorded RPC by RPC.
#pragma once

#include <climits>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <rayorch/rayorch.h>

namespace runtime_test {

namespace ro = rayorch;

namespace flaky_udf {

// How many more attempts on a value throw, and of which kind. Shared by every instance of
// the UDF, so it survives the replacement of a lost actor.
struct Script {
  std::map<int, int> throws;  // value -> attempts left that throw std::runtime_error("boom")
  std::map<int, int> losses;  // value -> attempts left that lose the actor
  int constructed = 0;
};

struct Flaky {
  explicit Flaky(std::shared_ptr<Script> script) : script_(std::move(script)) {
    ++script_->constructed;
  }
  std::vector<int> run(ro::Column<int> x) {
    bool lose = false, fail = false;
    for (int v : x) {
      // Every value in the batch consumes one scripted attempt.
      if (int& n = script_->losses[v]; n > 0) {
        lose = true;
        if (n != INT_MAX) --n;
      }
      if (int& n = script_->throws[v]; n > 0) {
        fail = true;
        if (n != INT_MAX) --n;
      }
    }
    if (lose) throw ro::ActorLost("actor vanished");
    if (fail) throw std::runtime_error("boom");
    std::vector<int> out;
    for (int v : x) out.push_back(100 + v);
    return out;
  }
  std::shared_ptr<Script> script_;
};

struct RunLog {
  std::vector<std::string> rpcs;
  std::vector<std::string> outputs;
  std::string error;
  ro::RunMetrics metrics;
};

inline RunLog run_flaky(ro::RecoveryPolicy policy, std::shared_ptr<Script> script, int infra = 1,
                        int batch = 4) {
  ro::Module<Flaky> flaky =
      ro::Module<Flaky>(script).batch_size(batch).recovery(policy).infra_retries(infra);
  auto program = ro::compile([&](ro::Port<int> x) { return flaky(x); });
  ro::testing::SyncExecutor ex(program);
  RunLog o;
  try {
    auto r = ex.run({0, 1, 2, 3, 4});
    for (const auto& out : r.outputs) {
      o.outputs.push_back(out.ok() ? std::to_string(out.value())
                                   : std::string(ro::to_string(out.issue().outcome)) + "(" +
                                         out.issue().cause + ")");
    }
    o.metrics = r.metrics;
  } catch (const ro::ExecutionError& e) {
    o.error = e.what();
  }
  for (const auto& rpc : ex.rpcs()) o.rpcs.push_back(rpc.to_string());
  return o;
}

inline const std::vector<std::string> kAllPresent = {"100", "101", "102", "103", "104"};

}  // namespace flaky_udf

}  // namespace runtime_test
