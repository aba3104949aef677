"""context_precision, context_recall, answer_relevancy, custom rubrics, pairwise judging and the canonical
verdict under repeats, against the scripted loopback judge (tests/test_judge_stub.py)."""

from __future__ import annotations

import json

import pytest

from ragexam.stats.proportion import wilson

from test_judge_stub import API_KEY, start_stub

from ragexam import stats
from ragexam.errors import InputError
from ragexam.metrics.judge import (Judge, JudgeItem, NotApplicable, PairItem, ReplyError, average_precision,
                                   judge_pairs, load_rubric, rubric_from_dict, summarize, validate_reply)

CTX = ("VPN-ERR-619는 UDP 4500 포트가 막힌 경우입니다.", "프린터 용지 걸림은 B 덮개를 여세요.",
       "비밀번호는 90일마다 바꿉니다.")


@pytest.fixture
def stub():
    s, shutdown = start_stub()
    yield s
    shutdown()


def judge(stub, tmp_path, **kw):
    kw.setdefault("backoff", 0.0)
    kw.setdefault("max_retries", 0)
    return Judge("stub-judge", base_url=stub.base_url, api_key=API_KEY, cache_dir=str(tmp_path / "cache"), **kw)


def items(*scenarios, contexts=CTX):
    return [JudgeItem(f"q{i}", f"질문 {i} [[s:{s}]]", f"답변 {i}", contexts, f"정답 {i}입니다. 둘째 진술입니다.")
            for i, s in enumerate(scenarios)]


# --- reply contracts (no server) ---------------------------------------------------------------
def test_average_precision_by_hand():
    assert average_precision([True, False, True]) == pytest.approx((1 / 1 + 2 / 3) / 2)
    assert average_precision([False, True]) == 0.5
    assert average_precision([False, False, True]) == pytest.approx(1 / 3)
    assert average_precision([True, True]) == 1.0
    assert average_precision([False, False]) == 0.0  # nothing useful: every precision is 0


def test_context_precision_contract():
    v = validate_reply("context_precision", {"useful": [False, True, True], "reasoning": "r"}, n_contexts=3)
    assert v.score == pytest.approx((1 / 2 + 2 / 3) / 2) and v.label is None and v.details["n_useful"] == 2
    for obj, needle in [({"useful": [True, False], "reasoning": "r"}, "it holds 2: [true, false]"),
                        ({"useful": [True, 1, False], "reasoning": "r"}, "value 2 is 1"),
                        ({"useful": "yes", "reasoning": "r"}, 'it is "yes"'),
                        ({"useful": [True, False, True]}, '"reasoning" must be a string; it is missing')]:
        with pytest.raises(ReplyError) as ei:
            validate_reply("context_precision", obj, n_contexts=3)
        assert needle in ei.value.message


def test_context_recall_contract():
    v = validate_reply("context_recall", {"supported": [True, False, True], "reasoning": "r"}, units=["a", "b", "c"])
    assert v.score == pytest.approx(2 / 3) and v.label == "incomplete" and v.details["n_statements"] == 3
    assert v.details["statements"][1] == {"statement": "b", "supported": False}
    assert validate_reply("context_recall", {"supported": [True], "reasoning": ""}, units=["a"]).label == "complete"
    with pytest.raises(ReplyError) as ei:
        validate_reply("context_recall", {"supported": [], "reasoning": "r"}, units=["a", "b"])
    assert "exactly 2 values (true or false), one per statement" in ei.value.message


def test_answer_relevancy_contract():
    v = validate_reply("answer_relevancy", {"declined": False, "score": 3, "reasoning": "r"})
    assert (v.score, v.label) == (3.0, "partially_relevant")
    with pytest.raises(NotApplicable) as na:
        validate_reply("answer_relevancy", {"declined": True, "score": 1, "reasoning": "r"})
    assert na.value.reason == "declined"
    for obj, needle in [({"declined": False, "reasoning": "r"}, '"score" must be an integer from 1 to 5; it is missing'),
                        ({"declined": "no", "score": 5, "reasoning": "r"}, '"declined" must be true or false; it is "no"'),
                        ({"declined": False, "score": True, "reasoning": "r"}, "it is true")]:
        with pytest.raises(ReplyError) as ei:
            validate_reply("answer_relevancy", obj)
        assert needle in ei.value.message


