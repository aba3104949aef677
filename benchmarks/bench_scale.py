"""Benchmark: where the time goes as the corpus grows -- ``ragexam run`` on 1k / 10k / 50k / 100k chunks.

For each size a seeded synthetic Korean corpus of ~480-character paragraphs (the size of a KorQuAD
paragraph; generator in ``_korean.py``) and a question set (default 500 questions, evidence quoted
from the paragraphs, 10% out-of-corpus) are written once (``--data-dir``), then ``ragexam.run`` is
run with ``--chunker whole`` in a child process per measurement:

* **cold**: an empty cache (every chunk tokenized / embedded),
* **warm**: the same cache again (``--repeat`` times; the median is reported).

Each line gives the wall seconds, the seconds of each stage from ``summary["timing"]`` (load, chunk,
evidence, tokenize, embed, index, search, judge, statistics), the peak resident memory of the child
(``ru_maxrss``) and hit@5, with the machine's load.  ``hybrid`` runs on the cache its members filled, so
only its warm time is measured.  Dense runs are limited to ``--dense-max`` chunks (default 10,000): the
offline e5 embeds about 31 paragraphs/s on 2 cores (printed), so 10k chunks take ~5 min cold and 100k
nearly an hour; the projection in docs/scale.md extrapolates from the measured per-chunk cost.

    python benchmarks/bench_scale.py [--sizes 1000,10000,50000,100000] [--retrievers bm25,dense,hybrid]
                                     [--questions 500] [--repeat 2] [--dense-max 10000] [--workers N]
                                     [--executor local] [--data-dir DIR] [--keep-cache]

Targets (issue 15): 50k bm25 chunks warm <= 10 s; 100k bm25 chunks must run.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _bench import machine_line, compile_ragexam  # noqa: E402
from _korean import write_dataset  # noqa: E402

CHILD = r"""
import json, resource, sys, time
t0 = time.perf_counter()
import ragexam
args = json.loads(sys.argv[1])
res = ragexam.run(args["corpus"], args["qa"], retrievers=[args["retriever"]], chunkers=["whole"], progress=False,
                  n_resamples=200, n_permutations=200, workers=args["workers"], executor=args["executor"])
wall = time.perf_counter() - t0
name = res.pipelines[0].name
out = {"wall": wall, "timing": res.summary["timing"], "hit5": res.summary["results"][name]["metrics"]["hit@5"],
       "index_recall": res.summary["results"][name].get("index_recall"),
       "maxrss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}
print(json.dumps(out))
"""

SPECS = {"bm25": "bm25", "dense": "dense", "hybrid": "hybrid:bm25+dense"}


def _child(corpus: Path, qa: Path, retriever: str, cache: str, workers, executor) -> dict:
    env = {**os.environ, "RAGEXAM_CACHE_DIR": cache}
    arg = json.dumps({"corpus": str(corpus), "qa": str(qa), "retriever": retriever, "workers": workers,
                      "executor": executor})
    proc = subprocess.run([sys.executable, "-c", CHILD, arg], env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"ragexam.run failed for {retriever}:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _stages(t: dict) -> str:
    st = t["stages"]
    return " ".join(f"{k} {v:.1f}" for k, v in st.items() if v >= 0.05)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="1000,10000,50000,100000")
    ap.add_argument("--retrievers", default="bm25,dense,hybrid")
    ap.add_argument("--questions", type=int, default=500)
    ap.add_argument("--repeat", type=int, default=2, help="warm runs per measurement (median reported)")
    ap.add_argument("--dense-max", type=int, default=10000, help="largest corpus embedded with the dense retriever")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workers", type=int, default=None)
    ap.add_argument("--executor", default=None)
    ap.add_argument("--data-dir", default=None, help="where the generated sets are kept (default: a temp dir)")
    ap.add_argument("--keep-cache", action="store_true", help="keep the caches (printed) instead of deleting them")
    args = ap.parse_args()
    sizes = [int(x) for x in args.sizes.split(",") if x.strip()]
    wanted = [r.strip() for r in args.retrievers.split(",") if r.strip()]
    unknown = [r for r in wanted if r not in SPECS]
    if unknown:
        raise SystemExit(f"unknown retriever {unknown[0]!r}; expected {', '.join(SPECS)}")
    data_root = Path(args.data_dir) if args.data_dir else Path(tempfile.mkdtemp(prefix="ragexam-scale-data-"))
    print(machine_line())
    print(compile_ragexam())
    print(f"questions {args.questions}, chunker whole, seed {args.seed}, workers {args.workers or 'all cores'}, "
          f"executor {args.executor or 'local'}")
    print(f"{'chunks':>8} {'retriever':<9} {'run':<5} {'wall s':>8} {'peak MB':>8} {'hit@5':>6}  stages (s)")
    for n in sizes:
        d = data_root / f"n{n}-q{args.questions}-s{args.seed}"
        if not (d / "qa.jsonl").exists():
            write_dataset(d, n, args.questions, args.seed)
        corpus, qa = d / "corpus.jsonl", d / "qa.jsonl"
        cache = tempfile.mkdtemp(prefix=f"ragexam-scale-cache-{n}-")
        try:
            for r in wanted:
                if r in ("dense", "hybrid") and n > args.dense_max:
                    print(f"{n:>8} {r:<9} skipped: more than --dense-max {args.dense_max} chunks to embed")
                    continue
                runs = []
                if r != "hybrid":
                    runs.append(("cold", _child(corpus, qa, SPECS[r], cache, args.workers, args.executor)))
                warm = [_child(corpus, qa, SPECS[r], cache, args.workers, args.executor) for _ in range(args.repeat)]
                warm.sort(key=lambda x: x["wall"])
                runs.append(("warm", warm[len(warm) // 2]))
                for label, res in runs:
                    extra = ""
                    if label == "warm" and len(warm) > 1:
                        extra = f" (warm {len(warm)} runs: {warm[0]['wall']:.1f}–{warm[-1]['wall']:.1f} s)"
                    if res.get("index_recall"):
                        extra += " " + json.dumps(res["index_recall"])
                    print(f"{n:>8} {r:<9} {label:<5} {res['wall']:>8.1f} {res['maxrss_mb']:>8.0f} {res['hit5']:>6.3f}  "
                          f"{_stages(res['timing'])}{extra}", flush=True)
                if r == "dense" and runs[0][0] == "cold":
                    emb = runs[0][1]["timing"]["stages"].get("embed", 0.0)
                    if emb:
                        print(f"{'':>8} {'':<9} dense cold: {n / emb:.1f} passages/s embedded "
                              f"({emb / n * 1000:.0f} ms per chunk)", flush=True)
        finally:
            if args.keep_cache:
                print(f"cache kept: {cache}")
            else:
                shutil.rmtree(cache, ignore_errors=True)
    print(machine_line())
    if not args.data_dir:
        shutil.rmtree(data_root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
