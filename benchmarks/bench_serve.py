"""Benchmark: ``ragexam serve`` at scale -- a 5,000-question review, a history of 10,000 records, a 5,000-question run.

Three parts, each against the real server (uvicorn on a free loopback port, in a thread of this process) asked
over HTTP as a browser would; each line is the median (min-max of n) wall seconds.

**Review** (``--questions``): a seeded synthetic Korean set (``_korean.py``: each question quoting one sentence of
its own paragraph, 10% out of corpus) written as ``ragexam generate`` writes one (the set with verification
records, its card and review sheet; no model is called).  After the warm-up (the set, the corpus's evidence index,
Kiwi): the home page; a set's table (first and last page of 200 rows); a question's screen (the first, then
``--repeats`` others); an accept (the POST that rewrites the sheet, then the next screen); an edit that passes the
checks.

**Results** (``--run-questions``, ``--records``): ``ragexam.run`` on a synthetic set of ``--run-questions``
questions over as many paragraphs (two pipelines, ``bm25`` and ``bm25:whitespace``, ``paragraphs:400``, the
default statistics), written as a run folder and recorded; then a history of ``--records`` records: 200 records
of realistic size (3 pipelines, every metric with its interval, per type, comparisons, 5 missed questions per
pipeline with their chunk texts: about 25 KB of JSON, more than a database page, as real summaries are) written
with ``History.record_run``, copied by SQL to ``--records`` with new ids, dates and headline means (per-question
rows are left out: they live in another table, which no listing reads).  Measured: the runs list (first page,
last page, sorted by the headline, filtered by text and by dataset), the home page, the run page of the
5,000-question run (the first open reads the folder; the next ones are served from memory) and of its history
record, a page of its missed questions, a missed question, and its two pipelines compared (paired bootstrap and
randomization over every metric on the shared questions, Holm; first and cached).

    python benchmarks/bench_serve.py [--questions 5000] [--repeats 15] [--records 10000] [--run-questions 5000]
                                     [--skip review|results] [--data-dir DIR]

``--data-dir`` keeps the results part's run and history there and uses them again when they exist (writing the
5,000-question run takes about 3 minutes on a quiet 2-core machine).
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


#: the pages are asked in English (as an English browser does): the measures below read their English texts
ENGLISH = {"accept-language": "en"}


def write_set(folder: Path, n: int) -> Path:
    """The set, its card and its review sheet, as ``generate`` writes them; returns the set's path."""
    from ragexam.questions.output import DECLINE, REVIEW_COLUMNS, _review_rows

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

    c = httpx.Client(base_url=url, timeout=600, follow_redirects=False, headers=ENGLISH)
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


def review(args) -> None:
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
    _table(rows)


def _table(rows) -> None:
    print(f"{'request':58} {'wall s: median (min-max of n)':>32}")
    for label, walls in rows:
        print(f"{label:58} {spread(walls):>32}")
    print(machine_line())


# -- results: a 5,000-question run and a history of 10,000 records ----------------------------------------------


def make_run(folder: Path, n: int) -> Path:
    """``ragexam.run`` on a synthetic set of ``n`` questions over ``n`` paragraphs, saved to ``folder/run``."""
    from _korean import write_dataset

    import ragexam

    corpus, qa = write_dataset(folder / "data", n, n, seed=11)
    t0 = time.perf_counter()
    res = ragexam.run(str(corpus), str(qa), retrievers=["bm25", "bm25:whitespace"], chunkers=["paragraphs:400"],
                      progress=False)
    res.save(folder / "run")
    print(f"run: {n} questions, {len(res.pipelines)} pipelines, run and saved in {time.perf_counter() - t0:.1f} s "
          f"(summary.json {(folder / 'run' / 'summary.json').stat().st_size / 1e6:.1f} MB, "
          f"{sum(len(v) for v in res.summary.missed.values())} missed questions)")
    return folder / "run"


DATASETS = ["it_helpdesk", "ai_concepts", "hr_policies", "사내규정", "고객센터 FAQ", "법무 문서", "제품 매뉴얼",
            "kor_squad"]
PIPES = ["bm25 | paragraphs:400", "dense | paragraphs:400", "hybrid:bm25+dense | paragraphs:400",
         "bm25 | chars:300:30", "dense | 문단:800", "bm25>rerank:bge | paragraphs:400"]


