"""Jobs sent to a Ray job server (docs/JOBS.md) and drivers joining a cluster (docs/RAY.md),
run only through test_job_server.py: inside a private network and PID namespace with only
loopback, a cluster is started as users start one (``ray start --head`` with its dashboard,
which serves jobs, and token authentication on), and the package's ``submit``, ``status``,
``logs`` and ``stop`` talk to it. The job's working folder is a project made here, with a .git
and a virtual environment that must not be shipped."""

from __future__ import annotations

import io
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import zipfile
from collections.abc import Iterator
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from rayorch_cpp.__main__ import main
from rayorch_cpp.io import read_manifest
from rayorch_cpp.jobs._job_client import connect

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

SLOW = """
import time
import rayorch_cpp as ro

class Slow:
    def run(self, xs):
        time.sleep(2.0)
        return xs

class SlowJob(ro.Pipeline):
    def __init__(self) -> None:
        self.slow = ro.Module(Slow, num_cpus=0.5)

    def forward(self, id):
        return self.slow(id)
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def assert_loopback_only() -> None:
    interfaces = sorted(name for _, name in socket.if_nameindex())
    assert interfaces == ["lo"], f"run through test_job_server.py (interfaces: {interfaces})"


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A cluster as `ray start --head` makes it, its job server's address; stopped after."""
    assert_loopback_only()
    home = tmp_path_factory.mktemp("home")
    os.environ["HOME"] = str(home)  # its token goes to ~/.ray/auth_token, here
    gcs, dashboard = free_port(), free_port()
    ray = shutil.which("ray", path=os.path.dirname(sys.executable))
    assert ray is not None
    # As a user starts it: from the environment rayorch-cpp is installed in (the job's
    # `python` is the cluster's).
    os.environ["PATH"] = os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"]
    # With token authentication on, as a cluster that asks drivers and clients for its token.
    subprocess.run(
        [ray, "get-auth-token", "--generate"], capture_output=True, timeout=60, check=True
    )
    started = subprocess.run(
        [
            ray,
            "start",
            "--head",
            "--node-ip-address",
            "127.0.0.1",
            "--port",
            str(gcs),
            "--dashboard-host",
            "127.0.0.1",
            "--dashboard-port",
            str(dashboard),
            "--include-dashboard",
            "true",
            "--num-cpus",
            "2",  # smaller than the Modules' defaults ask for: they share it (docs/RAY.md)
            "--disable-usage-stats",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "RAY_AUTH_MODE": "token"},
    )
    assert started.returncode == 0, started.stdout[-3000:] + started.stderr[-3000:]
    os.environ["RAYORCH_TEST_GCS"] = f"127.0.0.1:{gcs}"
    address = f"http://127.0.0.1:{dashboard}"
    try:
        client = connect(address)  # with the token `ray start --head` left in ~/.ray
        nodes = client._do_request("GET", "/api/v0/nodes?detail=1").json()["data"]["result"]
        assert {n["node_ip"] for n in nodes["result"]} == {"127.0.0.1"}, nodes
        yield address
    finally:
        subprocess.run([ray, "stop", "--force"], capture_output=True, timeout=120)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A user's project folder, the working folder of the jobs: the pipeline, a manifest, a
    .git, a virtual environment and a build folder."""
    root = tmp_path / "project"
    root.mkdir()
    shutil.copy(EXAMPLES / "job_chunks.py", root / "job_chunks.py")
    (root / "slow_job.py").write_text(SLOW)
    with (root / "docs.jsonl").open("w") as f:
        for i in range(20):
            f.write(json.dumps({"id": f"doc{i}", "text": " ".join(["word"] * (i * 3))}) + "\n")
    (root / ".git" / "objects").mkdir(parents=True)
    (root / ".git" / "objects" / "pack").write_bytes(b"x" * 4096)
    (root / ".venv" / "lib").mkdir(parents=True)
    (root / ".venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (root / "env2" / "lib").mkdir(parents=True)  # a virtual environment by another name
    (root / "env2" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (root / "build").mkdir()
    (root / "build" / "big.o").write_bytes(b"o" * 4096)
    monkeypatch.chdir(root)
    return root


def command(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


def chunks_job(server: str, out: Path, *extra: str) -> tuple[int, str, str]:
    return command(
        "submit",
        "job_chunks:Chunks",
        "--input",
        "docs.jsonl",
        "-o",
        str(out),
        "--address",
        server,
        "--set",
        "count.num_cpus=0.5",
        *extra,
    )


def test_a_submitted_job_runs_and_its_logs_and_outputs_are_there(
    server: str, project: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    code, stdout, stderr = chunks_job(server, out, "--wait", "--timeout", "240")
    assert code == 0, stderr[-4000:]
    job = stdout.split()[0]
    assert job.startswith("raysubmit_")
    lines = [
        line for name in read_manifest(out).parts for line in (out / name).read_text().splitlines()
    ]
    assert sorted(json.loads(line)["id"] for line in lines) == sorted(f"doc{i}" for i in range(20))
    summary = json.loads((out / "_run" / "summary.json").read_text())
    assert (summary["written"], summary["exit_code"]) == (20, 0)
    assert json.loads((out / "_run" / "config.json").read_text())["backend"]["name"] == "ray"
    code, logs, _ = command("logs", job, "--address", server)
    assert code == 0 and "20 rows in" in logs and "20 written to" in logs
    # split and gather set no num_cpus: on this 2-CPU cluster they share what count's two
    # actors (0.5 CPU each, set) leave, said once.
    assert logs.count("rayorch: the Ray cluster has 2 CPUs;") == 1, logs[-3000:]
    assert "each of their actors gets num_cpus=0.5" in logs, logs[-3000:]
    code, status, _ = command("status", job, "--address", server)
    assert code == 0 and "SUCCEEDED" in status and "succeeded: 20 written" in status


def uploaded_package(server: str, job: str) -> list[str]:
    """The names in the package the job server stored for the job's working folder."""
    import ray
    from ray.experimental.internal_kv import _internal_kv_get
    from ray.job_submission import JobSubmissionClient

    uri = JobSubmissionClient(server).get_job_info(job).runtime_env["working_dir"]
    ray.init(address=os.environ["RAYORCH_TEST_GCS"], logging_level="ERROR", log_to_driver=False)
    try:
        data = _internal_kv_get(uri)
    finally:
        ray.shutdown()
    assert data, f"no package stored under {uri}"
    return zipfile.ZipFile(io.BytesIO(data)).namelist()


