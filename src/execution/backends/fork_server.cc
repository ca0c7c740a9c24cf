// The fork server. See fork_server.h.
#include "execution/backends/fork_server.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <set>

#include <fmt/format.h>

#include "rayorch/errors.h"

#include "execution/backends/process_worker.h"

namespace rayorch::detail {
namespace {

// Packets on the server's socket: plain fixed-size structs (both ends are the same binary).
struct Request {
  enum Kind : std::uint32_t { spawn = 1, kill = 2 };
  std::uint32_t kind = 0;
  std::int32_t pool = -1;
  std::uint64_t id = 0;
  std::int32_t pid = -1;
  std::int32_t replica = -1;
};

struct Notice {
  enum Kind : std::uint32_t { spawned = 1, exited = 2, ready = 3 };
  std::uint32_t kind = 0;
  std::int32_t pid = -1;
  std::uint64_t id = 0;
  std::int32_t status = 0;
};

template <class T>
std::string_view bytes_of(const T& v) {
  return {reinterpret_cast<const char*>(&v), sizeof v};
}

template <class T>
bool read_struct(const std::string& bytes, T& v) {
  if (bytes.size() != sizeof v) return false;
  std::memcpy(&v, bytes.data(), sizeof v);
  return true;
}

// Becomes replica `replica` of pool `pool`: runs in the server's child and never returns.
// `server_fds` are the server's own socket and signal descriptor, which no worker holds.
[[noreturn]] void become_worker(const RuntimePlan& plan, const Request& r, UniqueFd socket,
                                UniqueFd err, UniqueFd arena, pid_t server,
                                std::array<int, 2> server_fds, const WorkerServerOptions& options) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != server) ::_exit(0);
  if (options.hooks.in_worker) options.hooks.in_worker(r.pool, r.replica);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGCHLD);
  ::sigprocmask(SIG_UNBLOCK, &set, nullptr);
  ::signal(SIGCHLD, SIG_DFL);
  const int s = socket.release();
  const int e = err.release();
  const int a = arena.release();
  ::dup2(e, 2);
  ::close(e);
  if (!options.close_other_descriptors) {
    // The server's other descriptors are its runtime's (a launched server's), kept.
    for (int fd : server_fds) {
      if (fd >= 0) ::close(fd);
    }
    run_worker(plan, r.pool, s, a);
  }
  // Received descriptors are above 3 (0-3 are taken in the server), and each is moved before
  // a later move can overwrite it.
  ::dup2(s, 3);
  ::dup2(a, 4);
  close_descriptors_from(5);
  run_worker(plan, r.pool, 3, 4);
}

}  // namespace