def _summary(i: int, rng, texts) -> dict:
    """A realistic run summary (module docstring) with seeded values."""
    metrics = [f"{m}@{k}" for m in ("hit", "p", "r", "f1", "ndcg") for k in (1, 3, 5, 10)] + ["mrr", "rprec", "map"]
    pipes = [PIPES[j] for j in rng.choice(len(PIPES), 3, replace=False)]

    def vals(base):
        out, ci = {}, {}
        for m in metrics:
            v = float(min(1.0, max(0.0, base + rng.normal(0, 0.08))))
            out[m], ci[m] = v, [max(0.0, v - 0.1), min(1.0, v + 0.1)]
        return out, ci

    results, missed = {}, {}
    for p in pipes:
        m, ci = vals(rng.uniform(0.3, 0.9))
        by_type = {t: vals(rng.uniform(0.3, 0.9))[0] for t in ("lexical", "meaning", "multi")}
        results[p] = {"n": 65, "metrics": m, "ci95": ci, "by_type": by_type, "by_type_n": {"lexical": 30, "meaning": 25,
                                                                                         "multi": 10}}
        missed[p] = [{"query_id": f"q{j:03d}", "question": texts[(i + j) % len(texts)][:60], "type": "meaning",
                      "evidence": [texts[(i + j + 1) % len(texts)][:50]], "first_rank": 7, "k": 5,
                      "top": [{"rank": r + 1, "chunk_id": f"d{j}#{r}", "doc_id": f"d{j}",
                               "text": texts[(i * 7 + j * 3 + r) % len(texts)][:200]} for r in range(3)]}
                     for j in range(5)]
    comps = [{"baseline": pipes[0], "pipeline": p, "metric": m, "diff": 0.01, "ci95": [-0.05, 0.07], "p_value": 0.4,
              "p_holm": 0.9, "verdict": "no detectable difference"} for p in pipes[1:] for m in metrics[:11]]
    ds = DATASETS[i % len(DATASETS)]
    return {"format": "ragexam-run/3", "run_id": f"base{i:04d}",
            "created": f"2026-{1 + i % 12:02d}-{1 + i % 28:02d}T10:00:00Z",
            "config": {"corpus": ds, "qa": ds, "miss_k": 5, "k": [1, 3, 5, 10]}, "main_metrics": metrics[:11],
            "dataset": {"corpus": ds, "qa": ds, "corpus_sha256": f"{i % 8:064d}", "qa_sha256": f"{i % 8:064d}"},
            "pipelines": [{"name": p} for p in pipes], "results": results, "comparisons": comps, "missed": missed}


