"""``ragexam judge-check``: the contrast set built from a question set, its verdicts, the record that ``score``
warns from, ``ragexam llm probe``, and ``score --human`` (prediction-powered estimates) -- against the loopback
stub endpoint and a scripted one."""

from __future__ import annotations

import json
import random

import pytest

from ragexam.analysis.judging.check import build_contrast, perturb, separation
from ragexam.cli import main
from ragexam.data.loaders import load_corpus, load_qa
from ragexam.errors import InputError
from ragexam.testing.stub import StubEndpoint


@pytest.fixture(scope="module")
def helpdesk():
    return load_qa("it_helpdesk"), load_corpus("it_helpdesk")


@pytest.fixture
def stub():
    with StubEndpoint() as ep:
        yield ep


def test_perturbations_contradict():
    rng = random.Random(0)
    assert perturb("출국 3영업일 전까지 신청하면 30분 안에 됩니다.", [], rng) == ("출국 6영업일 전까지 신청하면 60분 안에 됩니다.",
                                                                     "numbers")
    assert perturb("VPN-ERR-619는 0번과 1번 포트", [], rng)[0] == "VPN-ERR-1238는 2번과 3번 포트"
    assert perturb("원격 지원을 받아 인증서를 갱신하면 됩니다.", [], rng) == ("원격 지원을 받아 인증서를 갱신하면 되지 않습니다.", "negation")
    assert perturb("Renew it at the desk", ["Ask the helpdesk"], rng) == ("Ask the helpdesk", "other_answer")
    with pytest.raises(InputError):
        perturb("Renew it", ["Renew it"], rng)


def test_contrast_set_of_the_bundled_questions(helpdesk):
    qa, corpus = helpdesk
    notes = []
    c = build_contrast(qa, corpus, ["context_relevance", "faithfulness", "answer_correctness"], limit=10, notes=notes)
    qids = sorted({x.query_id for x in c["context_relevance"]})
    assert len(qids) == 10 and notes == []
    assert qids == sorted({x.query_id for x in build_contrast(qa, corpus, ["faithfulness"], limit=10)["faithfulness"]})
    by = {q.query_id: q for q in qa}
    from ragexam.data.evidence import EvidenceMatcher

    m = EvidenceMatcher()
    for x in c["context_relevance"]:
        q, (ctx,) = by[x.query_id], x.item.contexts
        holds = bool(m.covered(ctx, list(enumerate(q.evidence))))
        assert holds == x.positive == (x.kind == "evidence")  # negatives hold no evidence of their question
        if x.kind == "random":
            assert x.detail.split("#")[0] not in q.relevant_doc_ids
    fa = c["faithfulness"]
    assert {x.kind for x in fa} == {"key", "perturbed"} and len(fa) == 20
    for key, bad in zip(fa[::2], fa[1::2]):
        assert key.item.answer == by[key.query_id].ground_truth != bad.item.answer
        assert key.item.contexts == bad.item.contexts and bad.detail in ("numbers", "negation", "other_answer")
    ac = c["answer_correctness"]
    assert all(x.item.contexts == () and x.item.ground_truth == by[x.query_id].ground_truth for x in ac)
    with pytest.raises(InputError) as ei:
        build_contrast(qa, corpus, ["abstention"])
    assert "context_relevance" in ei.value.message


def test_separation_verdicts():
    from ragexam.analysis.judging.check import ContrastItem

    def rows(pairs):
        return [(ContrastItem(f"q{i}", "context_relevance", "evidence" if pos else "random", pos, None), s)
                for i, (pos, s) in enumerate(pairs)]

    good = rows([(True, 5.0), (False, 1.0)] * 10)
    for i, (c, s) in enumerate(good):
        good[i] = (ContrastItem(f"q{i // 2}", c.metric, c.kind, c.positive, None), s)
    sep = separation("context_relevance", "sample", good, seed=1, n_resamples=200)
    assert (sep.auc.auc, sep.verdict, sep.ordered, sep.gap) == (1.0, "separates", 1.0, 4.0)
    assert sep.text == "this judge separates relevant from irrelevant contexts: AUC 1.00 [0.72–1.00], 10 questions"
    flat = separation("context_relevance", "sample", [(c, 3.0) for c, _ in good], seed=1, n_resamples=200)
    assert flat.verdict == "does_not" and "scores are flat" in flat.text and flat.ties == 1.0
    none = separation("context_relevance", "sample", [(c, None) for c, _ in good], seed=1)
    assert none.auc is None and none.verdict == "unknown"


