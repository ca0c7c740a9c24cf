// A generator of random, well-formed RayOrch programs plus a reference interpreter for them.
//
// A case is built from one 64-bit seed. The structure of the program (which operators, which
// Domains, which faults) comes from one stream of that seed; the schedule (replicas, batch
// sizes, reservation, input batching, delays) from others, so the same program can be
// compiled and run under many schedules. Every run is checked against the reference
// interpreter (`Model`), and every local run against the SyncExecutor run of the same case.
//
// Values are int64 hashes of their lineage: a Call output is a hash of the Call's seed and
// its input values, a list element a hash of its producer row and its index, a fold a hash
// of the ordered group. So a value identifies the Grain that made it, and every UDF decision
// (list length, mask, RecordFailure, GroupFailure, exception, lost actor) is a deterministic
// function of the Grain's key and the seed.
//
// Which outcomes are schedule-independent (and therefore compared exactly):
// - Physical failures are arranged so that their final effect is fixed: `flaky` Grains throw
//   only on their first attempt and `lost` Grains lose their actor only once (every trigger
//   in the RPC is consumed when it fires, so no Grain sees two), under budgets that absorb
//   them; `poison` Grains always throw, which isolate_tail turns into a FAILED Grain and
//   every other policy into an aborted run (only in cases that allow aborts).
// - A GroupFailure makes the outcome of the READY siblings of the same Call under the same
//   parent depend on the schedule (committed siblings stay PRESENT, the others are
//   SUPPRESSED). The interpreter marks those Items `tainted` and propagates the taint through
//   everything that depends on them; tainted root outputs are not compared. A lone
//   GroupFailure Grain itself stays deterministic (FAILED with its own message), and so does
//   everything decided by an untainted failure (a reduce with a FAILED member is SUPPRESSED
//   whatever its tainted siblings do). Root-Domain Calls key their barrier by their own
//   Entity, so a GroupFailure there taints nothing.
// - A GroupFailure decides its parent's gathers (DESIGN 5): a reduce over that parent of a
//   Port downstream of the failing Call (a guard Call, as the compiler finds them) is
//   SUPPRESSED whatever its membership, so it is compared exactly even though its members
//   are tainted. The generator makes memberships that leave the failing child out (a
//   MaskExclude that is false exactly where a Call raises its GroupFailure), where the group
//   would otherwise be PRESENT; its cause is the GroupFailure's unless the member scan meets
//   a certain failure first. Only a barrier that may or may not be installed (its Grain is
//   tainted) leaves such a group tainted.
// - Causes are compared exactly: the lowest-index failing input decides a Call's SUPPRESSED
//   cause and the lowest failing ordinal a reduce's (DESIGN 5), whatever the arrival
//   order. Only a tainted Item that could fail first leaves the cause open (`any_cause`).
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <type_traits>
#include <unordered_set>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include <rayorch/rayorch.h>

