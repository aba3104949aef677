"""Judge reliability: agreement across repeats and with human labels, against hand-computed values."""

from __future__ import annotations

import json

import pytest

from ragexam.analysis.judging.agreement import check_human_value, human_agreement, repeat_agreement
from ragexam.errors import InputError
from ragexam.metrics.judge import ItemScore, JudgeVerdict


def jm(item, repeat, score, label=None, metric="answer_correctness", details=None, status="judged", reason=None):
    return JudgeVerdict(metric, item, repeat, status, score, label, details or {}, reason, None, 1, 1, None, None, False,
                    f"{metric}/ko/v1", "sha", "m", "e", "k")


def isc(item, score, label=None, metric="answer_correctness", details=None, status="judged", reason=None):
    return ItemScore(metric, item, status, score, label, details or {"reasoning": f"why {item}"}, reason, None, 1,
                     1 if status == "judged" else 0, "sha")


def test_repeat_agreement_three_repeats_by_hand():
    # items x repeats: a: 5 5 5, b: 4 3 4, c: 1 1 2, d: 3 3 3, e: unjudged in repeat 2 (left out)
    table = {"a": [5, 5, 5], "b": [4, 3, 4], "c": [1, 1, 2], "d": [3, 3, 3]}
    js = [jm(i, r, float(v)) for i, vals in table.items() for r, v in enumerate(vals)]
    js += [jm("e", 0, 4.0), jm("e", 1, 4.0), jm("e", 2, None, status="unjudged", reason="invalid_json")]
    a = repeat_agreement(js, "answer_correctness")
    assert (a.repeats, a.n_items, a.n_items_complete, a.n_units) == (3, 5, 4, 4)
    assert a.exact == pytest.approx(2 / 4)
    # pairs (01, 02, 12): a 0 0 0, b 1 0 1, c 0 1 1, d 0 0 0 -> 4 / 12
    assert a.mean_abs_diff == pytest.approx(4 / 12)
    # Cohen's kappa per pair, labels 1..5:
    # r0=[5,4,1,3] r1=[5,3,1,3]: po=3/4, pe=(1*1+0+1*1+1*2)/16=4/16 -> (0.75-0.25)/0.75 = 2/3
    # r0 vs r2=[5,4,2,3]: po=3/4, pe=(1+1+0+1)/16=3/16 -> (0.75-0.1875)/0.8125 = 9/13
    # r1 vs r2: po=2/4, pe=(1+0+0+2*1)/16 = 3/16 -> (0.5-0.1875)/0.8125 = 5/13
    assert a.kappa == pytest.approx((2 / 3 + 9 / 13 + 5 / 13) / 3)
    assert a.kappa_pairs == 3 and a.kappa_undefined_pairs == 0 and a.kappa_quadratic is not None


def test_repeat_agreement_binary_and_undefined_kappa():
    js = [jm(i, r, 1.0, "faithful", "faithfulness") for i in "abc" for r in range(2)]
    a = repeat_agreement(js, "faithfulness")
    assert a.exact == 1.0 and a.mean_abs_diff == 0.0
    assert a.kappa is None and a.kappa_undefined_pairs == 1  # everything "faithful": kappa undefined, not 1
    assert a.kappa_quadratic is None
    one = repeat_agreement([jm("a", 0, 5.0)], "answer_correctness")
    assert one.repeats == 1 and one.exact is None


def test_human_agreement_by_hand():
    judge = {"a": isc("a", 5.0, "correct"), "b": isc("b", 4.0, "correct"), "c": isc("c", 2.0, "partially_correct"),
             "d": isc("d", 1.0, "incorrect"), "e": isc("e", 3.0, "partially_correct"),
             "f": isc("f", None, status="unjudged", reason="truncated")}
    human = {"a": 5, "b": 5, "c": 2, "d": 1, "e": 1, "f": 4, "g": 3}
    h = human_agreement(judge, human, "answer_correctness", weights="quadratic", top=5)
    assert (h.n_labelled, h.n_compared, h.n_units) == (7, 5, 5)
    assert h.unjudged == {"truncated": 1, "not_in_run": 1}
    assert h.exact == pytest.approx(0.6)
    assert h.kappa == pytest.approx(0.5)  # po 0.6, pe 0.2
    assert h.kappa_weighted == pytest.approx(1 - 1.0 / 5.4)  # sum(w O) = 1.0, sum(w E) = 5.4
    assert h.mean_abs_diff == pytest.approx(3 / 5)
    assert [(d.item_id, d.judge, d.human, d.gap) for d in h.disagreements] == [("e", 3, 1, 2), ("b", 4, 5, 1)]
    assert h.disagreements[0].reasoning == "why e"
    scipy_stats = pytest.importorskip("scipy.stats")
    assert h.spearman == pytest.approx(scipy_stats.spearmanr([5, 4, 2, 1, 3], [5, 5, 2, 1, 1]).statistic)
    lin = human_agreement(judge, human, "answer_correctness", weights="linear")
    # linear: sum(w O) = (1 + 2) / 5 = 0.6; sum(w E) = 0.2 * (0.4*10 + 0.2*7 + 0.4*10) = 1.88
    assert lin.kappa_weighted == pytest.approx(1 - 0.6 / 1.88)


