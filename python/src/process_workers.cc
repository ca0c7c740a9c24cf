#include "process_workers.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "py_values.h"
#include "replica_context.h"
#include "trace.h"
#include <fmt/format.h>
#include <nanobind/stl/string.h>

#include "rayorch/errors.h"

extern char** environ;  // NOLINT: the process environment, handed to the server as it is

namespace rayorch::python {

namespace nb = nanobind;

namespace {

/// Owns the file actions and attributes of one posix_spawn.
class SpawnSetup {
 public:
  SpawnSetup() {
    posix_spawn_file_actions_init(&actions);
    posix_spawnattr_init(&attributes);
  }
  ~SpawnSetup() {
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attributes);
  }
  SpawnSetup(const SpawnSetup&) = delete;
  SpawnSetup& operator=(const SpawnSetup&) = delete;
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attributes;
};

/// A memory file holding `bytes`, positioned at its start; throws ExecutionError.
int memory_file_of(const std::string& bytes) {
  const int fd = ::memfd_create("rayorch-worker-server-program", MFD_CLOEXEC);
  if (fd < 0) {
    throw ExecutionError(fmt::format("memfd_create: {}", std::strerror(errno)));
  }
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int error = errno;
      ::close(fd);
      throw ExecutionError(
          fmt::format("writing the pipeline for the worker server: {}", std::strerror(error)));
    }
    done += static_cast<std::size_t>(n);
  }
  ::lseek(fd, 0, SEEK_SET);
  return fd;
}

pid_t spawn_server(const std::vector<std::string>& command, const std::string& payload, int socket,
                   int stderr_fd, pid_t parent) {
  const int program = memory_file_of(payload);
  std::vector<std::string> args = command;
  args.push_back(std::to_string(parent));
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  SpawnSetup setup;
  // Descriptors 0-4 only: stdin from /dev/null, stderr into the executor's memory file, the
  // server's socket and the pipeline; stdout is the executor's.
  posix_spawn_file_actions_addopen(&setup.actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&setup.actions, stderr_fd, 2);
  posix_spawn_file_actions_adddup2(&setup.actions, socket, 3);
  posix_spawn_file_actions_adddup2(&setup.actions, program, 4);
  posix_spawn_file_actions_addclosefrom_np(&setup.actions, 5);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&setup.attributes, &none);
  posix_spawnattr_setflags(&setup.attributes, POSIX_SPAWN_SETSIGMASK);
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, argv[0], &setup.actions, &setup.attributes, argv.data(),
                               environ);  // NOLINT(concurrency-mt-unsafe): read only
  ::close(program);
  if (rc != 0) {
    throw ExecutionError(
        fmt::format("cannot run the worker server {}: {}", command.front(), std::strerror(rc)));
  }
  return pid;
}

/// The interpreter's fork protocol around each fork of the server (what os.fork() does):
/// the forking thread holds the GIL, PyOS_BeforeFork takes the import lock, and the child
/// re-initialises the interpreter's threads and runs the at-fork hooks. Workers then run
/// with the GIL released except inside UDF calls and codecs, so threads a UDF starts run.
rd::WorkerServerOptions interpreter_fork_protocol(PyGILState_STATE& gil) {
  rd::WorkerServerOptions options;
  options.close_other_descriptors = false;
  options.hooks.before_fork = [&gil] {
    gil = PyGILState_Ensure();
    PyOS_BeforeFork();
  };
  options.hooks.after_fork_in_server = [&gil] {
    PyOS_AfterFork_Parent();
    PyGILState_Release(gil);
  };
  options.hooks.in_worker = [&gil](int, int replica) {
    PyOS_AfterFork_Child();
    enter_worker_process(replica);
    PyGILState_Release(gil);
  };
  return options;
}

}  // namespace

rd::WorkerServerLaunch python_worker_server(std::vector<std::string> command, std::string payload) {
  rd::WorkerServerLaunch launch;
  launch.spawn = [command = std::move(command), payload = std::move(payload)](
                     int socket, int stderr_fd, pid_t parent) {
    return spawn_server(command, payload, socket, stderr_fd, parent);
  };
  return launch;
}

void bind_process_workers(nb::module_& m) {
  m.def(
      "exit_with_parent",
      [](int parent) {
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (::getppid() != parent) ::_exit(0);
      },
      nb::arg("parent"),
      "Worker server: this process is killed when its parent (the executor's keeper thread) "
      "ends, and exits now when the executor has already gone.");
  m.def(
      "serve_worker_requests",
      [](const Program& program, int fd, int parent) {
        PyGILState_STATE gil{};
        const rd::WorkerServerOptions options = interpreter_fork_protocol(gil);
        nb::gil_scoped_release release;
        rd::serve_worker_requests(*program.plan, fd, parent, options);
      },
      nb::arg("program"), nb::arg("fd"), nb::arg("parent"),
      "Worker server: forks a worker per request of the executor on `fd` until it closes, "
      "then ends the process (never returns).");
}

}  // namespace rayorch::python
