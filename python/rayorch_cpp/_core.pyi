"""Bindings of the RayOrch C++ engine (use the rayorch_cpp package, not this module)."""

import enum
from collections.abc import Callable, Iterable, Sequence
from typing import Any, NoReturn

class CompileError(ValueError):
    """A pipeline could not be traced or compiled (the engine's rayorch::CompileError)."""

class ExecutionError(RuntimeError):
    """A run stopped on an unrecoverable failure (the engine's rayorch::ExecutionError)."""

    partial_outputs: list[Any] | None  #: an aborted run's rows per output, None if not delivered
    partial: Any  #: Executor.run()'s RunResult of partial_outputs, else None

def configure(
    record_failure: type,
    group_failure: type,
    make_issue: Callable[..., Any],
    actor_lost: type[BaseException],
    udf_traceback: type[BaseException],
    output_issue: type,
) -> None:
    """Registers the failure classes, the OutputIssue factory, the ActorLost exception, the
    UdfTraceback exception and the OutputIssue class of the Python package."""

def cpp_udfs() -> dict[str, dict[str, Any]]:
    """The C++ UDFs usable in Python pipelines: name -> doc, inputs, outputs, constructor."""

def module_options() -> list[str]:
    """Every option a Module accepts, sorted: the engine's, the package's and Ray's."""

def ray_actor_options() -> list[str]:
    """The Module options the Ray backend passes to Ray's actor .options(...) as they are."""

def optional_stages() -> list[dict[str, Any]]:
    """Each optional workload's C++ stages: [{workload, stages, needs, built}]."""

def replica_context() -> dict[str, Any] | None:
    """The calling thread's replica: {module, index, replicas, devices}, or None."""

def exit_with_parent(parent: int) -> None:
    """Worker server: ends with its parent (the executor)."""

def serve_worker_requests(program: Program, fd: int, parent: int) -> NoReturn:
    """Worker server: forks a worker per request of the executor; never returns."""

def foreign_port(owner: Trace | None, port: int, what: str) -> None:
    """Raises the CompileError for a Port used outside its own trace."""

class Program:
    """An immutable compiled program (a RuntimePlan)."""

    def explain(self) -> str:
        """One line per Port, ``pN kind dD <- [inputs] => rule``, plus rewrite lines."""
    def outputs_below_root(self) -> list[int]:
        """The outputs (flat indices) that are Ports of a child Domain: each root delivers the
        list of its descendants' values of them."""
    def pools(self) -> list[dict[str, Any]]:
        """The actor pools in plan order: name, replicas, cpus, gpus, resources, calls,
        isolation, found_by_compiler (co-located by auto_colocate=True)."""
    @property
    def sources(self) -> int:
        """Number of source columns."""
    @property
    def outputs(self) -> int:
        """Number of output Ports."""

class Trace:
    """Records one pipeline into the engine's graph builder."""

    def __init__(self) -> None: ...
    def enter(self) -> None:
        """Makes this trace the current one of the calling thread."""
    def exit(self) -> None:
        """Restores the previous current trace."""
    def add_source(self) -> int:
        """Adds a source column; returns its Port id."""
    def add_call(
        self,
        module_key: object,
        udf: object,
        init_args: tuple[Any, ...],
        init_kwargs: dict[str, Any] | None,
        name: str,
        options: dict[str, Any],
        inputs: Sequence[int],
        positional: int,
        keyword_names: list[str],
        static_kwargs: dict[str, Any] | None,
        statics: Sequence[str],
        outputs: int,
        cpp: str = "",
    ) -> list[int]:
        """Records a Call of the Module ``module_key`` (one pool per key), of the C++ UDF
        ``cpp`` when given; returns its output Port ids. ``options`` are the Module's options
        as given to ``ray_options`` (an unknown one, or a value of the wrong type, raises
        CompileError)."""
    def add_expand(self, lists: Sequence[int]) -> list[int]:
        """Records an (aligned) expand; returns the child Port ids."""
    def add_reduce(self, values: Sequence[int], members: int) -> list[int]:
        """Records an (aligned) reduce; ``members`` is -1 for the first value Port."""
    def add_filter(self, source: int, mask: int) -> int:
        """Records a filter of ``source`` by ``mask``."""
    def add_broadcast(self, source: int, like: int) -> int:
        """Records a broadcast of ``source`` into the Domain of ``like``."""
    def describe(self, port: int) -> str:
        """A short description of a Port for messages."""
    def compile(self, outputs: Sequence[int], optimize: bool, auto_colocate: bool) -> Program:
        """Seals the trace and compiles it; raises CompileError."""