[[noreturn]] void serve_worker_requests(const RuntimePlan& plan, int fd, pid_t parent,
                                        const WorkerServerOptions& options) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(0);
  // Ctrl-C reaches the whole process group; the executor decides what it means, and the
  // death signal takes the server and its workers down if the executor goes.
  ::signal(SIGINT, SIG_IGN);
  if (options.close_other_descriptors) {
    if (fd != 3) ::dup2(fd, 3);
    fd = 3;
    close_descriptors_from(4);
  }
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGCHLD);
  ::sigprocmask(SIG_BLOCK, &set, nullptr);
  // Non-blocking, and polled with a timeout: in a launched server other threads may exist
  // (a runtime its imports started), and SIGCHLD may go to one of them instead.
  const int sfd = ::signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
  const pid_t self = ::getpid();
  std::set<pid_t> live;
  std::string packet;
  {
    Notice ready;
    ready.kind = Notice::ready;
    if (!send_packet(fd, bytes_of(ready))) ::_exit(0);
  }
  auto reap = [&] {
    int status = 0;
    pid_t p;
    while ((p = ::waitpid(-1, &status, WNOHANG)) > 0) {
      live.erase(p);
      Notice n;
      n.kind = Notice::exited;
      n.pid = p;
      n.status = status;
      send_packet(fd, bytes_of(n));
    }
  };
  for (;;) {
    pollfd fds[2] = {{fd, POLLIN, 0}, {sfd, POLLIN, 0}};
    const int k = ::poll(fds, sfd >= 0 ? 2 : 1, sfd >= 0 ? 200 : 50);
    if (k < 0 && errno != EINTR) break;
    if (sfd >= 0 && (fds[1].revents & POLLIN) != 0) {
      signalfd_siginfo info;
      while (::read(sfd, &info, sizeof info) == static_cast<ssize_t>(sizeof info)) {
      }
    }
    reap();
    if (fds[0].revents == 0) continue;
    UniqueFd a, b, c;
    Request r;
    if (!recv_packet(fd, packet, 64, &a, &b, &c) || !read_struct(packet, r)) break;
    if (r.kind == Request::spawn) {
      if (options.hooks.before_fork) options.hooks.before_fork();
      const pid_t p = ::fork();
      if (p == 0) {
        become_worker(plan, r, std::move(a), std::move(b), std::move(c), self, {fd, sfd}, options);
      }
      if (options.hooks.after_fork_in_server) options.hooks.after_fork_in_server();
      if (p > 0) live.insert(p);
      Notice n;
      n.kind = Notice::spawned;
      n.id = r.id;
      n.pid = p;
      send_packet(fd, bytes_of(n));
    } else if (r.kind == Request::kill) {
      if (live.count(r.pid) != 0) ::kill(r.pid, SIGKILL);
    }
  }
  // The executor closed the socket (or went away): no worker outlives it.
  for (pid_t p : live) ::kill(p, SIGKILL);
  for (pid_t p : live) {
    int status = 0;
    while (::waitpid(p, &status, 0) < 0 && errno == EINTR) {
    }
  }
  ::_exit(0);
}

ForkServer::ForkServer(std::shared_ptr<const RuntimePlan> plan, WorkerServerLaunch launch) {
  keeper_ = std::thread([this, plan = std::move(plan), launch = std::move(launch)]() mutable {
    keeper_main(std::move(plan), launch);
  });
  std::unique_lock<std::mutex> lock(mutex_);
  cv_.wait(lock, [&] { return started_ || !start_error_.empty(); });
  if (!start_error_.empty()) {
    const std::string error = start_error_;
    lock.unlock();
    keeper_.join();
    throw ExecutionError(error);
  }
}

ForkServer::~ForkServer() {
  shutdown();
}

void ForkServer::keeper_main(std::shared_ptr<const RuntimePlan> plan,
                             const WorkerServerLaunch& launch) {
  auto fail = [&](std::string error) {
    std::lock_guard<std::mutex> lock(mutex_);
    start_error_ = std::move(error);
    cv_.notify_all();
  };
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
    return fail(fmt::format("cannot start worker processes: socketpair: {}", std::strerror(errno)));
  }
  UniqueFd ours(sv[0]);
  UniqueFd theirs(sv[1]);
  const pid_t parent = ::getpid();
  pid_t pid = -1;
  UniqueFd server_err;
  if (!launch.spawn) {
    std::fflush(nullptr);  // no buffered output is duplicated by a child that flushes it
    pid = ::fork();
    if (pid == 0) serve_worker_requests(*plan, theirs.get(), parent, WorkerServerOptions{});
    if (pid < 0) {
      return fail(fmt::format("cannot start worker processes: fork: {}", std::strerror(errno)));
    }
  } else {
    server_err = UniqueFd(::memfd_create("rayorch-worker-server-stderr", MFD_CLOEXEC));
    try {
      pid = launch.spawn(theirs.get(), server_err.get(), parent);
    } catch (const std::exception& e) {
      return fail(fmt::format("cannot start worker processes: {}", e.what()));
    }
  }
  theirs.reset();
  // The server says it is ready once it can fork workers; a launched server first rebuilds
  // the program, which may fail (its stderr then says why).
  std::string packet;
  Notice first;
  if (!recv_packet(ours.get(), packet, 64) || !read_struct(packet, first) ||
      first.kind != Notice::ready) {
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    std::string error = fmt::format(
        "the worker server for process-isolated Modules did not start "
        "({})",
        describe_worker_exit(status, 0));
    const std::string tail = stderr_tail(server_err.get());
    if (!tail.empty()) error += ":\n" + tail;
    return fail(std::move(error));
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    socket_ = std::move(ours);
    server_pid_ = pid;
    started_ = true;
  }
  cv_.notify_all();
  // socket_ stays open until this thread has been joined (shutdown()).
  const int fd = socket_.get();
  for (;;) {
    Notice n;
    if (!recv_packet(fd, packet, 64) || !read_struct(packet, n)) break;
    std::lock_guard<std::mutex> lock(mutex_);
    if (n.kind == Notice::spawned) spawned_[n.id] = n.pid;
    if (n.kind == Notice::exited) exits_[n.pid] = n.status;
    cv_.notify_all();
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  std::lock_guard<std::mutex> lock(mutex_);
  gone_ = true;
  cv_.notify_all();
}

