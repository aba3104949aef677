"""ragexam.testing: assert_exam's verdicts and message, the loopback stub endpoint, the pytest plugin, and the
docs example (docs/examples/test_exam.py) run as a user would run it."""

from __future__ import annotations

import base64
import os
import struct
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import httpx
import pytest

from test_score_fixtures import write_case

from ragexam.analysis.answers.files import load_answers
from ragexam.analysis.answers.scoring import save_score, score_answers
from ragexam.data.loaders import load_qa
from ragexam.errors import InputError
from ragexam.metrics.judge import Judge
from ragexam.storage.runfolder import read_folder
from ragexam.testing import ExamFailure, StubEndpoint, assert_exam, check_exam
from ragexam.testing.stub import embed, judge_reply, overlap

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def endpoint():
    with StubEndpoint() as ep:
        yield ep


@pytest.fixture
def scored(endpoint, tmp_path):
    qa, _, answers, run = write_case(tmp_path)
    judge = Judge("ragexam-stub", base_url=endpoint.base_url, api_key="unused", cache_dir=str(tmp_path / "c"))
    return score_answers(load_qa(qa), load_answers(answers), run=read_folder(run), judge=judge,
                         judge_metrics=["answer_correctness", "faithfulness"])


# --- assert_exam ------------------------------------------------------------------------------------
def test_floors_on_the_lower_bound_and_on_the_mean(scored):
    p = scored.pipelines[0]
    s = scored.judge_summary(p, "answer_correctness")
    # a floor between the lower bound and the mean passes on the mean only
    floor = (s.ci95[0] + s.mean) / 2
    assert s.ci95[0] < floor < s.mean
    # 5 questions cannot show the judge separates: no gate unless told, and the message says why
    with pytest.raises(ExamFailure) as ei:
        assert_exam(scored, min={"answer_correctness": floor}, on="mean", pipeline=p)
    assert "not gated: the judge ragexam-stub at" in str(ei.value) and "trust_judge=True" in str(ei.value)
    with pytest.raises(ExamFailure) as ei:
        assert_exam(scored, min={"answer_correctness": floor}, pipeline=p, trust_judge=True)
    msg = str(ei.value)
    assert f"FAIL answer_correctness >= {floor:g} [{p}]: ci95 lower bound {s.ci95[0]:.3f}" in msg
    assert f"95% CI {s.ci95[0]:.3f}–{s.ci95[1]:.3f}" in msg and f"judged {s.n_judged} of {s.n}" in msg
    assert "worst questions:" in msg
    checks = assert_exam(scored, min={"answer_correctness": floor}, on="mean", pipeline=p, trust_judge=True)
    assert checks[0].passed and checks[0].gate.basis == "mean"


def test_failure_lists_the_worst_questions_lowest_first_with_reasons(scored):
    p = scored.pipelines[0]
    checks = check_exam(scored, min={"answer_correctness": 5.0}, pipeline=p, worst=3)
    worst = checks[0].worst
    items = {r.query_id: r.judge["answer_correctness"] for r in scored.rows if r.pipeline == p
             and "answer_correctness" in r.judge}
    expected = sorted(((q, s.score) for q, s in items.items()), key=lambda t: (t[1] is not None, t[1] or 0, t[0]))[:3]
    assert [(q, v) for q, v, _ in worst] == expected
    assert all(note for _, _, note in worst)


def test_pass_rate_floor_and_coverage_floor(scored):
    p = scored.pipelines[0]
    s = scored.judge_summary(p, "faithfulness")
    (check,) = check_exam(scored, min={"faithfulness_pass": 0.0}, pipeline=p, min_coverage=1.0, trust_judge=True)
    assert check.gate.passed and check.gate.mean == pytest.approx(s.pass_rate)
    assert check.coverage_ok == (s.n_judged == s.n)
    if s.n_judged < s.n:
        with pytest.raises(ExamFailure) as ei:
            assert_exam(scored, min={"faithfulness_pass": 0.0}, pipeline=p, min_coverage=1.0, trust_judge=True)
        assert "FAIL (coverage)" in str(ei.value) and "below min_coverage 1" in str(ei.value)