def test_the_upload_leaves_out_git_virtual_environments_and_builds(
    server: str, project: Path, tmp_path: Path
) -> None:
    code, stdout, stderr = chunks_job(server, tmp_path / "out", "--wait", "--timeout", "240")
    assert code == 0, stderr[-4000:]
    names = uploaded_package(server, stdout.split()[0])
    assert "job_chunks.py" in names and "docs.jsonl" in names
    shipped_tops = {n.split("/")[0] for n in names}
    assert not shipped_tops & {".git", ".venv", "env2", "build"}, sorted(names)


def job_actors(server: str, job: str) -> list[tuple[str, str]]:
    """(class, state) of the actors the job's driver made."""
    from ray.job_submission import JobSubmissionClient

    client = JobSubmissionClient(server)
    driver = client.get_job_info(job).job_id
    response = client._do_request("GET", "/api/v0/actors?detail=1&limit=10000")
    actors = response.json()["data"]["result"]["result"]
    return [(a["class_name"], a["state"]) for a in actors if driver and a["job_id"] == driver]


def test_stop_ends_a_running_job_and_leaves_no_actor(
    server: str, project: Path, tmp_path: Path
) -> None:
    code, stdout, stderr = command(
        "submit",
        "slow_job:SlowJob",
        "--input",
        "docs.jsonl",
        "-o",
        str(tmp_path / "slow"),
        "--address",
        server,
        "--set",
        "run.input_batch_size=1",
    )
    assert code == 0, stderr
    job = stdout.split()[0]
    deadline = time.monotonic() + 120
    while not any(state == "ALIVE" for _, state in job_actors(server, job)):
        assert time.monotonic() < deadline, command("logs", job, "--address", server)[1][-3000:]
        time.sleep(0.5)
    code, stdout, stderr = command("stop", job, "--address", server)
    assert code == 0 and "STOPPED" in stdout, stdout + stderr
    deadline = time.monotonic() + 60
    while any(state != "DEAD" for _, state in job_actors(server, job)):
        assert time.monotonic() < deadline, f"actors left behind: {job_actors(server, job)}"
        time.sleep(0.5)


def test_a_job_waiting_for_a_missing_resource_is_reported_and_stopped(
    server: str, project: Path, tmp_path: Path
) -> None:
    code, _, stderr = chunks_job(
        server,
        tmp_path / "out",
        "--set",
        'count.resources={"tpu_v9": 1}',
        "--wait",
        "--timeout",
        "25",
        "--pending-after",
        "3",
    )
    assert code == 3, stderr[-3000:]
    assert "waits for resources no node has: tpu_v9 1 (the most a node has: 0)" in stderr, stderr
    assert "stopped it" in stderr
    code, _, stderr = chunks_job(
        server,
        tmp_path / "out2",
        "--entrypoint-resources",
        '{"head_slot": 1}',
        "--wait",
        "--timeout",
        "15",
        "--pending-after",
        "2",
    )
    assert code == 3, stderr[-3000:]
    assert "the job's entrypoint waits for resources no node has: head_slot 1" in stderr, stderr


