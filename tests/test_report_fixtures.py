"""A generator of ``ragexam run --out DIR`` folders (format ``ragexam-run/1``) for the report,
history and compare tests, built from the bundled ``it_helpdesk`` set so the texts are real Korean
questions, evidence and chunks.  Plus the tests that its output follows docs/run-format.md.

``make_run(...)`` returns ``(summary, rows)``; ``write_run(folder, summary, rows)`` writes
``summary.json``, ``per_question.csv`` and ``runs/<slug>.trec``.  Everything is seeded.
"""

from __future__ import annotations

import csv
import json
import math
import re
from pathlib import Path

import numpy as np

from ragexam import stats
from ragexam.data import load_corpus, load_qa, normalize

PIPELINES = ("bm25 | paragraphs:400", "dense | paragraphs:400", "hybrid:bm25+dense | paragraphs:400")
KS = (1, 3, 5, 10)
METRICS = ("hit@1", "hit@3", "hit@5", "mrr", "ndcg@5", "p@5", "r@5", "f1@5", "rprec", "map")
BETAS = ("0.5", "1", "2")
DEPTH = 100
MISS_K = 5


def _paragraph_chunks():
    corpus = load_corpus("it_helpdesk")
    chunks = []
    for doc in corpus:
        for i, para in enumerate(p for p in doc.content.split("\n\n") if p.strip()):
            chunks.append({"chunk_id": f"{doc.doc_id}#{i}", "doc_id": doc.doc_id, "text": para})
    return chunks


def _per_question_metrics(r):
    """Metrics of one question with one relevance unit found first at rank ``r`` (None: not found)."""
    def within(k):
        return r is not None and r <= k
    m = {f"hit@{k}": float(within(k)) for k in (1, 3, 5)}
    m["mrr"] = 1.0 / r if r is not None else 0.0
    m["ndcg@5"] = 1.0 / math.log2(r + 1) if within(5) else 0.0
    m["p@5"] = 0.2 if within(5) else 0.0
    m["r@5"] = float(within(5))
    m["f1@5"] = 2 * 0.2 * 1.0 / 1.2 if within(5) else 0.0
    m["rprec"] = float(within(1))
    m["map"] = 1.0 / r if r is not None else 0.0
    return m


def _shorten(text, limit=300):
    return text if len(text) <= limit else text[:limit - 1] + "…"


