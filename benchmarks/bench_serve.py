"""Benchmark: ``ragexam serve --review`` on a large generated set -- how long each page and decision takes.

A seeded synthetic Korean set (``_korean.py``: ``--questions`` questions, each quoting one sentence of its own
paragraph, 10% out of corpus) is written as ``ragexam generate`` writes one (the set with verification
records, its card and review sheet; no model is called).  After the warm-up ``ragexam serve`` starts in the
background (the set, the corpus's evidence index, Kiwi), the real server (uvicorn on a free loopback port,
in a thread of this process) is asked over HTTP, as a browser would, for: the home page; a set's table
(first and last page of 200 rows); a question's screen (the first, then ``--repeats`` others); an accept
(the POST that rewrites the sheet, then the next screen); an edit that passes the checks.  Each line is
the median (min-max of n) wall seconds.

    python benchmarks/bench_serve.py [--questions 5000] [--repeats 15]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _bench import compile_ragexam, machine_line, spread  # noqa: E402
from _korean import make_dataset  # noqa: E402


def write_set(folder: Path, n: int) -> Path:
    """The set, its card and its review sheet, as ``generate`` writes them; returns the set's path."""
    from ragexam.analysis.generate.output import DECLINE, REVIEW_COLUMNS, _review_rows

    docs, qs = make_dataset(n, n, seed=7)
    corpus = folder / "docs.jsonl"
    corpus.write_text("".join(json.dumps({"doc_id": d, "title": f"문서 {d}", "content": c}, ensure_ascii=False)
                              + "\n" for d, c in docs), encoding="utf-8")
    records = []
    for i, q in enumerate(qs, 1):
        answerable = q.get("answerable", True)
        g = {"kind": "meaning" if answerable else "out_of_corpus", "pass": 1, "candidate": f"p1-c{i:04d}-1",
             "sections": [f"{q['relevant_doc_ids'][0]}#s0"] if answerable else [], "review": "pending"}
        rec = {"query_id": f"gen_{i:05d}", "question": q["question"], "type": "meaning" if answerable else
               "out_of_corpus", "answerable": answerable, "metadata": {"generation": g}}
        if answerable:
            rec.update(relevant_doc_ids=q["relevant_doc_ids"], evidence=q["evidence"], ground_truth=q["evidence"][0])
            g.update(overlap=0.5, anchors=[], style="lexical", answer_check={"method": "contained"})
        else:
            rec["ground_truth"] = DECLINE["ko"]
            g["ooc_check"] = {"retriever": "bm25", "top": [], "max": 1, "limit": 3}
        records.append(rec)
    qa = folder / "qa.jsonl"
    qa.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    (folder / "qa.card.json").write_text(json.dumps({"corpus": {"source": str(corpus), "language": "ko"}}),
                                         encoding="utf-8")
    (folder / "qa.review.csv").write_text("\ufeff" + _review_rows(records), encoding="utf-8")
    assert list(REVIEW_COLUMNS)[0] == "query_id"
    return qa


def _unique_question(k: int) -> str:
    """A question no other one resembles (the synthetic set's questions are near-duplicates of each other, which
    the generator would not keep and the edit check refuses)."""
    import random

    rng = random.Random(k)
    word = lambda: "".join(chr(0xAC00 + rng.randrange(11172)) for _ in range(3))  # noqa: E731
    return f"{word()} {word()}에서 {word()}를 바꾸려면 어떻게 하나요?"


def measure(url: str, n: int, repeats: int):
    import httpx

    c = httpx.Client(base_url=url, timeout=600, follow_redirects=False)
    rows = []

    def timed(label, fn, times=1):
        walls = []
        for k in range(times):
            t0 = time.perf_counter()
            r = fn(k)
            walls.append(time.perf_counter() - t0)
            why = re.search(r'<ul class="fails">(.*?)</ul>', r.text, re.S)
            assert r.status_code in (200, 303), (label, r.status_code, why.group(1) if why else r.text[:300])
        rows.append((label, walls))
        return r

    timed("home page", lambda k: c.get("/"), repeats)
    timed("set table, first 200 rows", lambda k: c.get("/review/1?status=all"), repeats)
    last = -(-n // 200)
    timed(f"set table, page {last}", lambda k: c.get(f"/review/1?status=all&page={last}"), repeats)
    page = timed("question screen, first", lambda k: c.get("/review/1/item?key=gen_00001"))
    csrf = re.search(r'name="csrf" value="([^"]+)"', page.text).group(1)
    step = max(1, n // (repeats + 1))
    timed("question screen", lambda k: c.get(f"/review/1/item?key=gen_{2 + k * step:05d}"), repeats)

    def accept(k):
        key = f"gen_{3 + k * step:05d}"
        ver = re.search(r'name="version" value="([^"]*)"', c.get(f"/review/1/item?key={key}").text).group(1)
        t0 = time.perf_counter()
        r = c.post("/review/1/decide", data={"csrf": csrf, "key": key, "action": "accept", "version": ver})
        accept.post.append(time.perf_counter() - t0)
        return c.get(r.headers["location"])
    accept.post = []
    timed("accept + next screen (incl. reading the form)", accept, repeats)
    rows.append(("  of which the POST (sheet rewritten)", accept.post))

    def edit(k):
        key = f"gen_{4 + k * step:05d}"
        text = c.get(f"/review/1/item?key={key}").text
        ver = re.search(r'name="version" value="([^"]*)"', text).group(1)
        return c.post("/review/1/decide", data={"csrf": csrf, "key": key, "action": "save_accept", "version": ver,
                                                "question": _unique_question(k)})
    timed("edit checked and saved (incl. reading the form)", edit, repeats)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--questions", type=int, default=5000)
    ap.add_argument("--repeats", type=int, default=15)
    args = ap.parse_args()
    print(compile_ragexam())
    from ragexam.serve import Catalog, ServeOptions, create_app, start

    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        qa = write_set(Path(tmp), args.questions)
        print(f"set: {args.questions} questions, {args.questions} documents, written in "
              f"{time.perf_counter() - t0:.1f} s")
        print(machine_line())
        options = ServeOptions(port=0)
        catalog = Catalog.of([qa])
        t0 = time.perf_counter()
        catalog.warm().join()
        warm = time.perf_counter() - t0
        running = start(create_app(catalog, options), options)
        try:
            rows = [("start-up warm-up (set, evidence index, Kiwi)", [warm])]
            rows += measure(running.url, args.questions, args.repeats)
        finally:
            running.stop()
    print(f"{'request':50} {'wall s: median (min-max of n)':>32}")
    for label, walls in rows:
        print(f"{label:50} {spread(walls):>32}")
    print(machine_line())


if __name__ == "__main__":
    main()
