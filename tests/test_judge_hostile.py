"""What issue 19's hostile inputs found in the judge commands, each fixed and kept fixed:

* ``score --rubric a.json --rubric b.json`` with both named ``politeness``: an error naming both files;
* ``pairwise`` with no pair judged exits 1;
* ``score --dry-run`` asks for no API key (nothing is sent);
* ``score`` on a multi-pipeline run with answers that name no pipeline judged 0 of N contexts and exited 0: now
  every metric judged on none of its items fails the command, with the reasons;
* at 80 columns the judge's word tables broke words mid-token;
* ``ragexam.testing.StubEndpoint`` answers every judge metric with the metric's own stub reply.
"""

from __future__ import annotations

import json
import re

import pytest

from ragexam.cli import main
from ragexam.testing.stub import StubEndpoint


@pytest.fixture
def stub():
    with StubEndpoint() as ep:
        yield ep


def _rubric(path, criteria):
    path.write_text(json.dumps({"name": "politeness", "language": "en", "criteria": criteria,
                                "scale": {"1": "rude", "2": "neutral", "3": "polite"}}), encoding="utf-8")
    return str(path)


def test_two_rubrics_with_one_name_are_an_error(stub, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "x")
    a, b = _rubric(tmp_path / "a.json", "Is it polite?"), _rubric(tmp_path / "b.json", "Is it kind?")
    with pytest.raises(SystemExit) as ei:
        main(["score", "--qa", "it_helpdesk", "--answers", "it_helpdesk", "--judge-model", "stub", "--base-url",
              stub.base_url, "--rubric", a, "--rubric", b, "--no-history", "--cache-dir", str(tmp_path / "c")])
    err = capsys.readouterr().err
    assert ei.value.code == 2 and "two rubrics are named 'politeness'" in err and "a.json" in err and "b.json" in err
    assert stub.requests == []


def test_pairwise_with_nothing_judged_exits_1(tmp_path, capsys, monkeypatch):
    from test_judge_stub import start_stub

    s, shutdown = start_stub()
    try:
        answers = tmp_path / "answers.jsonl"
        answers.write_text("".join(json.dumps({"query_id": q, "pipeline": p, "answer": f"{p} [[s:r500]]"}) + "\n"
                                   for q in ("hq_001", "hq_002") for p in ("A", "B")), encoding="utf-8")
        qa = tmp_path / "qa.jsonl"
        qa.write_text("".join(line for line in open(_bundled_qa(), encoding="utf-8").readlines()[:2]),
                      encoding="utf-8")
        monkeypatch.setenv("OPENAI_API_KEY", "x")
        with pytest.raises(SystemExit) as ei:
            main(["pairwise", "--qa", str(qa), "--answers", str(answers), "--a", "A", "--b", "B", "--judge-model",
                  "stub", "--base-url", s.base_url, "--max-retries", "0", "--cache-dir", str(tmp_path / "c")])
    finally:
        shutdown()
    assert ei.value.code == 1
    out = capsys.readouterr()
    assert "nothing was judged: 0 of 2 pairs (server_error: 2)" in out.out + out.err


def _bundled_qa():
    from ragexam.data.loaders import load_qa

    return load_qa("it_helpdesk").source


