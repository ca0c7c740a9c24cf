// Helpers shared by the tests of the run journal, the error budget and dead letters
// (tests/execution/journal/, tests/execution/run/error_budget_runs_test.cc): a pipeline whose
// UDF counts its calls per root in memory shared with forked children (and can be made to
// fail or sleep), the outputs as comparable text, a scratch directory, and a reader of the
// root records in a journal file.
#pragma once

#include <sys/mman.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <new>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include <rayorch/codec.h>
#include <rayorch/detail/journal.h>
#include <rayorch/rayorch.h>
#include <rayorch/testing.h>

namespace journal_testing {

namespace ro = rayorch;
namespace fs = std::filesystem;

constexpr int kMaxRows = 256;

// Per-root UDF call counts, in shared memory so that a forked child's calls count too.
struct Shared {
  std::atomic<int> calls[kMaxRows];
  std::atomic<int> recorded[kMaxRows];  // set by the parent: the root is in the journal
  std::atomic<int> violations;          // a recorded root ran again
  std::atomic<int> sleep_us;
  std::atomic<int> fail_mod;  // roots with n % 10 < fail_mod fail (0: none)
};
inline Shared* shared() {
  static Shared* s = [] {
    void* p =
        ::mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::runtime_error("mmap failed");
    return new (p) Shared();
  }();
  return s;
}
inline void reset_counts() {
  for (auto& c : shared()->calls) c = 0;
  for (auto& c : shared()->recorded) c = 0;
  shared()->violations = 0;
  shared()->sleep_us = 0;
  shared()->fail_mod = 0;
}
inline int calls(int root) {
  return shared()->calls[root].load();
}

struct Split {  // n -> n*10 + [0, n % 3 + 1)
  std::vector<ro::Row<std::vector<int>>> run(ro::Column<int> ns) {
    std::vector<ro::Row<std::vector<int>>> out;
    for (int n : ns) {
      std::vector<int> v;
      for (int k = 0; k <= n % 3; ++k) v.push_back(n * 10 + k);
      out.push_back(std::move(v));
    }
    return out;
  }
};

// The order in which RPCs of Work start and failed roots reach the caller, across threads.
struct EventLog {
  std::mutex mutex;
  std::vector<std::string> events;
  void add(std::string event) {
    std::lock_guard<std::mutex> lock(mutex);
    events.push_back(std::move(event));
  }
};
inline EventLog& event_log() {
  static EventLog log;
  return log;
}

struct Work {  // x -> "x^2", counting calls per root; fails roots with n % 10 < fail_mod
  std::vector<ro::Row<std::string>> run(ro::Column<int> xs) {
    event_log().add("rpc");
    std::vector<ro::Row<std::string>> out;
    for (int x : xs) {
      const int root = x / 10;
      if (shared()->recorded[root].load() != 0) ++shared()->violations;
      ++shared()->calls[root];
      if (const int us = shared()->sleep_us.load(); us > 0) {
        std::this_thread::sleep_for(std::chrono::microseconds(us));
      }
      if (root % 10 < shared()->fail_mod.load()) {
        out.push_back(ro::RecordFailure{"bad root " + std::to_string(root)});
      } else {
        out.push_back(std::to_string(x * x));
      }
    }
    return out;
  }
};

struct Other {  // a different pipeline: same types
  std::vector<ro::Row<std::string>> run(ro::Column<int> xs) {
    std::vector<ro::Row<std::string>> out;
    for (int x : xs) out.push_back(std::to_string(x));
    return out;
  }
};

inline auto make_program() {
  return ro::compile([](ro::Port<int> n) {
    ro::Module<Split> split;
    ro::Module<Work> work = ro::Module<Work>().replicas(2).batch_size(3);
    return ro::F::reduce(work(ro::F::expand(split(n))));
  });
}

inline auto make_other_program() {
  return ro::compile([](ro::Port<int> n) {
    ro::Module<Split> split;
    ro::Module<Other> other;
    return ro::F::reduce(other(ro::F::expand(split(n))));
  });
}

inline std::vector<int> inputs(int n) {
  std::vector<int> v;
  for (int i = 0; i < n; ++i) v.push_back(i);
  return v;
}

// The outputs as comparable text.
template <class Outputs>
std::vector<std::string> render(const Outputs& outputs) {
  std::vector<std::string> r;
  for (const auto& o : outputs) {
    if (o.ok()) {
      std::string s = "ok:";
      for (const std::string& v : o.value()) s += v + ",";
      r.push_back(s);
    } else {
      r.push_back(std::string(ro::to_string(o.issue().outcome)) + ":" + o.issue().cause);
    }
  }
  return r;
}

inline std::vector<std::string> uninterrupted(int rows, int fail_mod = 0) {
  auto program = make_program();
  ro::testing::SyncExecutor ex(program);
  shared()->fail_mod = fail_mod;
  auto r = ex.run(inputs(rows), {.progress = false});
  return render(r.outputs);
}

struct TempDir {
  fs::path path;
  TempDir() {
    char templ[] = "/tmp/rayorch-journal-XXXXXX";
    path = ::mkdtemp(templ);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string file(const std::string& name) const { return (path / name).string(); }
};

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
inline void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

// The keys of the root records in a journal, up to the first record that does not hold
// (the reader's rule), and the byte offset where each record ends.
struct Parsed {
  std::vector<std::string> keys;
  std::vector<std::size_t> ends;
};
inline Parsed parse_journal(const std::string& bytes) {
  Parsed p;
  std::string_view rest = bytes;
  std::size_t offset = 0;
  while (rest.size() >= 8) {
    std::string_view f = rest;
    const auto len = ro::detail::get_le<std::uint32_t>(f, "len");
    const auto sum = ro::detail::get_le<std::uint32_t>(f, "sum");
    if (f.size() < len || ro::detail::crc32(f.substr(0, len)) != sum || len == 0) break;
    std::string_view payload = f.substr(0, len);
    if (payload[0] == 'R') {
      std::string_view in = payload.substr(1);
      p.keys.push_back(ro::Codec<std::string>::decode(in));
    }
    offset += 8 + len;
    p.ends.push_back(offset);
    rest = std::string_view(bytes).substr(offset);
  }
  return p;
}

// A random seed, printed, or the one RAYORCH_TEST_SEED names (to replay a failing run).
inline unsigned test_seed(const char* test) {
  const char* given = std::getenv("RAYORCH_TEST_SEED");
  const unsigned seed = given != nullptr && *given != '\0'
                            ? static_cast<unsigned>(std::stoul(given))
                            : std::random_device{}();
  std::printf("%s seed %u (replay: RAYORCH_TEST_SEED=%u)\n", test, seed, seed);
  std::fflush(stdout);
  return seed;
}

inline std::string row_key(std::size_t row) {
  return "row-" + std::to_string(row);
}

inline ro::RunOptions journal_options(const std::string& path) {
  ro::RunOptions o;
  o.progress = false;
  o.input_batch_size = 4;
  o.max_active_input_batches = 2;
  o.journal.path = path;
  return o;
}

}  // namespace journal_testing
