"""The Modules of a pipeline: a UDF plus how to build and resource it.

``RayModule`` wraps a Python UDF (``Module`` takes its options as keywords, ``function``
wraps a batch callable), ``CppModule`` a C++ UDF shipped with the package. Calling one
inside forward() records a Call into the trace under way.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, overload

from . import _core
from ._journal_modules import ModuleSnapshot
from ._tracing import Port, active_trace, contains_port
from ._values import CompileError

if TYPE_CHECKING:
    from typing import Self


class RayModule:
    """A UDF (a class with ``run``, or a callable) plus how to build and resource it.

    Calling a RayModule inside ``forward`` records a Call and returns its output Port (or a
    tuple of Ports for ``num_outputs > 1``). Positional arguments are Port inputs; keyword
    arguments that are Ports are Port inputs passed by keyword, the others are static
    arguments passed to ``run`` on every batch. Reusing the same RayModule object gives
    several Calls sharing one actor pool.

    The UDF receives one list per Port input (one element per Grain of the batch) and
    returns one list or tuple of the same length per output; an element may be a
    RecordFailure or GroupFailure.
    """

    def __init__(self, udf: Any, *, num_outputs: int = 1) -> None:
        if type(num_outputs) is not int or num_outputs <= 0:
            raise ValueError("num_outputs must be a positive integer")
        self.udf = udf
        self.num_outputs = num_outputs
        self.init_args: tuple[Any, ...] = ()
        self.init_kwargs: dict[str, Any] = {}
        self.options: dict[str, Any] = {}
        self._cpp = ""

    def returns(self, count: int) -> Self:
        """Declares the number of output Ports of each Call."""
        if type(count) is not int or count <= 0:
            raise ValueError("output count must be a positive integer")
        self.num_outputs = count
        return self

    def pre_init(self, *args: Any, **kwargs: Any) -> Self:
        """Records the UDF's constructor arguments, replayed on every actor."""
        self.init_args = tuple(args)
        self.init_kwargs = dict(kwargs)
        return self

    def ray_options(self, **options: Any) -> Self:
        """Records execution options and returns this Module.

        The engine reads ``replicas`` (>= 1, or ``"auto"`` with ``min_replicas`` and
        ``max_replicas``: a self-sizing pool, see Executor),
        ``batch_size`` (>= 1), ``num_cpus``,
        ``num_gpus``, ``resources`` (a dict of name -> amount), ``recovery``
        (a RecoveryPolicy) and, beyond the reference, ``name`` (the Call name in
        explain, metrics and messages), ``timeout`` and ``batch_wait`` (seconds),
        ``reservation`` (``"elastic"`` or ``"parent_bound"``), ``infra_retries``,
        ``isolation`` (``"threads"`` or ``"process"``: one worker process per actor,
        docs/ISOLATION.md), ``memory_limit`` (bytes per worker process) and ``colocate`` (a
        group name: the Modules of one group share one pool, each of its actors holding one
        instance of each, so that a value one of them makes and another reads stays in the
        actor's process on Ray; they must agree on every option but ``name``, ``version``,
        ``batch_size``, ``recovery`` and ``infra_retries``, DESIGN 5.12). The Ray backend
        reads ``max_tasks_in_flight_per_actor`` (an integer >= 1): how many calls the driver
        keeps at each actor, one running and the others queued behind it so that Ray's round
        trip overlaps the running call; it cannot be combined with ``timeout`` or
        ``max_concurrency``. Every other actor option of Ray (``runtime_env``,
        ``scheduling_strategy``, ``memory``, ``accelerator_type``, ``max_concurrency``,
        ``max_restarts``, ``max_task_retries``, ``placement_group``, ``label_selector``, ...:
        Ray's own list, but ``name``, which names the Call here) is recorded for the Ray
        backend, which passes it to Ray's ``.options(...)``; the local executor accepts and
        ignores them. Values, and the names (any other is a
        CompileError suggesting the closest known one), are checked when the pipeline is
        compiled.
        """
        if "num_outputs" in options:
            raise ValueError("use RayModule.returns(...) for the number of outputs")
        self.options.update(options)
        return self

    @property
    def name(self) -> str:
        """The name of this Module's Calls (``name#k``): the option, else the UDF's name."""
        name = self.options.get("name")
        if name is not None:
            return str(name)
        return getattr(self.udf, "__name__", type(self.udf).__name__)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        trace = active_trace(f"RayModule({self.name})")
        inputs = [trace.port(v, f"input arg_{i} of {self.name}") for i, v in enumerate(args)]
        keyword_names: list[str] = []
        statics: dict[str, Any] = {}
        for key, value in kwargs.items():
            if isinstance(value, Port):
                inputs.append(trace.port(value, f"input {key} of {self.name}"))
                keyword_names.append(key)
            elif contains_port(value):
                raise CompileError(
                    f"static keyword argument {key!r} of {self.name} contains a Port; pass "
                    "each dynamic dependency as a direct argument"
                )
            else:
                statics[key] = value
        _check_tasks_in_flight(self)
        ids = trace.core.add_call(
            module_key=self,
            udf=self.udf,
            init_args=tuple(self.init_args),
            init_kwargs=dict(self.init_kwargs) if self.init_kwargs else None,
            name=self.name,
            options={**trace.default_options, **self.options},
            inputs=inputs,
            positional=len(args),
            keyword_names=keyword_names,
            static_kwargs=statics if statics else None,
            statics=[f"{k}={v!r}" for k, v in statics.items()],
            outputs=self.num_outputs,
            cpp=self._cpp,
        )
        module = next((i for i, m in enumerate(trace.modules) if m is self), None)
        if module is None:
            trace.modules.append(self)
            trace.snapshots.append(ModuleSnapshot.of(self))
            module = len(trace.modules) - 1
        trace.call_modules.append(module)
        ports = trace.ports(ids)
        return ports[0] if len(ports) == 1 else ports


