"""The Ray side of the Ray backend (python/src/ray_pools.h drives it from C++).

Each Module becomes a pool of persistent Ray actors (``_Worker``) built with the Module's
``num_cpus``, ``num_gpus``, ``resources``, ``runtime_env`` and other Ray actor options. An
actor compiles the same pipeline again and runs one pool's UDF through the engine's worker
boundary (``_core.RayWorker``). One RPC is one actor call: one bytes object (the invocation's
protocol bytes, the ids of the blocks it reads, its group inputs) and the ObjectRefs of those
blocks go in; the report and one object per output
block come out (``num_returns``), and only the report is fetched by the driver.

Everything here is called by the driver's thread, with the GIL, from C++: keep it small.
"""

from __future__ import annotations

import os
import socket
import time
from typing import Any

from . import _core
from ._values import ExecutionError

# Ray actor options a Module may carry besides the ones the engine reads.
_ACTOR_OPTIONS = {
    "runtime_env",
    "scheduling_strategy",
    "memory",
    "accelerator_type",
    "max_concurrency",
    "placement_group",
    "placement_group_bundle_index",
    "placement_group_capture_child_tasks",
    "label_selector",
}

# Calls kept at each actor unless the Module says otherwise (see _calls_in_flight). One:
# a call queued behind another hides Ray's round trip (about 0.5 ms here; no-op RPCs/s about
# 1,700 -> 2,000-2,100 with 2, python/bench/ray_backend.py) but commits its batch a whole
# call early, which costs batch fill where calls are long: the realistic compare regime
# (3 s OCR calls) took 235 OCR batches at 92.3 % fill and 137.4 s with 2, against 227 at
# 95.5 % and 134.7 s with 1 (bench compare --regime realistic --peers rayorch-ray, with and
# without --ray-tasks-in-flight 2).
_DEFAULT_CALLS_IN_FLIGHT = 1
_STARTUP_TIMEOUT_S = float(os.environ.get("RAYORCH_RAY_STARTUP_TIMEOUT_S", "120"))
# How long a replacement for a lost actor may take to start away from the lost actor's node
# before it is placed anywhere.
_ELSEWHERE_TIMEOUT_S = 30.0
# Every Ray node carries its id under this label (label selectors can exclude a node).
_NODE_LABEL = "ray.io/node-id"


def _ray() -> Any:
    try:
        import ray
    except ImportError as error:  # pragma: no cover - ray is a pinned test dependency
        raise ExecutionError(
            "the Ray backend needs the 'ray' package (pip install ray==2.60.0)"
        ) from error
    return ray


def connect(address: str | None, init_kwargs: dict[str, Any]) -> None:
    """Connects this process to a Ray cluster unless it already is.

    An ``address`` of the form ``host:port`` is probed first, so a missing cluster is a
    clear error instead of a long retry loop inside ``ray.init``.
    """
    ray = _ray()
    if ray.is_initialized():
        return
    if address and address not in ("auto", "local") and not address.startswith("ray://"):
        host, _, port = address.rpartition(":")
        try:
            with socket.create_connection((host or "127.0.0.1", int(port)), timeout=2.0):
                pass
        except (OSError, ValueError) as error:
            raise ExecutionError(
                f"no Ray cluster answers at {address!r} ({error}); start one with "
                "`ray start --head` and pass its GCS address (host:port), or pass "
                "address=None to start a local Ray instance"
            ) from error
    try:
        ray.init(address=address, **init_kwargs)
    except ConnectionError as error:
        raise ExecutionError(
            f"could not connect to a Ray cluster at {address!r}: {error}; start one with "
            "`ray start --head` or pass address=None to start a local Ray instance"
        ) from error


def snapshot(pipeline: Any) -> bytes:
    """The pipeline as the actors will compile it, taken before the driver traces it (a
    forward() that draws from state it carries then draws the same on every actor)."""
    ray = _ray()
    source = pipeline._source if hasattr(pipeline, "_source") else pipeline
    if source is None:
        raise ExecutionError("the Ray backend needs a Pipeline or forward callable to ship")
    try:
        blob: bytes = ray.cloudpickle.dumps(source)
    except Exception as error:
        raise ExecutionError(
            f"the pipeline cannot be shipped to the Ray workers: pickling it failed with "
            f"{type(error).__name__}: {error}; keep locks, files and clients out of the "
            "pipeline object and its forward() closure (build them in a UDF's constructor)"
        ) from error
    return blob


