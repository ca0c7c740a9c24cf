// Process-isolated actors (DESIGN 6.3, docs/ISOLATION.md): a UDF that crashes, aborts,
// allocates without bound under a memory limit or hangs costs only its worker process. The
// run finishes, exactly the poisoned Grain is FAILED with a cause naming what happened, every
// other output equals the thread-backed run, no child process remains afterwards, and the
// executor runs again. Values cross through their codecs: a codec written as a template over
// the sink writes values straight into the memory shared with the worker, both ways; a
// codec that takes only std::string& still works. Not part of the sanitizer subsets: fork,
// RLIMIT_AS and sanitizers do not mix.
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <vector>

#include "support/executor_testing.h"
#include <gtest/gtest.h>

#include <rayorch/rayorch.h>

namespace ro = rayorch;
using executor_testing::TempDir;

namespace {

ro::RunOptions quiet() {
  ro::RunOptions o;
  o.progress = false;
  return o;
}

void append_line(const std::string& path, const std::string& line) {
  std::ofstream(path, std::ios::app) << line << "\n";
}

std::vector<int> read_pids(const std::string& path) {
  std::vector<int> pids;
  std::ifstream in(path);
  for (int p; in >> p;) pids.push_back(p);
  return pids;
}

// Field `index` of /proc/PID/stat, numbered as in proc(5) (from 3, after the command).
std::string stat_field(int pid, int index) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto close = text.rfind(')');
  if (close == std::string::npos) return "";
  std::istringstream rest(text.substr(close + 2));
  // Numbered as in proc(5): the state is field 3, the parent pid field 4.
  std::string field;
  for (int i = 3; i <= index && rest >> field; ++i) {
  }
  return field;
}

// Processes whose parent is this test process (from /proc, zombies included).
std::vector<int> children_of_this_process() {
  std::vector<int> out;
  const std::string self = std::to_string(::getpid());
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    if (stat_field(std::stoi(name), 4) == self) out.push_back(std::stoi(name));
  }
  return out;
}

bool process_exists(int pid) {
  return std::filesystem::exists("/proc/" + std::to_string(pid));
}

// Triggers `mode` on input `trigger`; records every instance's pid in `pid_file`.
struct Poison {
  Poison(std::string m, int t, std::string pid_file) : mode(std::move(m)), trigger(t) {
    if (!pid_file.empty()) append_line(pid_file, std::to_string(::getpid()));
  }
  std::vector<std::string> run(ro::Column<int> x) {
    std::vector<std::string> out;
    for (int v : x) {
      if (v == trigger) {
        std::fprintf(stderr, "poison: about to %s on %d\n", mode.c_str(), v);
        std::fflush(stderr);
        if (mode == "segv") std::raise(SIGSEGV);
        if (mode == "abort") std::abort();
        if (mode == "exit") std::_Exit(3);
        if (mode == "sigkill") ::kill(::getpid(), SIGKILL);  // as the OOM killer would
        if (mode == "hang") {
          for (;;) ::pause();
        }
        if (mode == "alloc") {
          std::vector<std::unique_ptr<char[]>> hog;
          for (;;) hog.emplace_back(new char[16 << 20]);
        }
      }
      out.push_back("v" + std::to_string(v * 3));
    }
    return out;
  }
  std::string mode;
  int trigger;
};

struct Inc {
  std::vector<int> run(ro::Column<int> x) {
    std::vector<int> out;
    for (int v : x) out.push_back(v + 1);
    return out;
  }
};

struct Case {
  std::string mode;
  int trigger = -1;
  bool isolated = true;
  std::uint64_t memory_limit = 0;
  std::chrono::milliseconds timeout{0};
  std::string pid_file;
};

auto program_for(const Case& s) {
  ro::Module<Inc> inc;  // stays on threads
  auto poison = ro::Module<Poison>(s.mode, s.trigger, s.pid_file)
                    .replicas(2)
                    .batch_size(4)
                    .timeout(s.timeout);
  if (s.isolated) poison.isolation(ro::Isolation::process).memory_limit(s.memory_limit);
  return ro::compile([&](ro::Port<int> x) { return poison(inc(x)); });
}

