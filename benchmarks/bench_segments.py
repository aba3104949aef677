"""Benchmark: ``ragexam score --by`` on 100,000 traced answers -- what segmenting costs beside the judge.

The traffic is benchmarks/bench_traces.py's (every it_helpdesk question and paraphrase in ``--variants`` wordings,
Zipf-like frequencies, two models, 30 days, thumbs on 5 %), written directly as the answers file ``ragexam traces
import`` would write.  Then, each in a fresh process (``python -m ragexam.cli``, wall time, CPU time and peak
resident memory from ``wait4``):

1. ``score --answers A --by model`` without a judge: the join, the segments (counts, feedback, latency and token
   percentiles, the answers to read first) and the writing of nothing but ``--json``;
2. ``score --answers A --by day``: 30 segments;
3. ``score --answers A --qa it_helpdesk --by model`` with an empty retrieval cache: every distinct traced question
   matched to the exam (exact, else e5 near duplicates: each distinct question embedded once);
4. ``score --answers A --by model --judge-model M --dry-run``: the judge's plan (calls and estimated cost) -- scoring
   traffic costs what the judge costs, which this says before anything is sent.

No target in issue 38 for (1)-(3); the judge's calls dominate a real score (``bench_judge_llm.py``).

    python benchmarks/bench_segments.py [--traces 100000] [--variants 40] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from _bench import cold_cache, load_now, machine_line  # noqa: E402
from bench_traces import run_measured, traffic  # noqa: E402


def write_answers(path: Path, n: int, variants: int) -> None:
    from ragexam.analysis.answers.traces import answer_record

    with open(path, "w", encoding="utf-8") as fh:
        for m in traffic(n, variants):
            fh.write(json.dumps(answer_record(m).to_dict(), ensure_ascii=False) + "\n")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--traces", type=int, default=100_000)
    ap.add_argument("--variants", type=int, default=40)
    ap.add_argument("--keep", type=Path, default=None)
    args = ap.parse_args()
    print(machine_line())
    folder = args.keep or Path(tempfile.mkdtemp(prefix="bench-segments-"))
    folder.mkdir(parents=True, exist_ok=True)
    answers = folder / "answers.jsonl"
    t0 = time.perf_counter()
    write_answers(answers, args.traces, args.variants)
    print(f"wrote {args.traces:,} answers, {answers.stat().st_size / 2**20:.0f} MiB, in "
          f"{time.perf_counter() - t0:.1f} s (not measured)")
    env = dict(os.environ, COLUMNS="120", RAGEXAM_HISTORY=str(folder / "history.sqlite3"))
    runs = [("by model", ["--by", "model"], None), ("by day", ["--by", "day"], None),
            ("by model, matched to the exam (empty cache)", ["--qa", "it_helpdesk", "--by", "model"], "cold"),
            ("by model, the judge's dry run", ["--by", "model", "--judge-model", "any-model", "--base-url",
                                               "http://127.0.0.1:9/v1", "--api-key", "unused", "--dry-run"], None)]
    for name, extra, cache in runs:
        run_env = dict(env)
        tmp = cold_cache("bench-segments-cache-") if cache else None
        if tmp is not None:
            run_env["RAGEXAM_CACHE_DIR"] = tmp
        try:
            secs, cpu, rss, out = run_measured(["score", "--answers", str(answers), *extra, "--no-history", "--json"],
                                               run_env)
        finally:
            if tmp is not None:
                shutil.rmtree(tmp, ignore_errors=True)
        data = json.loads(out)
        if "segments" in data:
            sec = data["segments"]
            exam = sec.get("exam") or {}
            what = (f"{len(sec['segments'])} segments, {len(sec['comparisons'])} comparisons"
                    + (f", exam: {exam['n_exact']:,} exact + {exam['n_near']:,} near of {exam['n_traced']:,}"
                       if exam else ""))
        else:
            what = f"plan: {data.get('calls', '?'):,} calls of {data.get('total', '?'):,} judgments"
        print(f"  {name}: {secs:.1f} s wall, {cpu:.1f} s CPU, peak RSS {rss:.0f} MiB; {what}")
    print(f"  load after: {load_now()}")
    if args.keep is None:
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
