"""The engine's progress on stderr as a user sees it (run(progress=True)): through a pipe (a
job's log) plain lines at an interval; on a terminal of 80 columns one line redrawn in place,
abbreviated to fit, with the bottleneck stage marked. The run happens in a child process
whose stderr is the pipe or the pseudo-terminal."""

from __future__ import annotations

import fcntl
import os
import re
import struct
import subprocess
import sys
import termios
from pathlib import Path

CHILD = r"""
import time

import rayorch_cpp as ro


class ParseDocumentRecords:
    def run(self, xs):
        return [x + 1 for x in xs]


class EmbedTextWithModel:  # the slow stage: it bounds the run
    def run(self, xs):
        time.sleep(0.03 * len(xs))
        return [x * 2 for x in xs]


parse = ro.RayModule(ParseDocumentRecords).ray_options(batch_size=4)
embed = ro.RayModule(EmbedTextWithModel).ray_options(batch_size=2, replicas=1)
ex = ro.Executor(lambda x: embed(parse(x)))
out = ex.run(list(range(40)), input_batch_size=8, progress_log_interval_s=0.25).outputs
assert out == [(x + 1) * 2 for x in range(40)], out
print("ok", flush=True)
"""
ROOTS = re.compile(r"roots (\d+)/40")


def run_child(tmp_path: Path, stderr: int) -> subprocess.Popen[bytes]:
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    return subprocess.Popen(
        [sys.executable, str(script)], stdout=subprocess.PIPE, stderr=stderr, cwd=tmp_path
    )


def test_a_log_gets_a_plain_line_per_interval_and_a_last_one(tmp_path: Path) -> None:
    child = run_child(tmp_path, subprocess.PIPE)
    stdout, stderr = child.communicate(timeout=120)
    assert child.returncode == 0 and stdout.decode().strip() == "ok", stderr.decode()
    lines = [line for line in stderr.decode().splitlines() if line.startswith("[rayorch] ")]
    assert len(lines) >= 2, stderr.decode()  # 40 x 30 ms of work, a line every 250 ms
    assert "\r" not in stderr.decode() and "\033" not in stderr.decode()
    done = [int(ROOTS.search(line).group(1)) for line in lines]  # type: ignore[union-attr]
    assert done == sorted(done) and done[-1] == 40, lines
    # Each line: the run time, the roots, the rate; the last says it is the last.
    assert all(
        re.match(r"\[rayorch\] \d+:\d\d roots \d+/40 \(\d+%\) [\d.]+ roots/s", x) for x in lines
    )
    assert lines[-1].endswith("(done)") and "ETA" not in lines[-1]
    assert "ETA" in lines[0] or done[0] == 40
    # Both stages, in plan order, the slow one marked as the bottleneck.
    last = lines[-1]
    assert re.search(r"\| ParseDocumentRecords#0 done 40 queued 0 in-flight 0 busy \d+%", last)
    assert re.search(r"\| \*EmbedTextWithModel#1 done 40 queued 0 in-flight 0 busy \d+%", last)


def test_a_terminal_of_80_columns_gets_one_line_redrawn_to_fit(tmp_path: Path) -> None:
    master, terminal = os.openpty()
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    try:
        child = run_child(tmp_path, terminal)
    finally:
        os.close(terminal)
    shown = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        shown += chunk
    os.close(master)
    stdout, _ = child.communicate(timeout=120)
    text = shown.decode()
    assert child.returncode == 0 and stdout.decode().strip() == "ok", text
    draws = [d for d in text.split("\r\033[K") if d]
    assert len(draws) >= 2, text
    assert not re.search(r"\[rayorch\] \d+:\d\d", text)  # no log lines on a terminal
    for draw in draws:
        line = draw.rstrip("\r\n")
        assert line.startswith("[rayorch] roots "), draw
        assert len(line) <= 79, line  # never wraps: one column short of the width
        assert "..." not in line, line  # abbreviated, not cut
    last = draws[-1]
    assert last.endswith("\n") and "roots 40/40" in last
    assert "*EmbedTe" in last, last  # the bottleneck stays, its name cut to fit