SpawnedWorker ForkServer::spawn(int pool, int replica) {
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
    throw ExecutionError(
        fmt::format("cannot start a worker process: socketpair: {}", std::strerror(errno)));
  }
  SpawnedWorker w;
  w.socket = UniqueFd(sv[0]);
  UniqueFd theirs(sv[1]);
  w.err = UniqueFd(::memfd_create("rayorch-worker-stderr", MFD_CLOEXEC));
  if (!w.err) {
    throw ExecutionError(
        fmt::format("cannot start a worker process: memfd_create: {}", std::strerror(errno)));
  }
  // Appends from the worker and truncation by the executor never overwrite each other.
  ::fcntl(w.err.get(), F_SETFL, ::fcntl(w.err.get(), F_GETFL) | O_APPEND);
  w.arena = SharedArena::create();
  if (!w.arena) {
    throw ExecutionError(
        fmt::format("cannot start a worker process: memfd_create: {}", std::strerror(errno)));
  }
  std::unique_lock<std::mutex> lock(mutex_);
  if (gone_) throw ExecutionError("cannot start a worker process: the fork server has exited");
  Request r;
  r.kind = Request::spawn;
  r.pool = pool;
  r.replica = replica;
  r.id = ++next_request_;
  if (!send_packet(socket_.get(), bytes_of(r), theirs.get(), w.err.get(), w.arena.fd())) {
    throw ExecutionError("cannot start a worker process: the fork server does not answer");
  }
  cv_.wait(lock, [&] { return gone_ || spawned_.count(r.id) != 0; });
  auto it = spawned_.find(r.id);
  if (it == spawned_.end()) {
    throw ExecutionError("cannot start a worker process: the fork server has exited");
  }
  w.pid = it->second;
  spawned_.erase(it);
  if (w.pid < 0) throw ExecutionError("cannot start a worker process: fork failed");
  return w;
}

void ForkServer::kill(pid_t pid) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (gone_ || !socket_) return;
  Request r;
  r.kind = Request::kill;
  r.pid = pid;
  send_packet(socket_.get(), bytes_of(r));
}

std::optional<int> ForkServer::exit_status(pid_t pid, std::chrono::milliseconds limit) {
  std::unique_lock<std::mutex> lock(mutex_);
  cv_.wait_for(lock, limit, [&] { return gone_ || exits_.count(pid) != 0; });
  auto it = exits_.find(pid);
  if (it == exits_.end()) return std::nullopt;
  const int status = it->second;
  exits_.erase(it);
  return status;
}

void ForkServer::shutdown() noexcept {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    // The server reads the end of the stream, kills and reaps its workers and exits; the
    // keeper then reaps it.
    if (socket_) ::shutdown(socket_.get(), SHUT_RDWR);
  }
  if (keeper_.joinable()) keeper_.join();
  std::lock_guard<std::mutex> lock(mutex_);
  socket_.reset();
  gone_ = true;
}

}  // namespace rayorch::detail
