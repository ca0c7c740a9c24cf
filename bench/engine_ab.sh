#!/usr/bin/env bash
# Interleaved `rayorch bench engine` of two binaries, in both orders, and the medians of the
# pair ratios after/before (with quartiles) that BENCHMARKS.md's engine entries report.
#
#   bash bench/engine_ab.sh BEFORE AFTER [ROUNDS] [OUT_DIR]
#
# ROUNDS (default 15) pairs are run before-first, then ROUNDS after-first; each run's
# `--json` object is kept in OUT_DIR (default: a new temporary directory).
set -euo pipefail
if [[ $# -lt 2 ]]; then
  echo "usage: bash bench/engine_ab.sh BEFORE AFTER [ROUNDS] [OUT_DIR]" >&2
  exit 2
fi
before=$1 after=$2 rounds=${3:-15} out=${4:-$(mktemp -d)}
for binary in "$before" "$after"; do
  [[ -x $binary ]] || { echo "engine_ab: $binary is not an executable" >&2; exit 2; }
done
mkdir -p "$out"
for order in before-first after-first; do
  for i in $(seq "$rounds"); do
    if [[ $order == before-first ]]; then first=$before second=$after; else first=$after second=$before; fi
    "$first" bench engine --json >"$out/$order-$i-1.json" 2>/dev/null
    "$second" bench engine --json >"$out/$order-$i-2.json" 2>/dev/null
  done
done
python3 - "$out" "$rounds" <<'PY'
import json
import statistics as st
import sys

out, rounds = sys.argv[1], int(sys.argv[2])
names = ("runtime alone, Grains per CPU-second", "local executor, Grains/s",
         "local executor, Grains per CPU-second", "B per live Grain")


def figures(path):
    j = json.load(open(path))
    return (j["runtime"]["grains_per_cpu_second"], j["local"]["grains_per_second"],
            j["local"]["grains_per_cpu_second"], j["runtime"]["bytes_per_live_grain"])


for order in ("before-first", "after-first"):
    print(order)
    ratios = [[] for _ in names]
    values = [([], []) for _ in names]
    for i in range(1, rounds + 1):
        x, y = figures(f"{out}/{order}-{i}-1.json"), figures(f"{out}/{order}-{i}-2.json")
        before, after = (x, y) if order == "before-first" else (y, x)
        for k in range(len(names)):
            ratios[k].append(after[k] / before[k])
            values[k][0].append(before[k])
            values[k][1].append(after[k])
    for k, name in enumerate(names):
        q = st.quantiles(ratios[k], n=4) if rounds > 1 else [ratios[k][0]] * 3
        print(f"  {name}: before {st.median(values[k][0]):,.2f}, after "
              f"{st.median(values[k][1]):,.2f}, after/before {st.median(ratios[k]):.3f}x "
              f"[{q[0]:.3f}-{q[2]:.3f}]")
PY