class CallStatus(enum.Enum):
    """How one call of the Ray backend ended."""

    ok = 0
    call_failed = 1
    udf_lost = 2
    udf_lost_unrebuilt = 3
    actor_lost = 4
    block_lost = 5
    ray_error = 6

class CallReport:
    """What the driver learns of one finished call."""

    def __init__(
        self,
        status: CallStatus,
        report: bytes = b"",
        error: str = "",
        start_s: float = 0.0,
        end_s: float = 0.0,
        rebuild_error: str = "",
        lost_object: str = "",
        actor_held: bool = False,
    ) -> None: ...
    @property
    def status(self) -> CallStatus: ...
    @property
    def report(self) -> bytes: ...
    @property
    def error(self) -> str: ...
    @property
    def start_s(self) -> float: ...
    @property
    def end_s(self) -> float: ...
    @property
    def rebuild_error(self) -> str: ...
    @property
    def lost_object(self) -> str: ...
    @property
    def actor_held(self) -> bool: ...

class FinishedCall:
    """A call whose report is in, under the token of its submission."""

    def __init__(self, token: int, report: CallReport) -> None: ...
    @property
    def token(self) -> int: ...
    @property
    def report(self) -> CallReport: ...

class RayWorker:
    """The worker of one Ray actor: one pool's UDF instance and its RPCs."""

    def __init__(self, program: Program, pool: int, replica: int = -1) -> None: ...
    def run(self, task: bytes, *blocks: list[Any]) -> tuple[Any, ...]:
        """run(task, *blocks) -> (CallReport, *output blocks: a list each, or None)"""
    def exported(self, block: int) -> list[Any]:
        """The values of a block this actor keeps, as one list (for a reader elsewhere)."""
    def cached_blocks(self) -> int:
        """How many blocks this actor holds from earlier RPCs."""

class JournalOptions:
    """The run journal of a run (rayorch::JournalOptions); off when ``path`` is empty."""

    path: str
    retry_failed: bool
    force: bool
    allow_other_inputs: bool
    sync_every_records: int
    sync_interval_s: float
    write_interval_s: float
    def __init__(self) -> None: ...

class SinkOptions:
    """Where a run's sink commits its parts (rayorch::SinkOptions, without the format: run()
    takes the Python format object); off when ``directory`` is empty."""

    directory: str
    rows_per_part: int
    bytes_per_part: int
    max_part_age_s: float
    def __init__(self) -> None: ...

class LiveOptions:
    """The live page of a run (rayorch::LiveOptions); off unless enabled."""

    enabled: bool
    host: str
    port: int
    token: str
    on_listen: Callable[[str], None] | None
    def __init__(self) -> None: ...

def write_report_page(report_path: str, page_path: str) -> None:
    """Writes the report page of the JSON report at report_path to page_path (atomically);
    ValueError naming what is wrong with the report."""

class RunOptions:
    """The options of one run (rayorch::RunOptions)."""

    input_batch_size: int
    max_active_input_batches: int
    queue_order: str
    reservation: str | None
    backpressure: int
    progress: bool
    progress_log_interval_s: float
    crash_record: bool
    trace_path: str
    report_path: str
    live: LiveOptions
    journal: JournalOptions
    sink: SinkOptions
    max_failed_roots: int | None
    max_failed_fraction: float
    min_roots_for_failed_fraction: int
    dead_letters: str
    dead_letter_fields: Callable[[int], list[tuple[str, str]]] | None
    def __init__(self) -> None: ...

