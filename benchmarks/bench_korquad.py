"""Benchmark: a KorQuAD-size exam, cold and warm -- ``ragexam run -r bm25 -r dense -r hybrid:bm25+dense``.

The size of KorQuAD 1.0's dev set: ``--paragraphs`` (961) Korean paragraphs of ~480 characters and
``--questions`` (500) questions, generated seeded (``_korean.py``: no data files needed; KorQuAD itself
cannot be downloaded here).  The command a user types runs in a child process per measurement:

* **cold**: an empty retrieval cache (every chunk and question tokenized by Kiwi and embedded by e5), with
  this machine's e5 graphs and calibration linked in (``_bench.e5_artifacts``: built once per machine);
* **warm**: the same cache again.

Each round runs cold then warm; printed per round and as medians over ``--rounds``: the wall seconds of the
whole command (start-up included), the CPU seconds of the child (user + system), the seconds of each stage
(``summary.json``'s ``timing``), the chunk count and hit@5 of each pipeline, with the load average; then the stage
table (median seconds per stage, cold and warm) and the **physical limit** of the embed stage: e5's int8
operations for these chunks and questions (``_bench.e5_int8_ops``: its linear layers as backend ``onnx`` runs
them, every window's length counted) against this CPU's measured int8 throughput (``_bench.int8_throughput``:
onnxruntime's ``MatMulInteger`` per CPU-second of one core, times the cores), and the ratio of the embed stage to
it.

    python benchmarks/bench_korquad.py [--paragraphs 961] [--questions 500] [--rounds 3] [--chunker C]

Goals: cold <= 45 s on a quiet 2-core machine (issue 25; 76 s before); <= 30 s on the reference machine and
<= 40 s on every CPU, the chunk stage <= 1 s (issue 40).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _bench import cold_cache, corpus_options, korean_exam, load_now  # noqa: E402

RETRIEVERS = ["bm25", "dense", "hybrid:bm25+dense"]


def _run(corpus: Path, qa: Path, cache: str, out: Path, chunker) -> dict:
    cmd = [sys.executable, "-m", "ragexam.cli", "run", "--corpus", str(corpus), "--qa", str(qa), "--no-history",
           "--out", str(out)]
    for r in RETRIEVERS:
        cmd += ["-r", r]
    if chunker:
        cmd += ["--chunker", chunker]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    w0 = time.perf_counter()
    proc = subprocess.run(cmd, env={**os.environ, "RAGEXAM_CACHE_DIR": cache}, capture_output=True, text=True)
    wall = time.perf_counter() - w0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"ragexam run failed:\n{proc.stderr[-3000:]}")
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    shutil.rmtree(out, ignore_errors=True)
    return {"wall": wall, "cpu": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
            "stages": summary["timing"]["stages"], "load": os.getloadavg()[0],
            "hit5": {name: r["metrics"]["hit@5"] for name, r in summary["results"].items()},
            "chunks": summary.get("corpus", {}).get("chunks") or summary.get("n_chunks")}


def _line(label: str, r: dict) -> str:
    stages = " ".join(f"{k} {v:.1f}" for k, v in r["stages"].items() if v >= 0.05)
    return f"{label:<10}{r['wall']:>8.1f}{r['cpu']:>8.1f}{r['load']:>7.2f}  {stages}"


def physical_limit(corpus: Path, qa: Path, chunker, embed_s: float) -> None:
    """Print e5's int8 work for this exam against the CPU's measured int8 throughput (module docstring)."""
    from _bench import e5_int8_ops, int8_throughput

    from ragexam.data.chunking import chunk_corpus
    from ragexam.data.loaders import load_corpus, load_qa
    from ragexam.exec.base import default_workers
    from ragexam.retrieval.e5 import E5Embedder

    chunks = chunk_corpus(load_corpus(str(corpus)), chunker or "paragraphs:400")
    questions = [q.question for q in load_qa(str(qa))]
    e5 = E5Embedder()
    passage = [len(w) for c in chunks for w in e5.token_ids(c.text, "passage")]
    query = [len(w) for t in questions for w in e5.token_ids(t, "query")]
    ops = e5_int8_ops(passage) + e5_int8_ops(query)
    cores = default_workers()
    per_core = int8_throughput()
    peak = per_core * cores
    limit = ops / peak
    print(f"e5's int8 work: {ops / 1e12:.2f} T int8 operations for {len(chunks):,} chunks ({len(passage):,} windows, "
          f"{sum(passage):,} tokens; {e5_int8_ops(passage) / len(chunks) / 1e9:.2f} G per chunk) and "
          f"{len(questions):,} questions ({sum(query):,} tokens); {sum(1 for n in passage + query if n <= 64):,} "
          "windows of <= 64 tokens run every product in two int8 passes")
    print(f"this CPU's measured int8 throughput: {per_core / 1e12:.2f} T operations per CPU-second on one core "
          f"(MatMulInteger 384x1536), x {cores} cores -> the physical limit of the embed stage is {limit:.1f} s; "
          f"measured (cold, median) {embed_s:.1f} s = {embed_s / limit:.1f}x the limit")


def _stage_table(cold, warm) -> None:
    names = list(dict.fromkeys(k for r in cold + warm for k in r["stages"]))
    print(f"{'stage (median s)':<18}{'cold':>8}{'warm':>8}")
    for k in names:
        print(f"{k:<18}" + "".join(f"{statistics.median(r['stages'].get(k, 0.0) for r in runs):>8.2f}"
                                   for runs in (cold, warm)))
    print(f"{'whole command':<18}" + "".join(f"{statistics.median(r['wall'] for r in runs):>8.2f}"
                                              for runs in (cold, warm)))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    corpus_options(ap, 961, 500)
    ap.add_argument("--chunker", default=None, help="default: ragexam's default chunker")
    args = ap.parse_args()
    root, corpus, qa = korean_exam(args, "ragexam-korquad-")
    print(f"{args.paragraphs} paragraphs, {args.questions} questions, -r {' -r '.join(RETRIEVERS)}, chunker "
          f"{args.chunker or 'default'}")
    print(f"{'run':<10}{'wall s':>8}{'cpu s':>8}{'load':>7}  stages (s)")
    cold, warm = [], []
    try:
        for r in range(args.rounds):
            cache = cold_cache("ragexam-korquad-cache-")
            try:
                cold.append(_run(corpus, qa, cache, root / "out", args.chunker))
                print(_line(f"{r + 1} cold", cold[-1]), flush=True)
                warm.append(_run(corpus, qa, cache, root / "out", args.chunker))
                print(_line(f"{r + 1} warm", warm[-1]), flush=True)
            finally:
                shutil.rmtree(cache, ignore_errors=True)
        _stage_table(cold, warm)
        physical_limit(corpus, qa, args.chunker, statistics.median(r["stages"].get("embed", 0.0) for r in cold))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    for label, runs in (("cold", cold), ("warm", warm)):
        print(f"{label} median of {len(runs)}: {statistics.median(x['wall'] for x in runs):.1f} s wall, "
              f"{statistics.median(x['cpu'] for x in runs):.1f} CPU-s (range {min(x['wall'] for x in runs):.1f}-"
              f"{max(x['wall'] for x in runs):.1f} s; load {min(x['load'] for x in runs):.2f}-"
              f"{max(x['load'] for x in runs):.2f})")
    print("hit@5: " + ", ".join(f"{k} {v:.3f}" for k, v in cold[-1]["hit5"].items()))
    print(f"load after: {load_now()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