def test_pairwise_contract():
    assert validate_reply("pairwise", {"winner": "2", "reasoning": "r"}).label == "2"
    for bad in (1, "A"):  # the schema's enum is of strings
        with pytest.raises(ReplyError) as ei:
            validate_reply("pairwise", {"winner": bad, "reasoning": "r"})
        assert '"winner" must be one of "1", "2", "tie"' in ei.value.message


# --- through the judge (loopback stub) ----------------------------------------------------------
def test_new_metrics_good_replies(stub, tmp_path):
    run = judge(stub, tmp_path).run(items("good", "complete"), ["context_precision", "context_recall",
                                                                 "answer_relevancy"])
    cp, cr, ar = run.items("context_precision"), run.items("context_recall"), run.items("answer_relevancy")
    assert cp["q0"].score == 1.0 and cp["q0"].details["useful"] == [True, False, False] and cp["q0"].passed is None
    assert (cr["q0"].score, cr["q0"].label, cr["q0"].passed) == (0.5, "incomplete", False)
    assert (cr["q1"].score, cr["q1"].label, cr["q1"].passed) == (1.0, "complete", True)
    assert (ar["q0"].score, ar["q0"].label, ar["q0"].passed) == (5.0, "relevant", True)
    # every new rubric went out with its own JSON schema, named after the metric
    names = {b["response_format"]["json_schema"]["name"] for b in stub.requests}
    assert names == {"context_precision", "context_recall", "answer_relevancy"}
    assert run.rubrics["context_recall"]["name"] == "context_recall/ko/v2"
    assert f"rubric:context_recall/ko/v2@{run.rubrics['context_recall']['sha']}" in run.signatures["context_recall"]
    recall = next(b for b in stub.requests if b["response_format"]["json_schema"]["name"] == "context_recall")
    assert "입니다.\n\n[진술 2] : 둘째 진술입니다." in recall["messages"][1]["content"]


def test_new_metrics_bad_replies_are_unjudged_with_reason(stub, tmp_path):
    j = judge(stub, tmp_path, max_attempts=2)
    run = j.run(items("count", "good", "declined", "bad_json"),
                ["context_precision", "context_recall", "answer_relevancy"])
    got = {(v.metric, v.item_id): (v.status, v.reason) for v in run.judgments}
    assert got[("context_precision", "q0")] == ("unjudged", "invalid_reply")
    assert got[("answer_relevancy", "q2")] == ("unjudged", "declined")
    assert all(got[(m, "q3")] == ("unjudged", "invalid_json") for m in
               ("context_precision", "context_recall", "answer_relevancy"))
    # a declined answer is not applicable after one reply; a broken one was asked again (max_attempts=2)
    by = {(v.metric, v.item_id): v for v in run.judgments}
    assert by[("answer_relevancy", "q2")].attempts == 1 and by[("context_precision", "q0")].attempts == 2
    s = run.summary("answer_relevancy")
    assert s.n == 3 and s.n_not_applicable == 1 and s.n_judged == 2  # declined: not judgeable (E4)
    assert s.coverage == pytest.approx(2 / 3) and s.unjudged == {"declined": 1, "invalid_json": 1}
    assert s.mean == 5.0 and s.pass_rate == 1.0


def test_context_precision_count_mismatch_is_fed_back(stub, tmp_path):
    run = judge(stub, tmp_path, max_attempts=2).run(items("count"), ["context_precision"])
    (v,) = run.judgments
    assert (v.status, v.reason, v.attempts) == ("unjudged", "invalid_reply", 2)
    assert "exactly 3 values (true or false), one per context" in v.message and "it holds 2" in v.message
    second = stub.requests[1]["messages"]
    assert second[-2]["role"] == "assistant" and "(minItems 3, maxItems 3); it holds 2" in second[-1]["content"]