def test_accepts_a_score_folder_and_a_run_folder(scored, tmp_path):
    out = save_score(scored, tmp_path / "score")
    p = scored.pipelines[0]
    a = check_exam(scored, min={"answer_correctness": 1.0}, pipeline=p)[0].gate
    b = check_exam(out, min={"answer_correctness": 1.0}, pipeline=p)[0].gate
    assert (a.mean, a.ci_low, a.ci_high) == pytest.approx((b.mean, b.ci_low, b.ci_high))
    import ragexam

    res = ragexam.run("ai_concepts", "ai_concepts", retrievers=["bm25"], progress=False)
    folder = res.save(tmp_path / "run")
    a = check_exam(res, min={"hit@5": 0.5})[0].gate
    b = check_exam(folder, min={"hit@5": 0.5})[0].gate
    assert a.passed and (a.metric, a.mean, a.ci_low, a.ci_high) == (b.metric, b.mean, b.ci_low, b.ci_high)
    assert (a.ci_low, a.ci_high) == tuple(res.summary["results"][res.baseline]["ci95"]["hit@5"])


@pytest.mark.parametrize("kwargs, field", [({"min": {}}, "min"), ({"min": {"hit@5": "high"}}, "min"),
                                           ({"min": {"hit@5": 0.5}, "on": "median"}, "on"),
                                           ({"min": {"hit@5": 0.5}, "min_coverage": 2}, "min_coverage")])
def test_bad_arguments_name_the_field(scored, kwargs, field):
    with pytest.raises(InputError) as ei:
        check_exam(scored, **kwargs)
    assert ei.value.field == field


def test_unknown_result_type():
    with pytest.raises(InputError) as ei:
        assert_exam(42, min={"hit@5": 0.5})
    assert "expected what ragexam.score(...) or ragexam.run(...) returns" in ei.value.message


def test_accepts_what_ragexam_score_returns(scored, tmp_path):
    """Review D3: ``assert_exam(ragexam.score(...), ...)`` was refused (``received ScoreOutcome``)."""
    import ragexam

    qa, _, answers, run = write_case(tmp_path / "case")
    outcome = ragexam.score(str(qa), str(answers), run=str(run), record=False)
    assert type(outcome).__name__ == "ScoreOutcome"
    checks = assert_exam(outcome, min={"chrf": 0.0}, on="mean")
    direct = check_exam(outcome.report, min={"chrf": 0.0}, on="mean")
    assert [c.gate.mean for c in checks] == [c.gate.mean for c in direct] and checks
    with pytest.raises(InputError) as ei:
        assert_exam(ragexam.score(str(qa), str(answers), run=str(run), record=False, dry_run=True), min={"chrf": 0})
    assert "dry run" in ei.value.message


# --- the stub endpoint -------------------------------------------------------------------------------
def test_stub_judges_by_overlap_within_each_contract(endpoint):
    user = ("답변이 정답과 일치하는지 평가하세요.\n\n## 질문\nVPN 오류 619는?\n\n## 정답\nUDP 4500 포트가 막혀서 생깁니다.\n\n"
            "## 답변\nUDP 4500 포트가 막혀서 생기는 오류입니다.\n\n## 평가 기준\n...")
    good = judge_reply("answer_correctness", user)
    bad = judge_reply("answer_correctness", user.replace("UDP 4500 포트가 막혀서 생기는 오류입니다.", "프린터를 껐다 켜세요."))
    assert good["score"] >= 4 and bad["score"] == 1  # bands: correct, incorrect
    declined = judge_reply("answer_correctness", user.replace("UDP 4500 포트가 막혀서 생기는 오류입니다.", "문서에서 찾을 수 없습니다."))
    assert declined["score"] == 1
    assert overlap("셀프 어텐션", "셀프 어텐션은 핵심입니다") == 1.0 and overlap("", "x") == 0.0


def test_stub_serves_chat_and_embeddings(endpoint):
    r = httpx.post(endpoint.base_url + "/chat/completions", json={"model": "m", "messages": [
        {"role": "user", "content": "## 문서\nVPN-ERR-619는 UDP 4500 포트가 막힌 경우입니다. 프린터는 B 덮개를 여세요.\n\n"
                                    "## 질문\nVPN-ERR-619는 왜 나요?\n\n## 답변\n"}]})
    assert r.json()["choices"][0]["message"]["content"] == "VPN-ERR-619는 UDP 4500 포트가 막힌 경우입니다."
    r = httpx.post(endpoint.base_url + "/chat/completions", json={"model": "m", "messages": [
        {"role": "user", "content": "## 문서\n프린터는 B 덮개를 여세요.\n\n## 질문\n연차는 며칠인가요?\n\n## 답변\n"}]})
    assert r.json()["choices"][0]["message"]["content"] == "제공된 문서에서 찾을 수 없습니다."
    floats = httpx.post(endpoint.base_url + "/embeddings", json={"model": "e", "input": ["가나다", "abc"]}).json()
    b64 = httpx.post(endpoint.base_url + "/embeddings", json={"model": "e", "input": ["가나다"], "dimensions": 8,
                                                             "encoding_format": "base64"}).json()
    v = floats["data"][0]["embedding"]
    assert len(v) == 256 and sum(x * x for x in v) == pytest.approx(1.0) and v == embed("가나다")
    raw = struct.unpack("<8f", base64.b64decode(b64["data"][0]["embedding"]))
    assert raw == pytest.approx(embed("가나다", 8), abs=1e-6)
    assert httpx.post(endpoint.base_url + "/nothing", json={}).status_code == 404


