"""``ragexam answer``: answers from a run's top-k chunks through a local OpenAI-compatible stub."""

from __future__ import annotations

import json

import pytest

from test_judge_stub import API_KEY, metric_of, start_stub
from test_score_fixtures import DOCS, QA, write_case, write_jsonl

from ragexam.analysis.answers.files import load_answers
from ragexam.cli import main


@pytest.fixture
def stub(monkeypatch):
    s, shutdown = start_stub()
    monkeypatch.setenv("OPENAI_API_KEY", API_KEY)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    yield s
    shutdown()


def cli(argv, capsys):
    with pytest.raises(SystemExit) as ei:
        main(argv)
    out = capsys.readouterr()
    return ei.value.code, out.out, out.err


def test_answer_then_score(stub, tmp_path, capsys):
    qa, corpus, _, run = write_case(tmp_path)
    template = tmp_path / "t.txt"
    template.write_text("자료:\n{contexts}\n\n물음: {question}\n중괄호 {그대로} 둡니다.", encoding="utf-8")
    out = tmp_path / "gen.jsonl"
    base = ["answer", "--run", str(run), "--model", "stub-gen", "--base-url", stub.base_url, "--out", str(out),
            "--cache-dir", str(tmp_path / "cache"), "--template", str(template)]
    code, text, err = cli(base + ["--contexts", "2", "--dry-run"], capsys)
    assert code == 0 and "calls to make: 12" in text and "4 share a prompt" in text and stub.requests == []
    assert "(ragexam-run/1) does not store its chunk texts; they were rebuilt by re-chunking" in text
    code, text, err = cli(base + ["--contexts", "2"], capsys)
    assert code == 0, err
    assert len(stub.requests) == 12 and all(metric_of(b) == "answer" for b in stub.requests)
    recs = load_answers(out)
    assert [(r.pipeline, r.query_id) for r in recs][:2] == [("P1", "q1"), ("P1", "q2")] and len(recs) == 16
    r1 = recs[0]
    assert r1.k == 2 and r1.context_ids == ("d1#0", "d2#0") and r1.contexts == (DOCS[0]["content"], DOCS[1]["content"])
    assert r1.metadata["model"] == "stub-gen" and len(r1.metadata["template_sha"]) == 16
    prompts = [b["messages"][1]["content"] for b in stub.requests]
    prompt = next(p for p in prompts if f"물음: {QA[0]['question']}" in p)
    assert prompt.startswith("자료:\n[1] " + DOCS[0]["content"]) and "중괄호 {그대로} 둡니다." in prompt
    # rerun: all from the cache
    code, text, err = cli(base + ["--contexts", "2"], capsys)
    assert code == 0 and len(stub.requests) == 12 and "cached: 16" in text
    # the generated answers carry their contexts: the judge grades them and retrieval comes from the run
    code, text, err = cli(["score", "--qa", str(qa), "--answers", str(out), "--run", str(run), "--judge-model",
                           "stub-judge", "--base-url", stub.base_url, "--cache-dir", str(tmp_path / "cache"),
                           "--metric", "context_relevance", "--json"], capsys)
    assert code == 0, err
    data = json.loads(text)
    cr = data["judge"]["summary"]["P1"]["context_relevance"]
    assert (cr["n"], cr["n_judged"]) == (8, 8)
    # k comes from the answers (2): q3 at rank 2 is retrieved, q5 at rank 3 is not
    q = {(x["pipeline"], x["query_id"]): x for x in data["attribution"]["questions"]}
    assert q[("P1", "q3")]["retrieved"] is True and q[("P1", "q5")]["retrieved"] is False


def test_answer_failures_are_recorded_not_dropped(stub, tmp_path, capsys):
    qa, corpus, _, run = write_case(tmp_path)
    rows = [dict(q) for q in QA]
    rows[2]["question"] += " [[s:r500]]"
    qa2 = write_jsonl(tmp_path / "qa2.jsonl", rows)
    out = tmp_path / "gen.jsonl"
    code, text, err = cli(["answer", "--run", str(run), "--qa", str(qa2), "--model", "m", "--base-url", stub.base_url,
                           "--out", str(out), "--no-cache", "--max-retries", "0", "--pipeline", "P1"], capsys)
    assert code == 1 and "1 failed" in text
    recs = {r.query_id: r for r in load_answers(out)}
    assert len(recs) == 8 and recs["q3"].answer is None and recs["q3"].error.startswith("server_error")
    code, text, err = cli(["score", "--qa", str(qa2), "--answers", str(out), "--run", str(run), "--correct-if",
                           "chrf>=0.5", "--json"], capsys)
    data = json.loads(text)
    q3 = next(x for x in data["attribution"]["questions"] if x["query_id"] == "q3")
    assert q3["label"] == "unjudged" and q3["reason"].startswith("no_answer (server_error")


def test_template_needs_both_placeholders(stub, tmp_path, capsys):
    qa, corpus, _, run = write_case(tmp_path)
    t = tmp_path / "t.txt"
    t.write_text("only {question}", encoding="utf-8")
    code, text, err = cli(["answer", "--run", str(run), "--model", "m", "--base-url", stub.base_url, "--out",
                           str(tmp_path / "x.jsonl"), "--template", str(t)], capsys)
    assert code == 2 and "{contexts}" in err and stub.requests == []
    code, text, err = cli(["answer", "--run", str(run), "--model", "m", "--base-url", stub.base_url, "--out",
                           str(tmp_path / "x.jsonl"), "--contexts", "11"], capsys)
    assert code == 2 and "from 1 to 10" in err


def test_answer_from_a_run_folder_needs_no_corpus(stub, tmp_path, capsys):
    """A ``ragexam-run/2`` folder stores the chunk texts it saw: answering and scoring from it re-chunk
    nothing, so they work after the corpus is gone."""
    qa, corpus, _, _ = write_case(tmp_path)
    run = tmp_path / "run2"
    code, _, err = cli(["run", "--corpus", str(corpus), "--qa", str(qa), "-r", "bm25:whitespace", "-c", "whole",
                        "--out", str(run), "--no-history", "--n-resamples", "20", "--n-permutations", "20"], capsys)
    assert code == 0, err
    corpus.unlink()
    out = tmp_path / "gen.jsonl"
    code, text, err = cli(["answer", "--run", str(run), "--model", "m", "--base-url", stub.base_url, "--out", str(out),
                           "--no-cache", "--contexts", "2"], capsys)
    assert code == 0, err
    assert "re-chunking" not in text
    text_of = {f"{d['doc_id']}#0": d["content"] for d in DOCS}
    top = {}
    import csv

    with open(run / "per_question.csv", encoding="utf-8", newline="") as fh:
        for r in csv.DictReader(fh):
            top[r["query_id"]] = json.loads(r["top_ids"])[:2]
    recs = load_answers(out)
    assert len(recs) == len(QA)
    for r in recs:
        assert list(r.context_ids) == top[r.query_id] and list(r.contexts) == [text_of[c] for c in top[r.query_id]]
    code, text, err = cli(["score", "--qa", str(qa), "--answers", str(out), "--run", str(run), "--correct-if",
                           "chrf>=0.5", "--json", "--no-history"], capsys)
    assert code == 0, err
    assert "re-chunking" not in " ".join(json.loads(text)["notes"])
