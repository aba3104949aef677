"""Benchmark: ``ragexam traces import`` and ``ragexam traces sample`` on 100,000 traces, wall clock and peak memory.

The traffic: every it_helpdesk question and its user-style paraphrases (tests/data/traces/paraphrases.jsonl, 161
texts) asked in ``--variants`` wordings each (a prefix and a suffix a user might add), drawn ``--traces`` times with
Zipf-like frequencies (seeded), so the export holds a few thousand distinct questions, most of them rare, as
production traffic does.  Each trace has three contexts (paragraphs of the question's relevant documents and of a
random one) with ids and scores, the bundled answer, a timestamp over 30 days, latency, one of two models, token
counts, one of 5,000 users (e-mail addresses) and sessions, tags, a thumbs up or down on 5 % of them, and an e-mail
address or phone number in 2 % of the questions.  It is written as each ``--format`` (Phoenix span JSON lines:
three spans and the annotations; OTLP JSON: a request per 100 traces; Langfuse: one API trace per line).

Then, each in a fresh process (``python -m ragexam.cli``): ``traces import FILE --out answers.jsonl --redact`` for
each format, and (for the first format: the traffic is the same in all) ``traces sample answers.jsonl -n 50
--corpus it_helpdesk`` with an empty retrieval cache (every distinct question
embedded by the offline e5; this machine's e5 graphs and calibration linked in, as after any earlier use:
``_bench.cold_cache``).  Reported: wall time, the process's CPU time and peak resident memory (``wait4``: on a
machine shared with other work the CPU time is what a quiet one would take, the import being one thread), the
export's size, whether the import grouped spans on disk; the targets (issue 38): import <= 60 s with memory bounded (the
spans are streamed and grouped in bounded memory), sample <= 120 s, on 2 cores.

Run::

    python benchmarks/bench_traces.py [--traces 100000] [--format phoenix,otel,langfuse] [--sample first|all|none]
                                      [--keep DIR]

Exits 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _bench import cold_cache, e5_artifacts, load_now, machine_line  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
PREFIXES = ("", "혹시 ", "급한데 ", "질문이요. ", "안녕하세요, ", "팀장님이 물어보시는데 ", "다시 여쭤요. ", "저기요 ")
SUFFIXES = ("", " 빨리 알려주세요", " 감사합니다", " ㅠㅠ", " (급함)")
IMPORT_TARGET, SAMPLE_TARGET = 60.0, 120.0


def texts():
    """``(question, answer, relevant doc ids)`` of every bundled question and paraphrase."""
    from ragexam.analysis.answers.files import load_answers
    from ragexam.data.loaders import load_qa

    qa = {q.query_id: q for q in load_qa("it_helpdesk").questions}
    answers = {a.query_id: a.answer for a in load_answers("it_helpdesk")}
    out = [(q.question, answers[q.query_id], list(q.relevant_doc_ids)) for q in qa.values()]
    for line in (ROOT / "tests" / "data" / "traces" / "paraphrases.jsonl").read_text(encoding="utf-8").splitlines():
        obj = json.loads(line)
        q = qa[obj["query_id"]]
        out += [(p, answers[q.query_id], list(q.relevant_doc_ids)) for p in obj["paraphrases"]]
    return out


def traffic(n: int, variants: int, seed: int = 1):
    """``n`` mapped traces (module docstring)."""
    from ragexam.data.loaders import load_corpus
    from ragexam.data.traces.mapping import MappedTrace
    from ragexam.data.traces.meta import Feedback, RetrievedDoc, TraceMeta

    rng = random.Random(seed)
    paragraphs = [(d.doc_id, i, p) for d in load_corpus("it_helpdesk").documents
                  for i, p in enumerate(x for x in d.content.split("\n\n") if x.strip())]
    by_doc = {}
    for doc, i, p in paragraphs:
        by_doc.setdefault(doc, []).append((f"{doc}#p{i}", p))
    wordings = []
    for q, a, rel in texts():
        for k in range(variants):
            wordings.append((PREFIXES[k % len(PREFIXES)] + q + SUFFIXES[(k // len(PREFIXES)) % len(SUFFIXES)], a, rel))
    rng.shuffle(wordings)
    weights = [1.0 / (r + 1) ** 1.1 for r in range(len(wordings))]
    picks = rng.choices(range(len(wordings)), weights=weights, k=n)
    start = 1_740_787_200  # 2025-03-01
    for k, w in enumerate(picks):
        q, a, rel = wordings[w]
        if rng.random() < 0.02:
            q += rng.choice((" 연락처는 010-{:04d}-{:04d}".format(rng.randrange(10000), rng.randrange(10000)),
                             f" 답장은 user{rng.randrange(999)}@daon.example 로"))
        other = rng.choice(paragraphs)
        docs = list(dict.fromkeys([rng.choice(by_doc[d]) for d in rel[:2]] + [(f"{other[0]}#p{other[1]}", other[2])]))
        ts = start + rng.randrange(30 * 86400)
        fb = (Feedback("thumbs", float(rng.random() < 0.7)),) if rng.random() < 0.05 else ()
        meta = TraceMeta("phoenix", f"{k:032x}", f"{time.strftime('%Y-%m-%dT%H:%M:%S', time.gmtime(ts))}.000000Z",
                         float(rng.randrange(300, 9000)), rng.choice(("gpt-4o-mini", "qwen2.5-7b")),
                         rng.randrange(200, 900), rng.randrange(20, 200), None, f"u{rng.randrange(5000)}@daon.example",
                         f"s{rng.randrange(20000)}", ("prod",), fb,
                         tuple(RetrievedDoc(d, r, round(1 / r, 3)) for r, (d, _) in enumerate(docs, 1)))
        yield MappedTrace(f"{k:032x}", q, a, None, tuple(t for _, t in docs), tuple(d for d, _ in docs), meta)


def write(fmt: str, path: Path, n: int, variants: int) -> None:
    from ragexam.data.traces import writers

    batch = []
    with open(path, "w", encoding="utf-8") as fh:
        for m in traffic(n, variants):
            if fmt == "otel":
                batch.append(m)
                if len(batch) == 100:
                    fh.write(json.dumps(writers.otlp_request(batch), ensure_ascii=False) + "\n")
                    batch = []
                continue
            recs = writers.phoenix_spans(m) if fmt == "phoenix" else writers.langfuse_records(m)
            for r in recs:
                fh.write(json.dumps(r, ensure_ascii=False) + "\n")
        if batch:
            fh.write(json.dumps(writers.otlp_request(batch), ensure_ascii=False) + "\n")


def run_measured(args, env) -> tuple:
    """``(wall seconds, CPU seconds, peak RSS in MiB, stdout)`` of ``python -m ragexam.cli ARGS`` in a fresh process
    (CPU time and peak RSS of that process from ``wait4``)."""
    t0 = time.perf_counter()
    p = subprocess.Popen([sys.executable, "-m", "ragexam.cli", *args], env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    out_chunks = []
    while True:
        chunk = p.stdout.read(65536)
        if not chunk:
            break
        out_chunks.append(chunk)
    _, status, usage = os.wait4(p.pid, 0)
    elapsed = time.perf_counter() - t0
    err = p.stderr.read().decode("utf-8", "replace")
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        raise SystemExit(f"ragexam {' '.join(args)} failed ({code}):\n{err[-2000:]}")
    return elapsed, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024.0, b"".join(out_chunks).decode("utf-8")


def _verdict(secs: float, target: float) -> str:
    """``ok`` or ``MISSED``; the CPU time beside it says what a quiet machine would take (the import is one
    thread; the sample's e5 runs on every core)."""
    return "ok" if secs <= target else "MISSED"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--traces", type=int, default=100_000)
    ap.add_argument("--variants", type=int, default=40, help="Wordings per bundled question or paraphrase.")
    ap.add_argument("--format", default="phoenix,otel,langfuse")
    ap.add_argument("-n", type=int, default=50, help="Candidates the sample asks for.")
    ap.add_argument("--sample", default="first", help="Formats whose import is sampled: first (the same traffic in "
                                                      "every format: one sample says it), all, or none.")
    ap.add_argument("--keep", type=Path, default=None, help="Keep the files in this folder.")
    args = ap.parse_args()
    print(machine_line())
    print(e5_artifacts())
    folder = args.keep or Path(tempfile.mkdtemp(prefix="bench-traces-"))
    folder.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, COLUMNS="120")
    ok = True
    formats = args.format.split(",")
    for fmt in formats:
        export, answers = folder / f"{fmt}.jsonl", folder / f"{fmt}.answers.jsonl"
        t0 = time.perf_counter()
        write(fmt, export, args.traces, args.variants)
        print(f"{fmt}: wrote {args.traces:,} traces, {export.stat().st_size / 2**20:.0f} MiB, in "
              f"{time.perf_counter() - t0:.1f} s (not measured)")
        answers.unlink(missing_ok=True)
        secs, cpu, rss, out = run_measured(["traces", "import", str(export), "--out", str(answers), "--redact",
                                            "--json"], env)
        res = json.loads(out)
        ok &= secs <= IMPORT_TARGET
        print(f"  import: {secs:.1f} s wall, {cpu:.1f} s CPU, peak RSS {rss:.0f} MiB, {res['imported']:,} imported, "
              f"skipped {res['skipped'] or 0}, grouped on disk: {res['spilled_to_disk']}, redacted {res['redacted']} "
              f"(target <= {IMPORT_TARGET:.0f} s wall): {_verdict(secs, IMPORT_TARGET)}")
        if args.sample == "none" or (args.sample == "first" and fmt != formats[0]):
            continue
        cache = cold_cache("bench-traces-cache-")
        cand = folder / f"{fmt}.cand.jsonl"
        for p in folder.glob(f"{fmt}.cand.*"):
            p.unlink()
        try:
            secs, cpu, rss, out = run_measured(["traces", "sample", str(answers), "-n", str(args.n), "--corpus",
                                                "it_helpdesk", "--out", str(cand), "--json"],
                                               dict(env, RAGEXAM_CACHE_DIR=cache))
        finally:
            shutil.rmtree(cache, ignore_errors=True)
        card = json.loads(out)
        ok &= secs <= SAMPLE_TARGET
        tr = card["traffic"]
        print(f"  sample: {secs:.1f} s wall, {cpu:.1f} s CPU, peak RSS {rss:.0f} MiB, {tr['traces']:,} traces, "
              f"{tr['distinct_questions']:,} distinct questions, {tr['clusters']:,} clusters, {card['n_kept']} kept, "
              f"evidence {card['evidence']} (empty cache; target <= {SAMPLE_TARGET:.0f} s wall): "
              f"{_verdict(secs, SAMPLE_TARGET)}")
        print(f"  load after: {load_now()}")
    print(f"files in {folder}" if args.keep else "")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
