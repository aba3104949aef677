"""The judge's disk cache, --dry-run counts, --repeat agreement, cost, and that no API key is ever written."""

from __future__ import annotations

import json
import sqlite3

import pytest

from test_judge_stub import API_KEY, start_stub
from test_score_fixtures import ANSWERS, write_case, write_jsonl

from ragexam.analysis.judging.agreement import repeat_agreement
from ragexam.cli import main
from ragexam.metrics.judge import BUILTIN, Judge, JudgeItem, LLMCache, price_for
from ragexam.llm.cost import cost_usd, estimate_tokens

CTX = ("VPN-ERR-619는 UDP 4500 포트가 막힌 경우입니다.", "프린터 용지 걸림은 B 덮개를 여세요.")


@pytest.fixture
def stub():
    s, shutdown = start_stub()
    yield s
    shutdown()


def items(*scenarios):
    return [JudgeItem(f"q{i}", f"질문 {i} [[s:{s}]]", f"답변 {i}", CTX, f"정답 {i}") for i, s in enumerate(scenarios)]


def judge(stub, tmp_path, **kw):
    kw.setdefault("backoff", 0.0)
    return Judge("stub-judge", base_url=stub.base_url, api_key=API_KEY, cache_dir=str(tmp_path / "cache"), **kw)


def test_rerun_makes_no_call(stub, tmp_path):
    its = items("good", "good", "good")
    r1 = judge(stub, tmp_path).run(its, ["context_relevance", "answer_correctness"])
    assert len(stub.requests) == 6 and r1.usage["calls"] == 6 and r1.usage["cached"] == 0
    r2 = judge(stub, tmp_path).run(its, ["context_relevance", "answer_correctness"])
    assert len(stub.requests) == 6  # nothing sent
    assert r2.usage["calls"] == 0 and r2.usage["cached"] == 6 and r2.usage["prompt_tokens"] == 0
    assert all(j.cached for j in r2.judgments)
    assert [(j.score, j.label, j.rubric_sha) for j in r1.judgments] == [(j.score, j.label, j.rubric_sha)
                                                                        for j in r2.judgments]
    # the key covers model, temperature and inputs: changing any of them calls again
    judge(stub, tmp_path, temperature=0.5).run(its[:1], ["context_relevance"])
    assert len(stub.requests) == 7
    judge(stub, tmp_path).run([JudgeItem("q0", its[0].question, "다른 답변", CTX, "정답 0")], ["answer_correctness"])
    assert len(stub.requests) == 8
    cache = LLMCache(tmp_path / "cache")
    assert cache.count("judge") == 8 and cache.count("probe") == 1  # the endpoint was probed once (scoring auto)
    con = sqlite3.connect(str(cache.path))
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    rows = con.execute("SELECT kind, model, endpoint, value FROM results WHERE kind = 'judge'").fetchall()
    assert {(k, m, e) for k, m, e, _ in rows} == {("judge", "stub-judge", stub.base_url)}
    assert all(json.loads(v)["rubric_sha"] for *_, v in rows)


def test_transport_failures_are_not_cached_content_failures_are(stub, tmp_path):
    its = items("r500", "bad_json")
    j = judge(stub, tmp_path, max_retries=1, max_attempts=2)
    j.run(its, ["context_relevance"])
    n = len(stub.requests)
    assert n == 2 + 2
    j.run(its, ["context_relevance"])
    assert len(stub.requests) == n + 2  # only the r500 item is tried again
    r = judge(stub, tmp_path, max_retries=1, max_attempts=2, retry_unjudged=True).run(its, ["context_relevance"])
    assert len(stub.requests) == n + 2 + 4
    assert [j.reason for j in r.judgments] == ["server_error", "invalid_json"]


def test_dry_run_counts(stub, tmp_path):
    its = items("good", "good", "good") + [JudgeItem("nx", "질문", None, (), None)]
    j = judge(stub, tmp_path)
    plan = j.plan(its, ["context_relevance", "answer_correctness"])
    assert (plan.total, plan.cached, plan.skipped, plan.calls) == (8, 0, 2, 6)
    assert plan.by_metric["context_relevance"]["skipped"] == 1 and plan.by_metric["answer_correctness"]["calls"] == 3
    cr, ac = BUILTIN["context_relevance"], BUILTIN["answer_correctness"]  # each metric owns its allowance
    assert plan.est_completion_tokens == 3 * cr.allowance_for(2) + 3 * ac.allowance_for(0) == 3 * (60 + 8 * 2) + 3 * 80
    assert plan.est_cost == "unknown" and stub.requests == []
    # the prompt estimate is ceil(chars / 3) of the full prompt
    from ragexam.metrics.judge import get_rubric
    from ragexam.metrics.judge.prompts import render_messages

    msgs = render_messages(get_rubric("answer_correctness", "ko"), question=its[0].question, answer=its[0].answer,
                           ground_truth=its[0].ground_truth)
    assert plan.by_metric["answer_correctness"]["est_prompt_tokens"] == sum(
        estimate_tokens("".join(m["content"] for m in render_messages(
            get_rubric("answer_correctness", "ko"), question=i.question, answer=i.answer, ground_truth=i.ground_truth)))
        for i in its[:3])
    assert estimate_tokens("".join(m["content"] for m in msgs)) > 0
    j.run(its[:2], ["answer_correctness"])
    plan = j.plan(its, ["context_relevance", "answer_correctness"])
    assert (plan.cached, plan.calls) == (2, 4)
    plan = j.plan(its, ["context_relevance", "answer_correctness"], repeat=3)
    assert (plan.total, plan.cached, plan.skipped, plan.calls) == (24, 2, 6, 16)
    assert len(stub.requests) == 2


