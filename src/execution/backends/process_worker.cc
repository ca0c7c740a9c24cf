// Process-isolated workers. See process_worker.h.
#include "execution/backends/process_worker.h"

#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <new>
#include <string_view>

#include <fmt/format.h>

#include "rayorch/codec.h"

#include "runtime/protocol_codec.h"

namespace rayorch::detail {
namespace {

constexpr std::size_t kStderrTail = 2048;
constexpr off_t kStderrKeep = off_t{1} << 20;  // trimmed to its tail beyond this

void put_u64(std::uint64_t v, ByteWriter& out) {
  Codec<std::uint64_t>::encode(v, out);
}
std::uint64_t get_u64(std::string_view& in) {
  return Codec<std::uint64_t>::decode(in);
}
void put_bytes(const std::string& s, ByteWriter& out) {
  put_u64(s.size(), out);
  out.append(s);
}
std::string get_bytes(std::string_view& in) {
  const std::uint64_t n = get_u64(in);
  if (n > in.size()) throw DecodeError("rayorch worker protocol: truncated frame");
  std::string s(in.substr(0, static_cast<std::size_t>(n)));
  in.remove_prefix(static_cast<std::size_t>(n));
  return s;
}

const BlockRef* find_block(const std::vector<std::pair<BlockId, BlockRef>>& blocks, BlockId id) {
  for (const auto& [b, ref] : blocks) {
    if (b == id) return &ref;
  }
  return nullptr;
}

void write_stderr(const char* s) {
  const ssize_t ignored = ::write(2, s, std::strlen(s));
  (void)ignored;
}

void on_memory_exhausted() {
  write_stderr("rayorch worker: an allocation failed under the memory limit\n");
  ::_exit(kMemoryLimitExit);
}

// Caps what this process may allocate beyond what it inherited (its address space now).
void apply_memory_limit(std::uint64_t limit) {
  if (limit == 0) return;
  std::uint64_t pages = 0;
  if (std::FILE* f = std::fopen("/proc/self/statm", "r")) {
    unsigned long long p = 0;
    if (std::fscanf(f, "%llu", &p) == 1) pages = p;
    std::fclose(f);
  }
  const std::uint64_t now = pages * static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
  rlimit r;
  r.rlim_cur = r.rlim_max = static_cast<rlim_t>(now + limit);
  ::setrlimit(RLIMIT_AS, &r);
  std::set_new_handler(on_memory_exhausted);
}

// Encodes the reply to one task into `out` (a frame's payload); returns its type.
Frame encode_reply(const RuntimePlan& plan, const Invocation& inv, const Attempt& a,
                   ByteWriter& out) {
  if (a.kind == Attempt::Kind::failed) {
    out.append(a.error);
    return Frame::failed;
  }
  if (a.kind == Attempt::Kind::lost) {
    out.append(a.error);
    return Frame::lost;
  }
  const CallCodecs& codecs = plan.code->codecs[inv.call];
  put_bytes(encode(a.report), out);
  if (!a.report.contract_error.empty()) return Frame::ok;
  for (std::size_t k = 0; k < inv.outputs.size(); ++k) {
    const OutputSlot& slot = inv.outputs[k];
    const BlockRef* block = find_block(a.blocks, slot.block);
    const std::size_t rows = block != nullptr ? (*block)->size() : 0;
    put_u64(rows, out);
    for (std::size_t r = 0; r < rows; ++r) codecs.outputs[k].write_row((*block)->at(r), out);
    if (slot.child_block != 0) {
      const BlockRef* child = find_block(a.blocks, slot.child_block);
      const std::size_t n = child != nullptr ? (*child)->size() : 0;
      put_u64(n, out);
      for (std::size_t r = 0; r < n; ++r) codecs.elements[k].write_row((*child)->at(r), out);
    }
  }
  return Frame::ok;
}

// Decodes one task's inputs (large values in place where `reads` allows), runs the call and
// hands its attempt to `answer`, which encodes the reply while inputs and outputs live; both
// are gone when this returns.
template <class Answer>
void run_task(const RuntimePlan& plan, UdfInstance& instance, std::string_view view,
              InPlaceReads& reads, Answer&& answer) {
  const Invocation inv = decode_invocation(get_bytes(view));
  const CallCodecs& codecs = plan.code->codecs[inv.call];
  ResolvedInputs inputs;
  inputs.columns.resize(codecs.inputs.size());
  for (std::size_t i = 0; i < codecs.inputs.size(); ++i) {
    const ErasedCodec& codec = codecs.inputs[i];
    BlockRef block = codec.decode_rows_in_place != nullptr
                         ? codec.decode_rows_in_place(view, inv.grains.size(), reads)
                         : codec.decode_rows(view, inv.grains.size());
    auto& column = inputs.columns[i];
    column.resize(block->size());
    for (std::size_t r = 0; r < column.size(); ++r) column[r] = block->at(r);
    inputs.keep_alive.push_back(std::move(block));
  }
  const Attempt a = invoke_call(plan, inv, instance, inputs);
  answer(a, inv);
}

}  // namespace

[[noreturn]] void run_worker(const RuntimePlan& plan, int pool, int fd, int arena_fd) {
  apply_memory_limit(plan.pools[pool].options.memory_limit);
  SharedArena arena{UniqueFd(arena_fd)};
  std::string out;
  std::string in;
  std::string scratch;
  std::string error;
  std::unique_ptr<UdfInstance> instance = build_instance(plan, pool, error);
  {
    // The executor reads these two without the arena.
    FrameWriter first(out);
    if (!instance) {
      first.payload().append(error);
      first.send(fd, Frame::ctor_failed);
      ::_exit(0);
    }
    if (!first.send(fd, Frame::ready)) ::_exit(0);
  }
  FrameWriter frame(out, &arena, &scratch);
  Frame type;
  std::string_view view;
  SpinThenSleep next_task{kWirePoll};  // tasks that follow each other quickly are taken awake
  while (recv_frame(fd, type, in, view, &arena, &next_task)) {
    if (type != Frame::task) break;
    Frame reply;
    bool exit_after = false;
    // Large values of a frame in the arena may be read in place; the answer then goes after
    // the request, which the executor does not write again before it has the answer.
    InPlaceReads reads = arena.holds(view) ? InPlaceReads(view) : InPlaceReads();
    const std::size_t answer_at = arena.holds(view) ? arena.page_after(view) : 0;
    arena.pin();
    try {
      run_task(plan, *instance, view, reads, [&](const Attempt& a, const Invocation& inv) {
        exit_after = a.kind == Attempt::Kind::lost;  // a lost actor is a fresh process
        frame.restart(reads.used() ? answer_at : 0);
        reply = encode_reply(plan, inv, a, frame.payload());
      });
    } catch (...) {
      frame.restart(reads.used() ? answer_at : 0);
      frame.payload().append(describe_current_exception());
      reply = Frame::failed;
    }
    // The call's inputs and outputs are gone; a value still referenced (the UDF kept it) is
    // moved out of the request before the executor may write there again.
    if (!reads.settle() || !arena.unpin(reads.kept())) {
      write_stderr("rayorch worker: no memory to keep a value the UDF holds\n");
      ::_exit(kMemoryLimitExit);
    }
    if (!frame.send(fd, reply) || exit_after) break;
  }
  ::_exit(0);
}

std::string describe_worker_exit(int status, std::uint64_t memory_limit) {
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    const char* abbrev = ::sigabbrev_np(sig);
    const std::string name =
        abbrev != nullptr ? fmt::format("SIG{}", abbrev) : fmt::format("signal {}", sig);
    if (sig == SIGKILL) return "worker was killed: SIGKILL (possibly the out-of-memory killer)";
    return fmt::format("worker crashed: {}", name);
  }
  if (WIFEXITED(status)) {
    const int code = WEXITSTATUS(status);
    if (code == kMemoryLimitExit && memory_limit > 0) {
      return fmt::format("worker exceeded its memory limit ({} MiB)",
                         (memory_limit + (1 << 20) - 1) >> 20);
    }
    return fmt::format("worker exited with status {}", code);
  }
  return fmt::format("worker ended with wait status {}", status);
}

