"""End to end on the bundled Korean set: ``ragexam generate`` with the stub, then ``validate`` and ``run`` on the
result; and a generation killed with SIGKILL midway, resumed, writes what an uninterrupted one writes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from qgen_stub import helpdesk_script, parse_generation, start_gen_stub
from test_judge_stub import kill_when_held

TESTS = Path(__file__).parent
SRC = TESTS.parent / "src"


@pytest.fixture
def stub():
    s, shutdown = start_gen_stub()
    s.script = helpdesk_script()
    yield s
    shutdown()


def env():
    e = dict(os.environ, NO_PROXY="127.0.0.1,localhost", no_proxy="127.0.0.1,localhost")
    e["PYTHONPATH"] = os.pathsep.join([str(SRC), str(TESTS)] + ([e["PYTHONPATH"]] if e.get("PYTHONPATH") else []))
    e.pop("OPENAI_BASE_URL", None)
    return e


def cli(*args, **kw):
    return subprocess.run([sys.executable, "-m", "ragexam.cli", *map(str, args)], env=env(), capture_output=True,
                          text=True, timeout=kw.pop("timeout", 600), **kw)


def generate_cmd(stub, out, cache, n=24):
    return ["generate", "--corpus", "it_helpdesk", "-n", n, "--model", "stub-gen", "--base-url", stub.base_url,
            "--api-key", "x", "--cache-dir", cache, "--out", out, "--concurrency", "1",
            "--cite", "spans",  # helpdesk_script answers passage prompts
            "--judge-model", "stub-judge"]  # another checker: multi stays in the default mix


def test_generate_then_validate_then_run_on_the_bundled_korean_set(stub, tmp_path):
    out = tmp_path / "qa.jsonl"
    done = cli(*generate_cmd(stub, out, tmp_path / "cache"), "--json")
    assert done.returncode == 0, done.stderr
    card = json.loads(done.stdout)
    assert card["n_kept"] == 24 and card["stopped"] == "targets met"
    assert {k: v["achieved"] for k, v in card["mix"].items()} == {"meaning": 10, "lexical": 8, "multi": 4,
                                                                  "out_of_corpus": 2}
    assert card["corpus"]["language"] == "ko" and card["coverage"]["documents"] == 18
    # every section was shown before any was shown twice
    assert card["coverage"]["sections_prompted"] == card["coverage"]["sections"] == 19
    assert card["coverage"]["section_uses_max"] == 1

    v = cli("validate", "--corpus", "it_helpdesk", "--qa", out, "--json")
    report = json.loads(v.stdout)
    assert v.returncode == 0 and report["ok"] and report["warnings"] == 0, v.stdout

    records = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [r["query_id"] for r in records] == [f"gen_{i:04d}" for i in range(1, 25)]
    multi = [r for r in records if r["type"] == "multi"]
    assert all(len(r["relevant_doc_ids"]) == 2 and len(r["evidence"]) == 2 for r in multi)

    import ragexam

    res = ragexam.run("it_helpdesk", str(out), retrievers=["bm25"], progress=False, n_resamples=200,
                      n_permutations=200)
    ds = res.summary["dataset"]
    assert ds["n_questions"] == 24 and ds["n_out_of_corpus"] == 2 and ds["n_scored"] == 22
    assert ds["n_unmatched_evidence"] == {"paragraphs:400": 0}
    assert set(ds["types"]) == {"meaning", "lexical", "multi", "out_of_corpus"}
    hit5 = res.summary["results"]["bm25 | paragraphs:400"]["metrics"]["hit@5"]
    assert 0.5 < hit5 <= 1.0  # the hand-written questions the stub serves are findable by BM25

    cmd = cli("run", "--corpus", "it_helpdesk", "--qa", out, "--retriever", "bm25", "--no-history")
    assert cmd.returncode == 0, cmd.stderr


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
def test_a_run_killed_midway_resumes_without_repeating_a_call_and_writes_the_same_set(stub, tmp_path):
    served = 7
    killed = tmp_path / "killed"
    cmd = [sys.executable, "-m", "ragexam.cli"] + [str(a) for a in generate_cmd(stub, killed / "qa.jsonl",
                                                                                  killed / "cache")]
    stub.block_after = served
    assert kill_when_held(cmd, env(), stub) == -signal.SIGKILL
    assert not (killed / "qa.jsonl").exists()
    first = [json.dumps(b["messages"], ensure_ascii=False) for b in stub.requests]
    assert len(first) == served + 1
    finished = set(first[:served])

    stub.block_after = None
    stub.release.set()
    resumed = cli(*generate_cmd(stub, killed / "qa.jsonl", killed / "cache"))
    assert resumed.returncode == 0, resumed.stderr
    second = [json.dumps(b["messages"], ensure_ascii=False) for b in stub.requests[len(first):]]
    assert not finished & set(second), "the resumed run repeated a finished call"
    assert first[served] in second  # the call in flight when the process died was made again

    whole = tmp_path / "whole"
    stub.requests.clear()
    full = cli(*generate_cmd(stub, whole / "qa.jsonl", whole / "cache"))
    assert full.returncode == 0, full.stderr
    assert len(stub.requests) == len(finished) + len(second)  # the same calls in all, none twice
    for name in ("qa.jsonl", "qa.rejects.jsonl", "qa.review.csv"):
        assert (killed / name).read_bytes() == (whole / name).read_bytes(), name
    kinds = Counter(parse_generation(b).kind for b in stub.requests if parse_generation(b) is not None)
    assert set(kinds) == {"meaning", "lexical", "multi", "out_of_corpus"}