def make_history(path: Path, n: int) -> None:
    """200 realistic records through ``History.record_run``, copied by SQL to ``n`` (module docstring)."""
    import sqlite3

    import numpy as np
    from _korean import make_dataset

    from ragexam.storage.history import History

    rng = np.random.default_rng(3)
    texts = [t for _, t in make_dataset(300, 1, seed=5)[0]]
    hist = History(path)
    t0 = time.perf_counter()
    base = min(200, n)
    for i in range(base):
        hist.record_run(_summary(i, rng, texts), [])
    con = sqlite3.connect(str(path), isolation_level=None)
    cols = [r[1] for r in con.execute("PRAGMA table_info(runs)")]
    rows = con.execute(f"SELECT {', '.join(cols)} FROM runs").fetchall()
    res = con.execute("SELECT run_id, pipeline, metric, mean, ci_low, ci_high FROM results").fetchall()
    by_run: dict = {}
    for r in res:
        by_run.setdefault(r[0], []).append(r)
    con.execute("BEGIN")
    for copy in range(1, -(-n // base)):
        for j, row in enumerate(rows):
            if copy * base + j >= n:
                break
            d = dict(zip(cols, row))
            source, rid = d["id"], f"{d['id']}-{copy:03d}"
            jitter = float(rng.normal(0, 0.05))
            moved = lambda v: None if v is None else min(1.0, max(0.0, v + jitter))  # noqa: E731
            d.update(id=rid, recorded=f"2026-{1 + copy % 12:02d}-{1 + copy % 28:02d}T{copy % 24:02d}:00:00.000000Z",
                     headline=json.dumps({p: moved(v) for p, v in json.loads(d["headline"]).items()}))
            con.execute(f"INSERT INTO runs ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
                        [d[c] for c in cols])
            con.executemany("INSERT INTO results VALUES (?,?,?,?,?,?)",
                            [(rid, p, m, moved(v), lo, hi) for _, p, m, v, lo, hi in by_run[source]])
    con.execute("COMMIT")
    total = con.execute("SELECT COUNT(*) FROM runs").fetchone()[0]
    con.close()
    print(f"history: {total} records ({base} recorded, the rest copied), {path.stat().st_size / 1e6:.0f} MB, "
          f"written in {time.perf_counter() - t0:.1f} s")


def measure_results(url: str, run_key: str, record_key: str, pipes, repeats: int, n: int):
    import httpx
    from urllib.parse import urlencode

    c = httpx.Client(base_url=url, timeout=900, follow_redirects=False, headers=ENGLISH)
    rows = []

    def timed(label, path, times=repeats, path_of=None):
        walls = []
        for k in range(times):
            t0 = time.perf_counter()
            r = c.get(path if path_of is None else path_of(k))
            walls.append(time.perf_counter() - t0)
            assert r.status_code == 200, (label, r.status_code, r.text[:500])
        rows.append((label, walls))
        return r

    timed(f"run page ({n} questions), first open: folder read", f"/run/{run_key}", 1)
    page = timed("run page, again (from memory)", f"/run/{run_key}")
    n_pages = int(re.search(r"questions 1–100 of [\d,]+ \(page 1 of ([\d,]+)\)", page.text).group(1).replace(",", ""))
    timed(f"run page, missed questions page {n_pages // 2} of {n_pages}", f"/run/{run_key}?page={n_pages // 2}")
    link = re.search(r'class="open-missed" href="([^"]+)"', page.text).group(1).replace("&amp;", "&")
    timed("a missed question", link)
    first = timed("runs list, page 1 of 50 rows (once)", "/runs", 1)
    pages = int(re.search(r"page 1 of ([\d,]+)", first.text).group(1).replace(",", ""))
    timed("runs list, page 1 again (kept)", "/runs")
    # a page not asked before each time: the listing's SQL on every request (deep pages, then the next pages)
    step = max(1, pages // (repeats + 1))
    each = lambda label, path, s=1: timed(label, None, repeats, lambda k: path + f"page={2 + k * s}")  # noqa: E731
    each(f"runs list, another page of {pages} each time (2 to {2 + (repeats - 1) * step})", "/runs?", step)
    each("  sorted by the headline", "/runs?sort=headline&", step)
    each("  sorted by dataset, oldest first", "/runs?sort=dataset&order=asc&")
    each("  text filter 'rerank'", "/runs?q=rerank&")
    each("  dataset filter", "/runs?" + urlencode({"dataset": DATASETS[3]}) + "&")
    timed("home page", "/")
    timed("run page of its history record, first open", f"/run/{record_key}", 1)
    timed("run page of its history record, again", f"/run/{record_key}")
    pair = "/compare?" + urlencode({"a": run_key, "b": run_key, "pa": pipes[0], "pb": pipes[1]})
    timed("compare its two pipelines, first (statistics)", pair, 1)
    timed("compare, again (kept)", pair)
    return rows, len(page.text)


def results(args) -> None:
    from ragexam.serve import Catalog, ServeOptions, create_app, start
    from ragexam.storage.history import History
    from ragexam.storage.runfolder import read_run_folder

    with tempfile.TemporaryDirectory() as tmp:
        where = Path(args.data_dir) if args.data_dir else Path(tmp)
        folder = where / "run"
        if not (folder / "summary.json").is_file():
            make_run(where, args.run_questions)
        history = where / "history.sqlite3"
        if not history.exists():
            make_history(history, args.records - 1)
            data = read_run_folder(folder)
            History(history).record_run(data.summary, data.per_question)
        data = read_run_folder(folder)
        rid = data.run_id
        print(f"kept in {where}" if args.data_dir else "", machine_line(), sep="\n" if args.data_dir else "")
        options = ServeOptions(port=0)
        running = start(create_app(Catalog.of([], None, [folder], history), options), options)
        try:
            rows, size = measure_results(running.url, "f1", f"h:{rid}", data.pipelines, args.repeats,
                                         args.run_questions)
        finally:
            running.stop()
        print(f"run page: {size / 1e6:.2f} MB of HTML (100 missed questions a page)")
    _table(rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--questions", type=int, default=5000)
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--records", type=int, default=10000)
    ap.add_argument("--run-questions", type=int, default=5000)
    ap.add_argument("--skip", choices=("review", "results"), default=None)
    ap.add_argument("--data-dir", default=None)
    args = ap.parse_args()
    print(compile_ragexam())
    if args.skip != "review":
        review(args)
    if args.skip != "results":
        results(args)


if __name__ == "__main__":
    main()
