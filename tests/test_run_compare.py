"""Comparisons of pipelines with the baseline: identical pipelines, a clearly better one, Holm."""

from __future__ import annotations

import json

import pytest

import ragexam
from test_run_api import RANKED, FixedRetriever, write_set


@pytest.fixture()
def files(tmp_path):
    return write_set(tmp_path)


def test_identical_pipelines_no_difference(files):
    corpus, qa = files
    res = ragexam.run(corpus, qa, retrievers=[FixedRetriever(), FixedRetriever()], chunkers=["paragraphs"],
                      k=(1, 3, 5), n_resamples=300, n_permutations=300)
    comps = res.summary["comparisons"]
    assert [c["metric"] for c in comps] == res.main_metrics
    for c in comps:
        assert c["diff"] == 0.0 and c["ci95"] == [0.0, 0.0]
        assert c["p_value"] == 1.0 and c["p_holm"] == 1.0
        # stats.verdict's wording for identical per-question values: no minimum detectable difference to state
        assert c["verdict"].startswith("no difference")
        assert "identical values on each of the 3 questions" in c["verdict"] and "detectable" not in c["verdict"]
        assert c["mdd"] is None
        assert c["reading"] == "same" and c["within_noise"] is True
        assert c["n"] == 3 and c["resolution"] == pytest.approx(1 / 3)


def test_better_pipeline_and_holm(tmp_path):
    # 40 questions; the baseline finds the evidence at rank 2, the other at rank 1
    corpus = tmp_path / "c.jsonl"
    qa = tmp_path / "q.jsonl"
    docs = [{"doc_id": f"d{i}", "content": f"fact{i} is here."} for i in range(40)]
    corpus.write_text("".join(json.dumps(d) + "\n" for d in docs), encoding="utf-8")
    qs = [{"query_id": f"q{i}", "question": f"question {i}", "evidence": f"fact{i} is here",
           "type": "meaning" if i % 2 else "lexical"} for i in range(40)]
    qa.write_text("".join(json.dumps(q) + "\n" for q in qs), encoding="utf-8")
    good = {f"question {i}": [f"d{i}#0", f"d{(i + 1) % 40}#0"] for i in range(40)}
    bad = {f"question {i}": [f"d{(i + 1) % 40}#0", f"d{i}#0"] for i in range(40)}
    res = ragexam.run(corpus, qa, retrievers=[FixedRetriever(bad, "bad"), FixedRetriever(good, "good")],
                      chunkers=["whole"], k=(1, 3), n_resamples=500, n_permutations=2000)
    by_metric = {c["metric"]: c for c in res.summary["comparisons"]}
    c = by_metric["hit@1"]
    assert c["diff"] == 1.0 and c["p_value"] > 0  # never exactly 0
    assert c["p_value"] == pytest.approx(1 / 2001)  # approximate test: (0 + 1) / (n + 1)
    assert c["verdict"].startswith("good | whole is better than bad | whole")
    assert c["reading"] == "better"
    assert c["p_holm"] >= c["p_value"]
    assert by_metric["hit@3"]["diff"] == 0.0 and by_metric["hit@3"]["reading"] == "same"
    assert res.summary["results"]["good | whole"]["by_type_n"] == {"lexical": 20, "meaning": 20}


def test_single_pipeline_has_no_comparisons(files):
    corpus, qa = files
    res = ragexam.run(corpus, qa, retrievers=[FixedRetriever()], chunkers=["paragraphs"], n_resamples=50)
    assert res.summary["comparisons"] == []
    assert RANKED  # the fixture set is shared with test_run_api