class CallMetrics:
    """One Call's counters for one run."""

    @property
    def call(self) -> str: ...
    @property
    def udf(self) -> str: ...
    @property
    def actors(self) -> int: ...
    @property
    def batch_size(self) -> int: ...
    @property
    def mean_batch_fill(self) -> float: ...
    @property
    def rpcs(self) -> int: ...
    @property
    def grain_dispatches(self) -> int: ...
    @property
    def requeues(self) -> int: ...
    @property
    def failed_rpcs(self) -> int: ...
    @property
    def suppressed_by_barrier(self) -> int: ...
    @property
    def batch_size_histogram(self) -> dict[int, int]: ...
    @property
    def rpc_sizes(self) -> list[int]: ...
    @property
    def busy_seconds(self) -> float: ...
    @property
    def actors_replaced(self) -> int: ...

class InputBatchMetrics:
    """Counters of one input batch."""

    @property
    def index(self) -> int: ...
    @property
    def first_row(self) -> int: ...
    @property
    def rows(self) -> int: ...
    @property
    def grains(self) -> int: ...
    @property
    def rpcs(self) -> int: ...
    @property
    def admitted_seconds(self) -> float: ...
    @property
    def completed_seconds(self) -> float: ...
    @property
    def entities(self) -> int: ...
    @property
    def items(self) -> int: ...
    @property
    def expansions(self) -> int: ...
    @property
    def released_values(self) -> int: ...

class ActorStartMetrics:
    """When one actor's constructor finished (eager start)."""

    @property
    def actor(self) -> int: ...
    @property
    def started_seconds(self) -> float: ...
    @property
    def error(self) -> str: ...

class PoolResizeMetrics:
    """A self-sizing pool's decision (DESIGN 6.1.7)."""

    @property
    def seconds(self) -> float: ...
    @property
    def from_actors(self) -> int: ...
    @property
    def to_actors(self) -> int: ...
    @property
    def reason(self) -> str: ...

class PoolMetrics:
    """The starts of one pool's actors."""

    @property
    def pool(self) -> str: ...
    @property
    def actors(self) -> int: ...
    @property
    def started(self) -> list[ActorStartMetrics]: ...
    @property
    def resizes(self) -> list[PoolResizeMetrics]: ...
    @property
    def actors_over_time(self) -> list[tuple[float, int]]: ...

class NodeLossMetrics:
    """A cluster node the run lost."""

    @property
    def node(self) -> str: ...
    @property
    def address(self) -> str: ...
    @property
    def detected_seconds(self) -> float: ...
    @property
    def cause(self) -> str: ...

class ExpandMetrics:
    """How many children one expansion (an F.expand of a Call's list) made per parent."""

    @property
    def call(self) -> str: ...
    @property
    def port(self) -> int: ...
    @property
    def parents(self) -> int: ...
    @property
    def children(self) -> int: ...
    @property
    def fan_out_histogram(self) -> dict[int, int]: ...

class RunMetrics:
    """Metrics of one run (rayorch::RunMetrics)."""

    @property
    def elapsed_seconds(self) -> float: ...
    @property
    def calls(self) -> list[CallMetrics]: ...
    @property
    def pools(self) -> list[PoolMetrics]: ...
    @property
    def input_batches(self) -> list[InputBatchMetrics]: ...
    @property
    def peak_active_input_batches(self) -> int: ...
    @property
    def expands(self) -> list[ExpandMetrics]: ...
    @property
    def root_completed_seconds(self) -> list[float]: ...
    @property
    def stale_reports_rejected(self) -> int: ...
    @property
    def actors_replaced(self) -> int: ...
    @property
    def values_rebuilt(self) -> int: ...
    @property
    def grains_reexecuted(self) -> int: ...
    @property
    def rebuild_seconds(self) -> float: ...
    @property
    def node_losses(self) -> list[NodeLossMetrics]: ...
    @property
    def roots_by_outcome(self) -> dict[str, int]: ...
    @property
    def roots_restored(self) -> int: ...
    @property
    def journal_discarded_bytes(self) -> int: ...
    @property
    def file_errors(self) -> list[str]: ...

