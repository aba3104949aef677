"""Benchmark: a chunking study -- four chunkers on one corpus -- against one chunker, cold, end to end.

The corpus is generated (``_korean.py`` ``make_pages``; no data files needed): ``--pages`` (720) pages shaped like
a PDF extraction (a title line, 2-6 paragraphs of 1-10 Korean sentences separated by blank lines, ~420
characters a page) and ``--questions`` (300) questions quoting one sentence each.  The command a user types,
``ragexam run -r dense``, runs in a child process per measurement from an empty retrieval cache (the e5 graphs and
calibration of this machine linked in: ``_bench.e5_artifacts``):

* **one**: ``-c paragraphs:400``;
* **study**: ``-c paragraphs:400 -c paragraphs:800 -c recursive:400:0 -c sentences:400``.

The study embeds each distinct chunk once (chunks several chunkers make, and chunks equal up to the whitespace e5
collapses, share one vector) and splits each paragraph with Kiwi once; printed per round and as medians over
``--rounds``: the wall seconds of each command, their ratio (goal: study <= 2.5x one), the stage table of each, and
the run's own count of what it shared (``summary.json`` ``timing.embeddings``).

    python benchmarks/bench_study.py [--pages 720] [--questions 300] [--rounds 3] [--seed 0]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _bench import compile_ragexam, e5_artifacts, load_now, machine_line, run_cold  # noqa: E402

ONE = ["paragraphs:400"]
STUDY = ["paragraphs:400", "paragraphs:800", "recursive:400:0", "sentences:400"]


def _run(corpus: Path, qa: Path, chunkers, out: Path) -> dict:
    args = ["--corpus", corpus, "--qa", qa, "-r", "dense"]
    for c in chunkers:
        args += ["-c", c]
    wall, summary = run_cold(args, out, "ragexam-study-cache-")
    uses = {u["role"]: u for u in summary["timing"].get("embeddings", [])}
    return {"wall": wall, "stages": summary["timing"]["stages"], "passages": uses.get("passage", {}),
            "chunks": summary["dataset"]["n_chunks"], "load": os.getloadavg()[0]}


def _stages(r: dict) -> str:
    return " ".join(f"{k} {v:.1f}" for k, v in r["stages"].items() if v >= 0.05)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pages", type=int, default=720)
    ap.add_argument("--questions", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    from _korean import write_pages

    print(machine_line())
    print(compile_ragexam())
    print(e5_artifacts())
    root = Path(tempfile.mkdtemp(prefix="ragexam-study-"))
    try:
        corpus, qa = write_pages(root / "data", args.pages, args.questions, args.seed)
        chars = sum(len(json.loads(x)["content"]) for x in corpus.read_text(encoding="utf-8").splitlines())
        print(f"corpus: {args.pages} generated pages ({chars:,} characters), {args.questions} questions; "
              f"ragexam run -r dense, cold")
        rows = []
        for r in range(args.rounds):
            pair = {}
            for label, chunkers in (("one", ONE), ("study", STUDY))[::1 if r % 2 == 0 else -1]:
                pair[label] = _run(corpus, qa, chunkers, root / "out")
                print(f"round {r + 1} {label:<5} {pair[label]['wall']:7.1f} s  load {pair[label]['load']:.2f}  "
                      f"{_stages(pair[label])}", flush=True)
            rows.append(pair)
            print(f"round {r + 1} ratio study/one: {pair['study']['wall'] / pair['one']['wall']:.2f}x", flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    one = statistics.median(p["one"]["wall"] for p in rows)
    study = statistics.median(p["study"]["wall"] for p in rows)
    ratio = statistics.median(p["study"]["wall"] / p["one"]["wall"] for p in rows)
    u = rows[-1]["study"]["passages"]
    print(f"chunks: one {rows[-1]['one']['chunks']}, study {rows[-1]['study']['chunks']}")
    if u:
        print(f"the study's passages: {u['texts']:,} asked, {u['distinct']:,} distinct ({u['shared']:,} shared, "
              f"{u['whitespace']:,} of them only up to whitespace), {u['embedded']:,} embedded")
    print(f"median of {len(rows)}: one chunker {one:.1f} s, four chunkers {study:.1f} s; ratio {ratio:.2f}x "
          f"(goal <= 2.5x: {'met' if ratio <= 2.5 else 'NOT met'})")
    print(f"load after: {load_now()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