def test_inputs_missing_are_unjudged_without_a_call(stub, tmp_path):
    its = [JudgeItem("a", "q", "answer", (), "gt"), JudgeItem("b", "q", "answer", CTX, None)]
    run = judge(stub, tmp_path).run(its, ["context_precision", "context_recall"])
    assert [(v.metric, v.item_id, v.reason) for v in run.judgments] == [
        ("context_precision", "a", "no_contexts"), ("context_precision", "b", "no_ground_truth"),
        ("context_recall", "a", "no_contexts"), ("context_recall", "b", "no_ground_truth")]
    assert stub.requests == []


# --- repeats: canonical verdict, ties, flip share ----------------------------------------------------
def test_canonical_verdict_majority_and_ties(stub, tmp_path):
    j = judge(stub, tmp_path)
    # flip: 5 (correct), 3 (partially), 5, 3 ... ; flip3: correct, correct, partially (in the order the
    # calls arrive, which concurrency decides: compare repeats as a multiset)
    two = j.run(items("flip", "good"), ["answer_correctness"], repeat=2)
    s2 = two.items("answer_correctness")
    assert sorted(s2["q0"].verdicts) == ["correct", "partially_correct"] and s2["q0"].tie and s2["q0"].flipped
    assert (s2["q0"].label, s2["q0"].score, s2["q0"].passed) == ("partially_correct", 3.0, False)  # tie -> worse
    assert not s2["q1"].tie and not s2["q1"].flipped and s2["q1"].label == "correct"
    summary = two.summary("answer_correctness")
    assert (summary.ties, summary.n_repeated, summary.flip_share) == (1, 2, 0.5)
    three = judge(stub, tmp_path / "b").run(items("flip3"), ["answer_correctness"], repeat=3)
    s3 = three.items("answer_correctness")["q0"]
    assert sorted(s3.verdicts) == ["correct", "correct", "partially_correct"]
    assert (s3.label, s3.tie, s3.flipped, s3.passed) == ("correct", False, True, True)  # majority 2 of 3


def test_canonical_verdict_of_a_score_only_metric_is_the_lower_median(stub, tmp_path):
    run = judge(stub, tmp_path).run(items("flip"), ["context_precision"], repeat=3)
    item = run.items("context_precision")["q0"]
    # repeats: [T,F,F] -> 1.0, [F,T,T] -> (1/2+2/3)/2, [T,F,F] -> 1.0
    assert sorted(item.verdicts) == [pytest.approx((1 / 2 + 2 / 3) / 2), 1.0, 1.0]
    assert item.score == 1.0 and item.flipped and not item.tie


def test_summary_intervals_are_the_bootstrap_of_the_judged_items(stub, tmp_path):
    run = judge(stub, tmp_path).run(items("good", "incorrect", "good", "bad_json", "good", "good"),
                                    ["answer_correctness"])
    s = run.summary("answer_correctness", seed=7)
    judged = [5.0, 1.0, 5.0, 5.0, 5.0]
    ci = stats.bootstrap_ci(judged, n_resamples=2000, seed=7)
    assert s.mean == pytest.approx(4.2) and s.ci95 == (ci.low, ci.high) and s.n_judged == 5 and s.n == 6
    pci = wilson(4 / 5, 5)  # a pass rate's interval is Wilson's: never [1.00-1.00] on a handful
    assert s.pass_rate == 0.8 and s.pass_ci95 == pci and s.n_passed == 4
    assert "seed:7" in s.interval and s.flip_share is None  # no repeats
    d = s.to_dict()
    assert d["ci95"] == [ci.low, ci.high] and d["pass_ci95"] == list(pci) and d["pass_interval"] == "wilson"
    few = judge(stub, tmp_path).run(items("good", "incorrect", "good", "good"), ["answer_correctness"])
    s4 = few.summary("answer_correctness")
    assert s4.ci95 is None and s4.interval_note == "n = 4: too few for an interval" and s4.mean == 4.0
    assert s4.pass_ci95 == wilson(3 / 4, 4)
    assert summarize([], "answer_correctness").ci95 is None