class Core:
    """An executor core: the local backend or the synchronous core."""

    @staticmethod
    def local(
        program: Program,
        server_command: list[str] | None = None,
        server_payload: bytes = b"",
        budget_cpus: float = 0.0,
        budget_gpus: float = 0.0,
        budget_resources: dict[str, float] = ...,
        random_resize_seed: int = 0,
    ) -> Core:
        """Builds every pool of the local backend (raises ExecutionError on a constructor
        failure, or when a self-sizing pool's min_replicas cannot fit in the budget)."""
    @staticmethod
    def sync(program: Program, wire: bool = False) -> Core:
        """The deterministic single-thread core."""
    @staticmethod
    def ray(
        program: Program,
        backend: Any,
        budget_cpus: float = 0.0,
        budget_gpus: float = 0.0,
        budget_resources: dict[str, float] = ...,
        random_resize_seed: int = 0,
    ) -> Core:
        """The Ray backend over a started ``_ray_backend.RayBackend`` (or an object with its
        contract); the budget bounds its self-sizing pools (raises ExecutionError when a
        self-sizing pool's min_replicas cannot fit in it)."""
    def run(
        self,
        columns: list[Iterable[Any]],
        options: RunOptions,
        journal_keys: list[str] | Callable[[int, tuple[Any, ...]], str] | None = None,
        on_row: Callable[[int, tuple[Any, ...], bool], None] | None = None,
        on_progress: Callable[[int, int | None], None] | None = None,
        lazy: bool = False,
        sink_format: Any = None,
    ) -> tuple[list[list[Any]], RunMetrics]:
        """Runs the program with the GIL released; returns one list per output (empty with
        ``on_row``) and the metrics; ``on_row(row, outputs, restored)`` tells the rows restored
        from the run journal. ``on_progress(done, total)`` gets the finished root
        rows at most every 200 ms and at the last row. With ``journal_keys`` (one per row)
        the run uses the run journal (outputs recorded with pickle), error budget and dead
        letters of ``options``. With ``lazy``, the columns are iterables pulled row by row
        (with the GIL, on the calling thread) as input batches are admitted; ``journal_keys``
        is then key(row, row values), called as each row is pulled, and ``total`` is None
        until the columns ended. With ``options.sink`` enabled, ``sink_format``
        (rayorch_cpp.io) writes the present roots into committed parts and, without
        ``on_row``, the lists are empty."""
    def await_actors(self) -> None:
        """Blocks until every pool has a ready actor (eager start)."""
    def close(self) -> None:
        """Stops every actor; idempotent."""
    @property
    def closed(self) -> bool:
        """True once closed."""
    def rpc_log(self) -> list[dict[str, Any]]:
        """Every RPC so far (the synchronous core records them)."""

# Present when the extension was built with the pdf2md stages (poppler-cpp, tesseract, cairo).

class PageRef:
    """One page of a PDF as listed by Pdf2mdOpen."""

    number: int
    def __init__(self) -> None: ...

class PageImage:
    """A rendered page: 8-bit grayscale pixels."""

    @property
    def number(self) -> int:
        """1-based page number."""
    @property
    def width(self) -> int:
        """Width in pixels."""
    @property
    def height(self) -> int:
        """Height in pixels."""
    @property
    def dpi(self) -> int:
        """Resolution."""
    @property
    def pixels(self) -> bytes:
        """width * height bytes, rows without padding (a copy)."""

class DocumentInfo:
    """A document's name and page count."""

    @property
    def stem(self) -> str:
        """File name without extension."""
    @property
    def pages(self) -> int:
        """Page count."""

