"""Benchmark: the bundled exam on a two-node Ray cluster on this machine, next to the local executor.

A head and a worker node (``ray start --head`` + ``ray start --address``, one CPU each, token authentication;
:class:`ragexam.exec.cluster.LocalCluster`) are started; then, from an empty retrieval cache each time, the
same command runs with ``--executor local`` and with ``--executor ray://HEAD:PORT`` (Ray Client), in
alternating order, ``--rounds`` times: ``ragexam run --corpus it_helpdesk --qa it_helpdesk -r bm25 -r dense -r
hybrid:bm25+dense`` (tokenizing and embedding on the executor).  Printed per run: wall seconds of the whole
command, the stage seconds, where the batches ran (``timing.placement``: nodes, actors, batches, items per
stage) and whether every metric equals the local run's.  With ``--kill`` a last Ray run has the worker node
SIGKILLed as soon as the run has started embedding; it prints what the run survived (retried batches, lost
workers) or the error it stopped with.

Both nodes share this machine's cores, so the cluster cannot be faster than the local executor here: the
numbers show what Ray adds (connecting, starting actors and loading a model in each, shipping batches),
which a real cluster pays once per run and wins back when its nodes have cores of their own.

    python benchmarks/bench_ray_cluster.py [--rounds 3] [--kill] [--qa it_helpdesk]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _bench import cold_cache, compile_ragexam, e5_artifacts, load_now, machine_line  # noqa: E402

VOLATILE = ("run_id", "created", "timing")


def _cmd(data: str, out: Path, executor: str) -> list:
    return [sys.executable, "-m", "ragexam.cli", "run", "--corpus", data, "--qa", data, "-r", "bm25", "-r", "dense",
            "-r", "hybrid:bm25+dense", "--no-history", "--out", str(out), "--executor", executor]


def _stable(summary: dict) -> dict:
    out = {k: v for k, v in summary.items() if k not in VOLATILE}
    out["config"] = {k: v for k, v in out["config"].items() if k != "executor"}
    return out


def _run(data: str, executor: str, env: dict, out: Path, kill=None) -> dict:
    cache = cold_cache("ragexam-ray-bench-")
    try:
        w0 = time.perf_counter()
        proc = subprocess.Popen(_cmd(data, out, executor), env={**env, "RAGEXAM_CACHE_DIR": cache},
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if kill is not None:
            kill()
        stdout, stderr = proc.communicate()
        wall = time.perf_counter() - w0
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    if proc.returncode != 0:
        return {"wall": wall, "error": (stderr.strip().splitlines() or ["?"])[-1]}
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    shutil.rmtree(out, ignore_errors=True)
    return {"wall": wall, "summary": summary}


def _placement(summary: dict) -> str:
    p = summary["timing"].get("placement")
    if not p:
        return "no placement (local executor)"
    stages = "; ".join(f"{s}: " + ", ".join(f"{n} {c.get('actors', 0)} actors {c.get('batches', 0)} batches "
                                              f"{c.get('items', 0)} items" for n, c in nodes.items())
                       for s, nodes in p["stages"].items())
    return f"{len(p['nodes'])} nodes; {stages}; retried {p['retried_batches']}, lost workers {p['lost_workers']}"


def main() -> int:
    from ragexam.exec.cluster import LocalCluster

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--qa", default="it_helpdesk", help="a bundled set (corpus and questions)")
    ap.add_argument("--kill", action="store_true", help="also a run that loses the worker node while embedding")
    args = ap.parse_args()
    print(machine_line())
    print(compile_ragexam())
    print(e5_artifacts())
    root = Path(tempfile.mkdtemp(prefix="ragexam-ray-bench-"))
    t0 = time.perf_counter()
    cluster = LocalCluster(cpus=(1, 1)).start()
    print(f"cluster: head + 1 worker node, 1 CPU each, started in {time.perf_counter() - t0:.1f} s "
          f"({cluster.client_address})")
    walls: dict = {"local": [], "ray": []}
    try:
        local_ref = None
        for r in range(args.rounds):
            for name in (("local", "ray") if r % 2 == 0 else ("ray", "local")):
                ex = "local" if name == "local" else cluster.client_address
                res = _run(args.qa, ex, cluster.env, root / f"out-{name}")
                if "error" in res:
                    print(f"{r + 1} {name:<6} failed after {res['wall']:.1f} s: {res['error']}")
                    continue
                s = res["summary"]
                local_ref = _stable(s) if name == "local" and local_ref is None else local_ref
                same = "" if local_ref is None else f", metrics equal to local: {_stable(s) == local_ref}"
                stages = " ".join(f"{k} {v:.1f}" for k, v in s["timing"]["stages"].items() if v >= 0.05)
                walls[name].append(res["wall"])
                print(f"{r + 1} {name:<6}{res['wall']:>7.1f} s  {stages}{same}; load {os.getloadavg()[0]:.2f}\n"
                      f"          {_placement(s)}", flush=True)
        if args.kill:
            def kill_soon():
                time.sleep(8)  # connected, actors starting or embedding
                cluster.kill_node(1)

            import threading

            threading.Thread(target=kill_soon, daemon=True).start()
            res = _run(args.qa, cluster.client_address, cluster.env, root / "out-kill")
            if "error" in res:
                print(f"worker node killed 8 s into the run: stopped after {res['wall']:.1f} s with: {res['error']}")
            else:
                s = res["summary"]
                print(f"worker node killed 8 s into the run: finished in {res['wall']:.1f} s, metrics equal to local: "
                      f"{_stable(s) == local_ref}\n          {_placement(s)}")
    finally:
        cluster.stop()
        shutil.rmtree(root, ignore_errors=True)
    for name, w in walls.items():
        if w:
            print(f"{name}: median {statistics.median(w):.1f} s over {len(w)} runs ({min(w):.1f}-{max(w):.1f})")
    print(f"load after: {load_now()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
