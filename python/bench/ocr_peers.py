"""The OCR workload (rayorch_cpp.workloads.ocr_pdf) on every system in one sitting: the peers
(Ray Data's groupby and driver-regroup arms, Daft on its Ray runner, the reference `rayorch`
0.1.1; bench/peers/ocr_*_peer.py) and this project (on Ray, and locally as a deployment
difference), each on the same corpus, the same model code (the project's stage classes) and
the same resources, each on a new local Ray inside one loopback-only network namespace.

    .venv/bin/python python/bench/ocr_peers.py [--docs 40 --max-pages 80 --seed 24]
        [--arms ray:groupby,ray:driver,daft,reference,rayorch-ray,local]

Needs .venv (scripts/python-env.sh) and .venv-peers (bench/peers/setup.sh). The peers run in
.venv-peers, which has the peer engines and the OCR stack but not this project; the project's
installed package (the very build the project's arms run) is linked into a directory of the
work dir that goes on the peers' PYTHONPATH, together with bench/peers (and
python/bench/loopback_ray.py, whose object-store count every arm prints); nothing else of .venv
leaks into the peers (a second build of the package into .venv-peers would cost a C++ build
and could differ from the one measured).

Each arm runs alone, one after the other. Printed per arm: E2E (from before any actor is
built to the last document, so model loading is included for every system), pages/s over it,
time to the first finished document, recognition batch fill (lines per recognition call over
the batch size), the peak RSS of the arm's whole process tree (driver, Ray's processes and
workers; sampled every 0.2 s), the bytes created in Ray's object store per page (every
raylet's cumulative count when the arm ends; values under Ray's 100 kB inline limit are not in
it), the CPU seconds of the stages for this project's arms (the actors' on Ray, the process's
locally, over the run), and word recall against the text drawn on the pages. Then the ratios
the co-location issue's acceptance reads: this project on Ray against its local run, Ray
Data's best arm and the reference."""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

from loopback_ray import ensure_private_network
from ocr_pdf import corpus, descendants, rss_mib

import rayorch_cpp
from rayorch_cpp.workloads.ocr_pdf import PipelineConfig, recall, samples

ROOT = Path(__file__).resolve().parents[2]
PEERS = ROOT / "bench" / "peers"
# arm -> (peer script in bench/peers, its --arm) for the peers; the project's arms run
# python/bench/ocr_pdf.py.
PEER_ARMS = {
    "ray:groupby": ("ocr_ray_data_peer.py", "groupby"),
    "ray:driver": ("ocr_ray_data_peer.py", "driver"),
    "daft": ("ocr_daft_peer.py", "default"),
    "reference": ("ocr_reference_peer.py", "default"),
}
PROJECT_ARMS = {
    "rayorch-ray": ["--backend", "ray"],
    "local": ["--backend", "local"],
    "local-process": ["--backend", "local", "--isolation", "process"],
}
ARMS = (*PEER_ARMS, *PROJECT_ARMS)


def tree_rss_mib(root: int) -> float:
    """The resident memory of process `root` and all its descendants now."""
    return rss_mib([root, *descendants(root)])


def run_sampled(command: list[str], env: dict[str, str], timeout: float) -> tuple[int, float]:
    """Runs `command`, sampling its process tree's RSS; (exit status, peak RSS MiB)."""
    process = subprocess.Popen(command, env=env)
    peak = 0.0
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not done.wait(0.2):
            peak = max(peak, tree_rss_mib(process.pid))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        status = process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        status = process.wait()
    done.set()
    sampler.join()
    return status, peak