def test_repeat_key_includes_repeat_index_and_agreement(stub, tmp_path):
    its = items("good", "flip", "good")
    j = judge(stub, tmp_path, concurrency=1)
    j.run(its, ["answer_correctness"])
    assert len(stub.requests) == 3
    run = j.run(its, ["answer_correctness"], repeat=2)
    assert len(stub.requests) == 6  # repeat 0 was cached; repeat 1 is new for every item
    assert sorted((jj.item_id, jj.repeat, jj.score) for jj in run.judgments) == [
        ("q0", 0, 5.0), ("q0", 1, 5.0), ("q1", 0, 5.0), ("q1", 1, 3.0), ("q2", 0, 5.0), ("q2", 1, 5.0)]
    a = repeat_agreement(run.judgments, "answer_correctness")
    assert (a.repeats, a.n_items, a.n_items_complete, a.n_units) == (2, 3, 3, 3)
    assert a.exact == pytest.approx(2 / 3) and a.mean_abs_diff == pytest.approx(2 / 3)
    assert a.kappa == pytest.approx(0.0)  # observed 2/3 = chance 2/3
    # the item score over repeats is the lower median: q1 -> 3 (partially_correct)
    combined = run.items("answer_correctness")
    assert combined["q1"].score == 3.0 and combined["q1"].label == "partially_correct"
    assert combined["q1"].n_repeats == 2 and combined["q1"].n_judged == 2
    assert "repeat:2" in run.signatures["answer_correctness"]
    # context relevance agreement is per context
    run = j.run(its, ["context_relevance"], repeat=2)
    a = repeat_agreement(run.judgments, "context_relevance")
    assert a.n_units == 6 and a.exact == pytest.approx(4 / 6) and a.mean_abs_diff == pytest.approx(2 / 6)


def test_prices():
    assert price_for("gpt-4o-mini-2024-07-18", "https://api.openai.com/v1") == (0.15, 0.60)
    assert price_for("gpt-4o-mini", "http://localhost:11434/v1") is None
    assert price_for("llama3", "http://x/v1", (1.0, 2.0)) == (1.0, 2.0)
    assert cost_usd(1_000_000, 500_000, (0.15, 0.60)) == pytest.approx(0.45)
    assert cost_usd(10, 10, None) == "unknown"


def _files(root):
    return [p for p in root.rglob("*") if p.is_file()]


def test_no_api_key_in_anything_ragexam_writes(stub, tmp_path, monkeypatch, capsys):
    qa, corpus, answers, run = write_case(tmp_path / "case")
    rows = [dict(r) for r in ANSWERS]
    rows[0]["answer"] += " [[s:echo_key]]"  # the endpoint echoes the Authorization header in an error
    rows[1]["answer"] += " [[s:bad_json]]"
    write_jsonl(answers, rows)
    monkeypatch.setenv("OPENAI_API_KEY", API_KEY)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    out, cache = tmp_path / "out", tmp_path / "cache"
    argv = ["score", "--qa", str(qa), "--answers", str(answers), "--run", str(run), "--correct-if", "chrf>=0.5",
            "--judge-model", "stub-judge", "--base-url", stub.base_url, "--cache-dir", str(cache), "--out", str(out),
            "--max-retries", "0", "--repeat", "2"]
    with pytest.raises(SystemExit) as ei:
        main(argv)
    assert ei.value.code == 0
    printed = capsys.readouterr()
    assert set(stub.auth) == {f"Bearer {API_KEY}"}  # the key was used ...
    judgments = [json.loads(x) for x in (out / "judgments.jsonl").read_text(encoding="utf-8").splitlines()]
    echoed = [x for x in judgments if x["reason"] == "bad_request"]
    assert echoed and all("Bearer [redacted]" in x["message"] for x in echoed)  # ... and redacted
    with pytest.raises(SystemExit):
        main(argv + ["--json"])
    printed_json = capsys.readouterr()
    with pytest.raises(SystemExit):
        main(argv[:-4] + ["--dry-run"])
    printed_dry = capsys.readouterr()
    written = _files(out) + _files(cache)
    assert {p.name for p in written} >= {"score.json", "per_answer.csv", "judgments.jsonl", "llm-cache.sqlite3"}
    for p in written:
        data = p.read_bytes()
        assert API_KEY.encode() not in data, p
        assert API_KEY[8:].encode() not in data, p
    for text in (printed.out, printed.err, printed_json.out, printed_json.err, printed_dry.out, printed_dry.err):
        assert API_KEY not in text
    score = json.loads((out / "score.json").read_text(encoding="utf-8"))
    assert score["judge"]["endpoint"] == stub.base_url and score["judge"]["repeat"] == 2
    assert set(score["judge"]["agreement"]) == {"context_relevance", "faithfulness", "answer_correctness", "abstention"}


def test_credentials_in_the_base_url_are_not_stored(stub, tmp_path):
    url = stub.base_url.replace("http://", "http://user:hunter2@") + "?api-key=hunter2"
    j = Judge("stub-judge", base_url=url, api_key=API_KEY, cache_dir=str(tmp_path))
    assert j.endpoint == stub.base_url
    assert "hunter2" not in j.signature("context_relevance", "ko") and "hunter2" not in repr(j)