def test_score_dry_run_needs_no_api_key(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.chdir(tmp_path)  # no .env here
    with pytest.raises(SystemExit) as ei:
        main(["score", "--qa", "it_helpdesk", "--answers", "it_helpdesk", "--judge-model", "gpt-4o-mini", "--dry-run",
              "--no-history", "--cache-dir", str(tmp_path / "c")])
    out = capsys.readouterr().out
    assert ei.value.code in (0, None) and "Nothing was sent." in out and "gpt-4o-mini" in out
    with pytest.raises(SystemExit) as ei:  # the real run still needs it, and says so before any call
        main(["score", "--qa", "it_helpdesk", "--answers", "it_helpdesk", "--judge-model", "gpt-4o-mini",
              "--no-history", "--cache-dir", str(tmp_path / "c")])
    assert ei.value.code == 2 and "no API key" in capsys.readouterr().err


def test_a_metric_judged_on_none_of_its_items_fails_the_score(stub, tmp_path, capsys, monkeypatch):
    """The README's example on a run of several pipelines: answers without a pipeline get no contexts."""
    from test_score_fixtures import write_case

    qa, corpus, answers, run = write_case(tmp_path / "case")
    unnamed = tmp_path / "unnamed.jsonl"
    rows = [json.loads(line) for line in open(answers, encoding="utf-8")]
    unnamed.write_text("".join(json.dumps({k: v for k, v in r.items() if k != "pipeline"}) + "\n" for r in rows
                               if r.get("pipeline") == "P1"), encoding="utf-8")
    monkeypatch.setenv("OPENAI_API_KEY", "x")
    with pytest.raises(SystemExit) as ei:
        main(["score", "--qa", str(qa), "--answers", str(unnamed), "--run", str(run), "--judge-model", "stub",
              "--base-url", stub.base_url, "--no-history", "--cache-dir", str(tmp_path / "c"), "--json"])
    assert ei.value.code == 1
    err = capsys.readouterr().err
    assert re.search(r"coverage: context_relevance of 'P1': judged 0 of \d+ \(no_contexts: \d+\)", err)
    assert "pass --pipeline NAME" in err or "--pipeline" in json.dumps(err)


def test_judge_tables_at_80_columns_break_no_word(stub, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("OPENAI_API_KEY", "x")
    monkeypatch.setenv("COLUMNS", "80")
    with pytest.raises(SystemExit):
        main(["score", "--qa", "it_helpdesk", "--answers", "it_helpdesk", "--judge-model", "stub", "--base-url",
              stub.base_url, "--no-history", "--cache-dir", str(tmp_path / "c"), "--list", "5", "--repeat", "2",
              "-m", "answer_correctness", "-m", "abstention", "-m", "answer_relevancy"])
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert max(len(line) for line in lines if "│" in line or "─" in line) <= 80  # the tables fit
    words = ["answer_correctness", "answer_relevancy", "abstention", "retrieval_unknown", "unjudged", "hq_001",
             "kappa (quadratic)", "partially_correct"]
    for w in words:
        for i, line in enumerate(lines[:-1]):
            for k in range(2, len(w)):
                assert not (line.rstrip().endswith(w[:k]) and lines[i + 1].lstrip().startswith(w[k:])), (w, line)
    assert "questions to read" in out and "judge agreement with itself over 2 repeats" in out


def test_the_stub_endpoint_answers_every_metric_with_its_own_stub_reply(stub, tmp_path):
    from ragexam.metrics.judge import Judge, JudgeItem
    from ragexam.metrics.judge.registry import registered
    from ragexam.metrics.judge.prompts import render_messages
    from ragexam.testing.stub import judge_reply, read_prompt

    item = JudgeItem("q", "VPN-ERR-619 오류는 어떻게 고치나요?", "TCP 443 모드로 바꾸세요. 그러면 됩니다.",
                     ("VPN-ERR-619 오류는 TCP 443 모드로 바꾸면 됩니다.", "프린터 용지를 넣으세요."),
                     "TCP 443 모드로 바꾸면 됩니다.", "모릅니다.")
    for name, m in registered().items():
        r = m.rubric("ko")
        units = m.unit_texts(contexts=item.contexts, answer=item.answer, ground_truth=item.ground_truth)
        user = render_messages(r, question=item.question, contexts=item.contexts, answer=item.answer,
                               ground_truth=item.ground_truth, second_answer=item.second_answer, units=units)[1]["content"]
        assert judge_reply(name, user) == m.stub(read_prompt(user)), name
        if m.unit_kind:
            assert list(read_prompt(user).units) == units, name
    judge = Judge("stub", base_url=stub.base_url, api_key="x", cache_dir=str(tmp_path), scoring="sample")
    names = [n for n in registered() if n != "pairwise"]
    run = judge.run([item], names)
    assert all(j.status == "judged" or j.reason == "declined" for j in run.judgments), \
        [(j.metric, j.reason, j.message) for j in run.judgments if not j.judged]