def corpus_recall(documents: list[samples.SampleDocument], outputs: dict[str, str]) -> float:
    found = expected = 0
    for document in documents:
        hit, total = recall.word_recall(document.text, outputs.get(document.path, ""))
        found, expected = found + hit, expected + total
    return found / expected if expected else float("nan")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--arms", default=",".join(ARMS), help=f"comma-separated, of {', '.join(ARMS)}")
    p.add_argument("--docs", type=int, default=40)
    p.add_argument("--max-pages", type=int, default=80)
    p.add_argument("--seed", type=int, default=24)
    p.add_argument("--work-dir", type=Path, default=None)
    p.add_argument("--detect-replicas", type=int, default=1)
    p.add_argument("--recognize-replicas", type=int, default=2)
    p.add_argument("--recognize-batch", type=int, default=32)
    p.add_argument("--peers-python", type=Path, default=ROOT / ".venv-peers" / "bin" / "python")
    p.add_argument("--timeout", type=float, default=1800.0, help="seconds per arm")
    a = p.parse_args()
    arms = [arm.strip() for arm in a.arms.split(",") if arm.strip()]
    unknown = [arm for arm in arms if arm not in ARMS]
    if unknown:
        raise SystemExit(f"unknown arm(s) {', '.join(unknown)}: choose among {', '.join(ARMS)}")
    if any(arm in PEER_ARMS for arm in arms) and not a.peers_python.is_file():
        raise SystemExit(f"{a.peers_python} is missing: run bash bench/peers/setup.sh first")
    ensure_private_network(__file__)  # re-executes this script there (as root)

    work = a.work_dir or Path(f"/tmp/ocr-pdf-bench-{a.docs}-{a.seed}-{a.max_pages}")
    documents = corpus(work, a.docs, a.seed, a.max_pages)
    pages = sum(len(d.pages) for d in documents)
    cores = os.cpu_count() or 1
    # The logical CPUs of every Ray: as python/bench/ocr_pdf.py gives the project's own.
    c = PipelineConfig()
    asked = sum(st.replicas * st.num_cpus for st in (c.open, c.render, c.join, c.assemble))
    asked += a.detect_replicas + a.recognize_replicas
    ray_cpus = max(cores, math.ceil(asked))
    print(
        f"corpus: {len(documents)} documents, {pages} pages in {work}; {cores} cores, Ray with "
        f"{ray_cpus} logical CPUs; detect {a.detect_replicas} x 1 CPU, recognize "
        f"{a.recognize_replicas} x 1 CPU batch {a.recognize_batch}; load average "
        f"{os.getloadavg()[0]:.1f}",
        flush=True,
    )
    scratch = Path(tempfile.mkdtemp(prefix="ocr-peers-"))
    path_dir = scratch / "pythonpath"
    path_dir.mkdir()
    (path_dir / "rayorch_cpp").symlink_to(Path(rayorch_cpp.__file__).resolve().parent)
    # The object store's count (loopback_ray.store_created_bytes), one copy for every arm.
    (path_dir / "loopback_ray.py").symlink_to(Path(__file__).resolve().parent / "loopback_ray.py")
    rows: list[tuple[str, dict[str, Any] | None, float]] = []
    for arm in arms:
        out = scratch / f"{arm.replace(':', '-')}.json"
        events = scratch / f"{arm.replace(':', '-')}-events"
        events.mkdir()
        env = dict(os.environ)
        shared = [
            "--detect-replicas",
            str(a.detect_replicas),
            "--recognize-replicas",
            str(a.recognize_replicas),
            "--recognize-batch",
            str(a.recognize_batch),
        ]
        if arm in PEER_ARMS:
            script, peer_arm = PEER_ARMS[arm]
            env["PYTHONPATH"] = f"{path_dir}:{PEERS}"
            command = [str(a.peers_python), str(PEERS / script), "--arm", peer_arm]
            command += ["--corpus", str(work), "--out", str(out), "--events-dir", str(events)]
            command += ["--ray-cpus", str(ray_cpus), *shared]
        else:
            command = [sys.executable, str(Path(__file__).with_name("ocr_pdf.py"))]
            command += [*PROJECT_ARMS[arm], "--work-dir", str(work), "--json", str(out), *shared]
        print(f"--- {arm}: {' '.join(command)}", flush=True)
        status, peak = run_sampled(command, env, a.timeout)
        result = json.loads(out.read_text()) if status == 0 and out.is_file() else None
        if result is None:
            print(f"--- {arm} failed (exit status {status})", flush=True)
        rows.append((arm, result, peak))
    print_table(rows, documents, pages, a.recognize_batch)


def print_table(
    rows: list[tuple[str, dict[str, Any] | None, float]],
    documents: list[samples.SampleDocument],
    pages: int,
    batch: int,
) -> None:
    print(
        f"\n{'arm':<14} {'system':<34} {'E2E s':>7} {'pages/s':>8} {'first s':>8} "
        f"{'fill':>5} {'RSS MiB':>8} {'store MiB/page':>14} {'stage CPU s':>11} {'recall':>7}"
    )
    for arm, result, peak in rows:
        if result is None:
            print(f"{arm:<14} failed")
            continue
        if "recognize_fill" in result:
            fill = float(result["recognize_fill"])
        else:
            calls = result["recognize_calls"]
            fill = sum(calls) / len(calls) / batch if calls else float("nan")
        e2e = float(result["end_to_end_seconds"])
        first = result["first_document_seconds"]
        store = result.get("store_created_bytes")
        per_page = f"{store / pages / (1 << 20):14.2f}" if store is not None else f"{'-':>14}"
        cpu = result.get("stage_cpu_seconds")
        stage_cpu = f"{float(cpu):11.1f}" if cpu is not None else f"{'-':>11}"
        print(
            f"{arm:<14} {result['system']:<34} {e2e:7.2f} {pages / e2e:8.2f} "
            f"{float(first) if first is not None else float('nan'):8.2f} {fill:5.2f} "
            f"{peak:8.0f} {per_page} {stage_cpu} "
            f"{corpus_recall(documents, result['documents']):7.4f}"
        )
    print_ratios({arm: result for arm, result, _ in rows if result is not None})


def print_ratios(results: dict[str, dict[str, Any]]) -> None:
    """This project on Ray against its local run (E2E and the stages' CPU), Ray Data's best
    arm and the reference, for the arms that ran."""
    ours = results.get("rayorch-ray")
    if ours is None:
        return
    e2e = float(ours["end_to_end_seconds"])
    against: list[str] = []
    local = results.get("local") or results.get("local-process")
    if local is not None:
        against.append(f"{e2e / float(local['end_to_end_seconds']):.3f}x its local run's E2E")
        if ours.get("stage_cpu_seconds") and local.get("stage_cpu_seconds"):
            ratio = float(ours["stage_cpu_seconds"]) / float(local["stage_cpu_seconds"])
            against.append(f"{ratio:.3f}x its local run's stage CPU")
    ray_data = [float(r["end_to_end_seconds"]) for a, r in results.items() if a.startswith("ray:")]
    if ray_data:
        against.append(f"{e2e / min(ray_data):.3f}x Ray Data's best arm")
    if "reference" in results:
        reference = float(results["reference"]["end_to_end_seconds"])
        against.append(f"{e2e / reference:.3f}x the reference")
    if against:
        print("this project on Ray: " + ", ".join(against))


if __name__ == "__main__":
    main()
