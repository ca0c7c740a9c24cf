"""The simulated document workload on this project's Ray backend (`rayorch_cpp` on Ray).

The reference's pipeline (bench/peers/reference_peer.py: render -> expand -> OCR -> reduce
-> assemble, the same actor counts, batch sizes and sleep costs, the same UDF classes) with
only the import changed, run by `rayorch_cpp.Executor(..., backend="ray")` on a new local
Ray with the same logical CPUs as the other peers: scheduler against scheduler on the same
deployment. Documents are streamed (`Executor.stream`), so each document's completion time
is when it reached the driver. It needs the project's Python (.venv, which has rayorch_cpp
and Ray 2.60), not the peers' one; `rayorch bench compare` picks it (--project-python).
"""

import common
import ray_module_stages

args = common.parse_args(__doc__)
clock = common.Clock()
docs, costs, topo = common.load_corpus(args.corpus)

import json  # noqa: E402

try:
    import ray  # noqa: E402

    import rayorch_cpp as ro  # noqa: E402
except ImportError as error:
    raise SystemExit(
        f"rayorch_ray_peer needs the project's Python with rayorch_cpp and ray ({error}); "
        "run scripts/python-env.sh and pass its .venv/bin/python (--project-python)"
    ) from None

# The untuned regime: every Module sizes itself within the cluster's CPUs (the executor's
# default budget on Ray), one call per actor at a time; the cluster has the budget's CPUs.
AUTO = bool(topo.get("auto_replicas", False))
BUDGET_CPUS = int(topo.get("budget_cpus", 0))
common.start_local_ray(topo, BUDGET_CPUS if AUTO and BUDGET_CPUS > 0 else None)

with open(args.corpus) as f:
    _corpus = json.load(f)
# This project's own batching of the source rows and OCR batch wait, as `bench
# compare-system` (the local executor) uses them.
INPUT_BATCH = int(_corpus.get("input_batch_size", 0)) or None
MAX_ACTIVE = int(_corpus.get("max_active_input_batches", 1))
OCR_BATCH_WAIT_S = float(topo.get("ocr_batch_wait_ms", 0)) / 1000.0
# Calls kept at each Ray actor (max_tasks_in_flight_per_actor) for every Module; 0: default.
IN_FLIGHT = int(topo.get("ray_tasks_in_flight", 0))
QUEUE = {"max_tasks_in_flight_per_actor": IN_FLIGHT} if IN_FLIGHT > 0 else {}
# Render, OCR and assemble in one co-located pool of the OCR stage's actor count (DESIGN 5.12):
# fewer actor processes for Ray to start, each holding the three stages.
COLOCATE = bool(topo.get("ray_colocate", False))


def sized(replicas):
    if AUTO:
        return {"replicas": "auto", "max_replicas": max(1, BUDGET_CPUS)}
    if COLOCATE:  # one pool: the members agree on its options
        together = {"colocate": "stages", "replicas": topo["ocr_replicas"], **QUEUE}
        return {**together, "batch_wait": OCR_BATCH_WAIT_S} if OCR_BATCH_WAIT_S > 0 else together
    return {"replicas": replicas, **QUEUE}


PAYLOAD = common.payload_bytes(args.corpus)
POISONED = common.poisoned_documents(docs)
Render, Ocr, Assemble = ray_module_stages.make_stages(
    ro, common.stage_seconds(costs), PAYLOAD, common.model_loader(args.corpus, args.events_dir)
)


class Documents(ro.Pipeline):
    def __init__(self):
        ocr_options = {**sized(topo["ocr_replicas"]), "batch_size": topo["ocr_batch"]}
        if OCR_BATCH_WAIT_S > 0 and not COLOCATE:
            ocr_options["batch_wait"] = OCR_BATCH_WAIT_S
        self.render = ro.RayModule(Render).ray_options(
            **sized(topo["render_replicas"]), batch_size=1
        )
        self.ocr = ro.RayModule(Ocr).pre_init(args.events_dir, POISONED).ray_options(**ocr_options)
        self.assemble = ro.RayModule(Assemble).ray_options(
            **sized(topo["assemble_replicas"]), batch_size=1
        )

    def forward(self, doc):
        return self.assemble(ro.F.reduce(self.ocr(ro.F.expand(self.render(doc)))), doc)


def calls_of(report_path):
    """Per Call of the run's JSON report: its busy seconds and the actors its pool held over
    the run (a self-sizing pool's targets, else its actors throughout), as `bench
    compare-system` writes them for the local executor."""
    with open(report_path) as f:
        report = json.load(f)
    held = {p["pool"]: p.get("actors_over_time") or [[0.0, p["actors"]]] for p in report["pools"]}
    return [
        {
            "call": c["call"],
            "busy_seconds": c["busy_seconds"],
            "run_seconds": report["elapsed_seconds"],
            "actors_over_time": held.get(c["udf"], [[0.0, c["actors"]]]),
            "resizes": next(
                (p.get("resizes", []) for p in report["pools"] if p["pool"] == c["udf"]), []
            ),
        }
        for c in report["calls"]
    ]


REPORT = args.out + ".report.json"
rows = [(d["id"], d["pages"]) for d in docs]
clock.begin()
# Builds every actor pool on the Ray initialised above: inside the clock.
executor = ro.Executor(Documents(), backend="ray")
documents = {}
for _, out in executor.stream(
    rows,
    input_batch_size=INPUT_BATCH,
    max_active_input_batches=MAX_ACTIVE,
    progress=False,
    report=REPORT,
):
    # A suppressed document (its page 0 failed) is an OutputIssue, not a (doc, values) pair.
    if isinstance(out, ro.OutputIssue):
        continue
    clock.document_done()
    documents[int(out[0])] = out[1]
    if PAYLOAD:
        common.check_document_payload(out[0], out[1], out[2], PAYLOAD)
executor.close()
common.write_result(
    args.out,
    "rayorch (on Ray)",
    f"this build, Ray {ray.__version__}",
    clock,
    documents,
    args.events_dir,
    calls=calls_of(REPORT),
)
ray.shutdown()
