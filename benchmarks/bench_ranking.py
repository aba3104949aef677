"""Ranking-metrics speed: ragexam vs pytrec_eval (and optionally ranx), from TREC files on disk.

Workload (issue #2): 10,000 queries x 100 retrieved docs, ~5 relevant per query (3-7,
graded 1-3, most of them retrieved) plus 5 judged non-relevant; five metrics:
ndcg@10, map, mrr@10, recall@100, P@10.  pytrec_eval has no MRR cutoff, so it computes
``recip_rank``; that is the same work.

Each timed step starts from the files on disk: pytrec_eval = ``parse_qrel`` + ``parse_run``
+ ``RelevanceEvaluator(...).evaluate``; ragexam = ``ragexam.evaluate(qrels_path, run_path, ...)``.
The two are interleaved ``--repeat`` times in one process; medians are reported.  Means
are checked to agree (ragexam in ``trec_compat`` mode must equal pytrec_eval per query).

    python benchmarks/bench_ranking.py [--repeat 7] [--ranx]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

DATA = Path(__file__).parent / "_data"


def make_files(n_queries: int = 10_000, depth: int = 100, seed: int = 0) -> tuple[Path, Path]:
    DATA.mkdir(exist_ok=True)
    run_path = DATA / f"run_{n_queries}x{depth}.trec"
    qrels_path = DATA / f"qrels_{n_queries}x{depth}.trec"
    if run_path.exists() and qrels_path.exists():
        return qrels_path, run_path
    rng = np.random.default_rng(seed)
    with open(run_path, "w") as frun, open(qrels_path, "w") as fq:
        for q in range(n_queries):
            docs = rng.choice(1_000_000, size=depth + 10, replace=False)
            retrieved = docs[:depth]
            scores = np.sort(rng.random(depth))[::-1] * 30
            n_rel = int(rng.integers(3, 8))
            # most relevant docs are retrieved (at random ranks), one in five is not
            rel_docs = [retrieved[i] if rng.random() < 0.8 else docs[depth + j]
                        for j, i in enumerate(rng.choice(depth, size=n_rel, replace=False))]
            nonrel = rng.choice(retrieved, size=5, replace=False)
            judged = {int(d): int(rng.integers(1, 4)) for d in rel_docs}
            for d in nonrel:
                judged.setdefault(int(d), 0)
            frun.write("".join(f"q{q} Q0 d{d} {i + 1} {s:.8f} bench\n"
                               for i, (d, s) in enumerate(zip(retrieved, scores))))
            fq.write("".join(f"q{q} 0 d{d} {g}\n" for d, g in judged.items()))
    return qrels_path, run_path


def time_pytrec(qrels_path: Path, run_path: Path):
    import pytrec_eval

    t = time.perf_counter()
    with open(qrels_path) as f:
        qrels = pytrec_eval.parse_qrel(f)
    with open(run_path) as f:
        run = pytrec_eval.parse_run(f)
    ev = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10", "map", "recip_rank", "recall.100", "P.10"})
    res = ev.evaluate(run)
    return time.perf_counter() - t, res


def time_ragexam(qrels_path: Path, run_path: Path):
    import ragexam

    t = time.perf_counter()
    res = ragexam.evaluate(qrels_path, run_path, ["ndcg@10", "map", "mrr@10", "r@100", "p@10"])
    return time.perf_counter() - t, res


def time_ranx(qrels_path: Path, run_path: Path):
    from ranx import Qrels, Run, evaluate

    t = time.perf_counter()
    qrels = Qrels.from_file(str(qrels_path), kind="trec")
    run = Run.from_file(str(run_path), kind="trec")
    res = evaluate(qrels, run, ["ndcg@10", "map", "mrr@10", "recall@100", "precision@10"])
    return time.perf_counter() - t, res


def import_time(module: str, n: int = 5) -> float:
    def once(code: str) -> float:
        t = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True)
        return time.perf_counter() - t

    base = statistics.median(once("pass") for _ in range(n))
    full = statistics.median(once(f"import {module}") for _ in range(n))
    return full - base


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--ranx", action="store_true", help="also time ranx (pays a numba JIT on first use)")
    args = ap.parse_args()
    qrels_path, run_path = make_files()
    print(f"data: {run_path.name} ({run_path.stat().st_size / 1e6:.1f} MB), {qrels_path.name}")
    tp, tr, tx = [], [], []
    for _ in range(args.repeat):
        t, pres = time_pytrec(qrels_path, run_path)
        tp.append(t)
        t, rres = time_ragexam(qrels_path, run_path)
        tr.append(t)
        if args.ranx:
            t, xres = time_ranx(qrels_path, run_path)
            tx.append(t)
    # agreement
    pm = {"ndcg@10": "ndcg_cut_10", "map": "map", "r@100": "recall_100", "p@10": "P_10"}
    for ours, theirs in pm.items():
        a = rres.mean[ours]
        b = float(np.mean([v[theirs] for v in pres.values()]))
        assert abs(a - b) < 1e-12, (ours, a, b)
    print(f"means agree with pytrec_eval: {', '.join(f'{k}={rres.mean[k]:.6f}' for k in rres.metrics)}")
    mp, mr = statistics.median(tp), statistics.median(tr)
    print(f"pytrec_eval parse+evaluate : median {mp:.3f} s  (min {min(tp):.3f}, runs {args.repeat})")
    print(f"ragexam file->metrics      : median {mr:.3f} s  (min {min(tr):.3f})")
    print(f"ratio pytrec_eval / ragexam: {mp / mr:.2f}x (median), {min(tp) / min(tr):.2f}x (min)")
    if tx:
        print(f"ranx from files (1st run incl. JIT {tx[0]:.2f} s): median of later runs {statistics.median(tx[1:] or tx):.3f} s "
              f"-> ratio ranx / ragexam {statistics.median(tx[1:] or tx) / mr:.2f}x")
    print(f"import ragexam: {import_time('ragexam'):.3f} s (subprocess, minus bare interpreter start)")


if __name__ == "__main__":
    main()
