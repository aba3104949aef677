"""Golden outputs: every number ``ragexam run`` computes and prints on the bundled sets, compared field by field
with files recorded before the typed-journey redesign (issue 20), so a refactor cannot move a number.

Each case runs in process with deterministic pipelines (BM25 with Kiwi and whitespace tokens, their fusion, a
results file from another chunker, loopback rerank services that score by evidence containment) and compares

* ``summary.json`` (minus the run's id, time, version, timing and the stub's port) field by field,
* the per-question rows, and the files a run folder holds (``per_question.csv``, ``chunks.jsonl``, ``runs/*``:
  by their SHA-256),
* the console rendering at 120 and 80 columns.

``RAGEXAM_GOLDEN_UPDATE=1 pytest tests/test_golden_outputs.py`` rewrites the files (review the diff: a changed
number is a changed result).
"""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import pytest

import test_grade_results as G
from json_stub import json_server
from test_rerank import RerankServer

import ragexam

GOLDEN = Path(__file__).parent / "data" / "golden"
UPDATE = os.environ.get("RAGEXAM_GOLDEN_UPDATE") == "1"
#: what differs between two runs of the same settings
VOLATILE = ("run_id", "created", "ragexam_version", "timing")
OPTS = dict(progress=False, n_resamples=500, n_permutations=1000)


@pytest.fixture(scope="module")
def services(tmp_path_factory):
    srv = RerankServer()
    url, shutdown = json_server(lambda path, body, headers: srv.handle(path, body))
    folder = tmp_path_factory.mktemp("golden")
    qa, corpus = G.load_qa("it_helpdesk"), G.load_corpus("it_helpdesk")
    chunks = [{"text": t, "doc_id": d.doc_id, "id": f"{d.doc_id}/{j}"}
              for d in corpus for j, t in enumerate(G.recursive_split(d.content))]
    results = G.write_results(folder / "mine.jsonl", qa, chunks, "mine", shuffle_seed=3, drop=("hq_010",))
    yield {"url": url, "results": results, "folder": folder}
    shutdown()


def _cases(s):
    url, results = s["url"], s["results"]
    return {
        "helpdesk": dict(corpus="it_helpdesk", qa="it_helpdesk",
                         retrievers=["bm25", "bm25:whitespace", "hybrid:bm25+bm25:whitespace",
                                     f"bm25>rerank:http:{url}/cohere?timeout=5&backoff=0"],
                         chunkers=["paragraphs:400", "sentences"],
                         retrieved=[str(results), f"{results}>rerank:http:{url}/tei?timeout=5&backoff=0"]),
        "doc": dict(corpus="ai_concepts", qa="ai_concepts", retrievers=["bm25", "bm25:whitespace"],
                    chunkers=["paragraphs:400", "whole"], relevance="doc", k="1,5", miss_k=3),
    }


def _scrub(text: str, s) -> str:
    """The stub's port and the temporary folder replaced by fixed words; measured latencies by ``T``."""
    import re

    text = text.replace(s["url"], "http://STUB").replace(str(s["folder"]), "TMP")
    return re.sub(r"(median|p95) [0-9.]+ s", r"\1 T s", text)


def _summary(summary, s):
    """The summary without its volatile fields; a pipeline's file-name slug (which holds the stub's port) is
    replaced by its position."""
    out = _drop_measured({k: v for k, v in summary.items() if k not in VOLATILE})
    out["pipelines"] = [dict(p, slug=f"P{i}") for i, p in enumerate(out["pipelines"], 1)]
    return json.loads(_scrub(json.dumps(out, ensure_ascii=False, sort_keys=True), s))


def _drop_measured(obj):
    """``obj`` without what a run measures rather than computes: latencies (seconds) and call usage (which
    depends on the cache's state)."""
    if isinstance(obj, dict):
        return {k: _drop_measured(v) for k, v in obj.items() if k not in ("latency", "usage")}
    if isinstance(obj, list):
        return [_drop_measured(v) for v in obj]
    return obj


def _console(summary, width: int) -> str:
    from rich.console import Console

    from ragexam.report.console_run import render_run

    buf = io.StringIO()
    render_run(dict(summary, run_id="RUN-ID"), Console(file=buf, width=width, force_terminal=False, color_system=None, soft_wrap=False))
    return buf.getvalue()


def _folder_files(folder: Path, s, slugs):
    """SHA-256 of each file of a saved run folder but summary.json (compared field by field above), the TREC
    files named by their pipeline's position."""
    import hashlib

    out = {}
    for p in sorted(folder.rglob("*")):
        if p.is_file() and p.name != "summary.json":
            name = p.relative_to(folder).as_posix()
            for i, slug in enumerate(slugs, 1):
                if name.startswith(f"runs/{slug}."):
                    name = f"runs/P{i}." + name[len(f"runs/{slug}."):]
            text = _scrub(p.read_text(encoding="utf-8"), s)
            out[name] = hashlib.sha256(text.encode("utf-8")).hexdigest()
    return out


def _compare(name: str, got, path: Path):
    if UPDATE:
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(got, str):
            path.write_text(got, encoding="utf-8")
        else:
            path.write_text(json.dumps(got, ensure_ascii=False, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        return
    assert path.exists(), f"no golden file {path}; run with RAGEXAM_GOLDEN_UPDATE=1 once"
    if isinstance(got, str):
        assert got == path.read_text(encoding="utf-8"), f"{name} differs from {path}"
        return
    want = json.loads(path.read_text(encoding="utf-8"))
    _same(want, got, name)


def _same(want, got, where: str):
    """Field-by-field equality with the path of the first difference in the message."""
    if isinstance(want, dict):
        assert isinstance(got, dict), f"{where}: expected an object, got {type(got).__name__}"
        assert sorted(want) == sorted(got), (f"{where}: keys differ: missing {sorted(set(want) - set(got))}, "
                                             f"new {sorted(set(got) - set(want))}")
        for k in want:
            _same(want[k], got[k], f"{where}.{k}")
    elif isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want), f"{where}: lists differ in length"
        for i, (a, b) in enumerate(zip(want, got)):
            _same(a, b, f"{where}[{i}]")
    else:
        assert want == got, f"{where}: expected {want!r}, got {got!r}"


@pytest.mark.parametrize("case", ["helpdesk", "doc"])
def test_run_outputs_equal_the_golden_files(services, case, tmp_path):
    settings = dict(_cases(services)[case])
    res = ragexam.run(settings.pop("corpus"), settings.pop("qa"),
                      seed=12345, **settings, **OPTS)
    base = GOLDEN / case
    summary = res.summary if isinstance(res.summary, dict) else res.summary.to_dict()
    _compare("summary", _summary(summary, services), base / "summary.json")
    rows = [r.to_dict() for r in res.per_question]
    _compare("per_question", json.loads(_scrub(json.dumps(rows, ensure_ascii=False), services)),
             base / "per_question.json")
    res.save(tmp_path / "run")
    _compare("folder", _folder_files(tmp_path / "run", services, [p["slug"] for p in summary["pipelines"]]), base / "folder.json")
    for width in (120, 80):
        _compare(f"console{width}", _scrub(_console(summary, width), services), base / f"console{width}.txt")