def make_run(*, n_questions=30, pipelines=PIPELINES, skills=(0.55, 0.7, 0.85), seed=0, run_id=None,
             attribution=False, drop=(), n_resamples=200, n_permutations=500):
    """A consistent (summary, rows) pair for ``pipelines`` on the first ``n_questions`` questions.

    ``skills[i]`` is pipeline i's chance of ranking the evidence chunk within the top 5;
    ``drop`` lists query ids to leave out (to make question sets differ).
    """
    rng = np.random.default_rng(seed)
    qa = [q for q in load_qa("it_helpdesk") if q.query_id not in set(drop)][:n_questions]
    chunks = _paragraph_chunks()
    by_doc = {}
    for c in chunks:
        by_doc.setdefault(c["doc_id"], []).append(c)
    qrow, missed, rows = {}, {p: [] for p in pipelines}, []
    ranks = {p: {} for p in pipelines}
    tops = {p: {} for p in pipelines}
    for pi, pipe in enumerate(pipelines):
        skill = skills[pi % len(skills)]
        for q in qa:
            if not q.answerable:
                ranks[pipe][q.query_id] = None
                tops[pipe][q.query_id] = [chunks[i] for i in rng.choice(len(chunks), 10, replace=False)]
                continue
            ev = normalize(q.evidence[0])
            ev_chunk = next(c for c in by_doc[q.relevant_docs[0]] if ev in normalize(c["text"]))
            u = rng.random()
            if u < skill:
                r = int(min(5, rng.geometric(0.55)))
            elif u < skill + (1 - skill) * 0.7:
                r = int(rng.integers(6, DEPTH + 1))
            else:
                r = None
            ranks[pipe][q.query_id] = r
            others = [chunks[i] for i in rng.choice(len(chunks), 12, replace=False) if chunks[i] is not ev_chunk]
            top = others[:10]
            if r is not None and r <= 10:
                top = top[:r - 1] + [ev_chunk] + top[r - 1:9]
            tops[pipe][q.query_id] = top
    for pipe in pipelines:
        retriever, chunker = [s.strip() for s in pipe.split("|")]
        for q in qa:
            r = ranks[pipe][q.query_id]
            row = {"pipeline": pipe, "retriever": retriever, "chunker": chunker, "query_id": q.query_id,
                   "type": q.type, "answerable": q.answerable, "first_rank": r,
                   "unit_ranks": {f"ev{i}": (r if i == 1 else None) for i in range(1, len(q.evidence) + 1)},
                   "n_units": len(q.evidence)}
            metrics = _per_question_metrics(r) if q.answerable else {m: None for m in METRICS}
            row.update(metrics)
            row["top_ids"] = [c["chunk_id"] for c in tops[pipe][q.query_id]]
            rows.append(row)
            qrow[(pipe, q.query_id)] = row
            if q.answerable and (r is None or r > MISS_K):
                missed[pipe].append({
                    "query_id": q.query_id, "question": q.question, "type": q.type,
                    "evidence": list(q.evidence), "first_rank": r, "unit_ranks": row["unit_ranks"], "k": MISS_K,
                    "top": [{"rank": i + 1, "chunk_id": c["chunk_id"], "doc_id": c["doc_id"],
                             "score": round(float(20 - i * 1.3 - rng.random()), 3), "text": _shorten(c["text"])}
                            for i, c in enumerate(tops[pipe][q.query_id][:10])]})
    scored = [q for q in qa if q.answerable]
    types = {}
    for q in qa:
        types[q.type] = types.get(q.type, 0) + 1
    results, per_pipe_values = {}, {}
    for pipe in pipelines:
        vals = {m: np.array([qrow[(pipe, q.query_id)][m] for q in scored]) for m in METRICS}
        per_pipe_values[pipe] = vals
        res = {"n": len(scored), "metrics": {m: float(v.mean()) for m, v in vals.items()}, "ci95": {},
               "by_type": {}, "by_type_ci95": {}, "by_type_n": {}}
        for m, v in vals.items():
            ci = stats.bootstrap_ci(v, n_resamples=n_resamples, seed=seed)
            res["ci95"][m] = [ci.low, ci.high]
        for t in sorted({q.type for q in scored}):
            idx = [i for i, q in enumerate(scored) if q.type == t]
            res["by_type_n"][t] = len(idx)
            res["by_type"][t] = {m: float(v[idx].mean()) for m, v in vals.items()}
            res["by_type_ci95"][t] = {}
            for m, v in vals.items():
                ci = stats.bootstrap_ci(v[idx], n_resamples=n_resamples, seed=seed)
                res["by_type_ci95"][t][m] = [ci.low, ci.high]
        rk = [ranks[pipe][q.query_id] for q in scored]
        sweep, fb = {}, {b: {} for b in BETAS}
        for k in KS:
            hit = np.array([r is not None and r <= k for r in rk], dtype=float)
            p, rr = float((hit / k).mean()), float(hit.mean())
            f1 = float((np.where(hit > 0, 2 * (1 / k) / (1 / k + 1), 0.0)).mean())
            sweep[str(k)] = {"p": round(p, 4), "r": round(rr, 4), "f1": round(f1, 4)}
            for b in BETAS:
                bb = float(b) ** 2
                fb[b][str(k)] = round(float(np.where(hit > 0, (1 + bb) * (1 / k) / (bb / k + 1), 0.0).mean()), 4)
        res["sweep"] = sweep
        res["fbeta"] = fb
        res["signature"] = f"{pipe}|k:1,3,5,10|depth:{DEPTH}|bs:{n_resamples}|seed:{seed}|version:0.1.0"
        results[pipe] = res
    comparisons = []
    base = pipelines[0]
    for pipe in pipelines[1:]:
        cmps = [stats.compare(per_pipe_values[base][m], per_pipe_values[pipe][m], names=(base, pipe),
                              n_resamples=n_resamples, n_permutations=n_permutations, seed=seed) for m in METRICS]
        adj = stats.holm([c.p_value for c in cmps])
        for m, c, ph in zip(METRICS, cmps, adj):
            comparisons.append({"baseline": base, "pipeline": pipe, "metric": m, "diff": c.diff,
                                "ci95": [c.ci_low, c.ci_high], "p_value": c.p_value, "p_holm": float(ph),
                                "method": c.method, "n": c.n, "mdd": c.mdd, "resolution": c.resolution,
                                "verdict": c.verdict})
    summary = {
        "format": "ragexam-run/1",
        "run_id": run_id or f"20261130T1440{seed % 60:02d}Z-{seed:06x}",
        "created": f"2026-11-30T14:40:{seed % 60:02d}Z",
        "ragexam_version": "0.1.0",
        "config": {"corpus": "it_helpdesk", "qa": "it_helpdesk",
                   "retrievers": [p.split(" | ")[0] for p in pipelines], "chunkers": ["paragraphs:400"],
                   "relevance": "evidence", "k": list(KS), "depth": DEPTH, "ignore_punctuation": False,
                   "overlap": None, "seed": seed, "n_resamples": n_resamples, "n_permutations": n_permutations},
        "dataset": {"corpus": "it_helpdesk", "qa": "it_helpdesk", "corpus_sha256": "c" * 64,
                    "qa_sha256": "a" * 64, "n_documents": 18, "n_questions": len(qa),
                    "n_answerable": len(scored), "n_out_of_corpus": len(qa) - len(scored),
                    "n_scored": len(scored), "types": types, "n_chunks": {"paragraphs:400": len(chunks)}},
        "pipelines": [{"name": p, "retriever": p.split(" | ")[0], "chunker": "paragraphs:400",
                       "signature": results[p]["signature"]} for p in pipelines],
        "results": results,
        "comparisons": comparisons,
        "missed": missed,
        "unmatched_evidence": [{"query_id": "hq_040", "evidence": "예시 근거 <b>문장</b>", "chunker": "chars:200:0",
                                "reason": "cut by a chunk boundary",
                                "cuts": [{"doc_id": "hd_05", "offset": 400, "chunks": ["hd_05#1", "hd_05#2"]}]}],
    }
    if attribution:
        from ragexam.analysis.answers.diagnosis import LABELS as stages

        summary["attribution"] = {p: {t: {s: int(rng.integers(0, 12)) for s in stages} for t in types}
                                  for p in pipelines}
    return summary, rows


