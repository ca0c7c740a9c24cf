"""Every compile-time check surfaces as rayorch_cpp.CompileError with the engine's message."""

from __future__ import annotations

from typing import Any

import pytest

import rayorch_cpp as ro
from rayorch_cpp import F


class Any1:
    def run(self, *columns: list[Any], **keywords: Any) -> list[Any]:
        return list(columns[0])


class Lists:
    def run(self, xs: list[Any]) -> list[list[int]]:
        return [[1, 2] for _ in xs]


one = ro.RayModule(Any1)
lists = ro.RayModule(Lists)
lists2 = ro.RayModule(Lists)
_saved: dict[str, ro.Port] = {}


def _keep(x: ro.Port) -> ro.Port:
    _saved["port"] = x
    return one(x)


CASES: list[tuple[str, Any, str]] = [
    (
        "port of another pipeline",
        lambda x: one(_saved["port"]),
        "input arg_0 of Any1: Port p0 belongs to another pipeline",
    ),
    ("call without a Port input", lambda x: one(stage=1), "Call Any1#0 has no Port input"),
    (
        "call inputs from two Domains",
        lambda x: one(F.expand(lists(x)), x),
        "Call Any1#1 takes inputs from different Domains: p2 (expand of p1) is in d1 but p0 "
        "(source 0) is in d0",
    ),
    (
        "expand of a source",
        lambda x: F.reduce(F.expand(x)),
        "F.expand of p0 (source 0): only a Call output can be expanded",
    ),
    (
        "expand of one Port twice",
        lambda x: (lambda lst: (F.reduce(F.expand(lst)), F.reduce(F.expand(lst))))(lists(x)),
        "p1 (output 0 of Lists#0) is expanded twice",
    ),
    (
        "reduce in the root Domain",
        lambda x: F.reduce(x),
        "F.reduce of p0 (source 0): it lives in the root Domain d0",
    ),
    (
        "aligned expand of two producers",
        lambda x: F.reduce_aligned(*F.expand_aligned(lists(x), lists2(x))),
        "aligned lists must be outputs of the same Call",
    ),
    (
        "filter with a mask from another Domain",
        lambda x: F.reduce(F.filter(F.expand(lists(x)), one(x))),
        "source and mask must be in the same Domain",
    ),
    (
        "broadcast from a non-ancestor",
        lambda x: F.reduce(F.broadcast(F.expand(lists(x)), like=F.expand(lists2(x)))),
        "d1 is not an ancestor of d2",
    ),
    (
        "reduce members from another Domain",
        lambda x: F.reduce(F.expand(lists(x)), members=x),
        "members must share the values' child Domain",
    ),
    (
        "replicas < 1",
        lambda x: ro.RayModule(Any1).ray_options(replicas=0)(x),
        "Module<Any1> (used by Any1#0): replicas must be >= 1, got 0",
    ),
    (
        "batch_size < 1",
        lambda x: ro.Module(Any1, batch_size=0)(x),
        "Module<Any1> (used by Any1#0): batch_size must be >= 1, got 0",
    ),
    (
        "negative GPUs",
        lambda x: ro.RayModule(Any1).ray_options(num_gpus=-1)(x),
        "gpus must be >= 0, got -1",
    ),
    (
        "option of the wrong type",
        lambda x: ro.RayModule(Any1).ray_options(replicas="2")(x),
        "Module<Any1>: option replicas must be an integer",
    ),
    (
        "calls in flight per actor below one",
        lambda x: ro.Module(Any1, max_tasks_in_flight_per_actor=0)(x),
        "Module<Any1>: option max_tasks_in_flight_per_actor must be an integer >= 1, got 0",
    ),
    (
        "queued calls with a timeout",
        lambda x: ro.Module(Any1, max_tasks_in_flight_per_actor=2, timeout=5)(x),
        "Module<Any1>: max_tasks_in_flight_per_actor=2 cannot be combined with timeout",
    ),
    (
        "queued calls on a threaded actor",
        lambda x: ro.Module(Any1, max_tasks_in_flight_per_actor=3, max_concurrency=4)(x),
        "Module<Any1>: max_tasks_in_flight_per_actor=3 needs actors that run one call at a "
        "time, but max_concurrency=4",
    ),
    (
        "misspelled option",
        lambda x: ro.Module(Any1, replica=4)(x),
        "Module 'Any1': unknown option 'replica'; did you mean 'replicas' or 'min_replicas' or "
        "'max_replicas'? Known options: "
        "accelerator_type, allow_out_of_order_execution, batch_size, batch_wait, colocate, "
        "concurrency_groups, enable_task_events, enable_tensor_transport, fallback_strategy, "
        "get_if_exists, infra_retries, isolation, label_selector, lifetime, max_concurrency, "
        "max_pending_calls, max_replicas, max_restarts, max_task_retries, "
        "max_tasks_in_flight_per_actor, memory, memory_limit, min_replicas, name, namespace, "
        "num_cpus, num_gpus, object_store_memory, placement_group, placement_group_bundle_index, "
        "placement_group_capture_child_tasks, recovery, replicas, reservation, resources, "
        "runtime_env, scheduling_strategy, timeout, version",
    ),
    (
        "the C++ name of a reference option",
        lambda x: ro.CppModule("Upper", cpus=2)(x),
        "Module 'Upper': unknown option 'cpus'; did you mean 'num_cpus'?",
    ),
    (
        "unknown option without a close name",
        lambda x: ro.RayModule(Any1).ray_options(zzz=1)(x),
        "Module 'Any1': unknown option 'zzz'. Known options: accelerator_type,",
    ),
    (
        "isolation of the wrong value",
        lambda x: ro.Module(Any1, isolation="fork")(x),
        "Module<Any1>: option isolation must be 'threads' or 'process', got 'fork'",
    ),
    (
        "negative memory limit",
        lambda x: ro.Module(Any1, memory_limit=-1)(x),
        "Module<Any1>: option memory_limit must be a non-negative number of bytes, got -1",
    ),
    # The two messages below come from the C++ compiler's check of the pool's options
    # (compile_verify.cc): isolation and memory_limit reach rayorch::ModuleOptions.
    (
        "memory limit of a threaded pool",
        lambda x: ro.Module(Any1, memory_limit=1 << 30)(x),
        "Module<Any1> (used by Any1#0): memory_limit applies to process-isolated workers only",
    ),
    ("forward returns no Port", lambda x: 3, "forward() must return a Port"),
    ("positional static argument", lambda x: one(x, 3), "input arg_1 of Any1 must be a Port"),
    (
        "Port hidden in a static argument",
        lambda x: one(x, extra=[x]),
        "static keyword argument 'extra' of Any1 contains a Port",
    ),
    (
        "mask that is an expand output",
        lambda x: F.reduce(F.filter(F.expand(lists(x)), F.expand(lists2(x)))),
        "a mask must be a Call output or a source column",
    ),
]