def test_judge_check_through_the_cli_and_the_record_score_warns_from(stub, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "x")
    monkeypatch.setenv("COLUMNS", "100")
    cache = str(tmp_path / "cache")
    out = tmp_path / "check.json"
    with pytest.raises(SystemExit) as ei:
        main(["judge-check", "--qa", "it_helpdesk", "--corpus", "it_helpdesk", "--judge-model", "stub", "--base-url",
              stub.base_url, "--cache-dir", cache, "--limit", "6", "--out", str(out), "-m", "context_relevance",
              "-m", "answer_correctness"])
    assert ei.value.code == 0
    text = capsys.readouterr().out
    assert "does the judge separate good from bad?" in text and "context_relevance (probability):" in text
    data = json.loads(out.read_text(encoding="utf-8"))
    cr = data["metrics"]["context_relevance"]
    assert cr["n"] == 18 and cr["n_judged"] == 18 and set(cr["separation"]) == {"sample", "probability"}
    assert cr["separation"]["sample"]["auc"]["n_clusters"] == 6
    ac = data["metrics"]["answer_correctness"]["separation"]["sample"]
    assert ac["verdict"] == "too_few" and ac["n_questions"] == 6  # 6 questions: no verdict
    # score with the same judge warns about answer_correctness, whose recorded check gave no verdict
    with pytest.raises(SystemExit):
        main(["score", "--qa", "it_helpdesk", "--answers", "it_helpdesk", "--judge-model", "stub", "--base-url",
              stub.base_url, "--cache-dir", cache, "-m", "answer_correctness", "--no-history", "--json"])
    report = json.loads(capsys.readouterr().out)
    warn = [n for n in report["notes"] if n.startswith("judge-check of answer_correctness")]
    assert len(warn) == 1 and "too few -- a verdict needs at least 10" in warn[0]


def test_llm_probe_command_and_its_record(stub, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "x")
    args = ["llm", "probe", "--model", "stub", "--base-url", stub.base_url, "--cache-dir", str(tmp_path), "--json"]
    with pytest.raises(SystemExit) as ei:
        main(args)
    first = json.loads(capsys.readouterr().out)
    assert ei.value.code == 0 and (first["json_schema"], first["logprobs"], first["seed"]) == ("enforced", "yes",
                                                                                             "accepted")
    assert first["cached"] is False and first["requests"] == 1
    with pytest.raises(SystemExit):
        main(args)
    assert json.loads(capsys.readouterr().out)["cached"] is True
    n = len(stub.requests)
    with pytest.raises(SystemExit):
        main(args + ["--refresh"])
    assert json.loads(capsys.readouterr().out)["cached"] is False and len(stub.requests) == n + 1


def test_probe_pins_a_refusal_on_its_feature(tmp_path):
    """An endpoint that refuses logprobs (HTTP 400) is asked about each feature apart."""
    from test_judge_stub import completion, send_json, serve
    from http.server import BaseHTTPRequestHandler

    from ragexam.llm.client import LLMClient
    from ragexam.llm.probe import probe

    class H(BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            if body.get("logprobs"):
                return send_json(self, 400, {"error": {"message": "logprobs are not supported"}})
            rf = body.get("response_format") or {}
            send_json(self, 200, completion('{"word": "gamma"}' if rf.get("type") else "gamma"))

    address, shutdown = serve(H)
    try:
        got = probe(LLMClient("m", base_url=address + "/v1", api_key="x"))
    finally:
        shutdown()
    assert (got.json_schema, got.json_object, got.logprobs, got.seed) == ("accepted", "accepted", "rejected",
                                                                          "accepted")
    assert got.requests == 5 and any("logprobs are not supported" in n for n in got.notes)


def test_score_human_labels_give_the_corrected_estimate(stub, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "x")
    labels = tmp_path / "labels.jsonl"
    qa = [q for q in load_qa("it_helpdesk") if q.answerable][:20]
    labels.write_text("".join(json.dumps({"query_id": q.query_id, "human": {"answer_correctness": 5 if i % 3 else 2}})
                              + "\n" for i, q in enumerate(qa)), encoding="utf-8")
    with pytest.raises(SystemExit) as ei:
        main(["score", "--qa", "it_helpdesk", "--answers", "it_helpdesk", "--judge-model", "stub", "--base-url",
              stub.base_url, "--cache-dir", str(tmp_path / "c"), "-m", "answer_correctness", "--human", str(labels),
              "--no-history", "--json", "--scoring", "sample"])
    assert ei.value.code == 0
    report = json.loads(capsys.readouterr().out)
    (e,) = report["judge"]["ppi"]["(answers)"].values()
    assert (e["metric"], e["n_labelled"], e["n_all"], e["on"]) == ("answer_correctness", 20, 65, "mean")
    assert e["estimate"] == pytest.approx(e["judge_mean"] + e["correction"]) and e["low"] < e["estimate"] < e["high"]
    assert e["labels_mean"] == pytest.approx((5 * 13 + 2 * 7) / 20) and e["quote"].startswith("quote the")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"query_id": "hq_001", "human": {"answer_correctness": 9}}\n', encoding="utf-8")
    with pytest.raises(SystemExit) as ei:
        main(["score", "--qa", "it_helpdesk", "--answers", "it_helpdesk", "--judge-model", "stub", "--base-url",
              stub.base_url, "--cache-dir", str(tmp_path / "c"), "--human", str(bad), "--no-history"])
    assert ei.value.code == 2
    err = capsys.readouterr().err
    assert "bad.jsonl:1: field 'human.answer_correctness': received 9" in err
