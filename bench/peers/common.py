"""Shared helpers of the peer baselines: the corpus file, the simulated costs, the result file.

The corpus is written by `rayorch bench compare` (so every system sees the same documents);
each peer writes one JSON result with its timings and every document's ordered page values.
"""

import argparse
import json
import os
import socket
import time


def parse_args(description):
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--corpus", required=True, help="corpus JSON written by rayorch bench")
    parser.add_argument("--out", required=True, help="where to write the result JSON")
    return parser.parse_args()


def load_corpus(path):
    with open(path) as f:
        corpus = json.load(f)
    return corpus["documents"], corpus["costs_ms"], corpus["topology"]


def require_loopback_only():
    """Refuses to go on unless this process is in a network namespace whose only interface is
    loopback (`unshare --net` plus `ip link set lo up`), so that Ray cannot bind an external
    address. Call it before starting Ray."""
    interfaces = sorted(name for _, name in socket.if_nameindex())
    if interfaces != ["lo"]:
        raise SystemExit(
            f"refusing to start Ray with network interfaces {interfaces}: run this in a private "
            "network namespace with only loopback (as root: unshare --net sh -c "
            "'ip link set lo up && exec ...')"
        )


def require_ray_on_loopback(ray):
    """After ray.init: every node of the cluster must be on 127.0.0.1."""
    addresses = sorted({node["NodeManagerAddress"] for node in ray.nodes()})
    if addresses != ["127.0.0.1"]:
        raise SystemExit(f"a Ray node is not on loopback: {addresses}")


def sleep_ms(ms):
    if ms > 0:
        time.sleep(ms / 1000.0)


def page_value(doc, page):
    # Same value as bench/workload.h page_value().
    return int(doc) * 1000000 + int(page)


class Clock:
    """Wall-clock marks relative to the start of the pipeline (after runtime start-up)."""

    def __init__(self):
        self.process_start = time.perf_counter()
        self.start = None
        self.first = None

    def begin(self):
        self.start = time.perf_counter()

    def document_done(self):
        if self.first is None:
            self.first = time.perf_counter()

    def elapsed(self, mark):
        return mark - self.start


def write_result(path, system, version, clock, documents):
    end = time.perf_counter()
    result = {
        "system": system,
        "version": version,
        "startup_seconds": clock.start - clock.process_start,
        "end_to_end_seconds": end - clock.start,
        "first_document_seconds": clock.elapsed(clock.first) if clock.first else None,
        "documents": {str(int(k)): [int(x) for x in v] for k, v in documents.items()},
    }
    with open(path + ".tmp", "w") as f:
        json.dump(result, f)
    os.replace(path + ".tmp", path)
    print(
        f"{system}: {len(documents)} documents in {result['end_to_end_seconds']:.3f} s, "
        f"first after {result['first_document_seconds']:.3f} s"
    )
