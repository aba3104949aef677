"""Stage attribution: the decision table, and the matrix on a handcrafted case."""

from __future__ import annotations

import json

import pytest

from test_score_fixtures import EXPECTED_P1, write_case

from ragexam.analysis.answers.files import load_answers
from ragexam.storage.runfolder import read_run_folder
from ragexam.analysis.answers.diagnosis import LABELS, StageInputs, attribute, attribute_all, evidence_in_contexts
from ragexam.analysis.answers.scoring import score_answers
from ragexam.metrics.verdicts import parse_correct_if
from ragexam.cli import main
from ragexam.data import load_qa
from ragexam.errors import InputError


def si(**kw):
    base = dict(pipeline="P", query_id="q", type="t", answerable=True)
    base.update(kw)
    return StageInputs(**base)


@pytest.mark.parametrize("kw, label, reason", [
    (dict(retrieved=True, correct=True), "ok", None),
    (dict(retrieved=True, correct=True, faithful=True), "ok", None),
    (dict(retrieved=True, correct=True, faithful=None), "ok", None),
    (dict(retrieved=True, correct=True, faithful=False), "generation_miss", None),
    (dict(retrieved=True, correct=False), "generation_miss", None),
    (dict(retrieved=False, correct=False), "retrieval_miss", None),
    (dict(retrieved=False, correct=False, evidence_split=True), "evidence_split", None),
    (dict(retrieved=False, correct=True, evidence_split=True), "lucky", None),
    (dict(retrieved=False, correct=True), "lucky", None),
    (dict(retrieved=False, correct=True, faithful=False), "lucky", None),
    (dict(retrieved=None, correct=True), "unjudged", "retrieval_unknown (answer correct)"),
    (dict(retrieved=True, correct=None), "unjudged", "no_correctness_source"),
    (dict(retrieved=True, correct=None, missing="judge:invalid_json"), "unjudged", "judge:invalid_json"),
    (dict(answerable=False, abstained=True), "abstained_ok", None),
    (dict(answerable=False, abstained=False), "hallucinated", None),
    (dict(answerable=False, abstained=None, missing="no_answer"), "unjudged", "no_answer"),
    (dict(answerable=False, abstained=True, retrieved=None), "abstained_ok", None),
])
def test_decision_table(kw, label, reason):
    r = attribute(si(**kw))
    assert (r.label, r.reason) == (label, reason)


def test_counts_and_matrix_api():
    inputs = [si(query_id="a", type="x", retrieved=True, correct=True),
              si(query_id="b", type="x", retrieved=False, correct=False),
              si(query_id="c", type="y", retrieved=False, correct=True),
              si(query_id="d", type="y", answerable=False, abstained=False),
              si(query_id="e", type=None, retrieved=None, correct=False)]
    att = attribute_all(inputs, signature="sig")
    assert att.counts("P") == {"ok": 1, "retrieval_miss": 1, "evidence_split": 0, "generation_miss": 0, "lucky": 1,
                               "abstained_ok": 0, "hallucinated": 1, "unjudged": 1}
    assert att.matrix("P") == {
        "(none)": dict.fromkeys(LABELS, 0) | {"unjudged": 1},
        "x": dict.fromkeys(LABELS, 0) | {"ok": 1, "retrieval_miss": 1},
        "y": dict.fromkeys(LABELS, 0) | {"lucky": 1, "hallucinated": 1},
    }
    assert att.unjudged_reasons("P") == {"retrieval_unknown (answer not correct)": 1}
    d = att.to_dict()
    assert d["signature"] == "sig" and len(d["questions"]) == 5


def test_evidence_in_contexts():
    assert evidence_in_contexts(["UDP  4500 포트"], ["…공용망에서 UDP 4500 포트가 막힘"]) is True
    assert evidence_in_contexts(["TCP 443"], ["UDP 4500"]) is False
    assert evidence_in_contexts([], ["x"]) is None
    assert evidence_in_contexts(["x"], []) is None


def _report(tmp_path, **kw):
    qa, corpus, answers, run = write_case(tmp_path)
    q = load_qa(qa)
    return score_answers(q, load_answers(answers), answers_source=str(answers), run=read_run_folder(run), **kw)


def test_handcrafted_matrix_from_run(tmp_path):
    rep = _report(tmp_path, correct_if=parse_correct_if("chrf>=0.5"))
    att = rep.attribution
    got = {r.inputs.query_id: r.label for r in att.results if r.inputs.pipeline == "P1"}
    assert got == EXPECTED_P1
    assert att.matrix("P1") == {
        "lexical": dict.fromkeys(LABELS, 0) | {"ok": 1, "lucky": 1, "generation_miss": 1},
        "meaning": dict.fromkeys(LABELS, 0) | {"ok": 1, "retrieval_miss": 1, "unjudged": 1},
        "out_of_corpus": dict.fromkeys(LABELS, 0) | {"abstained_ok": 1, "hallucinated": 1},
    }
    assert att.counts("P2") == dict.fromkeys(LABELS, 0) | {"ok": 6, "abstained_ok": 2}
    assert att.unjudged_reasons("P1") == {"no_answer": 1}
    assert rep.missing_answers() == {"P1": 1, "P2": 0}
    assert att.signature.startswith("retrieval:run|evidence:first_rank<=k|k:5|correct:chrf>=0.5|")
    assert "abstain:phrases-v1" in att.signature and "faithful:none" in att.signature
    # k matters: with k=1, q5 (rank 3) and q3 (rank 2) are no longer retrieved
    rep1 = _report(tmp_path / "k1", correct_if=parse_correct_if("chrf>=0.5"), k=1)
    got1 = {r.inputs.query_id: r.label for r in rep1.attribution.results if r.inputs.pipeline == "P1"}
    assert got1["q5"] == "lucky" and got1["q3"] == "retrieval_miss" and got1["q1"] == "ok"