def test_human_agreement_context_relevance_units_and_errors():
    judge = {"a": isc("a", 7 / 3, None, "context_relevance", {"scores": [5, 1, 1]}),
             "b": isc("b", 3.0, None, "context_relevance", {"scores": [4, 2]})}
    h = human_agreement(judge, {"a": [5, 2, 1], "b": [4, 2]}, "context_relevance")
    assert h.n_units == 5 and h.exact == pytest.approx(4 / 5)
    assert [(d.item_id, d.unit) for d in h.disagreements] == [("a", 1)]
    with pytest.raises(InputError, match="one value per context"):
        human_agreement(judge, {"a": [5, 1]}, "context_relevance")


@pytest.mark.parametrize("metric, value, ok", [
    ("answer_correctness", 4, True), ("answer_correctness", 6, False), ("answer_correctness", True, False),
    ("answer_correctness", "correct", False), ("faithfulness", True, True), ("faithfulness", 1, False),
    ("abstention", False, True), ("context_relevance", [1, 5], True), ("context_relevance", [0], False),
    ("context_relevance", [], False), ("fluency", 3, False)])
def test_check_human_value(metric, value, ok):
    if ok:
        check_human_value(metric, value)
    else:
        with pytest.raises(InputError):
            check_human_value(metric, value, source="qa.jsonl", line=3)


def test_cli_judge_agreement_against_the_stub(tmp_path, capsys, monkeypatch):
    from test_judge_stub import API_KEY, start_stub
    from test_score_fixtures import write_jsonl

    from ragexam.cli import main

    human = {"h1": 5, "h2": 4, "h3": 1, "h4": 2, "h5": 5}
    qa = write_jsonl(tmp_path / "qa.jsonl", [
        dict({"query_id": q, "question": f"{q} 질문입니다?", "ground_truth": f"{q} 정답", "relevant_doc_ids": ["d"]},
             **({"human": {"answer_correctness": v}} if v is not None else {}))
        for q, v in list(human.items()) + [("h6", None)]])
    answers = write_jsonl(tmp_path / "answers.jsonl", [
        {"query_id": q, "answer": f"{q} 답변" + (" [[s:incorrect]]" if q == "h3" else "")} for q in list(human) + ["h6"]])
    stub, shutdown = start_stub()
    monkeypatch.setenv("OPENAI_API_KEY", API_KEY)
    try:
        argv = ["judge-agreement", "--qa", str(qa), "--answers", str(answers), "--judge-model", "stub-judge",
                "--base-url", stub.base_url, "--cache-dir", str(tmp_path / "cache"), "--json"]
        with pytest.raises(SystemExit) as ei:
            main(argv)
        assert ei.value.code == 0
        data = json.loads(capsys.readouterr().out)
        assert len(stub.requests) == 5  # only the labelled answers are judged
        a = data["metrics"]["answer_correctness"]
        # judge [5, 5, 1, 5, 5] vs human [5, 4, 1, 2, 5]
        assert (a["n_labelled"], a["n_compared"], a["n_units"]) == (5, 5, 5)
        assert a["exact"] == pytest.approx(0.6)
        assert a["kappa"] == pytest.approx(0.24 / 0.64)
        assert a["kappa_weighted"] == pytest.approx(1 - 2.0 / 5.84) and a["weights"] == "quadratic"
        assert [(d["item_id"], d["gap"]) for d in a["disagreements"]] == [("h4 @ (answers)", 3), ("h2 @ (answers)", 1)]
        with pytest.raises(SystemExit):
            main(argv[:-1])  # the tables
        text = capsys.readouterr().out
        assert "largest disagreements" in text and "h4" in text
        assert len(stub.requests) == 5  # served from the cache
    finally:
        shutdown()