def test_the_stub_starts_from_a_shell_and_stops_on_ctrl_c(tmp_path):
    """docs/judge.md's `python -m ragexam.testing.stub --port PORT`: one line with the address, the stub's replies
    there, Ctrl+C (SIGINT) stops it with 130 and no traceback; a taken port is one line and exit 2."""
    import signal

    env = dict(os.environ, PYTHONPATH=str(ROOT / "src") + os.pathsep + os.environ.get("PYTHONPATH", ""))
    child = subprocess.Popen([sys.executable, "-m", "ragexam.testing.stub", "--port", "0"], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path)
    try:
        line = child.stdout.readline()
        assert line.startswith("ragexam stub endpoint: http://127.0.0.1:"), line
        base_url = line.split()[3]
        r = httpx.post(base_url + "/embeddings", json={"model": "e", "input": ["가나다"]}, timeout=30)
        assert r.json()["data"][0]["embedding"] == embed("가나다")
        taken = subprocess.run([sys.executable, "-m", "ragexam.testing.stub", "--port", base_url.split(":")[2][:-3]],
                               capture_output=True, text=True, env=env, timeout=60)
        assert taken.returncode == 2 and taken.stderr.startswith("error: --port ") and "Traceback" not in taken.stderr
        child.send_signal(signal.SIGINT)
        _, err = child.communicate(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
    assert child.returncode == 130 and "Traceback" not in err, err


# --- the plugin and the docs example, as a user runs them --------------------------------------------
def _pytest(args, tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src") + os.pathsep + os.environ.get("PYTHONPATH", ""),
               RAGEXAM_CACHE_DIR=str(tmp_path / "cache"), RAGEXAM_HISTORY=str(tmp_path / "h.db"))
    env.pop("RAGEXAM_JUDGE_MODEL", None)
    installed = any(ep.name == "ragexam" for ep in metadata.entry_points(group="pytest11"))
    plugin = [] if installed else ["-p", "ragexam.testing.plugin"]
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *plugin, *args],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)


def test_docs_pytest_example_runs_against_the_bundled_set(tmp_path):
    proc = _pytest([str(ROOT / "docs" / "examples" / "test_exam.py")], tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "3 passed" in proc.stdout


def test_plugin_fixtures_and_failure_message(tmp_path):
    test = tmp_path / "test_user.py"
    test.write_text('''
import os
from ragexam.testing import assert_exam

def test_isolated(ragexam_isolated):
    assert os.environ["RAGEXAM_CACHE_DIR"].startswith(str(ragexam_isolated))

def test_judge_is_the_stub(ragexam_judge, ragexam_stub):
    assert ragexam_judge.endpoint == ragexam_stub.base_url and ragexam_judge.model == "ragexam-stub"

def test_failing_floor():
    import ragexam
    assert_exam(ragexam.run("ai_concepts", "ai_concepts", retrievers=["bm25"], progress=False), min={"hit@1": 1.0})
''', encoding="utf-8")
    proc = _pytest([str(test)], tmp_path)
    out = proc.stdout
    assert proc.returncode == 1 and "1 failed, 2 passed" in out, out + proc.stderr
    assert "ragexam exam failed: 1 of 1 floor check(s)" in out and "FAIL hit@1 >= 1" in out
    assert "worst questions:" in out


def test_loopback_server_queues_a_burst_of_connections():
    """32 clients connecting at once must all be queued (the socketserver default backlog of 5 drops the rest,
    and TCP retries them a second later); here the server accepts nothing while 40 connections are opened."""
    import socket
    from http.server import BaseHTTPRequestHandler

    from ragexam.testing.stub import LoopbackHTTPServer

    server = LoopbackHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    conns = []
    try:
        for _ in range(40):
            conns.append(socket.create_connection(server.server_address, timeout=0.5))
    finally:
        for c in conns:
            c.close()
        server.server_close()
    assert len(conns) == 40