class Markdown:
    """One finished document."""

    @property
    def stem(self) -> str:
        """File name without extension."""
    @property
    def pages(self) -> int:
        """Page count."""
    @property
    def text(self) -> str:
        """The Markdown text."""

def pdf2md_make_samples(
    dir: str, docs: int = 4, seed: int = 1, max_pages: int = 6, corrupt: int = 1
) -> list[tuple[str, list[str]]]:
    """Writes sample PDFs with known text into ``dir``; returns (pdf path, page texts) per
    readable document."""

def pdf2md_word_accuracy(expected: str, actual: str) -> float:
    """Word accuracy of ``actual`` against ``expected`` (1.0: every word right)."""

# Present when the extension was built with the video stages (FFmpeg's libraries, tesseract,
# cairo).

class VideoInfo:
    """What a video is, read from its container."""

    @property
    def path(self) -> str:
        """The file."""
    @property
    def stem(self) -> str:
        """File name without extension."""
    @property
    def codec(self) -> str:
        """E.g. mpeg4."""
    @property
    def duration_seconds(self) -> float:
        """0 when unknown."""
    @property
    def fps(self) -> float:
        """Average frame rate, 0 when unknown."""
    @property
    def width(self) -> int:
        """Width in pixels."""
    @property
    def height(self) -> int:
        """Height in pixels."""

class Scene:
    """One shot between two cuts (frames inclusive)."""

    @property
    def index(self) -> int:
        """0-based scene number."""
    @property
    def first_frame(self) -> int:
        """First frame."""
    @property
    def last_frame(self) -> int:
        """Last frame."""
    @property
    def start_seconds(self) -> float:
        """Start time."""
    @property
    def end_seconds(self) -> float:
        """End time."""

class FrameRef:
    """A sampled frame of a scene: where to find it."""

    @property
    def scene(self) -> int:
        """Scene number."""
    @property
    def frame(self) -> int:
        """Frame number in the video."""
    @property
    def seconds(self) -> float:
        """Presentation time."""

class FrameImage:
    """A decoded frame: 8-bit gray pixels."""

    @property
    def frame(self) -> int:
        """Frame number in the video."""
    @property
    def width(self) -> int:
        """Width in pixels."""
    @property
    def height(self) -> int:
        """Height in pixels."""
    @property
    def pixels(self) -> bytes:
        """width * height bytes, rows without padding (a copy)."""

class SceneRecord:
    """Everything known about one scene."""

    @property
    def index(self) -> int:
        """0-based scene number."""
    @property
    def first_frame(self) -> int:
        """First frame."""
    @property
    def last_frame(self) -> int:
        """Last frame."""
    @property
    def text(self) -> str:
        """The most frequent frame text."""

class VideoRecord:
    """One finished video."""

    @property
    def stem(self) -> str:
        """File name without extension."""
    @property
    def frames(self) -> int:
        """Frames decoded while finding the scenes."""
    @property
    def scenes(self) -> list[SceneRecord]:
        """Scene records in order."""
    def to_json(self) -> str:
        """The record's line in video2jsonl's output."""

def video_make_samples(
    dir: str,
    videos: int = 3,
    seed: int = 1,
    max_scenes: int = 5,
    min_scene_frames: int = 3,
    max_scene_frames: int = 7,
    corrupt: int = 1,
) -> list[tuple[str, list[tuple[int, int, str]]]]:
    """Writes sample videos with known scenes and captions into ``dir`` (and ``corrupt``
    corrupt files: corrupt.mp4 when one); returns (video path, [(first frame, last frame,
    caption)]) per readable video."""

def video_cpp_records(paths: list[str], every: int = 0, per_scene: int = 3) -> list[str]:
    """Runs the C++ video pipeline (video::VideoPipeline, default stages) on ``paths``: one
    video2jsonl line per video, or 'failed: CAUSE'."""
