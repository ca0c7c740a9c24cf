// Python Modules in worker processes (isolation="process", docs/ISOLATION.md): how the local
// executor starts their worker server, and the server's side.
//
// The server is a fresh interpreter (`python -m rayorch_cpp._worker_server`), never a fork
// of the executor's process: that process has threads (the executor's, the application's,
// Ray's) whose locks a fork would copy held, and runtimes such as CUDA cannot be used in a
// forked child. The new interpreter imports the pipeline from its pickled form (like a Ray
// actor), compiles it, checks that its plan reads the same as the executor's, and then forks
// one worker per replica from its single thread, through the interpreter's own fork
// protocol. Workers so start in milliseconds, with the UDF modules already imported.
#pragma once

#include <string>
#include <vector>

#include <nanobind/nanobind.h>

#include "execution/worker_server.h"

namespace rayorch::python {

/// Starts the worker server as `command` (the interpreter and its arguments; the executor's
/// pid is appended), which reads `payload` (the pickled pipeline and what it needs to
/// rebuild the program) from descriptor 4, talks on descriptor 3 and writes errors to 2.
rayorch::detail::WorkerServerLaunch python_worker_server(std::vector<std::string> command,
                                                         std::string payload);

/// Binds the server's side: serve_worker_requests(program, fd, parent) and
/// exit_with_parent(parent).
void bind_process_workers(nanobind::module_& m);

}  // namespace rayorch::python
