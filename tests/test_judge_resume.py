"""A judging run killed with SIGKILL partway resumes without repeating a completed call.

``ragexam score ... --judge-model`` runs in a subprocess against the local stub server.  The
server serves N requests and holds the next one; the test then kills the process with SIGKILL
(no cleanup, no atexit), reruns the same command, and checks from the server's own request log
that the rerun sent none of the N completed requests again.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
from collections import Counter

import pytest

from test_judge_stub import API_KEY, kill_when_held, start_stub
from test_score_fixtures import write_jsonl

N_QUESTIONS = 12
SERVED_BEFORE_KILL = 5


@pytest.fixture
def stub():
    s, shutdown = start_stub()
    yield s
    shutdown()


def conversation(body: dict) -> str:
    return next(m["content"] for m in body["messages"] if m["role"] == "user")


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
def test_killed_run_resumes_without_repeating_completed_calls(stub, tmp_path):
    qa = write_jsonl(tmp_path / "qa.jsonl", [
        {"query_id": f"k{i:02d}", "question": f"질문 {i}번은 무엇인가요?", "ground_truth": f"정답 {i}입니다.",
         "relevant_doc_ids": ["d1"], "type": "t"} for i in range(N_QUESTIONS)])
    answers = write_jsonl(tmp_path / "answers.jsonl", [
        {"query_id": f"k{i:02d}", "answer": f"답변 {i}입니다."} for i in range(N_QUESTIONS)])
    cache = tmp_path / "cache"
    env = dict(os.environ, OPENAI_API_KEY=API_KEY, NO_PROXY="127.0.0.1,localhost", no_proxy="127.0.0.1,localhost")
    env.pop("OPENAI_BASE_URL", None)
    cmd = [sys.executable, "-m", "ragexam.cli", "score", "--qa", str(qa), "--answers", str(answers),
           "--judge-model", "stub-judge", "--base-url", stub.base_url, "--metric", "answer_correctness",
           "--concurrency", "1", "--cache-dir", str(cache), "--json", "--bleu-tokenize", "char"]

    stub.block_after = SERVED_BEFORE_KILL
    assert kill_when_held(cmd, env, stub, wait=120) == -signal.SIGKILL
    first = [conversation(b) for b in stub.bodies()]
    assert len(first) == SERVED_BEFORE_KILL + 1  # N served, one held when the kill came
    completed = set(first[:SERVED_BEFORE_KILL])

    # every served result was committed before the next request went out (concurrency 1)
    con = sqlite3.connect(str(cache / "llm-cache.sqlite3"))
    assert con.execute("SELECT COUNT(*) FROM results WHERE kind = 'judge'").fetchone()[0] == SERVED_BEFORE_KILL
    con.close()

    stub.block_after = None
    stub.release.set()
    done = subprocess.run(cmd, env=env, capture_output=True, timeout=300)
    assert done.returncode == 0, done.stderr.decode()
    second = [conversation(b) for b in stub.bodies()][len(first):]
    assert not completed & set(second), "the rerun repeated a completed call"
    assert len(second) == N_QUESTIONS - SERVED_BEFORE_KILL
    assert first[SERVED_BEFORE_KILL] in second  # the interrupted one was done again
    assert Counter(first[:SERVED_BEFORE_KILL] + second) == Counter({c: 1 for c in set(first) | set(second)})
    report = json.loads(done.stdout)
    s = report["judge"]["summary"]["(answers)"]["answer_correctness"]
    assert (s["n"], s["n_judged"], s["coverage"]) == (N_QUESTIONS, N_QUESTIONS, 1.0)
    assert report["judge"]["usage"]["calls"] == N_QUESTIONS - SERVED_BEFORE_KILL
    assert report["judge"]["usage"]["cached"] == SERVED_BEFORE_KILL

    # a third run is served entirely from the cache
    again = subprocess.run(cmd, env=env, capture_output=True, timeout=300)
    assert again.returncode == 0
    assert len(stub.bodies()) == len(first) + len(second)
