// The run journal, error budget and dead letters (rayorch/journal.h, RunOptions): a finished
// journal restores every root without running a UDF; a partial one (a prefix, a torn or
// corrupt tail, a child process killed with SIGKILL at random points) resumes to the
// uninterrupted outputs with every root delivered exactly once and no recorded root run
// again; a foreign journal and an unwritable path are refused before anything runs; an
// error budget stops a run where 30 % of the roots fail; dead letters name every root that
// is not present.
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <rayorch/codec.h>
#include <rayorch/detail/journal.h>
#include <rayorch/rayorch.h>
#include <rayorch/testing.h>

namespace {

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
Shared* shared() {
  static Shared* s = [] {
    void* p =
        ::mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::runtime_error("mmap failed");
    return new (p) Shared();
  }();
  return s;
}
void reset_counts() {
  for (auto& c : shared()->calls) c = 0;
  for (auto& c : shared()->recorded) c = 0;
  shared()->violations = 0;
  shared()->sleep_us = 0;
  shared()->fail_mod = 0;
}
int calls(int root) {
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
EventLog& event_log() {
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

auto make_program() {
  return ro::compile([](ro::Port<int> n) {
    ro::Module<Split> split;
    ro::Module<Work> work = ro::Module<Work>().replicas(2).batch_size(3);
    return ro::F::reduce(work(ro::F::expand(split(n))));
  });
}

auto make_other_program() {
  return ro::compile([](ro::Port<int> n) {
    ro::Module<Split> split;
    ro::Module<Other> other;
    return ro::F::reduce(other(ro::F::expand(split(n))));
  });
}

std::vector<int> inputs(int n) {
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

std::vector<std::string> uninterrupted(int rows, int fail_mod = 0) {
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

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

// The keys of the root records in a journal, up to the first record that does not hold
// (the reader's rule), and the byte offset where each record ends.
struct Parsed {
  std::vector<std::string> keys;
  std::vector<std::size_t> ends;
};
Parsed parse_journal(const std::string& bytes) {
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
unsigned test_seed(const char* test) {
  const char* given = std::getenv("RAYORCH_TEST_SEED");
  const unsigned seed = given != nullptr && *given != '\0'
                            ? static_cast<unsigned>(std::stoul(given))
                            : std::random_device{}();
  std::printf("%s seed %u (replay: RAYORCH_TEST_SEED=%u)\n", test, seed, seed);
  std::fflush(stdout);
  return seed;
}

std::string row_key(std::size_t row) {
  return "row-" + std::to_string(row);
}

ro::RunOptions journal_options(const std::string& path) {
  ro::RunOptions o;
  o.progress = false;
  o.input_batch_size = 4;
  o.max_active_input_batches = 2;
  o.journal.path = path;
  return o;
}

TEST(Journal, RestoresACompletedRunWithoutRunningAnything) {
  reset_counts();
  const auto expected = uninterrupted(40);
  TempDir dir;
  const std::string path = dir.file("run.journal");
  auto program = make_program();
  {
    reset_counts();
    ro::Executor ex(program);
    auto r = ex.run(inputs(40), journal_options(path));
    EXPECT_EQ(render(r.outputs), expected);
    EXPECT_EQ(r.metrics.roots_restored, 0u);
    for (int i = 0; i < 40; ++i) EXPECT_EQ(calls(i), i % 3 + 1) << "root " << i;
  }
  reset_counts();
  ro::Executor ex(program);
  auto r = ex.run(inputs(40), journal_options(path));
  EXPECT_EQ(render(r.outputs), expected);
  EXPECT_EQ(r.metrics.roots_restored, 40u);
  EXPECT_EQ(r.metrics.roots_by_outcome["present"], 40u);
  EXPECT_EQ(r.metrics.journal_discarded_bytes, 0u);
  for (int i = 0; i < 40; ++i) EXPECT_EQ(calls(i), 0) << "root " << i << " ran again";
  // The JSON report counts them too.
  auto report_opts = journal_options(path);
  report_opts.report_path = dir.file("report.json");
  ex.run(inputs(40), report_opts);
  const auto report = nlohmann::json::parse(read_file(report_opts.report_path));
  EXPECT_EQ(report["roots_restored"], 40);
  EXPECT_EQ(report["roots_by_outcome"]["present"], 40);
  // The streaming form delivers the restored rows too, each once, in order when asked.
  std::vector<std::size_t> order;
  auto opts = journal_options(path);
  opts.ordered_stream = true;
  ex.run(inputs(40), opts, [&](std::size_t row, auto out) {
    order.push_back(row);
    ASSERT_TRUE(out.ok());
  });
  EXPECT_EQ(order, [] {
    std::vector<std::size_t> v;
    for (std::size_t i = 0; i < 40; ++i) v.push_back(i);
    return v;
  }());
}

TEST(Journal, FailedRootsRunAgainUnlessTold) {
  reset_counts();
  const auto expected = uninterrupted(30, 3);
  TempDir dir;
  const std::string path = dir.file("run.journal");
  auto program = make_program();
  ro::testing::SyncExecutor ex(program);
  reset_counts();
  shared()->fail_mod = 3;
  EXPECT_EQ(render(ex.run(inputs(30), journal_options(path)).outputs), expected);
  // Retried: the failing roots (n % 10 < 3) run again and fail again; the rest restore.
  reset_counts();
  shared()->fail_mod = 3;
  auto r = ex.run(inputs(30), journal_options(path));
  EXPECT_EQ(render(r.outputs), expected);
  EXPECT_EQ(r.metrics.roots_restored, 21u);
  for (int i = 0; i < 30; ++i) EXPECT_EQ(calls(i) > 0, i % 10 < 3) << "root " << i;
  // Not retried: everything restores, failures included, with their causes.
  reset_counts();
  auto opts = journal_options(path);
  opts.journal.retry_failed = false;
  r = ex.run(inputs(30), opts);
  EXPECT_EQ(render(r.outputs), expected);
  EXPECT_EQ(r.metrics.roots_restored, 30u);
  for (int i = 0; i < 30; ++i) EXPECT_EQ(calls(i), 0) << "root " << i;
  ASSERT_FALSE(r.outputs[1].ok());
  ASSERT_TRUE(r.outputs[1].issue().origin.has_value());
  EXPECT_EQ(r.outputs[1].issue().origin->call, "Work#1");
}

// A resumed run computes a subset of the rows; their Entity keys stay the caller's rows in
// the issue origins and the dead letters (docs/JOURNAL.md: keys are the source row's).
TEST(Journal, EntityKeysStayTheSourceRowsAcrossResumes) {
  reset_counts();
  TempDir dir;
  const std::string path = dir.file("run.journal");
  const std::string dead = dir.file("dead.jsonl");
  auto program = make_program();
  ro::testing::SyncExecutor ex(program);
  shared()->fail_mod = 3;
  ex.run(inputs(30), journal_options(path));
  // Only the failed roots (n % 10 < 3) run again, as rows 0..8 of the resumed run.
  reset_counts();
  shared()->fail_mod = 3;
  auto opts = journal_options(path);
  opts.dead_letters = dead;
  auto r = ex.run(inputs(30), opts);
  ASSERT_EQ(r.metrics.roots_restored, 21u);
  std::ifstream in(dead);
  std::map<std::size_t, std::string> letters;
  for (std::string line; std::getline(in, line);) {
    auto j = nlohmann::json::parse(line);
    letters[j["row"].get<std::size_t>()] = j["entity"].get<std::string>();
  }
  ASSERT_EQ(letters.size(), 9u);
  for (std::size_t row : {0u, 1u, 2u, 10u, 11u, 12u, 20u, 21u, 22u}) {
    SCOPED_TRACE(row);
    ASSERT_FALSE(r.outputs[row].ok());
    ASSERT_TRUE(r.outputs[row].issue().origin.has_value());
    const std::string& entity = r.outputs[row].issue().origin->entity;
    EXPECT_EQ(entity.rfind(std::to_string(row) + "/", 0), 0u) << entity;
    EXPECT_EQ(letters[row], entity);
  }
}

// Resumes from every prefix of a finished journal: the outputs equal an uninterrupted
// run's, every root is delivered exactly once, and the recorded roots do not run.
TEST(Journal, ResumesFromAnyPrefix) {
  reset_counts();
  const auto expected = uninterrupted(24);
  TempDir dir;
  const std::string full = dir.file("full.journal");
  auto program = make_program();
  {
    ro::testing::SyncExecutor ex(program);
    ex.run(inputs(24), journal_options(full));
  }
  const std::string bytes = read_file(full);
  const Parsed parsed = parse_journal(bytes);
  ASSERT_EQ(parsed.keys.size(), 24u);
  const unsigned seed = test_seed("ResumesFromAnyPrefix");
  std::mt19937 rng(seed);
  std::vector<std::size_t> cuts(parsed.ends.begin(), parsed.ends.end());
  for (int i = 0; i < 10; ++i) cuts.push_back(rng() % bytes.size());  // mid-record cuts too
  for (std::size_t cut : cuts) {
    SCOPED_TRACE("cut at byte " + std::to_string(cut) + ", seed " + std::to_string(seed));
    const std::string path = dir.file("cut.journal");
    write_file(path, bytes.substr(0, cut));
    const auto recorded = parse_journal(bytes.substr(0, cut)).keys.size();
    reset_counts();
    ro::testing::SyncExecutor ex(program);
    std::map<std::size_t, std::string> got;
    std::map<std::size_t, int> deliveries;
    auto r = ex.run(inputs(24), journal_options(path), [&](std::size_t row, auto out) {
      ++deliveries[row];
      std::vector<decltype(out)> one{out};
      got[row] = render(one)[0];
    });
    EXPECT_EQ(r.metrics.roots_restored, recorded);
    ASSERT_EQ(got.size(), 24u);
    for (std::size_t i = 0; i < 24; ++i) {
      EXPECT_EQ(deliveries[i], 1) << "row " << i;
      EXPECT_EQ(got[i], expected[i]) << "row " << i;
    }
    int untouched = 0;
    for (int i = 0; i < 24; ++i) untouched += calls(i) == 0 ? 1 : 0;
    EXPECT_EQ(static_cast<std::size_t>(untouched), recorded);
    // The resumed journal is complete now: a third run restores everything.
    reset_counts();
    EXPECT_EQ(ex.run(inputs(24), journal_options(path)).metrics.roots_restored, 24u);
  }
}

// A root is recorded only after the caller received it: when the streaming callback throws
// for a row (the caller did not take it), that row is not in the journal and runs again.
TEST(Journal, RecordsARootOnlyAfterTheCallerReceivedIt) {
  reset_counts();
  TempDir dir;
  const std::string path = dir.file("run.journal");
  auto program = make_program();
  auto opts = journal_options(path);
  opts.journal.key = row_key;
  {
    ro::testing::SyncExecutor ex(program);
    EXPECT_THROW(ex.run(inputs(12), opts,
                        [&](std::size_t row, const auto&) {
                          if (row == 5) throw std::runtime_error("caller failed on row 5");
                        }),
                 std::runtime_error);
  }
  const Parsed p = parse_journal(read_file(path));
  const std::set<std::string> keys(p.keys.begin(), p.keys.end());
  EXPECT_EQ(keys.count("row-5"), 0u);
  EXPECT_FALSE(keys.empty());
  reset_counts();
  ro::testing::SyncExecutor ex(program);
  auto r = ex.run(inputs(12), opts);
  EXPECT_EQ(r.metrics.roots_restored, keys.size());
  EXPECT_GT(calls(5), 0);
  EXPECT_EQ(render(r.outputs), uninterrupted(12));
}

TEST(Journal, IgnoresATornTail) {
  reset_counts();
  const auto expected = uninterrupted(12);
  TempDir dir;
  const std::string path = dir.file("run.journal");
  auto program = make_program();
  ro::testing::SyncExecutor ex(program);
  ex.run(inputs(12), journal_options(path));
  const std::string bytes = read_file(path);
  const Parsed parsed = parse_journal(bytes);
  // Cut the last record in half and append garbage, as a crash mid-write might leave it.
  const std::size_t last_start = parsed.ends[parsed.ends.size() - 2];
  const std::size_t cut = last_start + (bytes.size() - last_start) / 2;
  write_file(path, bytes.substr(0, cut) + "\x13\x37 garbage");
  reset_counts();
  auto r = ex.run(inputs(12), journal_options(path));
  EXPECT_EQ(render(r.outputs), expected);
  EXPECT_EQ(r.metrics.roots_restored, 11u);
  EXPECT_EQ(r.metrics.journal_discarded_bytes, cut - last_start + 10);
  int reran = 0;
  for (int i = 0; i < 12; ++i) reran += calls(i) > 0 ? 1 : 0;
  EXPECT_EQ(reran, 1);
  // The journal was repaired: every record holds again.
  EXPECT_EQ(parse_journal(read_file(path)).ends.back(), read_file(path).size());
}

TEST(Journal, IgnoresEverythingAfterACorruptRecord) {
  reset_counts();
  const auto expected = uninterrupted(12);
  TempDir dir;
  const std::string path = dir.file("run.journal");
  auto program = make_program();
  ro::testing::SyncExecutor ex(program);
  ex.run(inputs(12), journal_options(path));
  std::string bytes = read_file(path);
  const Parsed parsed = parse_journal(bytes);
  ASSERT_EQ(parsed.ends.size(), 13u);  // header + 12 roots
  // Flip one byte inside the payload of the 9th root record: its checksum fails.
  bytes[parsed.ends[8] + 12] ^= 0x5a;
  write_file(path, bytes);
  reset_counts();
  auto r = ex.run(inputs(12), journal_options(path));
  EXPECT_EQ(render(r.outputs), expected);
  EXPECT_EQ(r.metrics.roots_restored, 8u);
  EXPECT_EQ(r.metrics.journal_discarded_bytes, bytes.size() - parsed.ends[8]);
  int reran = 0;
  for (int i = 0; i < 12; ++i) reran += calls(i) > 0 ? 1 : 0;
  EXPECT_EQ(reran, 4);
}

TEST(Journal, RefusesAForeignJournalUnlessForced) {
  reset_counts();
  TempDir dir;
  const std::string path = dir.file("run.journal");
  {
    auto program = make_program();
    ro::testing::SyncExecutor ex(program);
    ex.run(inputs(6), journal_options(path));
  }
  auto other = make_other_program();
  ro::testing::SyncExecutor ex(other);
  try {
    ex.run(inputs(6), journal_options(path));
    FAIL() << "a journal of another pipeline was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("another pipeline"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("journal.force"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(ex.closed());
  // Other inputs for the same pipeline are refused too.
  auto program = make_program();
  ro::testing::SyncExecutor same(program);
  try {
    same.run(inputs(7), journal_options(path));
    FAIL() << "a journal of other inputs was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("other inputs"), std::string::npos) << e.what();
  }
  // Forced: the records are used.
  auto opts = journal_options(path);
  opts.journal.force = true;
  reset_counts();
  auto r = same.run(inputs(7), opts);
  EXPECT_EQ(r.metrics.roots_restored, 6u);
  EXPECT_EQ(calls(6), 1);
  EXPECT_EQ(calls(0), 0);
}

TEST(Journal, RefusesAnUnwritablePathBeforeAnythingRuns) {
  reset_counts();
  TempDir dir;
  auto program = make_program();
  ro::testing::SyncExecutor ex(program);
  for (const std::string& path :
       {std::string("/nonexistent-rayorch-dir/run.journal"), dir.path.string()}) {
    try {
      ex.run(inputs(3), journal_options(path));
      FAIL() << "accepted " << path;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    }
  }
  ro::RunOptions o;
  o.progress = false;
  o.dead_letters = "/nonexistent-rayorch-dir/dead.jsonl";
  EXPECT_THROW(ex.run(inputs(3), o), std::invalid_argument);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(calls(i), 0);
  EXPECT_FALSE(ex.closed());
}

TEST(Journal, UserKeysAndCodecLessSourcesNeedAKey) {
  reset_counts();
  TempDir dir;
  const std::string path = dir.file("run.journal");
  auto program = make_program();
  ro::testing::SyncExecutor ex(program);
  auto opts = journal_options(path);
  opts.journal.key = row_key;
  ex.run(inputs(5), opts);
  const Parsed p = parse_journal(read_file(path));
  EXPECT_EQ(std::set<std::string>(p.keys.begin(), p.keys.end()),
            (std::set<std::string>{"row-0", "row-1", "row-2", "row-3", "row-4"}));
}

// Records the root events of a run.
struct RootLog : ro::RunObserver {
  std::vector<ro::RootEvent> roots;
  std::size_t started_restored = 0;
  bool started = false;
  std::vector<std::size_t> delivered_at_start;  // rows the caller had when the run started
  const std::vector<std::size_t>* delivered = nullptr;
  void on_run_start(const ro::RunStartEvent& e) override {
    started = true;
    started_restored = e.restored;
    if (delivered) delivered_at_start = *delivered;
  }
  void on_root(const ro::RootEvent& e) override { roots.push_back(e); }
};

// Restored roots reach observers like computed ones: after on_run_start, each right after
// the caller received it, marked restored, before any computed root; every event names the
// caller's row, also for the computed rows of a resumed run (a subset of the rows).
TEST(Journal, ObserversSeeRestoredRootsWithTheCallersRows) {
  reset_counts();
  TempDir dir;
  const std::string path = dir.file("run.journal");
  auto program = make_program();
  auto opts = journal_options(path);
  opts.journal.key = row_key;
  {
    // Record the even rows only: a user key that changes nothing else.
    ro::testing::SyncExecutor ex(program);
    auto first = opts;
    first.journal.allow_other_inputs = true;
    std::vector<int> even;
    for (int i = 0; i < 12; i += 2) even.push_back(i);
    first.journal.key = [](std::size_t row) { return row_key(row * 2); };
    ex.run(even, first);
  }
  reset_counts();
  ro::testing::SyncExecutor ex(program);
  auto log = std::make_shared<RootLog>();
  std::vector<std::size_t> delivered;
  log->delivered = &delivered;
  opts.observers.push_back(log);
  opts.journal.allow_other_inputs = true;  // the first run had 6 of these 12 rows
  auto r = ex.run(inputs(12), opts, [&](std::size_t row, const auto&) {
    delivered.push_back(row);
    // The event of this row comes after the caller received it.
    for (const ro::RootEvent& e : log->roots) EXPECT_NE(e.row, row);
  });
  EXPECT_EQ(r.metrics.roots_restored, 6u);
  EXPECT_TRUE(log->started);
  EXPECT_EQ(log->started_restored, 6u);
  EXPECT_TRUE(log->delivered_at_start.empty()) << "a root was delivered before the run started";
  ASSERT_EQ(log->roots.size(), 12u);
  std::vector<std::size_t> event_rows;
  for (std::size_t i = 0; i < log->roots.size(); ++i) {
    const ro::RootEvent& e = log->roots[i];
    event_rows.push_back(e.row);
    EXPECT_EQ(e.restored, i < 6) << "event " << i << " row " << e.row;
    EXPECT_EQ(e.restored, e.row % 2 == 0) << "row " << e.row;
    EXPECT_EQ(e.outcome, ro::Outcome::present);
  }
  EXPECT_EQ(event_rows, delivered);
  for (int i = 0; i < 12; ++i) EXPECT_EQ(calls(i) > 0, i % 2 == 1) << "root " << i;
  EXPECT_EQ(std::set<std::size_t>(event_rows.begin(), event_rows.end()).size(), 12u);
}

// A journal of other inputs is refused unless allow_other_inputs, which restores the rows
// it has a record for; it still refuses another pipeline's journal.
TEST(Journal, AllowOtherInputsRestoresKnownRowsOfTheSamePipelineOnly) {
  reset_counts();
  TempDir dir;
  const std::string path = dir.file("run.journal");
  auto program = make_program();
  auto opts = journal_options(path);
  opts.journal.key = row_key;
  {
    ro::testing::SyncExecutor ex(program);
    ex.run(inputs(4), opts);
  }
  ro::testing::SyncExecutor ex(program);
  EXPECT_THROW(ex.run(inputs(9), opts), std::invalid_argument);
  opts.journal.allow_other_inputs = true;
  reset_counts();
  auto r = ex.run(inputs(9), opts);
  EXPECT_EQ(r.metrics.roots_restored, 4u);
  for (int i = 0; i < 9; ++i) EXPECT_EQ(calls(i) > 0, i >= 4) << "root " << i;
  EXPECT_EQ(render(r.outputs), uninterrupted(9));
  auto other = make_other_program();
  ro::testing::SyncExecutor foreign(other);
  try {
    foreign.run(inputs(9), opts);
    FAIL() << "allow_other_inputs accepted another pipeline's journal";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("another pipeline"), std::string::npos) << e.what();
  }
}

// The file format stays readable across versions: the header names the inputs by the
// documented digest (FNV-1a of "keys", then "<decimal length>:" and each key), and a root
// record is 'R', the key, the output count and per output outcome, cause, origin and value.
TEST(Journal, TheFileFormatIsTheDocumentedOne) {
  reset_counts();
  TempDir dir;
  const std::string path = dir.file("run.journal");
  auto program = make_program();
  ro::testing::SyncExecutor ex(program);
  auto opts = journal_options(path);
  opts.journal.key = row_key;
  ex.run(inputs(3), opts);
  const std::string bytes = read_file(path);
  std::string_view f = bytes;
  const auto len = ro::detail::get_le<std::uint32_t>(f, "len");
  const auto sum = ro::detail::get_le<std::uint32_t>(f, "sum");
  ASSERT_EQ(sum, ro::detail::crc32(f.substr(0, len)));
  std::string_view header = f.substr(0, len);
  ASSERT_EQ(header[0], 'H');
  header.remove_prefix(1);
  EXPECT_EQ(ro::Codec<std::string>::decode(header), "rayorch-journal");
  EXPECT_EQ(ro::Codec<std::uint32_t>::decode(header), 1u);
  (void)ro::Codec<std::uint64_t>::decode(header);  // the plan fingerprint
  std::uint64_t digest = ro::detail::fnv1a64("keys");
  for (int r = 0; r < 3; ++r) {
    const std::string k = row_key(static_cast<std::size_t>(r));
    digest = ro::detail::fnv1a64(k, ro::detail::fnv1a64(std::to_string(k.size()) + ":", digest));
  }
  EXPECT_EQ(ro::Codec<std::uint64_t>::decode(header), digest);
  // The first root record, field by field.
  f.remove_prefix(len);
  const auto rlen = ro::detail::get_le<std::uint32_t>(f, "len");
  const auto rsum = ro::detail::get_le<std::uint32_t>(f, "sum");
  ASSERT_EQ(rsum, ro::detail::crc32(f.substr(0, rlen)));
  std::string_view rec = f.substr(0, rlen);
  ASSERT_EQ(rec[0], 'R');
  rec.remove_prefix(1);
  const std::string key = ro::Codec<std::string>::decode(rec);
  EXPECT_EQ(key.rfind("row-", 0), 0u);
  EXPECT_EQ(ro::Codec<std::uint32_t>::decode(rec), 1u);  // outputs
  EXPECT_EQ(ro::Codec<std::uint8_t>::decode(rec), 0u);   // present
  EXPECT_EQ(ro::Codec<std::string>::decode(rec), "");    // cause
  EXPECT_FALSE(ro::Codec<bool>::decode(rec));            // no issue origin
  std::string value = ro::Codec<std::string>::decode(rec);
  std::string_view v = value;
  const auto group = ro::Codec<std::vector<std::string>>::decode(v);
  const int root = std::stoi(key.substr(4));
  ASSERT_EQ(group.size(), static_cast<std::size_t>(root % 3 + 1));
  EXPECT_EQ(group[0], std::to_string(root * 10 * root * 10));
  EXPECT_TRUE(rec.empty());
}

TEST(ErrorBudget, StopsARunWhereThirtyPercentFail) {
  reset_counts();
  TempDir dir;
  const std::string path = dir.file("run.journal");
  auto program = make_program();
  for (int variant = 0; variant < 2; ++variant) {
    SCOPED_TRACE(variant == 0 ? "max_failed_roots" : "max_failed_fraction");
    std::error_code ec;
    fs::remove(path, ec);
    reset_counts();
    shared()->fail_mod = 3;  // 30 % of the roots fail
    ro::testing::SyncExecutor ex(program);
    auto opts = journal_options(path);
    opts.journal.key = row_key;
    if (variant == 0) {
      opts.max_failed_roots = 5;
    } else {
      opts.max_failed_fraction = 0.2;
      opts.min_roots_for_failed_fraction = 20;
    }
    std::set<std::string> delivered;
    try {
      ex.run(inputs(200), opts,
             [&](std::size_t row, const auto&) { delivered.insert(row_key(row)); });
      FAIL() << "the run did not stop";
    } catch (const ro::ExecutionError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("error budget exceeded"), std::string::npos) << what;
      EXPECT_NE(what.find(variant == 0 ? "max_failed_roots = 5" : "max_failed_fraction"),
                std::string::npos)
          << what;
      EXPECT_NE(what.find("bad root"), std::string::npos) << what;
    }
    EXPECT_LT(delivered.size(), 200u);  // stopped early
    // Spent only past its limit: six failed roots, or a fraction of at least 20 roots.
    EXPECT_GE(delivered.size(), variant == 0 ? 6u : 20u);
    // The journal holds exactly the roots that were delivered.
    const Parsed p = parse_journal(read_file(path));
    EXPECT_EQ(std::set<std::string>(p.keys.begin(), p.keys.end()), delivered);
    EXPECT_EQ(p.keys.size(), delivered.size());
    // No root beyond the admitted batches ran.
    for (int i = 0; i < 200; ++i) {
      if (delivered.count(row_key(i)) == 0) {
        EXPECT_EQ(calls(i), 0) << "root " << i;
      }
    }
  }
}

// With one input batch of every row, the budget still stops the run at the first check past
// it: after the failed root that exceeds it reached the caller, only the RPCs already in
// flight (at most one per actor) may start. The executor stays usable afterwards.
TEST(ErrorBudget, StopsDispatchingWithASingleInputBatch) {
  reset_counts();
  auto program = make_program();  // three actors: Split, and Work with two replicas
  ro::Executor ex(program);
  shared()->fail_mod = 3;
  ro::RunOptions o;
  o.progress = false;
  o.max_failed_roots = 5;  // input_batch_size 0: one batch of every row
  {
    std::lock_guard<std::mutex> lock(event_log().mutex);
    event_log().events.clear();
  }
  int failed = 0;
  EXPECT_THROW(ex.run(inputs(200), o,
                      [&](std::size_t, const auto& out) {
                        if (!out.ok() && ++failed == 6) event_log().add("exceeded");
                      }),
               ro::ExecutionError);
  std::vector<std::string> events;
  {
    std::lock_guard<std::mutex> lock(event_log().mutex);
    events = event_log().events;
  }
  const auto exceeded = std::find(events.begin(), events.end(), "exceeded");
  ASSERT_NE(exceeded, events.end());
  EXPECT_LE(std::count(exceeded, events.end(), "rpc"), 3) << "RPCs started after the budget";
  // Not closed: the same actors run the next run to its end.
  EXPECT_FALSE(ex.closed());
  shared()->fail_mod = 0;
  auto r = ex.run(inputs(20), {.progress = false});
  for (const auto& out : r.outputs) EXPECT_TRUE(out.ok());
}

TEST(DeadLetters, NameEveryRootThatIsNotPresent) {
  reset_counts();
  TempDir dir;
  const std::string path = dir.file("dead.jsonl");
  auto program = make_program();
  ro::testing::SyncExecutor ex(program);
  shared()->fail_mod = 2;
  ro::RunOptions o;
  o.progress = false;
  o.dead_letters = path;
  o.dead_letter_fields = [](std::size_t row) {
    return std::vector<std::pair<std::string, std::string>>{{"name", "doc-" + std::to_string(row)},
                                                            {"row", "overwritten"}};
  };
  auto r = ex.run(inputs(20), o);
  std::ifstream in(path);
  std::string line;
  std::map<std::size_t, nlohmann::json> letters;
  while (std::getline(in, line)) {
    auto j = nlohmann::json::parse(line);
    letters[j["row"].get<std::size_t>()] = j;
  }
  std::set<std::size_t> expected;
  for (std::size_t i = 0; i < 20; ++i) {
    if (!r.outputs[i].ok()) expected.insert(i);
  }
  EXPECT_EQ(expected, (std::set<std::size_t>{0, 1, 10, 11}));
  ASSERT_EQ(letters.size(), expected.size());
  for (std::size_t row : expected) {
    const auto& j = letters[row];
    const ro::OutputIssue& issue = r.outputs[row].issue();
    EXPECT_EQ(j["outcome"], std::string(ro::to_string(issue.outcome)));
    EXPECT_EQ(j["cause"], issue.cause);
    EXPECT_EQ(j["call"], "Work#1");
    EXPECT_EQ(j["entity"], issue.origin->entity);
    EXPECT_EQ(j["entity"].get<std::string>().rfind(std::to_string(row) + "/", 0), 0u);
    EXPECT_GE(j["attempts"].get<int>(), 1);
    EXPECT_EQ(j["key"].get<std::string>().size(), 16u);  // the digest of the row's value
    EXPECT_EQ(j["restored"], false);
    EXPECT_EQ(j["name"], "doc-" + std::to_string(row));  // RunOptions::dead_letter_fields
  }
  // Restored failures are dead letters too.
  auto opts = journal_options(dir.file("run.journal"));
  opts.dead_letters = path;
  opts.journal.retry_failed = false;
  ex.run(inputs(20), opts);
  reset_counts();
  ex.run(inputs(20), opts);
  std::ifstream again(path);
  int restored = 0;
  while (std::getline(again, line)) restored += nlohmann::json::parse(line)["restored"] ? 1 : 0;
  EXPECT_EQ(restored, 4);
}

// A child process runs the pipeline with the journal and is killed with SIGKILL at a random
// moment; reruns continue until one finishes. The final outputs equal an uninterrupted
// run's, every root is delivered exactly once by the finishing run plus the journal, and no
// root recorded in the journal before a rerun ran in it.
TEST(Journal, SurvivesSigkillAtRandomPoints) {
  constexpr int kRows = 48;
  reset_counts();
  const auto expected = uninterrupted(kRows);
  const unsigned seed = test_seed("SurvivesSigkillAtRandomPoints");
  std::mt19937 rng(seed);
  TempDir dir;
  auto program = make_program();
  int kills = 0;
  for (int point = 0; point < 20; ++point) {
    const int delay_us = static_cast<int>(rng() % 60000);
    SCOPED_TRACE("point " + std::to_string(point) + " delay " + std::to_string(delay_us) +
                 " us, seed " + std::to_string(seed));
    const std::string path = dir.file("kill-" + std::to_string(point) + ".journal");
    const std::string out = dir.file("out-" + std::to_string(point) + ".txt");
    reset_counts();
    shared()->sleep_us = 300;
    bool finished = false;
    for (int attempt = 0; attempt < 20 && !finished; ++attempt) {
      // What the journal holds now may not run again.
      for (const std::string& k : parse_journal(read_file(path)).keys) {
        shared()->recorded[std::stoi(k.substr(4))] = 1;
      }
      const pid_t child = ::fork();
      ASSERT_GE(child, 0);
      if (child == 0) {
        int code = 0;
        try {
          ro::Executor ex(program);
          auto opts = journal_options(path);
          opts.journal.key = row_key;
          opts.journal.sync_every_records = 4;
          std::map<std::size_t, std::pair<int, std::string>> got;
          ex.run(inputs(kRows), opts, [&](std::size_t row, auto o) {
            std::vector<decltype(o)> one{o};
            ++got[row].first;
            got[row].second = render(one)[0];
          });
          std::ofstream f(out);
          for (const auto& [row, v] : got) f << row << ' ' << v.first << ' ' << v.second << '\n';
        } catch (...) {
          code = 3;
        }
        ::_exit(code);
      }
      // Kill the first attempts at a random point; let the later ones finish.
      if (attempt < 3) std::this_thread::sleep_for(std::chrono::microseconds(delay_us));
      if (attempt < 3) ::kill(child, SIGKILL);
      int status = 0;
      ::waitpid(child, &status, 0);
      if (WIFSIGNALED(status)) {
        ++kills;
        continue;
      }
      ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child failed";
      finished = true;
    }
    ASSERT_TRUE(finished);
    EXPECT_EQ(shared()->violations.load(), 0) << "a root recorded finished ran again";
    std::ifstream f(out);
    std::map<std::size_t, std::string> got;
    std::size_t row = 0;
    int n = 0;
    std::string value;
    while (f >> row >> n >> value) {
      EXPECT_EQ(n, 1) << "row " << row << " delivered " << n << " times";
      EXPECT_TRUE(got.emplace(row, value).second);
    }
    ASSERT_EQ(got.size(), static_cast<std::size_t>(kRows));
    for (std::size_t i = 0; i < kRows; ++i) EXPECT_EQ(got[i], expected[i]) << "row " << i;
    const Parsed p = parse_journal(read_file(path));
    EXPECT_EQ(std::set<std::string>(p.keys.begin(), p.keys.end()).size(),
              static_cast<std::size_t>(kRows));
  }
  std::printf("SurvivesSigkillAtRandomPoints: %d children killed\n", kills);
  EXPECT_GT(kills, 0);
}

}  // namespace