def _cell(v):
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (dict, list)):
        return json.dumps(v, ensure_ascii=False)
    return str(v)


def write_run(folder, summary, rows):
    """Write the run folder the way ``ragexam run --out`` does; returns the folder as a Path."""
    folder = Path(folder)
    (folder / "runs").mkdir(parents=True, exist_ok=True)
    data = summary.to_dict() if hasattr(summary, "to_dict") else summary
    (folder / "summary.json").write_text(json.dumps(data, ensure_ascii=False, indent=2), encoding="utf-8")
    cols = ["pipeline", "retriever", "chunker", "query_id", "type", "answerable", "first_rank", "unit_ranks",
            "n_units", *METRICS, "top_ids"]
    with (folder / "per_question.csv").open("w", encoding="utf-8", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(cols)
        for r in rows:
            w.writerow([_cell(r.get(c)) for c in cols])
    for pipe in {r["pipeline"] for r in rows}:
        slug = re.sub(r"[^A-Za-z0-9._-]", "_", pipe)
        with (folder / "runs" / f"{slug}.trec").open("w", encoding="utf-8") as fh:
            for r in rows:
                if r["pipeline"] == pipe:
                    for i, cid in enumerate(r["top_ids"], 1):
                        fh.write(f"{r['query_id']} Q0 {cid} {i} {20 - i} {slug}\n")
    return folder


# --- the generator's output follows the contract ---------------------------------------------


def test_fixture_is_consistent(tmp_path):
    from ragexam.storage.runfolder import read_run_folder

    summary, rows = make_run(n_questions=30, seed=3)
    run = read_run_folder(write_run(tmp_path / "r", summary, rows))
    assert run.summary == json.loads(json.dumps(summary))
    assert len(run.per_question) == 30 * len(PIPELINES)
    for pipe in PIPELINES:
        pq = [r for r in run.per_question if r["pipeline"] == pipe and r["answerable"]]
        assert len(pq) == summary["results"][pipe]["n"]
        for m in METRICS:
            assert math.isclose(np.mean([r[m] for r in pq]), summary["results"][pipe]["metrics"][m])
        n_missed = sum(1 for r in pq if r["first_rank"] is None or r["first_rank"] > MISS_K)
        assert n_missed == len(summary["missed"][pipe])
    ooc = [r for r in run.per_question if not r["answerable"]]
    assert ooc and all(r["first_rank"] is None and r["hit@1"] is None for r in ooc)


# --- a real run of the bundled demo, shared by the report tests --------------------------------

_DEMO = {}


def real_demo_dir():
    """A folder written by a real run of the bundled demo (``ragexam demo --out``: bm25, dense and
    hybrid on it_helpdesk), made once per test session and removed at exit."""
    if "dir" not in _DEMO:
        import atexit
        import shutil
        import tempfile

        from ragexam.analysis.exam.run import run

        base = Path(tempfile.mkdtemp(prefix="ragexam-demo-"))
        atexit.register(shutil.rmtree, base, True)
        result = run("it_helpdesk", "it_helpdesk", ["bm25", "dense", "hybrid:bm25+dense"], progress=False)
        result.save(base / "run")
        _DEMO["dir"] = base / "run"
    return _DEMO["dir"]
