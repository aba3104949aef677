"""Judge numbers that said more than they knew (issue 41 points 3, 4, 8; issue 39's ``score --human`` cases):

* a probability-weighted mean is named ("mean P(true)", "expected score") and the written share is beside it; the
  pass rate is said to come from the written verdicts;
* pass rates get Wilson's interval, a mean over 4 items none, a mean with no spread none of zero width; a PPI
  estimate from labels without variance is not [5.00-5.00];
* ``score --human`` with one usable label says 2 are needed, in ``--json`` too, and names labels that matched no
  answer;
* stage attribution marks verdicts of a judge not shown to separate, and a short answer found in the key.
"""

from __future__ import annotations

import json

import pytest

from ragexam.analysis.answers.diagnosis import StageInputs, attribute, attribute_all, short_answer
from ragexam.cli import main
from ragexam.testing.stub import StubEndpoint


@pytest.fixture
def stub():
    with StubEndpoint() as ep:
        yield ep


def _score(stub, tmp_path, capsys, *extra):
    with pytest.raises(SystemExit) as ei:
        main(["score", "--qa", "it_helpdesk", "--answers", "it_helpdesk", "--judge-model", "m", "--base-url",
              stub.base_url, "--api-key", "x", "--cache-dir", str(tmp_path / "c"), "--no-history", *extra])
    cap = capsys.readouterr()
    return ei.value.code, cap.out, cap.err


def test_probability_means_are_named_and_the_written_share_is_beside_them(stub, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "220")
    code, out, _ = _score(stub, tmp_path, capsys, "-m", "answer_correctness", "-m", "abstention", "--json")
    s = json.loads(out)["judge"]["summary"]["(answers)"]
    ac, ab = s["answer_correctness"], s["abstention"]
    assert (ac["scoring"], ac["value_name"]) == ("probability", "expected score")
    assert (ab["scoring"], ab["value_name"]) == ("probability", "mean P(abstained)")
    assert ac["written_mean"] is not None and ac["written_mean"] != ac["mean"]
    code, text, _ = _score(stub, tmp_path, capsys, "-m", "answer_correctness", "-m", "abstention")
    assert "answer_correctness (expected score)" in text and "abstention (mean P(abstained))" in text
    assert "written" in text and "the pass rate counts the written verdicts" in text
    code, out, _ = _score(stub, tmp_path, capsys, "-m", "answer_correctness", "--json", "--scoring", "sample")
    plain = json.loads(out)["judge"]["summary"]["(answers)"]["answer_correctness"]
    assert (plain["value_name"], plain["written_mean"]) == ("mean", None)


def test_one_human_label_says_two_are_needed_and_unmatched_labels_are_named(stub, tmp_path, capsys):
    labels = tmp_path / "labels.jsonl"
    labels.write_text('{"query_id": "hq_001", "human": {"answer_correctness": 5}}\n'
                      '{"query_id": "hq_999", "human": {"answer_correctness": 2}}\n'
                      '{"query_id": "hq_002", "human": {"faithfulness": true}}\n', encoding="utf-8")
    code, out, err = _score(stub, tmp_path, capsys, "-m", "answer_correctness", "--human", str(labels), "--json",
                            "--scoring", "sample")
    notes = json.loads(out)["notes"]
    need = [n for n in notes if "needs at least 2" in n]
    assert len(need) == 1 and "answer_correctness" in need[0] and "hq_001" in need[0]
    unused = [n for n in notes if "not used" in n]
    assert len(unused) == 1 and "hq_999 (answer_correctness)" in unused[0] and "hq_002 (faithfulness)" in unused[0]


def test_no_zero_width_ppi_interval_from_labels_without_variance():
    from ragexam.stats.ppi import ppi_mean

    e = ppi_mean([5.0] * 20, [5.0] * 6, [5.0] * 6, scale=(1.0, 5.0))
    assert e.floored and round(e.low, 2) == 3.44 and e.high == 5.0 and (e.labels_low, e.labels_high) == (e.low, e.high)
    noisy = ppi_mean([3.0, 4.0, 5.0, 2.0] * 10, [3.0, 4.0, 5.0, 2.0] * 3, [3.0, 5.0, 5.0, 1.0] * 3, scale=(1.0, 5.0))
    assert not noisy.floored  # a real spread over enough labels keeps its normal interval