ProcessWorker::ProcessWorker(std::shared_ptr<ForkServer> forks,
                             std::shared_ptr<const RuntimePlan> plan, int pool, int replica)
    : forks_(std::move(forks)), plan_(std::move(plan)), pool_(pool), replica_(replica) {}

ProcessWorker::~ProcessWorker() {
  abandon();
}

void ProcessWorker::abandon() {
  std::lock_guard<std::mutex> lock(mutex_);
  abandoned_ = true;
  if (pid_ > 0) forks_->kill(pid_);
}

bool ProcessWorker::abandoned() {
  std::lock_guard<std::mutex> lock(mutex_);
  return abandoned_;
}

std::string ProcessWorker::start() {
  if (worker_.pid > 0) {
    forks_->kill(worker_.pid);
    forks_->exit_status(worker_.pid, std::chrono::seconds(10));
  }
  worker_ = SpawnedWorker{};
  try {
    worker_ = forks_->spawn(pool_, replica_);
  } catch (const std::exception& e) {
    return e.what();
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    pid_ = worker_.pid;
    if (abandoned_) {
      forks_->kill(pid_);
      return "the worker was abandoned";
    }
  }
  Frame type;
  std::string_view message;
  if (!recv_frame(worker_.socket.get(), type, in_, message)) {
    return fmt::format("the constructor of Module<{}> ended its worker process: {}",
                       plan_->pools[pool_].udf, loss_cause(""));
  }
  if (type == Frame::ctor_failed) return std::string(message);
  return "";
}

