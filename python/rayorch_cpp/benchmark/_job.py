"""``python -m rayorch_cpp.benchmark._job``: a submitted benchmark on the cluster (the
entrypoint submit_benchmark writes): its class built from the configuration and run on the
cluster the job runs on."""

from __future__ import annotations

import argparse
import base64
import importlib
import json


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m rayorch_cpp.benchmark._job")
    p.add_argument("--benchmark-class", required=True)
    p.add_argument("--config", required=True)
    p.add_argument("--run-id", required=True)
    p.add_argument("--profile", required=True, choices=("0", "1"))
    p.add_argument("--profile-interval-s", required=True, type=float)
    a = p.parse_args(argv)
    module, sep, attribute = a.benchmark_class.partition(":")
    if not sep or not module or not attribute:
        raise ValueError("benchmark class must use the 'module:attribute' form")
    cls = getattr(importlib.import_module(module), attribute)
    if not isinstance(cls, type):
        raise TypeError(f"{a.benchmark_class} is not a class")
    config = json.loads(base64.urlsafe_b64decode(a.config.encode()))
    report = cls(**config).run(
        ray_address="auto",
        run_id=a.run_id,
        profile=a.profile == "1",
        profile_interval_s=a.profile_interval_s,
    )
    report.print_summary()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
