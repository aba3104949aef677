"""Reply parsing and validation, prompts, rubric hashes and language choice (no server)."""

from __future__ import annotations


import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragexam.metrics.judge import (RUBRICS, NotApplicable, ReplyError, detect_language, extract_json, get_rubric,
                                   hangul_ratio, validate_reply)
from ragexam.metrics.judge.prompts import RUBRIC_NAMES, feedback_message, render_messages

# Any change to a rubric's text changes its hash and must bump its version: update both here on purpose.
PINNED = {
    "context_relevance/ko/v1": "931e10cac6ea6baa", "context_relevance/en/v1": "5ae81e39e2a2a89b",
    "faithfulness/ko/v1": "4086dc92cdfe934b", "faithfulness/en/v1": "6694280e9b201b09",
    "answer_correctness/ko/v1": "b65d2ce288f6f14a", "answer_correctness/en/v1": "1acec1bb9aa5335e",
    "abstention/ko/v1": "712edc61ee4d31e7", "abstention/en/v1": "58242172b1ef085b",
    "context_precision/ko/v1": "78ce590b684a568f", "context_precision/en/v1": "c36df85303962bab",
    "context_recall/ko/v1": "a51eb5af7e3846c2", "context_recall/en/v1": "5c1c1ceea347d29a",
    "answer_relevancy/ko/v1": "fc17194a946e2d5f", "answer_relevancy/en/v1": "90d9ed5ccf7e4d9d",
    "pairwise/ko/v1": "44c60669b6c7da99", "pairwise/en/v1": "1c32867fc9c9c396",
}


def test_rubric_hashes_are_pinned():
    assert {r.name: r.sha for r in RUBRICS.values()} == PINNED


@pytest.mark.parametrize("text", [
    '{"a": 1}', '  {"a": 1}\n', '```json\n{"a": 1}\n```', 'Sure! {"a": 1} done.', '<think>{"b": 2} hmm</think>{"a": 1}',
    'Result: {"x" {"a": 1}', '```\n{"a": 1}\n```\nextra {"b": 2}',
])
def test_extract_json_finds_the_object(text):
    assert extract_json(text) == {"a": 1}


@pytest.mark.parametrize("text, needle", [
    ("", "empty"), (None, "empty"), ("점수는 5점", "no complete JSON object"), ('{"a": 1', "no complete JSON object"),
    ("[1, 2]", "not an object"), ('{"a": NaN}', "no complete JSON object"), ('{"a": 1, "a": 2}', "no complete JSON"),
    ("<think>{\"a\": 1}", "empty"),
])
def test_extract_json_rejects(text, needle):
    with pytest.raises(ReplyError) as ei:
        extract_json(text)
    assert ei.value.kind == "invalid_json" and needle in ei.value.message


def test_context_relevance_contract():
    v = validate_reply("context_relevance", {"scores": [5, 1, 1], "average": 2.33, "reasoning": "r"}, n_contexts=3)
    assert v.score == pytest.approx(7 / 3) and v.details["average_mismatch"] is False and v.label is None
    v = validate_reply("context_relevance", {"scores": [5, 1, 1.0], "average": 2.3, "reasoning": "r"}, n_contexts=3)
    assert v.details["scores"] == [5, 1, 1] and v.details["average_mismatch"] is True
    bad = [({"scores": [5, 1], "average": 3, "reasoning": ""}, "has 2 values but there are 3"),
           ({"scores": [5, 1, 6], "average": 3, "reasoning": ""}, "out of range"),
           ({"scores": [5, 1, 0], "average": 3, "reasoning": ""}, "out of range"),
           ({"scores": [5, 1, 4.5], "average": 3, "reasoning": ""}, "expected an integer"),
           ({"scores": [5, 1, True], "average": 3, "reasoning": ""}, "expected an integer"),
           ({"scores": [5, 1, "4"], "average": 3, "reasoning": ""}, "expected an integer"),
           ({"scores": "5,1,1", "average": 3, "reasoning": ""}, "expected a list"),
           ({"scores": [5, 1, 1], "reasoning": ""}, '"average" is missing'),
           ({"scores": [5, 1, 1], "average": "high", "reasoning": ""}, "expected a number"),
           ({"scores": [5, 1, 1], "average": 3}, '"reasoning" is missing'),
           ({"scores": [5, 1, 1], "average": 3, "reasoning": 7}, "expected a string")]
    for obj, needle in bad:
        with pytest.raises(ReplyError) as ei:
            validate_reply("context_relevance", obj, n_contexts=3)
        assert ei.value.kind == "invalid_reply" and needle in ei.value.message, obj