Attempt ProcessWorker::call(const WorkerTask& task) {
  Attempt a;
  a.report.invocation = task.invocation.id;
  a.report.input_batch = task.invocation.input_batch;
  const Invocation& inv = task.invocation;
  const CallCodecs& codecs = plan_->code->codecs[inv.call];
  a.start = std::chrono::steady_clock::now();
  FrameWriter frame(out_, &worker_.arena, &scratch_);
  try {
    put_bytes(encode(inv), frame.payload());
    for (std::size_t i = 0; i < codecs.inputs.size(); ++i) {
      for (const void* value : task.inputs.columns[i])
        codecs.inputs[i].write_row(value, frame.payload());
    }
  } catch (...) {
    a.kind = Attempt::Kind::failed;
    a.error = describe_current_exception();
    a.end = std::chrono::steady_clock::now();
    return a;
  }
  Frame type;
  std::string_view view;
  if (!frame.send(worker_.socket.get(), Frame::task) ||
      !recv_frame(worker_.socket.get(), type, in_, view, &worker_.arena, &answer_)) {
    a.end = std::chrono::steady_clock::now();
    a.kind = Attempt::Kind::lost;
    a.error = loss_cause("");
    return a;
  }
  a.end = std::chrono::steady_clock::now();
  trim_stderr();
  try {
    if (type == Frame::failed || type == Frame::lost) {
      a.kind = type == Frame::failed ? Attempt::Kind::failed : Attempt::Kind::lost;
      a.error = std::string(view);
      return a;
    }
    if (type != Frame::ok) throw DecodeError("rayorch worker protocol: unexpected frame");
    a.report = decode_report(get_bytes(view));
    if (a.report.contract_error.empty()) {
      for (std::size_t k = 0; k < inv.outputs.size(); ++k) {
        const OutputSlot& slot = inv.outputs[k];
        const std::size_t rows = static_cast<std::size_t>(get_u64(view));
        a.blocks.emplace_back(slot.block, codecs.outputs[k].decode_rows(view, rows));
        if (slot.child_block != 0) {
          const std::size_t n = static_cast<std::size_t>(get_u64(view));
          a.blocks.emplace_back(slot.child_block, codecs.elements[k].decode_rows(view, n));
        }
      }
    }
    a.kind = Attempt::Kind::ok;
  } catch (...) {
    a.kind = Attempt::Kind::failed;
    a.blocks.clear();
    a.error = describe_current_exception();
  }
  return a;
}

std::string ProcessWorker::loss_cause(const std::string&) {
  const std::optional<int> status = forks_->exit_status(worker_.pid, std::chrono::seconds(10));
  std::string cause = status
                          ? describe_worker_exit(*status, plan_->pools[pool_].options.memory_limit)
                          : std::string("worker connection closed (its exit status is unknown)");
  const std::string tail = stderr_tail();
  if (!tail.empty()) cause += "; stderr tail: " + tail;
  // Known and reported: nothing is left to kill.
  worker_.pid = -1;
  std::lock_guard<std::mutex> lock(mutex_);
  pid_ = -1;
  return cause;
}

std::string stderr_tail(int fd) {
  struct stat st;
  if (fd < 0 || ::fstat(fd, &st) != 0 || st.st_size <= 0) return "";
  const off_t n = std::min<off_t>(st.st_size, static_cast<off_t>(kStderrTail));
  std::string tail(static_cast<std::size_t>(n), '\0');
  const ssize_t k = ::pread(fd, tail.data(), tail.size(), st.st_size - n);
  tail.resize(k > 0 ? static_cast<std::size_t>(k) : 0);
  if (n < st.st_size) {
    // Cut at a line start, so the tail does not begin mid-line.
    const auto nl = tail.find('\n');
    if (nl != std::string::npos && nl + 1 < tail.size()) tail.erase(0, nl + 1);
  }
  while (!tail.empty() && (tail.back() == '\n' || tail.back() == '\r')) tail.pop_back();
  return tail;
}

std::string ProcessWorker::stderr_tail() {
  return detail::stderr_tail(worker_.err.get());
}

void ProcessWorker::trim_stderr() {
  // A chatty worker's stderr is kept to its tail, so it cannot fill memory.
  struct stat st;
  if (!worker_.err || ::fstat(worker_.err.get(), &st) != 0 || st.st_size <= kStderrKeep) return;
  std::string tail(kStderrTail, '\0');
  const ssize_t k = ::pread(worker_.err.get(), tail.data(), tail.size(),
                            st.st_size - static_cast<off_t>(kStderrTail));
  if (k <= 0 || ::ftruncate(worker_.err.get(), 0) != 0) return;
  const ssize_t ignored = ::write(worker_.err.get(), tail.data(), static_cast<std::size_t>(k));
  (void)ignored;
}

}  // namespace rayorch::detail