class Module(RayModule):
    """A RayModule whose options are given as keywords: ``Module(Ocr, replicas=4,
    batch_size=32)``; constructor arguments go through ``pre_init``."""

    def __init__(self, udf: Any, *, num_outputs: int = 1, **options: Any) -> None:
        super().__init__(udf, num_outputs=num_outputs)
        self.ray_options(**options)


class CppModule(RayModule):
    """A C++ UDF shipped with the package, in a Python pipeline next to Python UDFs:
    ``CppModule("Upper", replicas=2)``; constructor arguments go through ``pre_init``.

    Its Port inputs (positional only) are converted to the C++ types of its ``run`` before
    each batch and its results back to Python values after it; ``run`` itself runs without
    the GIL. :func:`cpp_udfs` lists the available UDFs with their types.
    """

    def __init__(self, udf: str, **options: Any) -> None:
        udfs = _core.cpp_udfs()
        if udf not in udfs:
            raise ValueError(_unknown_cpp_udf(udf, udfs))
        super().__init__(udf, num_outputs=int(udfs[udf]["outputs"]))
        self._cpp = udf
        self.ray_options(**options)

    @property
    def name(self) -> str:
        """The name of this Module's Calls: the option, else the C++ UDF's name."""
        name = self.options.get("name")
        return str(name) if name is not None else self._cpp


def _unknown_cpp_udf(udf: str, udfs: dict[str, dict[str, Any]]) -> str:
    """Why ``udf`` is not in this extension: a stage of a workload it was built without (the
    wheel leaves them out), else no such UDF."""
    for workload in _core.optional_stages():
        if not workload["built"] and udf in workload["stages"]:
            return (
                f"C++ UDF {udf!r} is a stage of the {workload['workload']} workload, which this "
                f"build of rayorch-cpp leaves out (the wheel does): it needs "
                f"{workload['needs']} when the package is built; install those (on Debian: "
                f"scripts/install-deps.sh) and install the package from a source checkout "
                f"with `pip install .`"
            )
    return f"no C++ UDF named {udf!r}; available: {sorted(udfs)}"


def cpp_udfs() -> dict[str, dict[str, Any]]:
    """The C++ UDFs usable with CppModule: name -> doc, inputs, outputs, constructor."""
    return dict(_core.cpp_udfs())


def _check_tasks_in_flight(module: RayModule) -> None:
    """Checks ``max_tasks_in_flight_per_actor`` (read by the Ray backend only; the engine's
    options are checked by the engine when the Call is recorded)."""
    opts = module.options
    depth = opts.get("max_tasks_in_flight_per_actor")
    if depth is None:
        return
    if type(depth) is not int or depth < 1:
        raise CompileError(
            f"Module<{module.name}>: option max_tasks_in_flight_per_actor must be an integer "
            f">= 1, got {depth!r}"
        )
    if depth == 1:
        return
    if opts.get("timeout") is not None:
        raise CompileError(
            f"Module<{module.name}>: max_tasks_in_flight_per_actor={depth} cannot be combined "
            "with timeout: a call queued at an actor would spend its wait against its "
            "timeout; drop one of the two options"
        )
    concurrency = opts.get("max_concurrency")
    if concurrency is not None and concurrency != 1:
        raise CompileError(
            f"Module<{module.name}>: max_tasks_in_flight_per_actor={depth} needs actors that "
            f"run one call at a time, but max_concurrency={concurrency!r}; drop one of the "
            "two options"
        )


@overload
def function(fn: Callable[..., Any], *, num_outputs: int = 1) -> RayModule: ...
@overload
def function(
    fn: None = None, *, num_outputs: int = 1
) -> Callable[[Callable[..., Any]], RayModule]: ...
def function(
    fn: Callable[..., Any] | None = None, *, num_outputs: int = 1
) -> RayModule | Callable[[Callable[..., Any]], RayModule]:
    """Wraps a batch callable (lists in, one list per output out) as a stateless RayModule;
    usable as a decorator."""

    def wrap(target: Callable[..., Any]) -> RayModule:
        return RayModule(target, num_outputs=num_outputs)

    return wrap if fn is None else wrap(fn)


__all__ = ["CppModule", "Module", "RayModule", "cpp_udfs", "function"]