class _Worker:
    """One actor of one pool: builds the pool's UDF instance from the compiled program."""

    def __init__(self, source: bytes, optimize: bool, explain: str, pool: int) -> None:
        from ._api import compile as compile_program

        ray = _ray()
        program = compile_program(ray.cloudpickle.loads(source), optimize=optimize)
        if program.explain_text() != explain:
            raise ExecutionError(
                "the pipeline compiled on a Ray actor differs from the driver's; the "
                "pipeline's Modules or UDF code differ between the driver and the workers "
                "(ship the same code, e.g. with runtime_env)"
            )
        self._worker = _core.RayWorker(program._program, pool)

    def ready(self) -> tuple[str, int]:
        """The actor's node id and process id, once its constructor has finished."""
        ray = _ray()
        return (ray.get_runtime_context().get_node_id(), os.getpid())

    def run(self, task: bytes, *blocks: Any) -> Any:
        return self._worker.run(task, *blocks)

    def cached_blocks(self) -> int:
        """How many blocks this actor holds from earlier RPCs (they cross to it once)."""
        return self._worker.cached_blocks()


class _Unplaced(Exception):
    """An actor died before its constructor ran (its node went away)."""


class _NotReady(Exception):
    """An actor did not finish its constructor within the time given."""


def _classify(error: BaseException) -> tuple[str, str]:
    """What a Ray error means for an RPC: ("lost" | "block_lost" | "failed", message)."""
    ray = _ray()
    exc = ray.exceptions
    cause: BaseException = error
    if isinstance(error, exc.RayTaskError) and error.cause is not None:
        cause = error.cause
    text = f"{type(cause).__name__}: {str(cause).strip().splitlines()[0] if str(cause) else ''}"
    if isinstance(cause, exc.ObjectLostError):
        return ("block_lost", text)
    if isinstance(cause, (exc.RayActorError, exc.TaskCancelledError, exc.WorkerCrashedError)):
        return ("lost", text)
    return ("failed", text)