def _inputs(**kw):
    base = dict(pipeline="P", query_id="q1", type=None, answerable=True, retrieved=True, first_rank=1,
                correct=False, faithful=True)
    return StageInputs(**{**base, **kw})


def test_attribution_marks_an_unchecked_judge_and_a_short_answer():
    key = "긴급 장애는 접수 후 4시간, 일반 장애는 12시간 이내에 처리됩니다."
    assert short_answer("12시간", key) and short_answer("12시간.", key)
    assert not short_answer("24시간", key) and not short_answer(key, key) and not short_answer(None, key)
    terse = attribute(_inputs(answer="12시간", key=key))
    assert terse.label == "generation_miss" and terse.caveats == (
        "short_answer (the answer is a short piece of the key: read it)",)
    unchecked = {"correct": "answer_correctness: no judge-check of this judge"}
    ok = attribute(_inputs(correct=True, answer=key, key=key), unchecked)
    assert ok.label == "ok" and ok.caveats[0].startswith("judge_unchecked:correct (answer_correctness")
    plain = attribute(_inputs(answer="전혀 다른 답", key=key))
    assert plain.caveats == () and plain.to_record().caveats == [] and "caveats" not in plain.to_record().to_dict()
    att = attribute_all([_inputs(answer="12시간", key=key, query_id="q1"),
                         _inputs(correct=True, answer=key, key=key, query_id="q2")], unverified=unchecked)
    lines = att.caveat_notes()
    assert len(lines) == 2 and "2 of 2 labels" in lines[0] and "answer_correctness: no judge-check" in lines[0]
    assert "1 of 2 labels (generation_miss: 1) are short answers found in the key" in lines[1] and "q1" in lines[1]
    assert att.to_dict()["caveats"] == {"P": {"judge_unchecked:correct": 2, "short_answer": 1}}


def test_score_says_which_labels_rest_on_an_unchecked_judge(stub, tmp_path, capsys):
    from ragexam.data.loaders import load_qa

    answers = tmp_path / "answers.jsonl"
    qs = [q for q in load_qa("it_helpdesk") if q.answerable and q.evidence][:6]
    answers.write_text("".join(json.dumps({"query_id": q.query_id, "answer": q.ground_truth,
                                           "contexts": list(q.evidence)}, ensure_ascii=False) + "\n" for q in qs),
                       encoding="utf-8")
    qa = tmp_path / "qa.jsonl"
    lines = open(load_qa("it_helpdesk").source, encoding="utf-8").read().splitlines()
    qa.write_text("\n".join(ln for ln in lines if json.loads(ln)["query_id"] in {q.query_id for q in qs}) + "\n",
                  encoding="utf-8")
    with pytest.raises(SystemExit):
        main(["score", "--qa", str(qa), "--answers", str(answers), "--judge-model", "m", "--base-url", stub.base_url,
              "--api-key", "x", "--cache-dir", str(tmp_path / "c"), "--no-history", "-m", "answer_correctness",
              "--json", "--scoring", "sample"])
    out = capsys.readouterr().out
    data = json.loads(out)
    assert any(n.startswith("stage attribution: ") and "not shown to separate" in n for n in data["notes"])
    caveated = [q for q in data["attribution"]["questions"] if q["caveats"]]
    assert caveated and all(c.startswith("judge_unchecked:correct") for q in caveated for c in q["caveats"]
                            if c.startswith("judge"))


def test_a_clipped_and_floored_correction_says_so():
    from ragexam.report.console_judge import ppi_caveats
    from ragexam.stats.ppi import ppi_mean
    from ragexam.storage.score_summary import HumanCorrected
    from dataclasses import asdict

    e = ppi_mean([1.0] * 20 + [0.0] * 4, [0.0, 0.0], [1.0, 1.0], scale=(0.0, 1.0))
    hc = HumanCorrected(**{**asdict(e), "signature": str(e.signature)}, metric="faithfulness", on="pass rate")
    notes = ppi_caveats(hc)
    assert "0.833" in notes[0] and "1.833, outside the scale: clipped" in notes[0]
    assert "at least Wilson's over the 2 labels" in notes[1] and not hc.corrected_narrower
