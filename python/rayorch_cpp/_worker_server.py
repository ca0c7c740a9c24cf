"""The worker server of a local executor's process-isolated Modules (run as
``python -m rayorch_cpp._worker_server PARENT_PID`` by the executor, never by hand).

Descriptor 3 is its socket to the executor, 4 the pickled pipeline, 2 a file the executor
reads if the server cannot start. It rebuilds the executor's program and then forks one
worker per request (process_workers.h); it ends with the executor.
"""

from __future__ import annotations

import os
import pickle
import signal
import sys
import traceback


def main() -> None:
    # Ctrl-C reaches the whole process group; the executor decides what it means.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    parent = int(sys.argv[1])
    from . import _core

    _core.exit_with_parent(parent)
    try:
        with os.fdopen(4, "rb") as source:
            payload = pickle.load(source)
        # The executor's import path first, so the UDFs' modules import as they did there.
        sys.path[:] = list(payload["sys_path"])
        from ._compile import compile

        pipeline = pickle.loads(payload["pipeline"])
        program = compile(
            pipeline,
            optimize=payload["optimize"],
            isolation=payload["isolation"],
            auto_colocate=payload["auto_colocate"],
        )
        if program.explain_text() != payload["explain"]:
            raise RuntimeError(
                "the pipeline compiled in the worker server differs from the executor's "
                "(does forward() depend on state that differs between processes, e.g. the "
                "environment or random draws?)\nexecutor:\n"
                f"{payload['explain']}\nworker server:\n{program.explain_text()}"
            )
    except BaseException as error:  # noqa: BLE001 - reported to the executor, then exit
        sys.stderr.write("".join(traceback.format_exception(error)))
        sys.stderr.flush()
        sys.exit(1)
    _core.serve_worker_requests(program.native, 3, parent)


if __name__ == "__main__":
    main()