class RayBackend:
    """The actor pools of one compiled program on a Ray cluster."""

    def __init__(
        self,
        program: Any,
        source: bytes,
        address: str | None = None,
        ray_init_kwargs: dict[str, Any] | None = None,
    ) -> None:
        connect(address, dict(ray_init_kwargs or {}))
        ray = _ray()
        self._ray = ray
        self._wait = ray.wait
        self._get = ray.get
        self._cls = ray.remote(max_restarts=0, max_task_retries=0)(_Worker)
        self._explain = program.explain_text()
        self._optimize = program._optimize
        self._source_ref = ray.put(source)
        self._pools: list[dict[str, Any]] = list(program._program.pools())
        self._options: list[dict[str, Any]] = []
        self._depths: list[int] = []
        for pool in self._pools:
            module = program._modules[program._call_pools[pool["calls"][0]]]
            options: dict[str, Any] = {
                "num_cpus": pool["cpus"],
                "num_gpus": pool["gpus"],
            }
            if pool["resources"]:
                options["resources"] = dict(pool["resources"])
            for key, value in module.options.items():
                if key in _ACTOR_OPTIONS and value is not None:
                    options[key] = value
            self._options.append(options)
            self._depths.append(_calls_in_flight(module.options))
        self._actors: list[list[Any]] = [[] for _ in self._pools]
        self._methods: list[list[dict[int, Any]]] = [[] for _ in self._pools]
        # Per outstanding call's report ObjectRef: (token, pool, actor).
        self._pending: dict[Any, tuple[int, int, int]] = {}
        self.nodes: list[list[str]] = [[] for _ in self._pools]
        # Where the driver's time goes (seconds and calls), for the benchmark.
        self.stats: dict[str, float] = {
            "submit_s": 0.0,
            "submits": 0,
            "wait_s": 0.0,
            "waits": 0,
            "blocks_sent": 0,  # input blocks that travelled with an RPC (not held already)
        }
        self._clock = time.perf_counter
        # Calls outstanding per actor, and per pool the most ever outstanding at one actor.
        self._in_flight: list[list[int]] = [[] for _ in self._pools]
        self.peak_in_flight: list[int] = [0 for _ in self._pools]
        try:
            started = []
            for p, pool in enumerate(self._pools):
                for _ in range(int(pool["replicas"])):
                    started.append((p, self._new_actor(p)))
            ready = self._await_ready([a for _, a in started], [p for p, _ in started])
            for (p, actor), (node, _pid) in zip(started, ready, strict=True):
                self._actors[p].append(actor)
                self._in_flight[p].append(0)
                self._methods[p].append({})
                self.nodes[p].append(node)
        except BaseException:
            for _, actor in started:
                self._kill(actor)
            raise

    # -- actors --------------------------------------------------------------------------

    def _new_actor(self, pool: int, avoid_node: str | None = None) -> Any:
        options = self._options[pool]
        if avoid_node is not None:
            options = self._elsewhere(pool, avoid_node) or options
        return self._cls.options(**options).remote(
            self._source_ref, self._optimize, self._explain, pool
        )

    def _elsewhere(self, pool: int, node: str) -> dict[str, Any] | None:
        """The pool's actor options with `node` excluded, or None where that would override
        what the user asked for (a placement group, a hard node affinity, their own node
        label) or no other live node could host the actor."""
        options = dict(self._options[pool])
        strategy = options.get("scheduling_strategy")
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        soft_affinity = isinstance(strategy, NodeAffinitySchedulingStrategy) and strategy.soft
        if strategy not in (None, "DEFAULT", "SPREAD") and not soft_affinity:
            return None
        labels = dict(options.get("label_selector") or {})
        if _NODE_LABEL in labels:
            return None
        need = {
            "CPU": float(options.get("num_cpus") or 0),
            "GPU": float(options.get("num_gpus") or 0),
        }
        need.update({k: float(v) for k, v in (options.get("resources") or {}).items()})
        others = [
            n
            for n in self._ray.nodes()
            if n["Alive"]
            and n["NodeID"] != node
            and all(n["Resources"].get(k, 0.0) >= v for k, v in need.items() if v > 0)
        ]
        if not others:
            return None
        options.pop("scheduling_strategy", None)
        labels[_NODE_LABEL] = f"!{node}"
        options["label_selector"] = labels
        return options

    def _await_ready(
        self, actors: list[Any], pools: list[int], timeout: float | None = None
    ) -> list[tuple[str, int]]:
        """Each actor's (node, pid) once its constructor finished. Raises _NotReady when
        `timeout` is given and passes first, ExecutionError after _STARTUP_TIMEOUT_S."""
        refs = [a.ready.remote() for a in actors]
        deadline = time.monotonic() + (_STARTUP_TIMEOUT_S if timeout is None else timeout)
        pending = list(refs)
        while pending:
            left = deadline - time.monotonic()
            _, pending = self._wait(pending, num_returns=len(pending), timeout=max(left, 0))
            if pending and left <= 0 and timeout is not None:
                raise _NotReady()
            if pending and left <= 0:
                names = sorted({self._pools[pools[refs.index(r)]]["name"] for r in pending})
                raise ExecutionError(
                    f"Ray actors of {', '.join(names)} did not start within "
                    f"{_STARTUP_TIMEOUT_S:.0f} s; the cluster may lack the resources they ask "
                    f"for ({[self._options[pools[refs.index(r)]] for r in pending][0]}) "
                    f"(cluster: {self._ray.cluster_resources()})"
                )
        out = []
        for ref, pool in zip(refs, pools, strict=True):
            try:
                out.append(self._get(ref))
            except self._ray.exceptions.RayActorError as error:
                if not error.actor_init_failed:
                    raise _Unplaced(f"{type(error).__name__}: {error}") from None
                raise ExecutionError(
                    f"the constructor of Module<{self._pools[pool]['name']}> failed on a Ray "
                    f"actor: {_constructor_error(error)}"
                ) from None
        return out

    def _kill(self, actor: Any) -> None:
        try:
            self._ray.kill(actor, no_restart=True)
        except Exception:  # noqa: BLE001 - the actor may be gone with its node already
            pass

    def cached_blocks(self) -> list[list[int]]:
        """Per pool and actor: how many blocks it holds from earlier RPCs."""
        return [self._get([a.cached_blocks.remote() for a in pool]) for pool in self._actors]

    def sizes(self) -> list[int]:
        """Actors per pool."""
        return [len(a) for a in self._actors]

    def depths(self) -> list[int]:
        """Per pool: how many calls the driver keeps at each actor (one running, the others
        queued behind it)."""
        return list(self._depths)

    def replace(self, pool: int, slot: int, lost: bool = False) -> None:
        """Kills the actor in (pool, slot) and puts a fresh one, fully built, in its place.

        After a loss (`lost`), the fresh actor is placed on another live node when one can
        host it: until the head marks a killed node dead (12-17 s), Ray may otherwise place
        the replacement there, and it is lost in turn. When it cannot start elsewhere within
        _ELSEWHERE_TIMEOUT_S (say the other nodes are full), it is placed as usual.
        """
        avoid = self.nodes[pool][slot] if lost else None
        self._kill(self._actors[pool][slot])
        deadline = time.monotonic() + _STARTUP_TIMEOUT_S
        while True:
            actor = self._new_actor(pool, avoid)
            try:
                timeout = _ELSEWHERE_TIMEOUT_S if avoid is not None else None
                (node, _pid) = self._await_ready([actor], [pool], timeout)[0]
                break
            except _NotReady:
                self._kill(actor)  # not placed elsewhere in time: anywhere, then
                avoid = None
            except _Unplaced as error:
                # Placed on a node that died before Ray marked it dead: try again until
                # the scheduler knows (a constructor that raises is not retried).
                self._kill(actor)
                if time.monotonic() > deadline:
                    raise ExecutionError(
                        f"no replacement actor of Module<{self._pools[pool]['name']}> could be "
                        f"started within {_STARTUP_TIMEOUT_S:.0f} s: {error}"
                    ) from None
                time.sleep(0.5)
            except BaseException:
                self._kill(actor)
                raise
        self._actors[pool][slot] = actor
        self._methods[pool][slot] = {}
        self.nodes[pool][slot] = node

    def stop(self) -> None:
        """Kills every actor (idempotent)."""
        for pool in self._actors:
            for actor in pool:
                self._kill(actor)
            pool.clear()
        self._pending.clear()
        for counts in self._in_flight:
            counts.clear()

    # -- values --------------------------------------------------------------------------

    def put(self, values: list[Any]) -> Any:
        return self._ray.put(values)

    def get(self, ref: Any) -> Any:
        return self._get(ref)

    # -- RPCs ----------------------------------------------------------------------------

    def submit(
        self,
        pool: int,
        slot: int,
        token: int,
        returns: int,
        task: bytes,
        refs: tuple[Any, ...],
    ) -> Any:
        start = self._clock()
        methods = self._methods[pool][slot]
        method = methods.get(returns)
        if method is None:
            method = self._actors[pool][slot].run.options(num_returns=returns)
            methods[returns] = method
        out = method.remote(task, *refs)
        self._pending[out[0]] = (token, pool, slot)
        in_flight = self._in_flight[pool]
        in_flight[slot] += 1
        if in_flight[slot] > self.peak_in_flight[pool]:
            self.peak_in_flight[pool] = in_flight[slot]
        stats = self.stats
        stats["submit_s"] += self._clock() - start
        stats["submits"] += 1
        stats["blocks_sent"] += len(refs)
        return out

    def wait(self, timeout: float) -> list[tuple[int, bool, Any]]:
        """The RPCs whose reports are ready, waiting up to `timeout` s for the first."""
        pending = list(self._pending)
        if not pending:
            return []
        start = self._clock()
        self.stats["waits"] += 1
        try:
            return self._collect(pending, timeout)
        finally:
            self.stats["wait_s"] += self._clock() - start

    def _collect(self, pending: list[Any], timeout: float) -> list[tuple[int, bool, Any]]:
        # Everything that is ready in one call; block for the first only when nothing is.
        ready, _ = self._wait(pending, num_returns=len(pending), timeout=0)
        if not ready and timeout > 0:
            ready, _ = self._wait(pending, num_returns=1, timeout=timeout)
        if not ready:
            return []
        out: list[tuple[int, bool, Any]] = []
        try:
            values = self._get(ready)
        except Exception:  # noqa: BLE001 - one of them failed: take them one by one
            values = None
        for i, ref in enumerate(ready):
            token, pool, slot = self._pending.pop(ref)
            self._in_flight[pool][slot] -= 1
            if values is not None:
                out.append((token, True, values[i]))
                continue
            try:
                out.append((token, True, self._get(ref)))
            except Exception as error:  # noqa: BLE001 - classified for the driver
                out.append((token, False, _classify(error)))
        return out


def _calls_in_flight(options: dict[str, Any]) -> int:
    """The calls kept at each actor of a pool with these Module options (checked when the
    pipeline was compiled): the option, else _DEFAULT_CALLS_IN_FLIGHT. The option cannot ask
    for more than one with a timeout (its calls' clocks start when they are sent, so a queued
    call would spend its wait against its timeout) or a max_concurrency (a threaded actor
    would run its queued calls at once on one UDF instance)."""
    depth = options.get("max_tasks_in_flight_per_actor")
    return _DEFAULT_CALLS_IN_FLIGHT if depth is None else int(depth)


def _constructor_error(error: BaseException) -> str:
    """The UDF constructor's exception inside a Ray actor creation error, as "Type: message"."""
    text = str(error)
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("rayorch_cpp.ExecutionError") or line.startswith("ExecutionError"):
            return line.split(":", 1)[1].strip()
    return text.strip().splitlines()[-1] if text.strip() else type(error).__name__