std::vector<int> inputs() {
  std::vector<int> in;
  for (int i = 0; i < 20; ++i) in.push_back(i);
  return in;
}

// The thread-backed run without any trigger: what every untouched row must produce.
std::vector<std::string> reference() {
  Case s;
  s.isolated = false;
  ro::Executor ex(program_for(s));
  auto r = ex.run(inputs(), quiet());
  std::vector<std::string> out;
  for (const auto& o : r.outputs) out.push_back(o.value());
  return out;
}

// Runs `s` twice on one executor (row 7 holds input 7 -> inc -> 8 = trigger) and checks the
// contract of an isolated loss, then that no process is left.
void expect_contained(Case s, const std::string& cause) {
  TempDir dir;
  s.pid_file = dir.file("pids");
  s.trigger = 8;
  const std::vector<std::string> expected = reference();
  {
    ro::Executor ex(program_for(s));
    for (int round = 0; round < 2; ++round) {
      SCOPED_TRACE("round " + std::to_string(round));
      auto r = ex.run(inputs(), quiet());
      ASSERT_EQ(r.outputs.size(), expected.size());
      for (std::size_t i = 0; i < expected.size(); ++i) {
        if (i == 7) continue;
        ASSERT_TRUE(r.outputs[i].ok()) << i << ": " << r.outputs[i].issue().cause;
        EXPECT_EQ(r.outputs[i].value(), expected[i]) << i;
      }
      ASSERT_FALSE(r.outputs[7].ok());
      EXPECT_EQ(r.outputs[7].issue().outcome, ro::Outcome::failed);
      EXPECT_NE(r.outputs[7].issue().cause.find(cause), std::string::npos)
          << r.outputs[7].issue().cause;
      if (s.mode != "hang") {
        // The worker's stderr tail is part of the cause.
        EXPECT_NE(r.outputs[7].issue().cause.find("poison: about to " + s.mode + " on 8"),
                  std::string::npos)
            << r.outputs[7].issue().cause;
      }
      EXPECT_GE(r.metrics.actors_replaced, 2u);
    }
  }
  const std::vector<int> pids = read_pids(s.pid_file);
  EXPECT_GE(pids.size(), 3u);  // two workers plus at least one replacement
  for (int pid : pids) {
    EXPECT_NE(pid, ::getpid()) << "the UDF ran in the executor's process";
    EXPECT_FALSE(process_exists(pid)) << "worker " << pid << " outlived the executor";
  }
  EXPECT_TRUE(children_of_this_process().empty());
}

}  // namespace

TEST(ProcessIsolation, SegmentationFaultFailsOnlyThatGrain) {
  Case s;
  s.mode = "segv";
  expect_contained(s, "worker crashed: SIGSEGV");
}

TEST(ProcessIsolation, AbortFailsOnlyThatGrain) {
  Case s;
  s.mode = "abort";
  expect_contained(s, "worker crashed: SIGABRT");
}

TEST(ProcessIsolation, ExitFailsOnlyThatGrain) {
  Case s;
  s.mode = "exit";
  expect_contained(s, "worker exited with status 3");
}

TEST(ProcessIsolation, SigkillFromOutsideFailsOnlyThatGrain) {
  Case s;
  s.mode = "sigkill";
  expect_contained(s, "worker was killed: SIGKILL (possibly the out-of-memory killer)");
}

TEST(ProcessIsolation, RunawayAllocationUnderAMemoryLimitFailsOnlyThatGrain) {
  Case s;
  s.mode = "alloc";
  s.memory_limit = std::uint64_t{256} << 20;
  expect_contained(s, "worker exceeded its memory limit (256 MiB)");
}

TEST(ProcessIsolation, HangPastTheTimeoutFailsOnlyThatGrain) {
  Case s;
  s.mode = "hang";
  s.timeout = std::chrono::milliseconds(300);
  expect_contained(s, "rayorch::Timeout: the RPC ran past the 300 ms timeout");
}