namespace random_pipeline {

namespace ro = rayorch;
using i64 = std::int64_t;
using u64 = std::uint64_t;

// ---- Hashing and randomness ---------------------------------------------------------------

inline u64 mix(u64 x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
inline u64 combine(u64 h, u64 v) {
  return mix(h ^ mix(v + 0x632be59bd9b4e019ull));
}

// A tiny deterministic generator: std distributions differ between standard libraries, and a
// seed must reproduce the same case everywhere.
class Rng {
 public:
  explicit Rng(u64 seed) : state_(seed) {}
  u64 next() { return mix(state_++ * 0xd1342543de82ef95ull + 1); }
  // Uniform in [lo, hi].
  int range(int lo, int hi) {
    return lo + static_cast<int>(next() % static_cast<u64>(hi - lo + 1));
  }
  bool chance(int permille) { return static_cast<int>(next() % 1000) < permille; }
  template <class T>
  const T& pick(const std::vector<T>& v) {
    return v[next() % v.size()];
  }
  // Index drawn with the given weights.
  int weighted(std::initializer_list<int> weights) {
    int total = 0;
    for (int w : weights) total += w;
    int r = range(0, total - 1);
    int i = 0;
    for (int w : weights) {
      if (r < w) return i;
      r -= w;
      ++i;
    }
    return i - 1;
  }

 private:
  u64 state_;
};

// ---- Faults and their shared state -----------------------------------------------------------

// Rates in permille, decided per Grain from its hash.
struct Faults {
  int record = 0;  // RecordFailure row
  int group = 0;   // GroupFailure row
  int flaky = 0;   // throws on the first attempt only
  int poison = 0;  // always throws
  int lost = 0;    // ActorLost on the first attempt only
  int hang = 0;    // sleeps past the Module's timeout on the first attempt only
};

// What one Grain does, a pure function of the Call's faults and the Grain's hash.
struct Behavior {
  bool lost = false;
  bool poison = false;
  bool flaky = false;
  bool group = false;
  bool record = false;
  bool hang = false;
};

inline bool roll(u64 h, u64 salt, int permille) {
  return permille > 0 && static_cast<int>(mix(h ^ salt) % 1000) < permille;
}

inline Behavior classify(const Faults& f, u64 h) {
  return Behavior{roll(h, 0x10, f.lost),  roll(h, 0x20, f.poison), roll(h, 0x30, f.flaky),
                  roll(h, 0x40, f.group), roll(h, 0x50, f.record), roll(h, 0x90, f.hang)};
}

inline std::string record_message(int call, u64 h) {
  return fmt::format("record c{} {:016x}", call, h);
}
inline std::string group_message(int call, u64 h) {
  return fmt::format("group c{} {:016x}", call, h);
}
inline std::string poison_message(int call, u64 h) {
  return fmt::format("poison c{} {:016x}", call, h);
}
inline std::string flaky_message(int call, u64 h) {
  return fmt::format("flaky c{} {:016x}", call, h);
}
// The cause isolate_tail records for a poisoned Grain ("ErrorType: message").
inline std::string poison_cause(int call, u64 h) {
  return "std::runtime_error: " + poison_message(call, h);
}

// State shared by every actor of every Call of one case: which first-attempt faults already
// fired, the injected delay, and counters checked against the run's metrics.
struct Runtime {
  std::mutex mutex;
  std::unordered_set<u64> fired;
  std::atomic<int> delay_us{0};
  std::atomic<int> hang_ms{0};  // 0: hang triggers do nothing (the SyncExecutor has no timeouts)
  std::atomic<u64> salt{0};
  std::atomic<u64> rpcs{0};
  std::atomic<u64> rows{0};
  std::atomic<u64> throws{0};
  std::atomic<u64> losses{0};

  void reset(int delay, u64 delay_salt, int hang) {
    std::lock_guard<std::mutex> lock(mutex);
    fired.clear();
    delay_us = delay;
    hang_ms = hang;
    salt = delay_salt;
    rpcs = 0;
    rows = 0;
    throws = 0;
    losses = 0;
  }
};

// The static argument of every Call: its seed, faults and shape parameters.
struct CallSpec {
  u64 seed = 0;
  int call = 0;  // index in the case, for messages
  Faults faults;
  int max_len = 3;          // list UDFs: lengths in [0, max_len]
  int true_permille = 600;  // mask UDFs
  // MaskExclude: the Call whose GroupFailures the mask leaves out (its seed and faults).
  u64 exclude_seed = 0;
  Faults exclude_faults;
  std::shared_ptr<Runtime> rt;
};

// ---- Pure value functions (shared by the UDFs and the interpreter) ---------------------------

inline u64 hash_values(u64 seed, std::initializer_list<i64> values) {
  u64 h = seed;
  for (i64 v : values) h = combine(h, static_cast<u64>(v));
  return h;
}
template <class G>
u64 hash_group(u64 h, const G& group) {
  h = combine(h, 0x6a09e667f3bcc909ull + group.size());
  for (i64 v : group) h = combine(h, static_cast<u64>(v));
  return h;
}
inline i64 out_value(u64 h, int output) {
  return static_cast<i64>(mix(h ^ (0x100u + static_cast<u64>(output))));
}
inline std::size_t list_length(const CallSpec& s, u64 h) {
  return static_cast<std::size_t>(mix(h ^ 0x60) % static_cast<u64>(s.max_len + 1));
}
inline i64 list_element(u64 h, int list, std::size_t k) {
  return static_cast<i64>(mix(h ^ ((0x1000u + 0x1000u * static_cast<u64>(list)) + k)));
}
inline bool mask_value(const CallSpec& s, u64 h) {
  return static_cast<int>(mix(h ^ 0x70) % 1000) < s.true_permille;
}

// Runs the physical side of one RPC: delay, lost actor, exceptions. Returns normally when the
// RPC is to produce rows.
inline void rpc_prologue(const CallSpec& s, const std::vector<u64>& hs) {
  Runtime& rt = *s.rt;
  rt.rpcs.fetch_add(1);
  rt.rows.fetch_add(hs.size());
  if (const int d = rt.delay_us.load(); d > 0 && !hs.empty()) {
    const u64 us = mix(hs[0] ^ rt.salt.load()) % static_cast<u64>(d);
    if (us > 0) std::this_thread::sleep_for(std::chrono::microseconds(us));
  }
  std::vector<Behavior> b;
  b.reserve(hs.size());
  for (u64 h : hs) b.push_back(classify(s.faults, h));
  bool hang = false;
  {
    std::lock_guard<std::mutex> lock(rt.mutex);
    // Every lost trigger in the RPC fires together, so a Grain loses its actor at most once.
    bool lose = false;
    for (std::size_t i = 0; i < hs.size(); ++i)
      lose = lose || (b[i].lost && !rt.fired.count(hs[i] ^ 0x10));
    if (lose) {
      for (std::size_t i = 0; i < hs.size(); ++i) {
        if (b[i].lost) rt.fired.insert(hs[i] ^ 0x10);
      }
      rt.losses.fetch_add(1);
      throw ro::ActorLost(fmt::format("lost c{}", s.call));
    }
    std::string error;
    for (std::size_t i = 0; i < hs.size() && error.empty(); ++i) {
      if (b[i].poison) error = poison_message(s.call, hs[i]);
    }
    for (std::size_t i = 0; i < hs.size() && error.empty(); ++i) {
      if (b[i].flaky && !rt.fired.count(hs[i] ^ 0x30)) error = flaky_message(s.call, hs[i]);
    }
    if (!error.empty()) {
      // Any throw consumes every flaky trigger of the RPC: a flaky Grain never fails again,
      // even when isolate_tail later splits it into a batch of its own.
      for (std::size_t i = 0; i < hs.size(); ++i) {
        if (b[i].flaky) rt.fired.insert(hs[i] ^ 0x30);
      }
      rt.throws.fetch_add(1);
      throw std::runtime_error(error);
    }
    if (rt.hang_ms.load() > 0) {
      for (std::size_t i = 0; i < hs.size(); ++i)
        hang = hang || (b[i].hang && !rt.fired.count(hs[i] ^ 0x90));
      for (std::size_t i = 0; i < hs.size() && hang; ++i) {
        if (b[i].hang) rt.fired.insert(hs[i] ^ 0x90);
      }
    }
  }
  // The Module's timeout abandons this attempt; its late rows must be rejected.
  if (hang) std::this_thread::sleep_for(std::chrono::milliseconds(rt.hang_ms.load()));
}

// The data side of one row: a typed failure or the value.
template <class R, class Make>
ro::Row<R> make_row(const CallSpec& s, u64 h, Make&& make) {
  const Behavior b = classify(s.faults, h);
  if (b.group) return ro::GroupFailure{group_message(s.call, h)};
  if (b.record) return ro::RecordFailure{record_message(s.call, h)};
  return make();
}

// In multi-output results, a row fails when any output holds a failure; put it in one or all
// outputs so both paths of the result conversion are exercised.
inline bool failure_in_output(u64 h, int output, int outputs) {
  const u64 r = mix(h ^ 0x80);
  if (r % 2 == 0) return true;
  return static_cast<int>((r >> 8) % static_cast<u64>(outputs)) == output;
}
template <class R>
ro::Row<R> make_multi_row(const CallSpec& s, u64 h, int output, int outputs, R value) {
  const Behavior b = classify(s.faults, h);
  if ((b.group || b.record) && failure_in_output(h, output, outputs)) {
    if (b.group) return ro::GroupFailure{group_message(s.call, h)};
    return ro::RecordFailure{record_message(s.call, h)};
  }
  return value;
}

// ---- The UDFs --------------------------------------------------------------------------------

struct Op1 {
  std::vector<ro::Row<i64>> run(ro::Column<i64> a, const CallSpec& s) {
    std::vector<u64> hs;
    for (std::size_t i = 0; i < a.size(); ++i) hs.push_back(hash_values(s.seed, {a[i]}));
    rpc_prologue(s, hs);
    std::vector<ro::Row<i64>> out;
    for (u64 h : hs) out.push_back(make_row<i64>(s, h, [&] { return out_value(h, 0); }));
    return out;
  }
};

// Plain results (no ro::Row): the UDF cannot fail a row, only throw.
struct Op1Plain {
  std::vector<i64> run(ro::Column<i64> a, const CallSpec& s) {
    std::vector<u64> hs;
    for (std::size_t i = 0; i < a.size(); ++i) hs.push_back(hash_values(s.seed, {a[i]}));
    rpc_prologue(s, hs);
    std::vector<i64> out;
    for (u64 h : hs) out.push_back(out_value(h, 0));
    return out;
  }
};

struct Op2 {
  std::vector<ro::Row<i64>> run(ro::Column<i64> a, ro::Column<i64> b, const CallSpec& s) {
    std::vector<u64> hs;
    for (std::size_t i = 0; i < a.size(); ++i) hs.push_back(hash_values(s.seed, {a[i], b[i]}));
    rpc_prologue(s, hs);
    std::vector<ro::Row<i64>> out;
    for (u64 h : hs) out.push_back(make_row<i64>(s, h, [&] { return out_value(h, 0); }));
    return out;
  }
};

struct Op3 {
  std::vector<ro::Row<i64>> run(ro::Column<i64> a, ro::Column<i64> b, ro::Column<i64> c,
                                const CallSpec& s) {
    std::vector<u64> hs;
    for (std::size_t i = 0; i < a.size(); ++i)
      hs.push_back(hash_values(s.seed, {a[i], b[i], c[i]}));
    rpc_prologue(s, hs);
    std::vector<ro::Row<i64>> out;
    for (u64 h : hs) out.push_back(make_row<i64>(s, h, [&] { return out_value(h, 0); }));
    return out;
  }
};

// One input, two outputs.
struct Split2 {
  std::tuple<std::vector<ro::Row<i64>>, std::vector<ro::Row<i64>>> run(ro::Column<i64> a,
                                                                       const CallSpec& s) {
    std::vector<u64> hs;
    for (std::size_t i = 0; i < a.size(); ++i) hs.push_back(hash_values(s.seed, {a[i]}));
    rpc_prologue(s, hs);
    std::tuple<std::vector<ro::Row<i64>>, std::vector<ro::Row<i64>>> out;
    for (u64 h : hs) {
      std::get<0>(out).push_back(make_multi_row<i64>(s, h, 0, 2, out_value(h, 0)));
      std::get<1>(out).push_back(make_multi_row<i64>(s, h, 1, 2, out_value(h, 1)));
    }
    return out;
  }
};

// Two inputs, two outputs.
struct Op2x2 {
  std::tuple<std::vector<ro::Row<i64>>, std::vector<ro::Row<i64>>> run(ro::Column<i64> a,
                                                                       ro::Column<i64> b,
                                                                       const CallSpec& s) {
    std::vector<u64> hs;
    for (std::size_t i = 0; i < a.size(); ++i) hs.push_back(hash_values(s.seed, {a[i], b[i]}));
    rpc_prologue(s, hs);
    std::tuple<std::vector<ro::Row<i64>>, std::vector<ro::Row<i64>>> out;
    for (u64 h : hs) {
      std::get<0>(out).push_back(make_multi_row<i64>(s, h, 0, 2, out_value(h, 0)));
      std::get<1>(out).push_back(make_multi_row<i64>(s, h, 1, 2, out_value(h, 1)));
    }
    return out;
  }
};

inline std::vector<i64> make_list(const CallSpec& s, u64 h, int list) {
  std::vector<i64> v(list_length(s, h));
  for (std::size_t k = 0; k < v.size(); ++k) v[k] = list_element(h, list, k);
  return v;
}

// One list output, for F::expand.
struct List1 {
  std::vector<ro::Row<std::vector<i64>>> run(ro::Column<i64> a, const CallSpec& s) {
    std::vector<u64> hs;
    for (std::size_t i = 0; i < a.size(); ++i) hs.push_back(hash_values(s.seed, {a[i]}));
    rpc_prologue(s, hs);
    std::vector<ro::Row<std::vector<i64>>> out;
    for (u64 h : hs) {
      out.push_back(make_row<std::vector<i64>>(s, h, [&] { return make_list(s, h, 0); }));
    }
    return out;
  }
};

// Two lists of equal length (for F::expand_aligned) plus a scalar that stays in the parent
// Domain.
struct List2 {
  using result = std::tuple<std::vector<ro::Row<std::vector<i64>>>,
                            std::vector<ro::Row<std::vector<i64>>>, std::vector<ro::Row<i64>>>;
  result run(ro::Column<i64> a, const CallSpec& s) {
    std::vector<u64> hs;
    for (std::size_t i = 0; i < a.size(); ++i) hs.push_back(hash_values(s.seed, {a[i]}));
    rpc_prologue(s, hs);
    result out;
    for (u64 h : hs) {
      std::get<0>(out).push_back(make_multi_row(s, h, 0, 3, make_list(s, h, 0)));
      std::get<1>(out).push_back(make_multi_row(s, h, 1, 3, make_list(s, h, 1)));
      std::get<2>(out).push_back(make_multi_row<i64>(s, h, 2, 3, out_value(h, 2)));
    }
    return out;
  }
};

struct MaskRow {
  std::vector<ro::Row<bool>> run(ro::Column<i64> a, const CallSpec& s) {
    std::vector<u64> hs;
    for (std::size_t i = 0; i < a.size(); ++i) hs.push_back(hash_values(s.seed, {a[i]}));
    rpc_prologue(s, hs);
    std::vector<ro::Row<bool>> out;
    for (u64 h : hs) out.push_back(make_row<bool>(s, h, [&] { return mask_value(s, h); }));
    return out;
  }
};

// std::vector<bool> results take the library's packed-bool path.
struct MaskPlain {
  std::vector<bool> run(ro::Column<i64> a, const CallSpec& s) {
    std::vector<u64> hs;
    for (std::size_t i = 0; i < a.size(); ++i) hs.push_back(hash_values(s.seed, {a[i]}));
    rpc_prologue(s, hs);
    std::vector<bool> out;
    for (u64 h : hs) out.push_back(mask_value(s, h));
    return out;
  }
};

// A membership mask that leaves out exactly the children on which another Call (same input,
// CallSpec::exclude_seed/exclude_faults) raises a GroupFailure: false there, true elsewhere.
inline bool excluded(const CallSpec& s, i64 input) {
  return classify(s.exclude_faults, hash_values(s.exclude_seed, {input})).group;
}
struct MaskExclude {
  std::vector<ro::Row<bool>> run(ro::Column<i64> a, const CallSpec& s) {
    std::vector<u64> hs;
    for (std::size_t i = 0; i < a.size(); ++i) hs.push_back(hash_values(s.seed, {a[i]}));
    rpc_prologue(s, hs);
    std::vector<ro::Row<bool>> out;
    for (std::size_t i = 0; i < a.size(); ++i)
      out.push_back(make_row<bool>(s, hs[i], [&] { return !excluded(s, a[i]); }));
    return out;
  }
};

// Brings a reduced group back to one int64, order-sensitively.
struct Fold1 {
  std::vector<ro::Row<i64>> run(ro::Column<ro::Group<i64>> g, const CallSpec& s) {
    std::vector<u64> hs;
    for (const auto& group : g) hs.push_back(hash_group(s.seed, group));
    rpc_prologue(s, hs);
    std::vector<ro::Row<i64>> out;
    for (u64 h : hs) out.push_back(make_row<i64>(s, h, [&] { return out_value(h, 0); }));
    return out;
  }
};

struct Fold2 {
  std::vector<ro::Row<i64>> run(ro::Column<ro::Group<i64>> a, ro::Column<ro::Group<i64>> b,
                                const CallSpec& s) {
    std::vector<u64> hs;
    for (std::size_t i = 0; i < a.size(); ++i)
      hs.push_back(hash_group(hash_group(s.seed, a[i]), b[i]));
    rpc_prologue(s, hs);
    std::vector<ro::Row<i64>> out;
    for (u64 h : hs) out.push_back(make_row<i64>(s, h, [&] { return out_value(h, 0); }));
    return out;
  }
};

// ---- The program as recorded by the generator ------------------------------------------------

enum class PortType { integer, boolean, list, group };
enum class OpKind { call, expand, reduce, filter, broadcast };
enum class Udf {
  op1,
  op1_plain,
  op2,
  op3,
  split2,
  op2x2,
  list1,
  list2,
  mask_row,
  mask_plain,
  mask_exclude,
  fold1,
  fold2
};

inline const char* udf_name(Udf u) {
  switch (u) {
    case Udf::op1:
      return "Op1";
    case Udf::op1_plain:
      return "Op1Plain";
    case Udf::op2:
      return "Op2";
    case Udf::op3:
      return "Op3";
    case Udf::split2:
      return "Split2";
    case Udf::op2x2:
      return "Op2x2";
    case Udf::list1:
      return "List1";
    case Udf::list2:
      return "List2";
    case Udf::mask_row:
      return "MaskRow";
    case Udf::mask_plain:
      return "MaskPlain";
    case Udf::mask_exclude:
      return "MaskExclude";
    case Udf::fold1:
      return "Fold1";
    case Udf::fold2:
      return "Fold2";
  }
  return "?";
}

struct IrPort {
  PortType type = PortType::integer;
  int domain = 0;
};

struct IrModule {
  Udf udf = Udf::op1;
  ro::RecoveryPolicy recovery;
  int infra_retries = 1;
  int timeout_ms = 0;
  // Runs in worker processes (Isolation::process): its Calls get only faults that are pure
  // functions of the Grain (record, group, poison), since a child process's copy of the
  // shared Runtime cannot remember which first-attempt faults already fired.
  bool isolated = false;
  // Schedule options (not part of the structure).
  int replicas = 1;
  int batch_size = 1;
  ro::Reservation reservation = ro::Reservation::elastic;
};

struct IrOp {
  OpKind kind = OpKind::call;
  int module = -1;  // calls
  CallSpec spec;    // calls
  std::vector<int> in;
  std::vector<int> out;
  int members = -1;  // reduce: explicit membership Port
  int domain = -1;   // expand: the child Domain it creates
};

struct IrDomain {
  int parent = -1;
  int depth = 0;
};

struct Ir {
  int sources = 1;
  std::vector<IrPort> ports;
  std::vector<IrOp> ops;
  std::vector<IrDomain> domains{IrDomain{}};
  std::vector<IrModule> modules;
  std::vector<int> outputs;

  // The structure only (no schedule options): equal for every compile of one case.
  std::string fingerprint() const {
    std::string s = fmt::format("sources {} outputs", sources);
    for (int o : outputs) s += fmt::format(" {}", o);
    for (const IrOp& op : ops) {
      s += fmt::format(";k{} m{} d{} mem{} in", static_cast<int>(op.kind), op.module, op.domain,
                       op.members);
      for (int i : op.in) s += fmt::format(" {}", i);
      s += " out";
      for (int o : op.out) s += fmt::format(" {}", o);
      if (op.kind == OpKind::call) {
        s += fmt::format(" seed {:x} f{},{},{},{},{},{} len{} mask{} excl {:x}:{}", op.spec.seed,
                         op.spec.faults.record, op.spec.faults.group, op.spec.faults.flaky,
                         op.spec.faults.poison, op.spec.faults.lost, op.spec.faults.hang,
                         op.spec.max_len, op.spec.true_permille, op.spec.exclude_seed,
                         op.spec.exclude_faults.group);
      }
    }
    for (const IrModule& m : modules) {
      s += fmt::format(";{} r{}:{} i{} t{}", udf_name(m.udf), static_cast<int>(m.recovery.kind()),
                       m.recovery.retries(), m.infra_retries, m.timeout_ms);
    }
    return s;
  }

  // A readable listing for failure reports.
  std::string describe() const {
    auto policy = [](const ro::RecoveryPolicy& p) -> std::string {
      switch (p.kind()) {
        case ro::RecoveryPolicy::Kind::abort:
          return "abort";
        case ro::RecoveryPolicy::Kind::retry_batch:
          return fmt::format("retry_batch({})", p.retries());
        case ro::RecoveryPolicy::Kind::retry_tail:
          return fmt::format("retry_tail({})", p.retries());
        case ro::RecoveryPolicy::Kind::isolate_tail:
          return "isolate_tail";
      }
      return "?";
    };
    std::string s;
    for (std::size_t m = 0; m < modules.size(); ++m) {
      const IrModule& mm = modules[m];
      s += fmt::format(
          "  module {} {}: replicas {} batch {} {} recovery {} infra {} timeout {}{}\n", m,
          udf_name(mm.udf), mm.replicas, mm.batch_size,
          mm.reservation == ro::Reservation::elastic ? "elastic" : "parent_bound",
          policy(mm.recovery), mm.infra_retries, mm.timeout_ms, mm.isolated ? " isolated" : "");
    }
    auto names = [&](const std::vector<int>& v) {
      std::string t;
      for (int p : v) t += fmt::format("{}x{}@d{}", t.empty() ? "" : " ", p, ports[p].domain);
      return t;
    };
    const char* kinds[] = {"call", "expand", "reduce", "filter", "broadcast"};
    for (std::size_t i = 0; i < ops.size(); ++i) {
      const IrOp& op = ops[i];
      s += fmt::format("  op {} {}", i, kinds[static_cast<int>(op.kind)]);
      if (op.kind == OpKind::call) {
        s += fmt::format(" {} module {} c{} faults(rf {} gf {} flaky {} poison {} lost {} hang {})",
                         udf_name(modules[op.module].udf), op.module, op.spec.call,
                         op.spec.faults.record, op.spec.faults.group, op.spec.faults.flaky,
                         op.spec.faults.poison, op.spec.faults.lost, op.spec.faults.hang);
      }
      if (op.kind == OpKind::expand) s += fmt::format(" -> d{}", op.domain);
      if (op.members >= 0) s += fmt::format(" members x{}", op.members);
      s += fmt::format(" [{}] -> [{}]\n", names(op.in), names(op.out));
    }
    s += fmt::format("  outputs [{}]\n", names(outputs));
    return s;
  }
};

// ---- The generator ---------------------------------------------------------------------------

// Knobs of the generator.
struct GenConfig {
  // Faults that abort the run: poison under abort or retry policies, lost without budget.
  bool allow_abort = false;
  // Modules with a timeout, and Grains that hang past it on their first attempt.
  bool timeouts = true;
  int max_depth = 3;
  int max_calls = 14;
  int max_expands = 4;
  // Per mille of Modules that run in worker processes, chosen by hashing `isolation_salt`
  // with the Module's index (no draw from the structure stream, so the programs of cases
  // without isolation stay as they are).
  int isolated_permille = 0;
  u64 isolation_salt = 0;
};

// Records a random program twice over: as ro::Ports while ro::compile traces it, and as an Ir
// for the interpreter. The structure comes from `structure_seed`, the schedule options of each
// Module from `schedule_seed`.
class Builder {
 public:
  Builder(u64 structure_seed, u64 schedule_seed, GenConfig config, std::shared_ptr<Runtime> rt)
      : rs_(structure_seed), rsched_(schedule_seed), config_(config), rt_(std::move(rt)) {}

  const Ir& ir() const { return ir_; }

  template <std::size_t NOut>
  std::array<ro::Port<i64>, NOut> build(std::vector<ro::Port<i64>> sources) {
    ir_.sources = static_cast<int>(sources.size());
    i64s_.assign(1, {});
    bools_.assign(1, {});
    for (auto& p : sources) i64s_[0].push_back(add_i64(0, p));
    gen_domain(0, 0);
    // A final combining Call makes the outputs depend on more of the program.
    if (rs_.chance(500) && calls_ < config_.max_calls + 2) {
      if (i64s_[0].size() >= 2 && rs_.chance(500)) {
        call_op2(0, pick_i64(0), pick_i64(0));
      } else {
        call_op3(0, pick_i64(0), pick_i64(0), pick_i64(0));
      }
    }
    std::array<ro::Port<i64>, NOut> outs = {make_output<NOut>(std::make_index_sequence<NOut>{})};
    return outs;
  }

 private:
  template <std::size_t NOut, std::size_t... I>
  std::array<ro::Port<i64>, NOut> make_output(std::index_sequence<I...>) {
    return {pick_output(I)...};
  }
  ro::Port<i64> pick_output(std::size_t k) {
    const auto& root = i64s_[0];
    int id;
    if (k == 0 && rs_.chance(650)) {
      id = root.back();
    } else if (k > 0 && rs_.chance(40) && !ir_.outputs.empty()) {
      id = ir_.outputs.back();  // the same Port listed twice
    } else {
      id = rs_.pick(root);
    }
    ir_.outputs.push_back(id);
    return p64_.at(id);
  }

  // ---- Ports
  int new_port(PortType t, int domain) {
    ir_.ports.push_back(IrPort{t, domain});
    return static_cast<int>(ir_.ports.size()) - 1;
  }
  int add_i64(int domain, ro::Port<i64> p) {
    const int id = new_port(PortType::integer, domain);
    p64_.emplace(id, std::move(p));
    return id;
  }
  int add_bool(int domain, ro::Port<bool> p) {
    const int id = new_port(PortType::boolean, domain);
    pbool_.emplace(id, std::move(p));
    bools_[domain].push_back(id);
    return id;
  }
  int add_list(int domain, ro::Port<std::vector<i64>> p) {
    const int id = new_port(PortType::list, domain);
    plist_.emplace(id, std::move(p));
    return id;
  }
  int add_group(int domain, ro::Port<ro::Group<i64>> p) {
    const int id = new_port(PortType::group, domain);
    pgroup_.emplace(id, std::move(p));
    return id;
  }
  // Recent Ports are preferred so that chains grow deep.
  int pick_i64(int domain) {
    const auto& v = i64s_[domain];
    if (rs_.chance(450)) return v.back();
    return rs_.pick(v);
  }

  // ---- Modules and Calls
  template <class U>
  std::vector<std::pair<std::unique_ptr<ro::Module<U>>, int>>& modules_of() {
    static_assert(sizeof(U) > 0);
    return std::get<std::vector<std::pair<std::unique_ptr<ro::Module<U>>, int>>>(modules_);
  }

  // A Module of UDF `U`: an existing one (its Calls then share one pool) or a new one.
  template <class U>
  std::pair<ro::Module<U>*, int> module(Udf kind) {
    auto& mods = modules_of<U>();
    if (!mods.empty() && rs_.chance(250)) {
      auto& [m, index] = mods[rs_.next() % mods.size()];
      return {m.get(), index};
    }
    IrModule im;
    im.udf = kind;
    const int policy = rs_.weighted({30, 20, 20, 30});
    switch (policy) {
      case 0:
        im.recovery = ro::RecoveryPolicy::abort();
        break;
      case 1:
        im.recovery = ro::RecoveryPolicy::retry_batch(rs_.range(1, 2));
        break;
      case 2:
        im.recovery = ro::RecoveryPolicy::retry_tail(rs_.range(1, 2));
        break;
      default:
        im.recovery = ro::RecoveryPolicy::isolate_tail();
        break;
    }
    im.infra_retries = rs_.range(1, 2);
    if (config_.allow_abort && rs_.chance(150)) im.infra_retries = 0;
    if (config_.timeouts && rs_.chance(25)) {
      // A generous replay budget absorbs timeouts that a loaded machine causes on its own.
      im.timeout_ms = 10;
      im.infra_retries = 8;
    }
    // Schedule options from the other stream.
    const int r = rsched_.weighted({50, 30, 15, 5});
    im.replicas = r == 0 ? 1 : r == 1 ? rsched_.range(2, 3) : r == 2 ? rsched_.range(4, 6) : 8;
    const int b = rsched_.weighted({25, 25, 25, 15, 10});
    im.batch_size = b == 0   ? 1
                    : b == 1 ? rsched_.range(2, 3)
                    : b == 2 ? rsched_.range(4, 8)
                    : b == 3 ? rsched_.range(9, 32)
                             : 64;
    im.reservation = rsched_.chance(300) ? ro::Reservation::parent_bound : ro::Reservation::elastic;
    im.isolated = config_.isolated_permille > 0 &&
                  static_cast<int>(mix(config_.isolation_salt + ir_.modules.size()) % 1000) <
                      config_.isolated_permille;
    if (im.isolated) im.timeout_ms = 0;  // a hang cannot be scripted once only in a process
    auto m = std::make_unique<ro::Module<U>>();
    if (im.isolated) m->isolation(ro::Isolation::process);
    m->replicas(im.replicas)
        .batch_size(im.batch_size)
        .reservation(im.reservation)
        .recovery(im.recovery)
        .infra_retries(im.infra_retries)
        .timeout(std::chrono::milliseconds(im.timeout_ms));
    ir_.modules.push_back(im);
    const int index = static_cast<int>(ir_.modules.size()) - 1;
    mods.emplace_back(std::move(m), index);
    return {mods.back().first.get(), index};
  }

  CallSpec make_spec(int module, int domain, bool rows_can_fail) {
    const IrModule& m = ir_.modules[module];
    CallSpec s;
    s.seed = rs_.next();
    s.call = calls_++;
    s.rt = rt_;
    s.max_len = rs_.pick(std::vector<int>{0, 1, 2, 2, 3, 3, 4, 6});
    // Now and then a wide expansion below the root: batches full of one parent's siblings.
    if (ir_.domains[domain].depth == 0 && rs_.chance(30)) s.max_len = 40;
    s.true_permille = rs_.pick(std::vector<int>{0, 300, 600, 800, 1000});
    Faults& f = s.faults;
    if (rows_can_fail) {
      if (rs_.chance(350)) f.record = rs_.range(20, 250);
      // A GroupFailure below the root taints its siblings: keep it rarer there.
      if (rs_.chance(domain == 0 ? 300 : 150)) f.group = rs_.range(20, 200);
    }
    const auto kind = m.recovery.kind();
    if (kind != ro::RecoveryPolicy::Kind::abort && rs_.chance(400)) f.flaky = rs_.range(30, 300);
    if (kind == ro::RecoveryPolicy::Kind::isolate_tail && rs_.chance(350)) {
      f.poison = rs_.range(20, 200);
    }
    if (config_.allow_abort && kind != ro::RecoveryPolicy::Kind::isolate_tail && rs_.chance(100)) {
      f.poison = rs_.range(10, 100);
    }
    if ((m.infra_retries >= 1 || config_.allow_abort) && rs_.chance(300)) {
      f.lost = rs_.range(20, 200);
    }
    if (m.timeout_ms > 0 && rs_.chance(700)) f.hang = rs_.range(20, 150);
    if (m.isolated) {
      f.flaky = 0;
      f.lost = 0;
      f.hang = 0;
    }
    return s;
  }

  IrOp& record_call(int module, const CallSpec& spec, std::vector<int> in) {
    IrOp op;
    op.kind = OpKind::call;
    op.module = module;
    op.spec = spec;
    op.in = std::move(in);
    ir_.ops.push_back(std::move(op));
    return ir_.ops.back();
  }

  template <class U>
  int call_single(Udf kind, int domain, std::vector<int> in) {
    auto [m, index] = module<U>(kind);
    CallSpec spec = make_spec(index, domain, kind != Udf::op1_plain);
    ro::Port<i64> out = [&] {
      if constexpr (std::is_same_v<U, Op2>) {
        return (*m)(p64_.at(in[0]), p64_.at(in[1]), spec);
      } else if constexpr (std::is_same_v<U, Op3>) {
        return (*m)(p64_.at(in[0]), p64_.at(in[1]), p64_.at(in[2]), spec);
      } else {
        return (*m)(p64_.at(in[0]), spec);
      }
    }();
    record_call(index, spec, in);
    const int id = add_i64(domain, out);
    ir_.ops.back().out = {id};
    i64s_[domain].push_back(id);
    return id;
  }
  int call_op2(int domain, int a, int b) { return call_single<Op2>(Udf::op2, domain, {a, b}); }
  int call_op3(int domain, int a, int b, int c) {
    return call_single<Op3>(Udf::op3, domain, {a, b, c});
  }

  void gen_call(int domain) {
    const int k = rs_.weighted({25, 10, 20, 10, 10, 10});
    switch (k) {
      case 0:
        call_single<Op1>(Udf::op1, domain, {pick_i64(domain)});
        break;
      case 1:
        call_single<Op1Plain>(Udf::op1_plain, domain, {pick_i64(domain)});
        break;
      case 2:
        call_op2(domain, pick_i64(domain), pick_i64(domain));
        break;
      case 3:
        call_op3(domain, pick_i64(domain), pick_i64(domain), pick_i64(domain));
        break;
      case 4: {
        auto [m, index] = module<Split2>(Udf::split2);
        const int a = pick_i64(domain);
        CallSpec spec = make_spec(index, domain, true);
        auto [x, y] = (*m)(p64_.at(a), spec);
        record_call(index, spec, {a});
        const int ix = add_i64(domain, x);
        const int iy = add_i64(domain, y);
        ir_.ops.back().out = {ix, iy};
        i64s_[domain].push_back(ix);
        i64s_[domain].push_back(iy);
        break;
      }
      default: {
        auto [m, index] = module<Op2x2>(Udf::op2x2);
        const int a = pick_i64(domain);
        const int b = pick_i64(domain);
        CallSpec spec = make_spec(index, domain, true);
        auto [x, y] = (*m)(p64_.at(a), p64_.at(b), spec);
        record_call(index, spec, {a, b});
        const int ix = add_i64(domain, x);
        const int iy = add_i64(domain, y);
        ir_.ops.back().out = {ix, iy};
        i64s_[domain].push_back(iy);
        i64s_[domain].push_back(ix);
        break;
      }
    }
  }

  // A bool Port in `domain`: reused, broadcast from an ancestor, or a new mask Call.
  int mask_port(int domain) {
    if (!bools_[domain].empty() && rs_.chance(300)) return rs_.pick(bools_[domain]);
    if (domain != 0 && rs_.chance(300)) {
      const int a = ancestor(domain);
      if (!bools_[a].empty()) {
        const int src = rs_.pick(bools_[a]);
        const int like = pick_i64(domain);
        ro::Port<bool> p = ro::F::broadcast(pbool_.at(src), p64_.at(like));
        const int id = new_port(PortType::boolean, domain);
        pbool_.emplace(id, p);
        bools_[domain].push_back(id);
        record_simple(OpKind::broadcast, {src, like}, {id});
        return id;
      }
    }
    const int src = pick_i64(domain);
    const bool plain = rs_.chance(400);
    ro::Port<bool> p = [&] {
      if (plain) {
        auto [m, index] = module<MaskPlain>(Udf::mask_plain);
        CallSpec spec = make_spec(index, domain, false);
        record_call(index, spec, {src});
        return (*m)(p64_.at(src), spec);
      }
      auto [m, index] = module<MaskRow>(Udf::mask_row);
      CallSpec spec = make_spec(index, domain, true);
      record_call(index, spec, {src});
      return (*m)(p64_.at(src), spec);
    }();
    IrOp& op = ir_.ops.back();
    const int id = add_bool(domain, p);
    op.out = {id};
    return id;
  }

  void record_simple(OpKind kind, std::vector<int> in, std::vector<int> out, int members = -1) {
    IrOp op;
    op.kind = kind;
    op.in = std::move(in);
    op.out = std::move(out);
    op.members = members;
    ir_.ops.push_back(std::move(op));
  }

  int ancestor(int domain) {
    std::vector<int> chain;
    for (int d = ir_.domains[domain].parent; d >= 0; d = ir_.domains[d].parent) chain.push_back(d);
    return rs_.pick(chain);
  }

  void gen_filter(int domain) {
    const int mask = mask_port(domain);
    const int src = pick_i64(domain);
    ro::Port<i64> p = ro::F::filter(p64_.at(src), pbool_.at(mask));
    const int id = add_i64(domain, p);
    record_simple(OpKind::filter, {src, mask}, {id});
    i64s_[domain].push_back(id);
  }

  void gen_broadcast(int domain) {
    const int a = ancestor(domain);
    const int src = rs_.pick(i64s_[a]);
    const int like = pick_i64(domain);
    ro::Port<i64> p = ro::F::broadcast(p64_.at(src), p64_.at(like));
    const int id = add_i64(domain, p);
    record_simple(OpKind::broadcast, {src, like}, {id});
    i64s_[domain].push_back(id);
  }

  int new_domain(int parent) {
    ir_.domains.push_back(IrDomain{parent, ir_.domains[parent].depth + 1});
    i64s_.emplace_back();
    bools_.emplace_back();
    return static_cast<int>(ir_.domains.size()) - 1;
  }

  void gen_expand(int domain, int depth) {
    ++expands_;
    const int src = pick_i64(domain);
    std::vector<int> children;  // child Domains to fill and reduce
    if (rs_.chance(550)) {
      auto [m, index] = module<List1>(Udf::list1);
      CallSpec spec = make_spec(index, domain, true);
      ro::Port<std::vector<i64>> list = (*m)(p64_.at(src), spec);
      record_call(index, spec, {src});
      const int lid = add_list(domain, list);
      ir_.ops.back().out = {lid};
      const int c = new_domain(domain);
      ro::Port<i64> child =
          rs_.chance(150) ? std::get<0>(ro::F::expand_aligned(list)) : ro::F::expand(list);
      const int cid = add_i64(c, child);
      i64s_[c].push_back(cid);
      IrOp op;
      op.kind = OpKind::expand;
      op.in = {lid};
      op.out = {cid};
      op.domain = c;
      ir_.ops.push_back(op);
      children.push_back(c);
    } else {
      auto [m, index] = module<List2>(Udf::list2);
      CallSpec spec = make_spec(index, domain, true);
      auto [l1, l2, x] = (*m)(p64_.at(src), spec);
      record_call(index, spec, {src});
      const int id1 = add_list(domain, l1);
      const int id2 = add_list(domain, l2);
      const int ix = add_i64(domain, x);
      ir_.ops.back().out = {id1, id2, ix};
      i64s_[domain].push_back(ix);
      const int mode = rs_.weighted({70, 15, 15});
      if (mode == 0) {
        // One Expansion, two aligned child Ports.
        const int c = new_domain(domain);
        auto [c1, c2] = ro::F::expand_aligned(l1, l2);
        const int i1 = add_i64(c, c1);
        const int i2 = add_i64(c, c2);
        i64s_[c].push_back(i1);
        i64s_[c].push_back(i2);
        IrOp op;
        op.kind = OpKind::expand;
        op.in = {id1, id2};
        op.out = {i1, i2};
        op.domain = c;
        ir_.ops.push_back(op);
        children.push_back(c);
      } else {
        // Two separate expansions of one Call (mode 1), or only one of its lists (mode 2).
        const int n = mode == 1 ? 2 : 1;
        for (int k = 0; k < n; ++k) {
          const int c = new_domain(domain);
          const auto& l = k == 0 ? l2 : l1;
          ro::Port<i64> child = ro::F::expand(l);
          const int ci = add_i64(c, child);
          i64s_[c].push_back(ci);
          IrOp op;
          op.kind = OpKind::expand;
          op.in = {k == 0 ? id2 : id1};
          op.out = {ci};
          op.domain = c;
          ir_.ops.push_back(op);
          children.push_back(c);
        }
      }
    }
    for (int c : children) {
      gen_domain(c, depth + 1);
      const int reduces = rs_.weighted({5, 75, 20});  // 0: the child results are a dead end
      for (int r = 0; r < reduces; ++r) gen_reduce(c, domain);
    }
  }

  int members_port(int child) {
    if (!bools_[child].empty() && rs_.chance(400)) return rs_.pick(bools_[child]);
    return pick_i64(child);
  }

  // `value`: the (first) values Port, or -1 to pick one.
  template <class M>
  void reduce_with(int child, int parent, int kind, const M& members, int mid, int value = -1) {
    if (kind <= 1) {
      const int v = value >= 0 ? value : pick_i64(child);
      ro::Port<ro::Group<i64>> g = [&] {
        if constexpr (std::is_same_v<M, std::nullptr_t>) {
          return ro::F::reduce(p64_.at(v));
        } else {
          return rs_.chance(500) ? ro::F::reduce(p64_.at(v), members)
                                 : ro::F::reduce(p64_.at(v), ro::F::members(members));
        }
      }();
      const int gid = add_group(parent, g);
      record_simple(OpKind::reduce, {v}, {gid}, mid);
      fold1(parent, gid);
      return;
    }
    const int v1 = value >= 0 ? value : pick_i64(child);
    const int v2 = pick_i64(child);
    auto [g1, g2] = [&] {
      if constexpr (std::is_same_v<M, std::nullptr_t>) {
        return ro::F::reduce_aligned(p64_.at(v1), p64_.at(v2));
      } else {
        return ro::F::reduce_aligned(ro::F::members(members), p64_.at(v1), p64_.at(v2));
      }
    }();
    const int id1 = add_group(parent, g1);
    const int id2 = add_group(parent, g2);
    record_simple(OpKind::reduce, {v1, v2}, {id1, id2}, mid);
    if (rs_.chance(650)) {
      auto [m, index] = module<Fold2>(Udf::fold2);
      CallSpec spec = make_spec(index, parent, true);
      ro::Port<i64> out = (*m)(pgroup_.at(id1), pgroup_.at(id2), spec);
      record_call(index, spec, {id1, id2});
      const int id = add_i64(parent, out);
      ir_.ops.back().out = {id};
      i64s_[parent].push_back(id);
    } else {
      fold1(parent, id1);
      fold1(parent, id2);
    }
  }

  // A reduce whose membership leaves out the children that raised a GroupFailure (DESIGN 5:
  // the GroupFailure still decides the parent's gathers). A new Call with GroupFailures on
  // some children, a MaskExclude over the same input that is false exactly there, and a
  // membership filtered by that mask; the values are the failing Call's output.
  void gen_excluding_reduce(int child, int parent) {
    const int a = pick_i64(child);
    auto [m, index] = module<Op1>(Udf::op1);
    CallSpec spec = make_spec(index, child, true);
    spec.faults.group = rs_.range(100, 450);
    ro::Port<i64> out = (*m)(p64_.at(a), spec);
    record_call(index, spec, {a});
    const int v = add_i64(child, out);
    ir_.ops.back().out = {v};
    i64s_[child].push_back(v);
    auto [mm, mindex] = module<MaskExclude>(Udf::mask_exclude);
    CallSpec ms = make_spec(mindex, child, false);
    ms.exclude_seed = spec.seed;
    ms.exclude_faults = spec.faults;
    ro::Port<bool> mask = (*mm)(p64_.at(a), ms);
    record_call(mindex, ms, {a});
    const int mask_id = add_bool(child, mask);
    ir_.ops.back().out = {mask_id};
    // The membership: the input itself or another child Port, filtered by the mask.
    const int src = rs_.chance(600) ? a : pick_i64(child);
    ro::Port<i64> kept = ro::F::filter(p64_.at(src), pbool_.at(mask_id));
    const int kid = add_i64(child, kept);
    record_simple(OpKind::filter, {src, mask_id}, {kid});
    reduce_with(child, parent, rs_.chance(700) ? 1 : 3, p64_.at(kid), kid, v);
  }

  void gen_reduce(int child, int parent) {
    if (rs_.chance(220)) {
      gen_excluding_reduce(child, parent);
      return;
    }
    const int kind = rs_.weighted({40, 20, 25, 15});  // plain, members, aligned, aligned+members
    const bool with_members = kind == 1 || kind == 3;
    if (!with_members) {
      reduce_with(child, parent, kind == 0 ? 0 : 2, nullptr, -1);
      return;
    }
    const int mid = members_port(child);
    if (ir_.ports[mid].type == PortType::boolean) {
      reduce_with(child, parent, kind == 1 ? 1 : 3, pbool_.at(mid), mid);
    } else {
      reduce_with(child, parent, kind == 1 ? 1 : 3, p64_.at(mid), mid);
    }
  }

  void fold1(int domain, int group) {
    auto [m, index] = module<Fold1>(Udf::fold1);
    CallSpec spec = make_spec(index, domain, true);
    ro::Port<i64> out = (*m)(pgroup_.at(group), spec);
    record_call(index, spec, {group});
    const int id = add_i64(domain, out);
    ir_.ops.back().out = {id};
    i64s_[domain].push_back(id);
  }

  void gen_domain(int domain, int depth) {
    const int steps = domain == 0 ? rs_.range(1, 5) : rs_.range(0, 4);
    for (int s = 0; s < steps; ++s) {
      const bool can_expand =
          depth < config_.max_depth && expands_ < config_.max_expands && calls_ < config_.max_calls;
      const int k = rs_.weighted({calls_ < config_.max_calls ? 45 : 0, 15, domain != 0 ? 15 : 0,
                                  can_expand ? (depth == 0 ? 35 : 20) : 0});
      switch (k) {
        case 0:
          gen_call(domain);
          break;
        case 1:
          gen_filter(domain);
          break;
        case 2:
          gen_broadcast(domain);
          break;
        default:
          gen_expand(domain, depth);
          break;
      }
    }
  }

  Rng rs_;
  Rng rsched_;
  GenConfig config_;
  std::shared_ptr<Runtime> rt_;
  Ir ir_;
  int calls_ = 0;
  int expands_ = 0;
  std::vector<std::vector<int>> i64s_;   // per Domain
  std::vector<std::vector<int>> bools_;  // per Domain
  std::map<int, ro::Port<i64>> p64_;
  std::map<int, ro::Port<bool>> pbool_;
  std::map<int, ro::Port<std::vector<i64>>> plist_;
  std::map<int, ro::Port<ro::Group<i64>>> pgroup_;
  std::tuple<std::vector<std::pair<std::unique_ptr<ro::Module<Op1>>, int>>,
             std::vector<std::pair<std::unique_ptr<ro::Module<Op1Plain>>, int>>,
             std::vector<std::pair<std::unique_ptr<ro::Module<Op2>>, int>>,
             std::vector<std::pair<std::unique_ptr<ro::Module<Op3>>, int>>,
             std::vector<std::pair<std::unique_ptr<ro::Module<Split2>>, int>>,
             std::vector<std::pair<std::unique_ptr<ro::Module<Op2x2>>, int>>,
             std::vector<std::pair<std::unique_ptr<ro::Module<List1>>, int>>,
             std::vector<std::pair<std::unique_ptr<ro::Module<List2>>, int>>,
             std::vector<std::pair<std::unique_ptr<ro::Module<MaskRow>>, int>>,
             std::vector<std::pair<std::unique_ptr<ro::Module<MaskPlain>>, int>>,
             std::vector<std::pair<std::unique_ptr<ro::Module<MaskExclude>>, int>>,
             std::vector<std::pair<std::unique_ptr<ro::Module<Fold1>>, int>>,
             std::vector<std::pair<std::unique_ptr<ro::Module<Fold2>>, int>>>
      modules_;
};

// ---- The reference interpreter ---------------------------------------------------------------

// What a root output may be. `tainted`: schedule-dependent, not compared. Otherwise the
// outcome and value are exact and the cause must be one of `causes` (any cause when
// `any_cause`).
struct Expected {
  ro::Outcome outcome = ro::Outcome::present;
  i64 value = 0;
  std::set<std::string> causes;
  bool any_cause = false;
  bool tainted = false;
};

struct Model {
  struct Item {
    ro::Outcome outcome = ro::Outcome::present;
    i64 i = 0;
    bool b = false;
    std::vector<i64> vec;  // lists and groups
    std::set<std::string> causes;
    bool any_cause = false;
    bool taint = false;
    // The taint may come from elsewhere than the GroupFailure barriers of this Domain's Calls
    // under the Item's parent (an ancestor's barrier through a broadcast, an expansion or a
    // reduce): where it then ends up SUPPRESSED, its cause is not known.
    bool taint_other = false;
  };
  // The GroupFailures of one Call under one parent Entity.
  struct Barrier {
    bool certain = false;          // an untainted READY Grain raises one: it is installed
    std::set<std::string> causes;  // the messages of every Grain that may raise one
    std::vector<std::uint32_t> certain_children;  // the untainted Grains that raise one
  };
  struct Entity {
    std::uint32_t parent = 0;
    std::uint32_t ordinal = 0;
    std::string key;
    bool taint = false;
  };
  struct Expansion {
    int state = 0;  // 1 succeeded, 2 dropped, 3 failed
    std::vector<std::uint32_t> children;
    std::set<std::string> causes;
    bool any_cause = false;
    bool taint = false;
  };

  const Ir& ir;
  std::vector<std::vector<Entity>> ents;        // per Domain
  std::vector<std::vector<Expansion>> expands;  // per child Domain, by parent Entity
  std::vector<std::vector<Item>> items;         // per Port
  bool definite_abort = false;
  bool possible_abort = false;
  // Reduces (per parent) that a GroupFailure of a guard Call decides SUPPRESSED (DESIGN 5),
  // those among them whose membership leaves a failing child out, and those whose natural
  // group (without the rule) would have been PRESENT.
  std::uint64_t barrier_decided = 0;
  std::uint64_t barrier_decided_excluding = 0;
  std::uint64_t barrier_decided_natural_present = 0;

  explicit Model(const Ir& program) : ir(program) {}

  // Evaluates the program on the source columns; returns [row][output].
  std::vector<std::vector<Expected>> run(const std::vector<std::vector<i64>>& sources) {
    const std::size_t rows = sources.empty() ? 0 : sources[0].size();
    ents.assign(ir.domains.size(), {});
    expands.assign(ir.domains.size(), {});
    items.assign(ir.ports.size(), {});
    barriers_.assign(ir.ops.size(), {});
    producer_.assign(ir.ports.size(), -1);
    for (std::size_t i = 0; i < ir.ops.size(); ++i) {
      for (int o : ir.ops[i].out) producer_[o] = static_cast<int>(i);
    }
    for (std::size_t r = 0; r < rows; ++r) {
      ents[0].push_back(Entity{0, static_cast<std::uint32_t>(r), std::to_string(r), false});
    }
    for (int s = 0; s < ir.sources; ++s) {
      auto& it = items[s];
      it.resize(rows);
      for (std::size_t r = 0; r < rows; ++r) it[r].i = sources[s][r];
    }
    for (const IrOp& op : ir.ops) {
      current_op_ = static_cast<int>(&op - ir.ops.data());
      switch (op.kind) {
        case OpKind::call:
          eval_call(op);
          break;
        case OpKind::expand:
          eval_expand(op);
          break;
        case OpKind::reduce:
          eval_reduce(op);
          break;
        case OpKind::filter:
          eval_filter(op);
          break;
        case OpKind::broadcast:
          eval_broadcast(op);
          break;
      }
    }
    std::vector<std::vector<Expected>> out(rows);
    for (std::size_t r = 0; r < rows; ++r) {
      for (int o : ir.outputs) {
        const Item& it = items[o][r];
        Expected e;
        e.outcome = it.outcome;
        e.value = it.i;
        e.causes = it.causes;
        e.any_cause = it.any_cause;
        e.tainted = it.taint;
        out[r].push_back(std::move(e));
      }
    }
    return out;
  }

 private:
  static bool failing(const Item& it) {
    return it.outcome == ro::Outcome::failed || it.outcome == ro::Outcome::suppressed;
  }
  static Item non_present(ro::Outcome o, std::set<std::string> causes, bool any) {
    Item it;
    it.outcome = o;
    it.causes = std::move(causes);
    it.any_cause = any;
    return it;
  }
  int domain_of(int port) const { return ir.ports[port].domain; }

  std::uint32_t ancestor_in(int domain, std::uint32_t e, int target) const {
    while (domain != target) {
      e = ents[domain][e].parent;
      domain = ir.domains[domain].parent;
    }
    return e;
  }

  void eval_call(const IrOp& op) {
    const int d = domain_of(op.out[0]);
    const std::size_t n = ents[d].size();
    const IrModule& mod = ir.modules[op.module];
    const Udf udf = mod.udf;
    for (int o : op.out) items[o].assign(n, Item{});
    // The Call input rule, per Grain.
    std::vector<char> ready(n, 0);
    std::vector<char> taint(n, 0);
    std::vector<char> taint_other(n, 0);
    std::vector<u64> hs(n, 0);
    for (std::size_t e = 0; e < n; ++e) {
      // The lowest-index failing input decides, so its cause does not depend on arrival order.
      // An untainted failing input makes the outcome certain; a tainted input before it may
      // fail first and leaves the cause open.
      bool taint_before = false, any_taint = false, other = false;
      const Item* certain = nullptr;
      for (int in : op.in) {
        const Item& it = items[in][e];
        if (it.taint) {
          any_taint = true;
          other = other || it.taint_other;
          if (certain == nullptr) taint_before = true;
        } else if (certain == nullptr && failing(it)) {
          certain = &it;
        }
      }
      if (certain != nullptr) {
        const Item r = non_present(ro::Outcome::suppressed, certain->causes,
                                   certain->any_cause || taint_before);
        for (int o : op.out) items[o][e] = r;
        continue;
      }
      // Otherwise the natural outcome, marked tainted when an input is. Taint only ever turns
      // Items into SUPPRESSED, so the naturally READY Grains are every Grain that may run: a
      // tainted one that would abort the run makes the abort possible, not certain.
      const Item* decider = nullptr;
      bool any_drop = false;
      for (int in : op.in) {
        const Item& it = items[in][e];
        if (decider == nullptr && failing(it)) decider = &it;
        if (it.outcome == ro::Outcome::dropped) any_drop = true;
      }
      if (decider != nullptr || any_drop) {
        Item r = decider != nullptr ? non_present(ro::Outcome::suppressed, decider->causes, true)
                                    : non_present(ro::Outcome::dropped, {""}, false);
        r.taint = any_taint;
        r.taint_other = other;
        r.any_cause = r.any_cause || any_taint;
        for (int o : op.out) items[o][e] = r;
        continue;
      }
      ready[e] = 1;
      taint[e] = any_taint ? 1 : 0;
      taint_other[e] = other ? 1 : 0;
      hs[e] = grain_hash(op, udf, e);
    }
    // GroupFailure barriers: keyed by the immediate parent, or the Grain itself at the root.
    std::map<std::uint32_t, std::vector<std::uint32_t>> groups;
    for (std::size_t e = 0; e < n; ++e) {
      if (!ready[e]) continue;
      const std::uint32_t key = d == 0 ? static_cast<std::uint32_t>(e) : ents[d][e].parent;
      groups[key].push_back(static_cast<std::uint32_t>(e));
    }
    for (const auto& [key, members] : groups) {
      std::vector<std::uint32_t> gfs;
      for (std::uint32_t e : members) {
        const Behavior b = classify(op.spec.faults, hs[e]);
        // A poisoned Grain throws before it can return its GroupFailure row.
        if (b.group && !b.poison) gfs.push_back(e);
      }
      if (gfs.empty()) continue;
      if (d != 0) {
        Barrier& bar = barriers_[current_op_][key];
        for (std::uint32_t e : gfs) {
          bar.causes.insert(group_message(op.spec.call, hs[e]));
          if (!taint[e]) {
            bar.certain = true;
            bar.certain_children.push_back(e);
          }
        }
      }
      const bool lone = gfs.size() == 1 && !taint[gfs[0]];
      for (std::uint32_t e : members) {
        if (!lone || e != gfs[0]) taint[e] = 1;
      }
    }
    for (std::size_t e = 0; e < n; ++e) {
      if (!ready[e]) continue;
      const u64 h = hs[e];
      const Behavior b = classify(op.spec.faults, h);
      const bool aborts =
          (b.poison && mod.recovery.kind() != ro::RecoveryPolicy::Kind::isolate_tail) ||
          (b.lost && mod.infra_retries == 0);
      if (aborts) {
        if (taint[e])
          possible_abort = true;
        else
          definite_abort = true;
      }
      std::vector<Item> outs(op.out.size());
      if (b.poison) {
        for (auto& it : outs)
          it = non_present(ro::Outcome::failed, {poison_cause(op.spec.call, h)}, false);
      } else if (b.group && udf != Udf::op1_plain && udf != Udf::mask_plain) {
        for (auto& it : outs)
          it = non_present(ro::Outcome::failed, {group_message(op.spec.call, h)}, false);
      } else if (b.record && udf != Udf::op1_plain && udf != Udf::mask_plain) {
        for (auto& it : outs)
          it = non_present(ro::Outcome::failed, {record_message(op.spec.call, h)}, false);
      } else {
        fill_values(op, udf, h, e, outs);
      }
      for (std::size_t k = 0; k < op.out.size(); ++k) {
        outs[k].taint = taint[e] != 0;
        outs[k].taint_other = taint_other[e] != 0;
        if (outs[k].taint) outs[k].any_cause = true;
        items[op.out[k]][e] = std::move(outs[k]);
      }
    }
  }

  u64 grain_hash(const IrOp& op, Udf udf, std::size_t e) const {
    const u64 seed = op.spec.seed;
    auto v = [&](int k) { return items[op.in[k]][e].i; };
    switch (udf) {
      case Udf::fold1:
        return hash_group(seed, items[op.in[0]][e].vec);
      case Udf::fold2:
        return hash_group(hash_group(seed, items[op.in[0]][e].vec), items[op.in[1]][e].vec);
      case Udf::op2:
      case Udf::op2x2:
        return hash_values(seed, {v(0), v(1)});
      case Udf::op3:
        return hash_values(seed, {v(0), v(1), v(2)});
      default:
        return hash_values(seed, {v(0)});
    }
  }

  void fill_values(const IrOp& op, Udf udf, u64 h, std::size_t e, std::vector<Item>& outs) const {
    switch (udf) {
      case Udf::split2:
      case Udf::op2x2:
        outs[0].i = out_value(h, 0);
        outs[1].i = out_value(h, 1);
        break;
      case Udf::list1:
        outs[0].vec = make_list(op.spec, h, 0);
        break;
      case Udf::list2:
        outs[0].vec = make_list(op.spec, h, 0);
        outs[1].vec = make_list(op.spec, h, 1);
        outs[2].i = out_value(h, 2);
        break;
      case Udf::mask_row:
      case Udf::mask_plain:
        outs[0].b = mask_value(op.spec, h);
        break;
      case Udf::mask_exclude:
        outs[0].b = !excluded(op.spec, items[op.in[0]][e].i);
        break;
      default:
        outs[0].i = out_value(h, 0);
        break;
    }
  }

  void eval_expand(const IrOp& op) {
    const int pd = domain_of(op.in[0]);
    const int cd = op.domain;
    const std::size_t n = ents[pd].size();
    expands[cd].assign(n, Expansion{});
    for (int c : op.out) items[c].clear();
    for (std::size_t p = 0; p < n; ++p) {
      const Item& first = items[op.in[0]][p];
      Expansion& x = expands[cd][p];
      x.taint = first.taint;
      for (int l : op.in) x.taint = x.taint || items[l][p].taint;
      if (first.outcome == ro::Outcome::present) {
        x.state = 1;
        const std::size_t len = first.vec.size();
        for (int l : op.in) {
          if (items[l][p].vec.size() != len)
            throw std::logic_error("aligned lists differ in length");
        }
        for (std::size_t k = 0; k < len; ++k) {
          const auto id = static_cast<std::uint32_t>(ents[cd].size());
          ents[cd].push_back(Entity{static_cast<std::uint32_t>(p), static_cast<std::uint32_t>(k),
                                    ents[pd][p].key + "/" + std::to_string(k),
                                    x.taint || ents[pd][p].taint});
          x.children.push_back(id);
          for (std::size_t s = 0; s < op.in.size(); ++s) {
            Item it;
            it.i = items[op.in[s]][p].vec[k];
            it.taint = ents[cd][id].taint;
            it.taint_other = it.taint;
            items[op.out[s]].push_back(std::move(it));
          }
        }
      } else if (first.outcome == ro::Outcome::dropped) {
        x.state = 2;
      } else {
        x.state = 3;
        x.causes = first.causes;
        x.any_cause = first.any_cause;
      }
    }
  }

  void eval_reduce(const IrOp& op) {
    const int cd = domain_of(op.in[0]);
    const int pd = ir.domains[cd].parent;
    const std::size_t n = ents[pd].size();
    const int members = op.members >= 0 ? op.members : op.in[0];
    for (int o : op.out) items[o].assign(n, Item{});
    const std::vector<int> guards = guards_of(op, members);
    for (std::size_t p = 0; p < n; ++p) {
      const Expansion& x = expands[cd][p];
      Item r;
      if (x.state == 2) {
        r = non_present(ro::Outcome::dropped, {""}, false);
      } else if (x.state == 3) {
        r = non_present(ro::Outcome::suppressed, x.causes, x.any_cause);
      } else {
        r = settle(op, x, members);
        // A GroupFailure of a guard Call under this parent decides the group (DESIGN 5).
        const Barrier* certain = nullptr;
        bool possible = false;
        std::set<std::string> all;
        for (int g : guards) {
          const auto it = barriers_[g].find(static_cast<std::uint32_t>(p));
          if (it == barriers_[g].end()) continue;
          possible = true;
          all.insert(it->second.causes.begin(), it->second.causes.end());
          if (it->second.certain && certain == nullptr) certain = &it->second;
        }
        if (certain != nullptr && !(x.taint || ents[pd][p].taint)) {
          count_barrier_decision(op, members, guards, static_cast<std::uint32_t>(p), r);
          r = barrier_settle(op, x, members, all);
        } else if (possible && !r.taint && r.outcome == ro::Outcome::present) {
          // A barrier that may or may not be installed: the group or SUPPRESSED.
          r.taint = true;
          r.any_cause = true;
        }
      }
      if (x.taint || ents[pd][p].taint) {
        r.taint = true;
        r.any_cause = true;
      }
      r.taint_other = r.taint;  // a reduce's taint is foreign to the parent Domain's barriers
      for (std::size_t v = 0; v < op.out.size(); ++v) {
        items[op.out[v]][p] = r;
        if (r.outcome == ro::Outcome::present) items[op.out[v]][p].vec = r_groups_[v];
      }
    }
  }

  std::vector<std::vector<i64>> r_groups_;                  // the groups of the last settle()
  std::vector<std::map<std::uint32_t, Barrier>> barriers_;  // per op (Calls): by parent key
  std::vector<int> producer_;                               // per Port: the op that makes it
  int current_op_ = -1;

  // The Calls of the reduce's child Domain upstream of its values or membership, through
  // Calls and filters without leaving that Domain (as the compiler finds the guards).
  std::vector<int> guards_of(const IrOp& op, int members) const {
    const int cd = domain_of(op.in[0]);
    std::vector<int> ports(op.in.begin(), op.in.end());
    ports.push_back(members);
    std::vector<char> seen(ir.ports.size(), 0);
    std::vector<int> guards;
    while (!ports.empty()) {
      const int port = ports.back();
      ports.pop_back();
      if (seen[port] || domain_of(port) != cd || producer_[port] < 0) continue;
      seen[port] = 1;
      const IrOp& src = ir.ops[producer_[port]];
      if (src.kind == OpKind::call) {
        guards.push_back(producer_[port]);
        ports.insert(ports.end(), src.in.begin(), src.in.end());
      } else if (src.kind == OpKind::filter) {
        ports.insert(ports.end(), src.in.begin(), src.in.end());
      }
    }
    return guards;
  }

  void count_barrier_decision(const IrOp& op, int members, const std::vector<int>& guards,
                              std::uint32_t parent, const Item& natural) {
    ++barrier_decided;
    if (!natural.taint && natural.outcome == ro::Outcome::present)
      ++barrier_decided_natural_present;
    for (int g : guards) {
      const auto it = barriers_[g].find(parent);
      if (it == barriers_[g].end()) continue;
      for (std::uint32_t c : it->second.certain_children) {
        const Item& m = items[members][c];
        const bool left_out = !m.taint && m.outcome == ro::Outcome::dropped;
        bool values_fail = false;
        for (int v : op.in) values_fail = values_fail || failing(items[v][c]);
        if (left_out && values_fail) {
          ++barrier_decided_excluding;
          return;
        }
      }
    }
  }

  // The group of a parent under an installed barrier: SUPPRESSED. The member scan still runs
  // first in ordinal order (DESIGN 5): a certain failure met before anything tainted decides
  // the cause; an Item tainted only by this Domain's barriers may pass or be SUPPRESSED with
  // one of their causes (`barrier`); past the scan the barrier's cause decides.
  Item barrier_settle(const IrOp& op, const Expansion& x, int members,
                      const std::set<std::string>& barrier) const {
    Item r = non_present(ro::Outcome::suppressed, {}, false);
    const int cd = domain_of(op.in[0]);
    auto open = [&] {
      r.any_cause = true;
      return r;
    };
    auto decided = [&](const Item& it) {
      r.causes.insert(it.causes.begin(), it.causes.end());
      r.any_cause = r.any_cause || it.any_cause;
      return r;
    };
    for (const std::uint32_t c : x.children) {
      const Item& m = items[members][c];
      if (m.taint) {
        if (m.taint_other) return open();
        r.causes.insert(barrier.begin(), barrier.end());
        if (failing(m)) return open();  // its natural cause is not tracked under taint
      } else if (failing(m)) {
        return decided(m);
      }
      if (m.outcome == ro::Outcome::dropped) continue;
      for (int v : op.in) {
        const Item& it = items[v][c];
        if (it.taint) {
          if (it.taint_other) return open();
          r.causes.insert(barrier.begin(), barrier.end());
          if (it.outcome != ro::Outcome::present) return open();
        } else if (it.outcome == ro::Outcome::dropped) {
          r.causes.insert(fmt::format("member {} of a reduce group was dropped", ents[cd][c].key));
          return r;
        } else if (it.outcome != ro::Outcome::present) {
          return decided(it);
        }
      }
    }
    r.causes.insert(barrier.begin(), barrier.end());
    return r;
  }

  // Whether child `c` makes the group SUPPRESSED for sure, wherever the scan reaches it: a
  // failing member, or an included member with a value that is not PRESENT.
  bool certainly_suppresses(const IrOp& op, int members, std::uint32_t c) const {
    const Item& m = items[members][c];
    if (m.taint) return false;
    if (failing(m)) return true;
    if (m.outcome != ro::Outcome::present) return false;
    for (int v : op.in) {
      const Item& it = items[v][c];
      if (!it.taint && it.outcome != ro::Outcome::present) return true;
    }
    return false;
  }

  // The natural result: children in ordinal order, the first one found failing decides the
  // group (and its cause); DROPPED members are left out.
  Item natural_settle(const IrOp& op, const Expansion& x, int members) {
    r_groups_.assign(op.in.size(), {});
    const int cd = domain_of(op.in[0]);
    for (const std::uint32_t c : x.children) {
      const Item& m = items[members][c];
      if (failing(m)) return non_present(ro::Outcome::suppressed, m.causes, m.any_cause);
      if (m.outcome == ro::Outcome::dropped) continue;
      for (std::size_t v = 0; v < op.in.size(); ++v) {
        const Item& it = items[op.in[v]][c];
        if (it.outcome == ro::Outcome::dropped) {
          return non_present(
              ro::Outcome::suppressed,
              {fmt::format("member {} of a reduce group was dropped", ents[cd][c].key)}, false);
        }
        if (it.outcome != ro::Outcome::present) {
          return non_present(ro::Outcome::suppressed, it.causes, it.any_cause);
        }
      }
      for (std::size_t v = 0; v < op.in.size(); ++v) r_groups_[v].push_back(items[op.in[v]][c].i);
    }
    return Item{};
  }

  // The natural result, tainted when a tainted Item comes before the decision. The scan
  // cannot see past such an Item, but a later certain failure still fixes the outcome
  // (though not the cause).
  Item settle(const IrOp& op, const Expansion& x, int members) {
    Item natural = natural_settle(op, x, members);
    auto unknown_from = [&](std::size_t k) {
      for (std::size_t j = k; j < x.children.size(); ++j) {
        if (certainly_suppresses(op, members, x.children[j]))
          return non_present(ro::Outcome::suppressed, {}, true);
      }
      natural.taint = true;
      natural.any_cause = true;
      return natural;
    };
    for (std::size_t k = 0; k < x.children.size(); ++k) {
      const std::uint32_t c = x.children[k];
      const Item& m = items[members][c];
      if (m.taint) return unknown_from(k);
      if (failing(m)) return natural;
      if (m.outcome == ro::Outcome::dropped) continue;
      for (int v : op.in) {
        const Item& it = items[v][c];
        if (it.taint) return unknown_from(k);
        if (it.outcome != ro::Outcome::present) return natural;
      }
    }
    return natural;
  }

  void eval_filter(const IrOp& op) {
    const int d = domain_of(op.out[0]);
    const std::size_t n = ents[d].size();
    items[op.out[0]].assign(n, Item{});
    for (std::size_t e = 0; e < n; ++e) {
      const Item& src = items[op.in[0]][e];
      const Item& mask = items[op.in[1]][e];
      Item r;
      if (src.outcome != ro::Outcome::present) {
        r = src;
      } else if (mask.outcome != ro::Outcome::present) {
        r = non_present(mask.outcome, mask.causes, mask.any_cause);
      } else if (mask.b) {
        r = src;
      } else {
        r = non_present(ro::Outcome::dropped, {""}, false);
      }
      // A non-PRESENT untainted source decides alone; otherwise any taint carries over.
      const bool decided_by_source = !src.taint && src.outcome != ro::Outcome::present;
      if (!decided_by_source && (src.taint || mask.taint)) {
        r.taint = true;
        r.any_cause = true;
        r.taint_other = (src.taint && src.taint_other) || (mask.taint && mask.taint_other);
      }
      items[op.out[0]][e] = std::move(r);
    }
  }

  void eval_broadcast(const IrOp& op) {
    const int sd = domain_of(op.in[0]);
    const int td = domain_of(op.out[0]);
    const std::size_t n = ents[td].size();
    items[op.out[0]].assign(n, Item{});
    for (std::size_t e = 0; e < n; ++e) {
      const std::uint32_t a = ancestor_in(td, static_cast<std::uint32_t>(e), sd);
      Item r = items[op.in[0]][a];
      if (ents[td][e].taint) {
        r.taint = true;
        r.any_cause = true;
      }
      r.taint_other = r.taint;  // from an ancestor Domain
      items[op.out[0]][e] = std::move(r);
    }
  }
};

}  // namespace random_pipeline