# --- custom rubrics ------------------------------------------------------------------------------
RUBRIC = {
    "name": "politeness", "version": 2, "language": "en", "description": "is the answer polite and clear",
    "criteria": "Judge whether the answer is polite and tells the employee clearly what to do.",
    "steps": ["Read the tone.", "Check that the next step is clear."],
    "inputs": ["question", "answer"],
    "scale": {"1": "rude or unclear", "2": "curt", "3": "neutral", "4": "polite", "5": "polite and clear"},
    "pass": 4,
    "examples": [{"question": "How do I reset my password?", "answer": "Please open the portal > My info.",
                  "score": 5, "reasoning": "polite, clear path"}],
}


def test_rubric_file_becomes_a_metric(tmp_path):
    path = tmp_path / "polite.json"
    path.write_text(json.dumps(RUBRIC), encoding="utf-8")
    m = load_rubric(path)
    r = m.rubric("ko")  # written in English: English whatever the judge's language
    assert (m.name, r.name, m.needs, m.labels, m.custom) == ("politeness", "politeness/en/v2", ("answer",),
                                                             ("1", "2", "3", "4", "5"), True)
    assert "polite and clear" in r.template and "Check that the next step is clear." in r.template
    assert r.schema["properties"]["score"]["enum"] == [1, 2, 3, 4, 5]
    assert m.passed(4.0, "4", {}) and not m.passed(3.0, "3", {})
    # any edit to what the judge sees changes the hash; the same content gives the same hash
    assert rubric_from_dict(dict(RUBRIC), source="x").rubric("en").sha == r.sha
    edited = dict(RUBRIC, criteria=RUBRIC["criteria"] + " Be strict.")
    assert rubric_from_dict(edited).rubric("en").sha != r.sha


@pytest.mark.parametrize("change, field, needle", [
    ({"name": "Polite!"}, "name", "lowercase name"),
    ({"name": "faithfulness"}, "name", "built-in metric"),
    ({"language": "fr"}, "language", "expected ko or en"),
    ({"scale": {"1": "only one"}}, "scale", "expected 2 to 10"),
    ({"scale": {"a": "x", "b": "y"}}, "scale", "not an integer"),
    ({"pass": 7}, "pass", "one of the levels"),
    ({"inputs": ["question", "reply"]}, "inputs", "distinct names"),
    ({"criteria": "Is {answer} polite?"}, "criteria", "placeholder '{answer}'"),
    ({"examples": [{"question": "q", "answer": "a", "score": 9}]}, "examples[1].score", "one of the levels"),
    ({"examples": [{"question": "q", "answer": "a", "contexts": ["c"], "score": 4}]}, "examples[1]",
     "do not include"),
    ({"colour": "red"}, "colour", "unknown field"),
])
def test_rubric_file_errors_name_the_field(change, field, needle):
    with pytest.raises(InputError) as ei:
        rubric_from_dict(dict(RUBRIC, **change), source="polite.yaml")
    assert ei.value.field == field and needle in ei.value.message and ei.value.source == "polite.yaml"


