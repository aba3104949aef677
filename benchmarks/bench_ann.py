"""Benchmark: dense indexes at scale -- flat (exact), hnsw, ivf, ivfpq -- build time, search time, memory, recall.

The embedder is replaced by seeded clustered random unit vectors (384-d, the size of multilingual-e5-small),
so this measures only the index: what ``DenseRetriever`` does with N vectors once they are embedded
(the embedding cost per chunk is measured by ``bench_scale.py`` / ``bench_e5.py``).  For each index the
child process reports the wall seconds to build (``index``) and to search ``--queries`` queries to depth
100 (``search``, including the recall measurement on 200 sampled queries for approximate indexes), the
peak resident memory, the index's own size, and its recall of the exact top-10 / top-100.

    python benchmarks/bench_ann.py [--sizes 100000,1000000] [--indexes flat,hnsw,ivfpq] [--queries 500]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _bench import machine_line  # noqa: E402

CHILD = r"""
import json, resource, sys, time
import numpy as np
args = json.loads(sys.argv[1])
n, dim, nq = args["n"], 384, args["queries"]

class Clustered:
    name, identity, spec, dim = "clustered", f"clustered:v1:{n}", "dense:clustered", 384
    def __init__(self):
        rng = np.random.default_rng(0)
        self.centers = rng.normal(size=(1024, dim)).astype(np.float32)
    def _vec(self, texts):
        idx = np.asarray([int(t[1:]) for t in texts])
        rng = np.random.default_rng(idx[0] * 7919 + len(idx))
        return self.centers[idx % 1024] + 0.6 * rng.normal(size=(len(idx), dim)).astype(np.float32)
    embed_passages = embed_queries = _vec

from ragexam.retrieval.dense import DenseRetriever
opts = {k: v for k, v in args["opts"].items()}
r = DenseRetriever(Clustered(), cache=False, progress=False, batch_size=4096, **opts)
ids = [f"c{i}" for i in range(n)]
texts = [f"p{i}" for i in range(n)]
t0 = time.perf_counter(); r.index(ids, texts); t_index = time.perf_counter() - t0
rng = np.random.default_rng(1)
queries = [f"p{i}" for i in rng.choice(n, size=nq, replace=False)]
t0 = time.perf_counter(); r.search(queries, 100); t_search = time.perf_counter() - t0
rep = r.index_report()
import faiss
size = faiss.serialize_index(r._faiss).nbytes
print(json.dumps({"index_s": t_index, "search_s": t_search, "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "index_mb": size / 2**20, "signature": r.signature.split("|")[-1],
                  "recall": {k: v for k, v in (rep[0] if rep else {}).items() if k.startswith("recall")}}))
"""

OPTIONS = {"flat": {}, "hnsw": {"index": "hnsw", "m": 32, "ef": 128, "ef_construction": 80},
           "ivf": {"index": "ivf", "nprobe": 32}, "ivfpq": {"index": "ivfpq", "m": 48, "nbits": 8, "nprobe": 32}}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="100000,1000000")
    ap.add_argument("--indexes", default="flat,hnsw,ivfpq")
    ap.add_argument("--queries", type=int, default=500)
    args = ap.parse_args()
    print(machine_line())
    print(f"{'vectors':>9} {'index':<6} {'build s':>8} {'search s':>9} {'peak MB':>8} {'index MB':>9}  recall  signature")
    for n in [int(x) for x in args.sizes.split(",")]:
        for name in args.indexes.split(","):
            arg = json.dumps({"n": n, "queries": args.queries, "opts": OPTIONS[name]})
            proc = subprocess.run([sys.executable, "-c", CHILD, arg], capture_output=True, text=True)
            if proc.returncode != 0:
                print(f"{n:>9} {name:<6} failed: {proc.stderr.strip().splitlines()[-1] if proc.stderr else proc.returncode}")
                continue
            res = json.loads(proc.stdout.strip().splitlines()[-1])
            rec = " ".join(f"{k}={v:.3f}" for k, v in res["recall"].items()) or "exact"
            print(f"{n:>9} {name:<6} {res['index_s']:>8.1f} {res['search_s']:>9.2f} {res['peak_mb']:>8.0f} "
                  f"{res['index_mb']:>9.0f}  {rec}  {res['signature']}", flush=True)
    print(machine_line())
    return 0


if __name__ == "__main__":
    sys.exit(main())
