"""Redaction: keys leave everything ragexam writes, and never change what it parses (issue 9).

With ``OPENAI_API_KEY=x`` the judge used to redact every "x" of the reply before parsing it, so
``"context"`` became ``"conte[redacted]t"``: faithfulness came back 100 % unjudged after extra
requests.  The rule now: redact only written-out text, and never a secret shorter than 8
characters.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from test_judge_stub import API_KEY, start_stub

from ragexam.llm.redact import MIN_SECRET_LENGTH, REDACTED, Redactor
from ragexam.metrics.judge import Judge, JudgeItem

CTX = ("VPN-ERR-619는 UDP 4500 포트가 막힌 경우입니다.", "프린터 용지 걸림은 덮개를 열고 빼세요.")
METRICS = ["context_relevance", "faithfulness", "answer_correctness", "abstention"]


@pytest.fixture
def stub():
    s, shutdown = start_stub()
    yield s
    shutdown()


def items(scenario="good", n=4):
    return [JudgeItem(f"q{i}", f"질문 {i}: VPN 오류 xx는 왜 나요? [[s:{scenario}]]", f"답변 {i}: 포트 x가 막혔습니다.",
                      CTX, f"정답 {i}: 포트가 막혔습니다.") for i in range(n)]


def outcome(run):
    return [(j.metric, j.item_id, j.status, j.score, j.label, j.reason, json.dumps(j.details, sort_keys=True))
            for j in run.judgments]


def test_rule_short_strings_are_never_secrets():
    r = Redactor(["x", "sk-1234", "sk-12345678"])
    assert MIN_SECRET_LENGTH == 8
    assert r.text('{"context": 1, "x": "sk-1234"}') == '{"context": 1, "x": "sk-1234"}'
    assert r.text("key sk-12345678!") == f"key {REDACTED}!"
    assert r.text("Authorization: Bearer x") == f"Authorization: Bearer {REDACTED}"
    assert r.text(None) is None
    value = {"a": ["sk-12345678", 3, {"sk-12345678": ("bearer abc",)}], "n": 1.5}
    assert r.value(value) == {"a": [REDACTED, 3, {REDACTED: (f"bearer {REDACTED}",)}], "n": 1.5}


@given(st.text(min_size=MIN_SECRET_LENGTH, max_size=40).filter(lambda s: s.strip() == s and " " not in s),
       st.text(max_size=60), st.text(max_size=60))
def test_a_long_secret_never_survives(secret, before, after):
    out = Redactor([secret]).text(before + secret + after)
    assert secret not in out


def test_a_one_character_key_judges_like_a_normal_key(stub, tmp_path):
    """The bug of issue 9: same judgments, same number of requests, with key 'x' and a real key."""
    normal = Judge("stub-judge", base_url=stub.base_url, api_key=API_KEY, cache_dir=str(tmp_path / "a"),
                   concurrency=1)
    r1 = normal.run(items(), METRICS)
    n1 = len(stub.requests)
    short = Judge("stub-judge", base_url=stub.base_url, api_key="x", cache_dir=str(tmp_path / "b"), concurrency=1)
    r2 = short.run(items(), METRICS)
    n2 = len(stub.requests) - n1
    assert outcome(r1) == outcome(r2)
    assert n1 == n2 == 16
    assert all(j.status == "judged" for j in r2.judgments)
    faith = r2.summary("faithfulness")
    assert faith.coverage == 1.0 and faith.mean == 1.0
    assert set(stub.auth) == {f"Bearer {API_KEY}", "Bearer x"}


def test_a_one_character_key_through_the_cli(stub, tmp_path, monkeypatch, capsys):
    from test_score_fixtures import write_case

    from ragexam.cli import main

    qa, corpus, answers, run = write_case(tmp_path / "case")
    monkeypatch.setenv("OPENAI_API_KEY", "x")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(SystemExit) as ei:
        main(["score", "--qa", str(qa), "--answers", str(answers), "--run", str(run), "--judge-model", "stub-judge",
              "--base-url", stub.base_url, "--cache-dir", str(tmp_path / "cache"), "--metric", "faithfulness",
              "--json", "--no-history"])
    assert ei.value.code == 0
    data = json.loads(capsys.readouterr().out)
    s = data["judge"]["summary"]["P1"]["faithfulness"]
    assert set(s["unjudged"]) <= {"no_claims"}  # an answer that only declines has no claim to check (no call)
    assert s["n_judged"] == s["n"] > 0 and s["n_not_applicable"] == s["unjudged"].get("no_claims", 0)
    assert data["judge"]["usage"]["requests"] == data["judge"]["usage"]["calls"]  # no retry, no re-ask


def test_a_key_the_model_quotes_is_parsed_then_redacted_everywhere(stub, tmp_path):
    judge = Judge("stub-judge", base_url=stub.base_url, api_key=API_KEY, cache_dir=str(tmp_path / "c"))
    run = judge.run(items("key_in_reply", 2), ["context_relevance", "faithfulness"])
    assert [j.status for j in run.judgments] == ["judged"] * 4
    reasoning = [j.details.get("reasoning", "") for j in run.judgments]
    assert all(REDACTED in r for r in reasoning)
    assert API_KEY not in json.dumps([j.to_dict() for j in run.judgments], ensure_ascii=False)
    data = (tmp_path / "c" / "llm-cache.sqlite3").read_bytes()
    assert API_KEY.encode() not in data and judge.cache.count("judge") == 4
    # from the cache, the same (redacted) judgments
    again = judge.run(items("key_in_reply", 2), ["context_relevance", "faithfulness"])
    assert outcome(again) == outcome(run) and len(stub.requests) == 4


def test_answers_with_a_short_key_are_not_rewritten(stub, tmp_path):
    from ragexam.analysis.answers.answering import AnswerTask, answer_questions
    from ragexam.llm.cache import LLMCache
    from ragexam.llm.client import LLMClient

    stub.answer_text = lambda body: "xx 포트를 여세요 (box x)"
    client = LLMClient("gen", base_url=stub.base_url, api_key="x")
    tasks = [AnswerTask("p", "q1", (("user", "질문 1"),), ("d1",), ("문서",), "k1")]
    recs, usage = answer_questions(tasks, client, cache=LLMCache(tmp_path))
    assert recs[0].answer == "xx 포트를 여세요 (box x)" and usage["calls"] == 1