@pytest.mark.parametrize(("case", "forward", "message"), CASES, ids=[c[0] for c in CASES])
def test_compile_error(case: str, forward: Any, message: str) -> None:
    ro.compile(_keep)  # a finished trace whose Port the first case reuses
    with pytest.raises(ro.CompileError) as info:
        ro.compile(forward)
    assert message in str(info.value)
    assert isinstance(info.value, ValueError)  # as the reference's CompileError


def test_modules_and_operators_outside_a_trace() -> None:
    ro.compile(_keep)
    with pytest.raises(ro.CompileError, match="called outside a trace"):
        one(_saved["port"])
    with pytest.raises(ro.CompileError, match="F.expand was called outside a trace"):
        F.expand(_saved["port"])


def test_forward_needs_a_positional_source() -> None:
    with pytest.raises(ro.CompileError, match="at least one parameter"):
        ro.compile(lambda: None)


def test_a_compiled_program_is_a_snapshot() -> None:
    m = ro.RayModule(Any1).ray_options(batch_size=2)
    program = ro.compile(lambda x: m(x))
    m.ray_options(batch_size=0)  # later changes do not reach the compiled program
    ex = ro.SyncExecutor(program)
    assert ex.run([1, 2, 3]).outputs == [1, 2, 3]
    assert [len(r["grains"]) for r in ex.rpc_records()] == [2, 1]


def test_ray_actor_options_are_known_options() -> None:
    # Every actor option the Ray backend passes to Ray's .options(...) is accepted (and
    # ignored by the local executor), as are the ones it reads itself.
    from rayorch_cpp import _ray_placement

    options: dict[str, Any] = {name: None for name in _ray_placement._ACTOR_OPTIONS}
    module = ro.Module(Any1, max_tasks_in_flight_per_actor=1, name="Kept", **options)
    program = ro.compile(lambda x: module(x))
    assert "Kept#0" in program.explain_text()
    with ro.Executor(program) as executor:
        assert executor.run([1, 2], progress=False).outputs == [1, 2]


def test_threaded_isolation_and_no_memory_limit_are_the_defaults() -> None:
    module = ro.Module(Any1, isolation="threads", memory_limit=0, replicas=2)
    with ro.Executor(lambda x: module(x)) as executor:
        assert executor.run([1, 2, 3], progress=False).outputs == [1, 2, 3]