@given(st.lists(st.integers(1, 5), min_size=1, max_size=12), st.floats(-10, 10, allow_nan=False))
@settings(max_examples=200, deadline=None)
def test_context_relevance_average_is_recomputed(scores, reported):
    v = validate_reply("context_relevance", {"scores": scores, "average": reported, "reasoning": ""},
                       n_contexts=len(scores))
    mean = sum(scores) / len(scores)
    assert v.score == pytest.approx(mean) and v.details["average"] == pytest.approx(mean)
    assert v.details["average_mismatch"] == (abs(reported - mean) > 0.005 + 1e-12)


def test_faithfulness_contract():
    ok = {"reasoning": "r", "claims": [{"claim": "a", "supported": True, "context": 2},
                                       {"claim": "b", "supported": False, "context": None}]}
    v = validate_reply("faithfulness", ok, n_contexts=2)
    assert v.score == 0.5 and v.label == "unfaithful" and v.details["n_claims"] == 2
    ok["claims"] = ok["claims"][:1]
    assert validate_reply("faithfulness", ok, n_contexts=2).label == "faithful"
    with pytest.raises(NotApplicable) as ei:
        validate_reply("faithfulness", {"reasoning": "declines", "claims": []}, n_contexts=2)
    assert ei.value.reason == "no_claims"
    bad = [({"reasoning": "", "claims": [{"claim": "a", "supported": True, "context": 3}]}, "from 1 to 2 or null"),
           ({"reasoning": "", "claims": [{"claim": "a", "supported": True, "context": None}]}, "names no context"),
           ({"reasoning": "", "claims": [{"claim": "a", "supported": "yes", "context": 1}]}, "true or false"),
           ({"reasoning": "", "claims": [{"claim": "", "supported": True, "context": 1}]}, "non-empty string"),
           ({"reasoning": "", "claims": ["a"]}, "expected an object"),
           ({"reasoning": "", "claims": {}}, "expected a list")]
    for obj, needle in bad:
        with pytest.raises(ReplyError) as ei:
            validate_reply("faithfulness", obj, n_contexts=2)
        assert needle in ei.value.message, obj


@pytest.mark.parametrize("verdict, score, ok", [
    ("correct", 5, True), ("correct", 4, True), ("correct", 3, False), ("partially_correct", 3, True),
    ("partially_correct", 2, True), ("partially_correct", 4, False), ("incorrect", 1, True), ("incorrect", 2, False),
    ("wrong", 1, False), ("correct", 6, False), ("correct", "5", False)])
def test_answer_correctness_bands(verdict, score, ok):
    obj = {"reasoning": "r", "verdict": verdict, "score": score}
    if ok:
        v = validate_reply("answer_correctness", obj)
        assert (v.score, v.label) == (float(score), verdict)
    else:
        with pytest.raises(ReplyError):
            validate_reply("answer_correctness", obj)


def test_abstention_contract():
    assert validate_reply("abstention", {"reasoning": "r", "verdict": "abstained"}).score == 1.0
    assert validate_reply("abstention", {"reasoning": "r", "verdict": "answered"}).label == "answered"
    with pytest.raises(ReplyError):
        validate_reply("abstention", {"reasoning": "r", "verdict": "declined"})


def test_render_does_not_rescan_inputs():
    r = get_rubric("answer_correctness", "en")
    text = r.render(question="Q {answer} {ground_truth}", answer="A {question}", ground_truth="G")
    assert "Q {answer} {ground_truth}" in text and "A {question}" in text and "{n}" not in text
    msgs = render_messages(get_rubric("context_relevance", "ko"), question="질문", contexts=["가", "나"])
    assert msgs[0]["role"] == "system" and "[컨텍스트 2] : 나" in msgs[1]["content"]
    assert "정확히 2개" in msgs[1]["content"]


def test_every_rubric_schema_is_strict_compatible():
    for r in RUBRICS.values():
        assert r.schema["additionalProperties"] is False
        assert set(r.schema["required"]) == set(r.schema["properties"])
        assert r.metric in RUBRIC_NAMES and r.name.endswith("/v1")
    assert "error X" in feedback_message("invalid", "en", "error X")


def test_language_detection():
    assert detect_language(["VPN-ERR-619 오류가 떠요. 어떻게 하나요?"]) == "ko"
    assert detect_language(["How do I reset my password?"]) == "en"
    assert detect_language(["Daon MDM 앱"]) == "en"  # 1 Hangul letter of 8: 0.125 < 0.3
    assert detect_language(["Daon MDM 앱은 어디서 받나요?"]) == "ko"  # 8 of 15
    assert hangul_ratio([""]) == 0.0
    assert hangul_ratio(["가a"]) == 0.5
