"""Benchmark: ``ragexam score`` with an LLM judge at 100 ms per call -- is the text scoring hidden behind the calls?

Starts the tests' scripted OpenAI-compatible judge (``tests/test_judge_stub.py``) on 127.0.0.1 with a
fixed delay per request (default 0.1 s), then runs, as subprocesses, each ``--repeat`` times with an
empty LLM cache:

1. ``score + judge``: ``ragexam score --qa it_helpdesk --answers ANSWERS --judge-model stub ...`` where
   ANSWERS is the bundled answer set for ``--pipelines`` pipelines (default 3: 497 judge calls), each answer with two
   contexts (its relevant document and another one, different per pipeline, so no two prompts are the
   same call), so all four judge metrics run -- the whole command;
2. ``score, text only``: the same without a judge (kiwi load, BLEU / chrF / ROUGE-L, attribution);
3. the calls alone: the span from the first request the stub received to the last reply, during run 1.

When the text scoring runs beside the judge calls (in a child process: Kiwi's model load holds the GIL
for over a second, so a thread of the scoring process would stall the calls), (1) is about max((2), (3))
plus start-up instead of their sum.  Target (issue 15): (1) <= 5 s for ~504 calls at 100 ms and
concurrency 32.

    python benchmarks/bench_score.py [--delay 0.1] [--concurrency 32] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))
from _bench import machine_line, spread, compile_ragexam  # noqa: E402


def _answers(pipelines: int) -> str:
    """The bundled answers for ``pipelines`` pipelines, each with two contexts, as a temporary JSONL file."""
    import json

    from ragexam.data import load_corpus, load_qa

    corpus = load_corpus("it_helpdesk")
    docs = [d.content for d in corpus]
    ids = [d.doc_id for d in corpus]
    qs = {q.query_id: q for q in load_qa("it_helpdesk")}
    src = Path(__file__).resolve().parents[1] / "src" / "ragexam" / "data" / "samples" / "it_helpdesk" / "answers.jsonl"
    rows = [json.loads(line) for line in src.read_text(encoding="utf-8").splitlines() if line.strip()]
    fd, path = tempfile.mkstemp(prefix="ragexam-bench-answers-", suffix=".jsonl")
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        for p in range(pipelines):
            for r in rows:
                rel = list(qs[r["query_id"]].relevant_docs)
                i = ids.index(rel[0]) if rel else 0
                fh.write(json.dumps({"query_id": r["query_id"], "answer": r["answer"], "pipeline": f"rag-{p + 1}",
                                     "contexts": [docs[i], docs[(i + 1 + p) % len(docs)]]},
                                    ensure_ascii=False) + "\n")
    return path


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--delay", type=float, default=0.1, help="seconds the stub waits before each reply")
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--pipelines", type=int, default=3)
    args = ap.parse_args()
    answers = _answers(args.pipelines)
    from test_judge_stub import API_KEY, Stub, make_handler, serve

    stub = Stub()
    stub.delay = args.delay
    base, shutdown = serve(make_handler(stub))
    times = []
    print(machine_line())
    print(compile_ragexam())
    try:
        for r in range(args.repeat):
            for label, judge in (("score + judge", True), ("score, text only", False)):
                cache = tempfile.mkdtemp(prefix="ragexam-bench-score-")
                env = {**os.environ, "RAGEXAM_CACHE_DIR": cache, "OPENAI_API_KEY": API_KEY,
                       "RAGEXAM_HISTORY": str(Path(cache) / "history.sqlite3")}
                cmd = [sys.executable, "-m", "ragexam.cli", "score", "--qa", "it_helpdesk", "--answers", answers,
                       "--json", "--no-history"]
                if judge:
                    cmd += ["--judge-model", "stub-judge", "--base-url", f"{base}/v1", "--concurrency",
                            str(args.concurrency)]
                with stub.lock:
                    stub.requests.clear()
                first = [None]
                t0 = time.perf_counter()
                sink = tempfile.TemporaryFile()  # not a pipe: the JSON is larger than a pipe's buffer
                proc = subprocess.Popen(cmd, env=env, stdout=sink, stderr=subprocess.PIPE, text=True)
                # the stub records request bodies; time the first arrival by polling its list
                while proc.poll() is None:
                    if first[0] is None and stub.requests:
                        first[0] = time.perf_counter()
                    time.sleep(0.005)
                wall = time.perf_counter() - t0
                _, err = proc.communicate()
                sink.close()
                shutil.rmtree(cache, ignore_errors=True)
                if proc.returncode != 0:
                    raise SystemExit(f"ragexam score failed ({proc.returncode}):\n{err[-2000:]}")
                n_calls = len(stub.requests)
                times.append((label, wall, n_calls, (t0 + wall - first[0]) if first[0] else None))
                print(f"round {r + 1}: {label:<17} {wall:6.2f} s, {n_calls} judge calls"
                      + (f", calls from first request to exit {times[-1][3]:.2f} s" if first[0] else ""), flush=True)
    finally:
        shutdown()
    for label in ("score + judge", "score, text only"):
        vals = [w for lab, w, _, _ in times if lab == label]
        print(f"{label:<17} median {spread(vals)} s")
    spans = [s for lab, _, _, s in times if lab == "score + judge" and s]
    if spans:
        print(f"{'calls span':<17} median {spread(spans)} s (first request to the end of the command)")
    print(machine_line())
    return 0


if __name__ == "__main__":
    sys.exit(main())