TEST(ProcessIsolation, ThreadPoolsStillAbortTheRunOnALostActorBeyondBudget) {
  // The splitting is the isolated pools' contract only: on threads, an exhausted
  // infrastructure budget stops the run as before.
  struct Loses {
    std::vector<int> run(ro::Column<int> x) {
      for (int v : x) {
        if (v == 3) throw ro::ActorLost("gone");
      }
      return x.to_vector();
    }
  };
  ro::Module<Loses> loses;
  auto program = ro::compile([&](ro::Port<int> x) { return loses(x); });
  ro::Executor ex(program);
  EXPECT_THROW(ex.run({1, 2, 3, 4}, quiet()), ro::ExecutionError);
}

TEST(ProcessIsolation, ActorLostRaisedInAWorkerIsIsolatedLikeACrash) {
  struct Loses {
    std::vector<int> run(ro::Column<int> x) {
      for (int v : x) {
        if (v == 3) throw ro::ActorLost("the device went away");
      }
      return x.to_vector();
    }
  };
  ro::Module<Loses> loses = ro::Module<Loses>().batch_size(2).isolation(ro::Isolation::process);
  auto program = ro::compile([&](ro::Port<int> x) { return loses(x); });
  ro::Executor ex(program);
  auto r = ex.run({1, 2, 3, 4}, quiet());
  EXPECT_EQ(r.outputs[0].value(), 1);
  EXPECT_EQ(r.outputs[1].value(), 2);
  EXPECT_EQ(r.outputs[3].value(), 4);
  ASSERT_FALSE(r.outputs[2].ok());
  EXPECT_EQ(r.outputs[2].issue().outcome, ro::Outcome::failed);
  EXPECT_NE(r.outputs[2].issue().cause.find("the device went away"), std::string::npos)
      << r.outputs[2].issue().cause;
}