def test_without_correctness_source_everything_answerable_is_unjudged(tmp_path):
    rep = _report(tmp_path)
    c = rep.attribution.counts("P1")
    assert c["unjudged"] == 6 and c["abstained_ok"] == 1 and c["hallucinated"] == 1
    assert rep.attribution.unjudged_reasons("P1") == {"no_correctness_source": 5, "no_answer": 1}


def test_retrieval_from_answer_contexts_without_a_run(tmp_path):
    qa, corpus, answers, run = write_case(tmp_path)
    recs = [{"query_id": "q1", "answer": "UDP 4500 포트가 막혀서 생기며 TCP 443 모드로 바꾸면 됩니다.",
             "contexts": ["VPN 오류 619는 공용 와이파이에서 UDP 4500 포트가 막힌 경우입니다."]},
            {"query_id": "q4", "answer": "30분이 지나면 자동으로 풀립니다.", "contexts": ["복합기 B 덮개"]}]
    p = tmp_path / "ctx.jsonl"
    p.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in recs), encoding="utf-8")
    rep = score_answers(load_qa(qa), load_answers(p), correct_if=parse_correct_if("chrf>=0.5"))
    got = {r.inputs.query_id: (r.label, r.inputs.retrieved) for r in rep.attribution.results}
    assert got["q1"] == ("ok", True) and got["q4"] == ("lucky", False)
    assert got["q2"] == ("unjudged", None)
    assert "retrieval:contexts+unknown" in rep.attribution.signature


def test_answers_for_unknown_questions_are_an_error(tmp_path):
    qa, corpus, answers, run = write_case(tmp_path)
    p = tmp_path / "bad.jsonl"
    p.write_text('{"query_id": "q1", "answer": "x"}\n{"query_id": "zz", "answer": "y"}\n', encoding="utf-8")
    with pytest.raises(InputError) as ei:
        score_answers(load_qa(qa), load_answers(p))
    assert ei.value.line == 2 and ei.value.field == "query_id"


def cli(argv, capsys):
    with pytest.raises(SystemExit) as ei:
        main(argv)
    out = capsys.readouterr()
    return ei.value.code, out.out, out.err


def test_cli_score_with_run_prints_matrix_and_writes_files(tmp_path, capsys):
    qa, corpus, answers, run = write_case(tmp_path)
    out = tmp_path / "out"
    code, text, err = cli(["score", "--qa", str(qa), "--answers", str(answers), "--run", str(run), "--correct-if", "chrf>=0.5",
          "--out", str(out)], capsys)
    assert code == 0, err
    assert "stage attribution: P1" in text and "retrieval_miss" in text
    data = json.loads((out / "score.json").read_text(encoding="utf-8"))
    assert data["format"] == "ragexam-score/2"
    assert data["attribution"]["by_type"]["P1"]["lexical"]["lucky"] == 1
    assert data["judge"] is None
    lines = (out / "per_answer.csv").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 1 + 16 and lines[0].startswith("pipeline,query_id,type,answerable,first_rank,k,retrieved")
    code, text, err = cli(["score", "--qa", str(qa), "--answers", str(answers), "--run", str(run),
                           "--correct-if", "chrf>=0.5", "--json"], capsys)
    data2 = json.loads(text)
    assert data2["attribution"]["counts"] == data["attribution"]["counts"]


def test_caveat_notes_name_each_pipelines_questions():
    """The note listed 'hq_011, hq_022, ..., hq_011, hq_022 ...': the same ids of two pipelines, unnamed."""
    from ragexam.analysis.answers.diagnosis import Attribution, StageResult

    why = ("judge_unchecked (abstention: no judge-check can measure it)",)
    results = [StageResult(si(pipeline=p, query_id=q), "abstained_ok", caveats=why)
               for p in ("P1", "P2") for q in ("hq_011", "hq_022", "hq_033", "hq_044", "hq_055")]
    (note,) = Attribution(results).caveat_notes()
    assert note.endswith("-- P1: hq_011, hq_022, hq_033, hq_044 ...; P2: hq_011, hq_022, hq_033, hq_044 ...")
    (one,) = Attribution(results[:5]).caveat_notes()
    assert one.endswith("-- hq_011, hq_022, hq_033, hq_044, hq_055")