def test_yaml_rubric_and_file_errors(tmp_path):
    y = tmp_path / "r.yaml"
    y.write_text("name: tone\nlanguage: ko\ncriteria: 말투가 공손한가\nscale:\n  1: 무례함\n  2: 보통\n  3: 공손함\n",
                 encoding="utf-8")
    m = load_rubric(y)
    assert m.name == "tone" and m.rubric("en").language == "ko" and m.pass_rule is None
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: [unclosed\n", encoding="utf-8")
    with pytest.raises(InputError) as ei:
        load_rubric(bad)
    assert "not valid YAML" in ei.value.message
    with pytest.raises(InputError) as ei:
        load_rubric(tmp_path / "missing.json")
    assert "no such rubric file" in ei.value.message
    txt = tmp_path / "r.txt"
    txt.write_text("{}", encoding="utf-8")
    with pytest.raises(InputError) as ei:
        load_rubric(txt)
    assert "expected .json, .yaml or .yml" in ei.value.message


def test_custom_metric_through_the_judge(stub, tmp_path):
    m = rubric_from_dict(RUBRIC, source="polite.json")
    j = judge(stub, tmp_path, custom=[m], max_attempts=2)
    run = j.run(items("good", "range", "flip"), ["politeness"], repeat=2)
    got = run.items("politeness")
    assert (got["q0"].score, got["q0"].label, got["q0"].passed) == (4.0, "4", True)
    assert (got["q1"].status, got["q1"].reason) == ("unjudged", "invalid_reply")
    assert "an integer from 1 to 5" in got["q1"].message
    assert sorted(got["q2"].verdicts) == ["2", "4"] and got["q2"].tie and got["q2"].label == "2"  # tie -> lower
    sig = run.signatures["politeness"]
    assert f"rubric:politeness/en/v2@{m.rubric('en').sha}|pass:>=4|" in sig
    assert run.rubrics["politeness"]["source"] == "polite.json"
    assert stub.requests[0]["response_format"]["json_schema"]["name"] == "politeness"
    with pytest.raises(InputError):
        Judge("stub-judge", base_url=stub.base_url, custom=[rubric_from_dict(dict(RUBRIC, name="tone"))]).run(
            items("good"), ["politeness"])


# --- pairwise ---------------------------------------------------------------------------------------
def pair(i, scenario, a, b):
    return PairItem(f"p{i}", f"질문 {i} [[s:{scenario}]]", a, b, f"정답 {i}")


def test_order_swap_rule(stub, tmp_path):
    pairs = [pair(0, "x", "A의 답", "B의 답 [[good]]"),       # B better in both orders -> B
             pair(1, "x", "A의 답 [[good]]", "B의 답"),       # -> A
             pair(2, "first", "A의 답", "B의 답"),            # always "1": A then B -> inconsistent
             pair(3, "tie", "A의 답", "B의 답"),              # -> tie
             pair(4, "x", "A의 답", None),                    # no second answer -> unjudged
             pair(5, "bad_json", "A", "B")]                   # both orders unusable -> unjudged
    pr = judge_pairs(judge(stub, tmp_path, max_attempts=1), pairs, name_a="base", name_b="new")
    got = {r.item_id: (r.outcome, r.winner_ab, r.winner_ba) for r in pr.results}
    assert got == {"p0": ("B", "B", "B"), "p1": ("A", "A", "A"), "p2": ("inconsistent", "A", "B"),
                   "p3": ("tie", "tie", "tie"), "p4": ("unjudged", None, None), "p5": ("unjudged", None, None)}
    assert pr.results[4].reason == "no_answer" or pr.results[4].reason == "no_second_answer"
    assert pr.results[5].reason == "invalid_json"
    # both orders were asked: the second call has the answers swapped
    bodies = [b["messages"][1]["content"] for b in stub.requests if "질문 0" in b["messages"][1]["content"]]
    assert sorted(b.index("A의 답") < b.index("B의 답") for b in bodies) == [False, True]
    s = pr.summary()
    assert (s.n, s.n_judged) == (6, 4) and s.counts == {"A": 1, "B": 1, "tie": 1, "inconsistent": 1, "unjudged": 2}
    ci = stats.bootstrap_ci([1.0, -1.0, 0.0, 0.0], n_resamples=2000, seed=stats.DEFAULT_SEED)
    assert s.preference_b == 0.0 and s.preference_ci95 == (ci.low, ci.high)
    assert s.consistency == 0.75 and s.win_rate_b == 0.25
    # position: of the 6 decisive orders (p0: B,B; p1: A,A; p2: A,B) the first-shown answer won in 4
    assert s.n_decisive_orders == 6 and s.first_position_share == pytest.approx(4 / 6)
    d = pr.to_dict()
    assert d["a"] == "base" and d["b"] == "new" and "|orders:both|" in d["signature"]
    assert d["rubric"]["name"] == "pairwise/ko/v2"


def test_pairwise_repeat_tie_counts_as_a_tie(stub, tmp_path):
    # flip on pairwise is not scripted; a judge naming "1" then "2" across repeats ties, so that order says tie
    from ragexam.metrics.judge.pairwise import _winner
    from ragexam.metrics.judge import ItemScore
    s = ItemScore("pairwise", "p [A|B]", "judged", 1.0, "2", {}, None, None, 2, 2, "x", None, True, True, ("1", "2"))
    assert _winner(s, "A", "B") == "tie"
    s1 = ItemScore("pairwise", "p [B|A]", "judged", 1.0, "1", {}, None, None, 1, 1, "x")
    assert _winner(s1, "B", "A") == "B"