TEST(ProcessIsolation, AConstructorThatThrowsFailsTheFirstRunWithItsMessage) {
  struct Broken {
    Broken() { throw std::runtime_error("no model file"); }
    std::vector<int> run(ro::Column<int> x) { return x.to_vector(); }
  };
  ro::Module<Broken> broken = ro::Module<Broken>().isolation(ro::Isolation::process);
  auto program = ro::compile([&](ro::Port<int> x) { return broken(x); });
  try {
    ro::Executor ex(program);
    ex.run(std::vector<int>{1}, {.progress = false});
    FAIL() << "the executor ran";
  } catch (const ro::ExecutionError& e) {
    EXPECT_NE(std::string(e.what()).find("no model file"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(children_of_this_process().empty());
}

TEST(ProcessIsolation, AConstructorThatCrashesFailsTheFirstRunNamingTheSignal) {
  struct Crashes {
    Crashes() { std::raise(SIGSEGV); }
    std::vector<int> run(ro::Column<int> x) { return x.to_vector(); }
  };
  ro::Module<Crashes> crashes = ro::Module<Crashes>().isolation(ro::Isolation::process);
  auto program = ro::compile([&](ro::Port<int> x) { return crashes(x); });
  try {
    ro::Executor ex(program);
    ex.run(std::vector<int>{1}, {.progress = false});
    FAIL() << "the executor ran";
  } catch (const ro::ExecutionError& e) {
    EXPECT_NE(std::string(e.what()).find("worker crashed: SIGSEGV"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(children_of_this_process().empty());
}

TEST(ProcessIsolation, MemoryLimitWithoutIsolationIsACompileError) {
  ro::Module<Inc> inc = ro::Module<Inc>().memory_limit(1 << 20);
  EXPECT_THROW(ro::compile([&](ro::Port<int> x) { return inc(x); }), ro::CompileError);
}

namespace {

// Values of every shape cross: strings, lists that are expanded, groups, masks.
struct Words {
  std::vector<std::vector<std::string>> run(ro::Column<std::string> s) {
    std::vector<std::vector<std::string>> out;
    for (const std::string& w : s) {
      std::vector<std::string> parts;
      for (char c : w) parts.emplace_back(1, c);
      out.push_back(std::move(parts));
    }
    return out;
  }
};
struct Upper {
  std::vector<std::string> run(ro::Column<std::string> s) {
    std::vector<std::string> out;
    for (std::string w : s) {
      for (char& c : w) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      out.push_back(std::move(w));
    }
    return out;
  }
};
struct NotSeven {
  std::vector<bool> run(ro::Column<std::string> s) {
    std::vector<bool> out;
    for (const std::string& w : s) out.push_back(w != "7");
    return out;
  }
};
struct Join {
  std::vector<std::string> run(ro::Column<ro::Group<std::string>> g) {
    std::vector<std::string> out;
    for (const auto& group : g) {
      std::string s;
      for (const std::string& w : group) s += w + ".";
      out.push_back(s);
    }
    return out;
  }
};

auto shapes_program(ro::Isolation iso) {
  auto poison = ro::Module<Poison>("none", -1, "").replicas(3).batch_size(3).isolation(iso);
  auto words = ro::Module<Words>().replicas(2).batch_size(2).isolation(iso);
  ro::Module<Upper> upper;
  auto keep = ro::Module<NotSeven>().isolation(iso);
  auto join = ro::Module<Join>().replicas(2).isolation(iso);
  return ro::compile([&](ro::Port<int> x) {
    auto parts = ro::F::expand(words(poison(x)));
    auto kept = ro::F::filter(parts, keep(parts));
    return join(ro::F::reduce(upper(kept)));
  });
}

}  // namespace

TEST(ProcessIsolation, ValuesOfEveryShapeCrossAndMatchTheSyncExecutor) {
  std::vector<int> in;
  for (int i = 0; i < 60; ++i) in.push_back(i * 7);
  ro::testing::SyncExecutor sync(shapes_program(ro::Isolation::threads));
  auto want = sync.run(in);
  ro::Executor ex(shapes_program(ro::Isolation::process));
  auto got = ex.run(in, quiet());
  ASSERT_EQ(got.outputs.size(), want.outputs.size());
  for (std::size_t i = 0; i < in.size(); ++i) {
    ASSERT_TRUE(got.outputs[i].ok()) << got.outputs[i].issue().cause;
    EXPECT_EQ(got.outputs[i].value(), want.outputs[i].value()) << i;
  }
  EXPECT_EQ(got.outputs[1].value(), "V.2.1.");  // 7 * 3 = 21; no "7" to filter
}

TEST(ProcessIsolation, KillingTheExecutorProcessLeavesNoWorkerBehind) {
  // Orphans of the killed process are re-parented to this one, so it can reap them and see
  // each one go.
  ASSERT_EQ(::prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
  TempDir dir;
  const std::string pid_file = dir.file("pids");
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // The executor's process: its workers hang on the first row until it is killed.
    Case s;
    s.mode = "hang";
    s.trigger = 1;
    s.pid_file = pid_file;
    {
      ro::Executor ex(program_for(s));
      ex.run({0, 1, 2, 3}, quiet());
    }
    std::_Exit(0);
  }
  // Wait (bounded) until both workers have started.
  std::vector<int> pids;
  for (int i = 0; i < 3000 && pids.size() < 2; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    pids = read_pids(pid_file);
  }
  ASSERT_EQ(pids.size(), 2u);
  std::set<int> tracked(pids.begin(), pids.end());
  const int server = std::stoi(stat_field(pids[0], 4));
  EXPECT_NE(server, child);  // the workers' parent is the fork server, a child of `child`
  EXPECT_EQ(stat_field(server, 4), std::to_string(child));
  tracked.insert(server);
  ASSERT_EQ(::kill(child, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  // Every tracked process dies (the death signal) and is reaped here; bounded watchdog.
  for (int i = 0; i < 3000; ++i) {
    while (::waitpid(-1, &status, WNOHANG) > 0) {
    }
    bool any = false;
    for (int pid : tracked) any = any || process_exists(pid);
    if (!any) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  for (int pid : tracked) EXPECT_FALSE(process_exists(pid)) << pid << " survived";
  ::prctl(PR_SET_CHILD_SUBREAPER, 0);
}

namespace {

struct Reverse {
  std::vector<std::string> run(ro::Column<std::string> x) {
    std::vector<std::string> out;
    for (std::string s : x) out.emplace_back(s.rbegin(), s.rend());
    return out;
  }
};

}  // namespace

TEST(ProcessIsolation, LargePayloadsCrossBothWaysThroughTheSharedArena) {
  // Frames cross through the memory shared with the worker, which grows to the largest one;
  // small frames between large ones fit in it.
  std::vector<std::string> in;
  for (std::size_t size : {std::size_t{10}, std::size_t{100} << 10, std::size_t{3} << 20,
                           std::size_t{1} << 20, std::size_t{7}, std::size_t{5} << 20}) {
    std::string s(size, '\0');
    for (std::size_t i = 0; i < size; ++i) s[i] = static_cast<char>('a' + (i * 7 + size) % 26);
    in.push_back(std::move(s));
  }
  auto reverse = ro::Module<Reverse>().isolation(ro::Isolation::process);
  auto program = ro::compile([&](ro::Port<std::string> x) { return reverse(x); });
  ro::Executor ex(program);
  for (int round = 0; round < 2; ++round) {
    auto r = ex.run(in, quiet());
    ASSERT_EQ(r.outputs.size(), in.size());
    for (std::size_t i = 0; i < in.size(); ++i) {
      EXPECT_EQ(r.outputs[i].value(), std::string(in[i].rbegin(), in[i].rend())) << i;
    }
  }
}

namespace {

// Whether `p` lies in the memory file an executor shares with a worker (by its mapping's
// name in /proc/self/maps).
bool in_worker_arena(const void* p) {
  const auto address = reinterpret_cast<std::uintptr_t>(p);
  std::ifstream maps("/proc/self/maps");
  for (std::string line; std::getline(maps, line);) {
    std::istringstream fields(line);
    std::uintptr_t low = 0, high = 0;
    char dash = 0;
    fields >> std::hex >> low >> dash >> high;
    if (address >= low && address < high) {
      return line.find("memfd:rayorch-worker-arena") != std::string::npos;
    }
  }
  return false;
}

// A value whose codec, a template over the sink, records how it was encoded: whether it was
// handed a ByteWriter (not a std::string), and whether the bytes it wrote lie in the memory
// shared with the worker. The decoded value carries both; the UDF copies what its input
// carried into its output, so the executor sees how each side encoded.
struct Probe {
  std::string blob;
  bool input_had_writer = false;  // how the executor encoded the input (copied by the UDF)
  bool input_in_arena = false;
  bool had_writer = false;  // how this value was encoded, as decoded
  bool in_arena = false;
};

}  // namespace

template <>
struct rayorch::Codec<Probe> {
  template <ByteSink S>
  static void encode(const Probe& p, S& out) {
    Codec<std::string>::encode(p.blob, out);
    Codec<bool>::encode(p.input_had_writer, out);
    Codec<bool>::encode(p.input_in_arena, out);
    bool writer = false;
    bool arena = false;
    if constexpr (std::is_same_v<S, ByteWriter>) {
      writer = true;
      arena = in_worker_arena(out.data() + out.size() - 1);  // the last byte written
    }
    Codec<bool>::encode(writer, out);
    Codec<bool>::encode(arena, out);
  }
  static Probe decode(std::string_view& in) {
    Probe p;
    p.blob = Codec<std::string>::decode(in);
    p.input_had_writer = Codec<bool>::decode(in);
    p.input_in_arena = Codec<bool>::decode(in);
    p.had_writer = Codec<bool>::decode(in);
    p.in_arena = Codec<bool>::decode(in);
    return p;
  }
};

namespace {

// A value whose codec takes only std::string&; it records whether it was handed an empty
// string (the scratch string the engine encodes it into, not the frame itself).
struct StringOnly {
  std::string blob;
  bool input_into_scratch = false;  // how the executor encoded the input (copied by the UDF)
  bool into_scratch = false;        // how this value was encoded, as decoded
};

}  // namespace

template <>
struct rayorch::Codec<StringOnly> {
  static void encode(const StringOnly& v, std::string& out) {
    const bool scratch = out.empty();
    Codec<std::string>::encode(v.blob, out);
    Codec<bool>::encode(v.input_into_scratch, out);
    Codec<bool>::encode(scratch, out);
  }
  static StringOnly decode(std::string_view& in) {
    StringOnly v;
    v.blob = Codec<std::string>::decode(in);
    v.input_into_scratch = Codec<bool>::decode(in);
    v.into_scratch = Codec<bool>::decode(in);
    return v;
  }
};

namespace {

static_assert(ro::encodes_to<Probe, ro::ByteWriter>);
static_assert(!ro::encodes_to<StringOnly, ro::ByteWriter>);

struct ProbeEcho {
  std::vector<Probe> run(ro::Column<Probe> x) {
    std::vector<Probe> out;
    for (const Probe& p : x) {
      Probe q;
      q.blob = std::string(p.blob.rbegin(), p.blob.rend());
      q.input_had_writer = p.had_writer;
      q.input_in_arena = p.in_arena;
      out.push_back(std::move(q));
    }
    return out;
  }
};

struct StringOnlyEcho {
  std::vector<StringOnly> run(ro::Column<StringOnly> x) {
    std::vector<StringOnly> out;
    for (const StringOnly& v : x) {
      StringOnly w;
      w.blob = std::string(v.blob.rbegin(), v.blob.rend());
      w.input_into_scratch = v.into_scratch;
      out.push_back(std::move(w));
    }
    return out;
  }
};

std::string blob_of(std::size_t n) {
  std::string s(n, '\0');
  for (std::size_t i = 0; i < n; ++i) s[i] = static_cast<char>('a' + (i * 11 + n) % 26);
  return s;
}

}  // namespace

TEST(ProcessIsolation, ASinkCodecWritesValuesStraightIntoTheSharedMemoryBothWays) {
  // One row per RPC, so each frame holds one value: every one, large or small, is encoded
  // into a ByteWriter whose bytes are the memory shared with the worker.
  const std::vector<std::size_t> sizes{std::size_t{1} << 20, 100, std::size_t{3} << 20,
                                       std::size_t{200} << 10};
  std::vector<Probe> in;
  for (std::size_t n : sizes) in.push_back(Probe{blob_of(n)});
  auto echo = ro::Module<ProbeEcho>().batch_size(1).isolation(ro::Isolation::process);
  auto program = ro::compile([&](ro::Port<Probe> x) { return echo(x); });
  ro::Executor ex(program);
  auto r = ex.run(in, quiet());
  ASSERT_EQ(r.outputs.size(), in.size());
  for (std::size_t i = 0; i < in.size(); ++i) {
    ASSERT_TRUE(r.outputs[i].ok()) << r.outputs[i].issue().cause;
    const Probe& p = r.outputs[i].value();
    EXPECT_EQ(p.blob, std::string(in[i].blob.rbegin(), in[i].blob.rend())) << i;
    EXPECT_TRUE(p.input_had_writer) << i;  // the executor encoded the task into a ByteWriter
    EXPECT_TRUE(p.had_writer) << i;        // the worker encoded its reply into one
    EXPECT_TRUE(p.input_in_arena) << i;    // ... writing into the shared memory
    EXPECT_TRUE(p.in_arena) << i;
  }
  // On threads nothing is encoded at all.
  auto local = ro::Module<ProbeEcho>().batch_size(1);
  ro::Executor threads(ro::compile([&](ro::Port<Probe> x) { return local(x); }));
  auto t = threads.run(in, quiet());
  ASSERT_TRUE(t.outputs[0].ok());
  EXPECT_FALSE(t.outputs[0].value().input_had_writer);
  EXPECT_FALSE(t.outputs[0].value().had_writer);
}

TEST(ProcessIsolation, AStringOnlyCodecStillCrossesThroughAScratchString) {
  std::vector<StringOnly> in;
  for (std::size_t n : {std::size_t{10}, std::size_t{100} << 10, std::size_t{3} << 20})
    in.push_back(StringOnly{blob_of(n)});
  auto echo = ro::Module<StringOnlyEcho>().batch_size(2).isolation(ro::Isolation::process);
  auto program = ro::compile([&](ro::Port<StringOnly> x) { return echo(x); });
  ro::Executor ex(program);
  for (int round = 0; round < 2; ++round) {
    auto r = ex.run(in, quiet());
    ASSERT_EQ(r.outputs.size(), in.size());
    for (std::size_t i = 0; i < in.size(); ++i) {
      ASSERT_TRUE(r.outputs[i].ok()) << r.outputs[i].issue().cause;
      const StringOnly& v = r.outputs[i].value();
      EXPECT_EQ(v.blob, std::string(in[i].blob.rbegin(), in[i].blob.rend())) << i;
      EXPECT_TRUE(v.input_into_scratch) << i;
      EXPECT_TRUE(v.into_scratch) << i;
    }
  }
}