def test_a_bad_configuration_is_refused_before_anything_is_submitted(
    server: str, project: Path, tmp_path: Path
) -> None:
    from ray.job_submission import JobSubmissionClient

    before = len(JobSubmissionClient(server).list_jobs())
    code, _, stderr = chunks_job(server, tmp_path / "out", "--set", "count.replica=2")
    assert code == 2 and "stages.count.replica: no such stage option" in stderr, stderr
    assert len(JobSubmissionClient(server).list_jobs()) == before


def test_a_benchmark_submitted_as_the_reference_submits_one_runs_on_the_cluster(
    server: str, project: Path, tmp_path: Path
) -> None:
    from rayorch_cpp.benchmark import DocumentTopologyBench

    # One actor per stage: its five stages ask for 0.25 CPU each, explicitly.
    bench = DocumentTopologyBench(output_dir=tmp_path / "bench", document_count=6, workers=1)
    run = bench.submit(server, profile=False, run_id="on-ray")
    report = run.wait(timeout_s=240, poll_interval_s=0.5)
    assert [o["document"] for o in report.outputs] == list(range(6))
    assert (report.metrics["pages"], report.metrics["tables"]) == (18, 36)
    assert report.metrics["backend"] == "ray"  # the job ran it on the cluster's actors
    assert run.report_path == tmp_path / "bench" / ".rayorch-benchmark" / "on-ray" / "summary.json"
    assert "SUCCEEDED" in run.status()


DRIVER = """
import ray
import rayorch_cpp as ro

class Doubled(ro.Pipeline):
    def __init__(self):
        self.double = ro.function(lambda xs: [2 * x for x in xs])

    def forward(self, x):
        return self.double(x)

with ro.Executor(Doubled(), backend="ray", address=ADDRESS) as ex:
    print(ex.run([1, 2, 3], progress=False).outputs)
    # This driver too sees only loopback nodes.
    assert {n["NodeManagerAddress"] for n in ray.nodes()} == {"127.0.0.1"}, ray.nodes()
print(ray.get_runtime_context().gcs_address)
"""


def driver(address: str | None, **env: str) -> subprocess.CompletedProcess[str]:
    """A driver process of its own, as a user starts one: no RAY_AUTH_MODE set."""
    environment = {k: v for k, v in os.environ.items() if k not in ("RAY_AUTH_MODE", "RAY_ADDRESS")}
    environment.update(env)
    code = DRIVER.replace("ADDRESS", repr(address))
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=environment, timeout=180
    )


def test_a_cluster_from_ray_start_is_joined_by_address_with_its_token(server: str) -> None:
    gcs = os.environ["RAYORCH_TEST_GCS"]
    for address, env in ((gcs, {}), (None, {"RAY_ADDRESS": gcs}), ("auto", {"RAY_ADDRESS": gcs})):
        done = driver(address, **env)
        assert done.returncode == 0, done.stderr[-3000:]
        lines = done.stdout.splitlines()  # workers' log lines may come between
        assert "[2, 4, 6]" in lines and gcs in lines, (address, env, done.stdout)


def test_a_driver_without_the_clusters_token_is_told_what_to_do(
    server: str, tmp_path: Path
) -> None:
    done = driver(os.environ["RAYORCH_TEST_GCS"], HOME=str(tmp_path))  # no ~/.ray/auth_token
    assert done.returncode != 0
    message = done.stderr[done.stderr.find("ExecutionError") :]
    assert "could not join the Ray cluster at '127.0.0.1:" in message, done.stderr[-3000:]
    assert "this driver has no token at hand" in message
    assert "set RAY_AUTH_TOKEN to it" in message


def test_the_ocr_commands_defaults_run_on_a_cluster_of_two_cpus(
    server: str, tmp_path: Path
) -> None:
    pytest.importorskip("rapidocr_onnxruntime")
    from rayorch_cpp.workloads.ocr_pdf import samples

    [document] = samples.make_corpus(tmp_path / "in", 1, seed=3, max_pages=2)
    environment = {k: v for k, v in os.environ.items() if k not in ("RAY_AUTH_MODE", "RAY_ADDRESS")}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "rayorch_cpp.workloads.ocr_pdf",
            str(tmp_path / "in"),
            "-o",
            str(tmp_path / "out"),
            "--backend",
            "ray",
            "--address",
            os.environ["RAYORCH_TEST_GCS"],
            "--no-progress",
        ],
        capture_output=True,
        text=True,
        env=environment,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    # The defaults (an actor of recognize per CPU: 4.25 CPUs) scaled to the cluster's 2.
    assert "ocr_pdf: the Ray cluster has 2 CPUs; the stages' defaults asked for 4.25" in done.stderr
    markdown = (tmp_path / "out" / f"{document.stem}.md").read_text()
    assert f"complete, {len(document.pages)} pages" in markdown
