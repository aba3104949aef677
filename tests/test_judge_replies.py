"""Reply parsing and validation, prompts, rubric hashes and language choice (no server).

The contract tests check the schema against the parser with a reference JSON-schema validator (``jsonschema``):
every reply the schema allows, the parser accepts, and every reply breaking a rule of the schema that the parser
enforces is rejected with that rule quoted."""

from __future__ import annotations


import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragexam.metrics.judge import (RUBRICS, NotApplicable, ReplyError, detect_language, extract_json, get_rubric,
                                   hangul_ratio, validate_reply)
from ragexam.metrics.judge.prompts import feedback_message, render_messages
from ragexam.metrics.judge.registry import CONTRACTS, RUBRIC_NAMES

# Any change to a rubric's text changes its hash and must bump its version: update both here on purpose.
PINNED = {
    "context_relevance/ko/v2": "cf0b1dcdff2370da", "context_relevance/en/v2": "26aabe2112452a94",
    "context_precision/ko/v2": "5525e21749baebe2", "context_precision/en/v2": "0b476b703144dea4",
    "context_recall/ko/v2": "c3c3b17cae1a294b", "context_recall/en/v2": "0a4e1d298b43c405",
    "faithfulness/ko/v2": "955b636ff88d3aa6", "faithfulness/en/v2": "9a6a1a1d4377479d",
    "answer_relevancy/ko/v2": "928a7ac836f28f5c", "answer_relevancy/en/v2": "c46e74fa02de719d",
    "answer_correctness/ko/v2": "07348fba4a3e4bf9", "answer_correctness/en/v2": "c82a985f3ee752e4",
    "abstention/ko/v2": "8768fedfc357899e", "abstention/en/v2": "98af4683e31aca30",
    "pairwise/ko/v2": "60857afa5e0269d6", "pairwise/en/v2": "c4c09a996a886290",
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
    rule = '"scores" must be a list of exactly 3 integers (an integer from 1 to 5), one per context in order'
    bad = [({"scores": [5, 1], "average": 3, "reasoning": ""}, rule + " from context 1 to context 3 (minItems 3, "
            "maxItems 3); it holds 2: [5, 1]"),
           ({"scores": [3, 2, 1, 5], "average": 2.75, "reasoning": ""}, "it holds 4: [3, 2, 1, 5]"),
           ({"scores": [5, 1, 6], "average": 3, "reasoning": ""}, "value 3 is 6"),
           ({"scores": [5, 1, 0], "average": 3, "reasoning": ""}, "value 3 is 0"),
           ({"scores": [5, 1, 4.5], "average": 3, "reasoning": ""}, "value 3 is 4.5"),
           ({"scores": [5, 1, True], "average": 3, "reasoning": ""}, "value 3 is true"),
           ({"scores": [5, 1, "4"], "average": 3, "reasoning": ""}, 'value 3 is "4"'),
           ({"scores": "5,1,1", "average": 3, "reasoning": ""}, 'it is "5,1,1"'),
           ({"scores": [5, 1, 1], "reasoning": ""}, '"average" must be a number; it is missing'),
           ({"scores": [5, 1, 1], "average": "high", "reasoning": ""}, '"average" must be a number; it is "high"'),
           ({"scores": [5, 1, 1], "average": 3}, '"reasoning" must be a string; it is missing'),
           ({"scores": [5, 1, 1], "average": 3, "reasoning": 7}, '"reasoning" must be a string; it is 7')]
    for obj, needle in bad:
        with pytest.raises(ReplyError) as ei:
            validate_reply("context_relevance", obj, n_contexts=3)
        assert ei.value.kind == "invalid_reply" and needle in ei.value.message, (obj, ei.value.message)
        assert ei.value.message.startswith("the reply broke the rule: ")


def test_the_issue_replies_are_rejected_with_the_rule_quoted():
    """The local model's replies of issue 22 (the scale listed instead of one score per context)."""
    for obj in ({"scores": [3, 2, 1], "average": 2.33, "reasoning": "r"}, {"scores": [5, 3, 2, 1], "average": 2.75,
                                                                          "reasoning": "r"}):
        with pytest.raises(ReplyError) as ei:
            validate_reply("context_relevance", obj, n_contexts=1)
        assert "exactly 1 integer (an integer from 1 to 5), one per context" in ei.value.message
        assert "(minItems 1, maxItems 1)" in ei.value.message
    schema = get_rubric("context_relevance", "ko").schema_for(1)
    assert schema["properties"]["scores"]["minItems"] == schema["properties"]["scores"]["maxItems"] == 1
    assert schema["properties"]["scores"]["items"] == {"type": "integer", "enum": [1, 2, 3, 4, 5]}


@given(st.lists(st.integers(1, 5), min_size=1, max_size=12), st.floats(-10, 10, allow_nan=False))
@settings(max_examples=200, deadline=None)
def test_context_relevance_average_is_recomputed(scores, reported):
    v = validate_reply("context_relevance", {"scores": scores, "average": reported, "reasoning": ""},
                       n_contexts=len(scores))
    mean = sum(scores) / len(scores)
    assert v.score == pytest.approx(mean) and v.details["average"] == pytest.approx(mean)
    assert v.details["average_mismatch"] == (abs(reported - mean) > 0.005 + 1e-12)


def test_faithfulness_contract():
    claims = ["VPN을 TCP 443 모드로 바꿉니다.", "재부팅합니다."]
    v = validate_reply("faithfulness", {"supported": [True, False], "reasoning": "r"}, units=claims)
    assert v.score == 0.5 and v.label == "unfaithful" and v.details["n_claims"] == 2 and v.details["n_supported"] == 1
    assert v.details["claims"] == [{"claim": claims[0], "supported": True}, {"claim": claims[1], "supported": False}]
    v = validate_reply("faithfulness", {"supported": [True, True], "reasoning": "r"}, units=claims)
    assert (v.score, v.label) == (1.0, "faithful")
    for obj, needle in [({"supported": [True], "reasoning": ""}, "it holds 1: [true]"),
                        ({"supported": [True, "yes"], "reasoning": ""}, 'value 2 is "yes"'),
                        ({"supported": [True, None], "reasoning": ""}, "value 2 is null"),
                        ({"claims": [], "reasoning": ""}, '"supported" must be a list of exactly 2 values (true or '
                                                         'false), one per claim in order')]:
        with pytest.raises(ReplyError) as ei:
            validate_reply("faithfulness", obj, units=claims)
        assert needle in ei.value.message, (obj, ei.value.message)


def test_context_recall_and_precision_contracts():
    v = validate_reply("context_recall", {"supported": [True, True, False], "reasoning": ""}, units=["a", "b", "c"])
    assert v.score == pytest.approx(2 / 3) and v.label == "incomplete" and v.details["n_statements"] == 3
    v = validate_reply("context_precision", {"useful": [False, True], "reasoning": ""}, n_contexts=2)
    assert v.score == 0.5 and v.details["n_useful"] == 1
    with pytest.raises(ReplyError) as ei:
        validate_reply("context_precision", {"useful": [True], "reasoning": ""}, n_contexts=2)
    assert "exactly 2 values (true or false), one per context" in ei.value.message


@pytest.mark.parametrize("score, label", [(5, "correct"), (4, "correct"), (3, "partially_correct"),
                                          (2, "partially_correct"), (1, "incorrect")])
def test_answer_correctness_label_is_the_band_of_the_score(score, label):
    v = validate_reply("answer_correctness", {"score": score, "reasoning": "r"})
    assert (v.score, v.label) == (float(score), label)


@pytest.mark.parametrize("score", [0, 6, "5", True, 4.5, None])
def test_answer_correctness_rejects(score):
    with pytest.raises(ReplyError) as ei:
        validate_reply("answer_correctness", {"score": score, "reasoning": "r"})
    assert '"score" must be an integer from 1 to 5' in ei.value.message


def test_answer_relevancy_declined_is_not_applicable():
    with pytest.raises(NotApplicable) as ei:
        validate_reply("answer_relevancy", {"declined": True, "score": 1, "reasoning": "r"})
    assert ei.value.reason == "declined"
    v = validate_reply("answer_relevancy", {"declined": False, "score": 3, "reasoning": "r"})
    assert (v.score, v.label) == (3.0, "partially_relevant")


def test_abstention_contract():
    assert validate_reply("abstention", {"reasoning": "r", "verdict": "abstained"}).score == 1.0
    assert validate_reply("abstention", {"reasoning": "r", "verdict": "answered"}).label == "answered"
    with pytest.raises(ReplyError) as ei:
        validate_reply("abstention", {"reasoning": "r", "verdict": "declined"})
    assert '"verdict" must be one of "abstained", "answered"; it is "declined"' in ei.value.message


def _instances(schema, draw):
    """A hypothesis draw of a value valid under ``schema`` (the subset the rubrics use)."""
    if "enum" in schema:
        return draw(st.sampled_from(schema["enum"]))
    t = schema["type"]
    if t == "object":
        return {k: _instances(v, draw) for k, v in schema["properties"].items()}
    if t == "array":
        n = schema["minItems"]
        return [_instances(schema["items"], draw) for _ in range(n)]
    if t == "string":
        return draw(st.text(max_size=schema.get("maxLength", 50)))
    if t == "number":
        return draw(st.floats(-100, 100, allow_nan=False))
    if t == "boolean":
        return draw(st.booleans())
    raise AssertionError(t)


@given(st.data(), st.sampled_from(sorted(CONTRACTS)), st.integers(1, 6))
@settings(max_examples=300, deadline=None)
def test_what_the_schema_allows_the_parser_accepts(data, metric, n):
    jsonschema = pytest.importorskip("jsonschema")
    contract = CONTRACTS[metric]
    schema = contract.schema(n)
    obj = _instances(schema, data.draw)
    jsonschema.validate(obj, schema)
    checked = contract.check(obj, n)
    assert set(checked) == set(schema["required"])


@given(st.data(), st.sampled_from(sorted(CONTRACTS)), st.integers(1, 6))
@settings(max_examples=300, deadline=None)
def test_what_the_schema_forbids_the_parser_rejects_quoting_the_rule(data, metric, n):
    """Drop a field, add or remove an array item, or put a value outside its enum / type: the reference
    validator rejects it, and so does the parser, quoting that field's rule."""
    jsonschema = pytest.importorskip("jsonschema")
    contract = CONTRACTS[metric]
    schema = contract.schema(n)
    obj = _instances(schema, data.draw)
    name = data.draw(st.sampled_from(sorted(schema["properties"])))
    prop = schema["properties"][name]
    how = data.draw(st.sampled_from(["drop", "type"] + (["length"] if prop["type"] == "array" else [])
                                    + (["enum"] if "enum" in prop or "enum" in prop.get("items", {}) else [])))
    if how == "drop":
        del obj[name]
    elif how == "type":
        obj[name] = {"x": 1}
    elif how == "length":
        obj[name] = obj[name] + obj[name][:1] if data.draw(st.booleans()) else obj[name][:-1]
    else:
        if prop["type"] == "array":
            obj[name][0] = 99
        else:
            obj[name] = 99 if prop.get("type") == "integer" else "not-a-level"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(obj, schema)
    with pytest.raises(ReplyError) as ei:
        contract.check(obj, n)
    rule = next(r for r in contract.rules(n) if r.startswith(f'"{name}" must be'))
    assert ei.value.message.startswith(f"the reply broke the rule: {rule}; ")


def test_render_does_not_rescan_inputs():
    r = get_rubric("answer_correctness", "en")
    text = r.render(question="Q {answer} {ground_truth}", answer="A {question}", ground_truth="G")
    assert "Q {answer} {ground_truth}" in text and "A {question}" in text and "{n}" not in text
    msgs = render_messages(get_rubric("context_relevance", "ko"), question="질문", contexts=["가", "나"])
    assert msgs[0]["role"] == "system" and "[컨텍스트 2] : 나" in msgs[1]["content"]
    assert "정확히 2개" in msgs[1]["content"] and '{"scores": [점수1, 점수2],' in msgs[1]["content"]
    fa = render_messages(get_rubric("faithfulness", "en"), question="Q", contexts=["c"], answer="A. B.",
                         units=["A.", "B."])[1]["content"]
    assert "[Claim 1] : A.\n\n[Claim 2] : B." in fa and "exactly 2 values" in fa and "[Context 1] : c" in fa


def test_every_rubric_schema_states_the_contract():
    for r in RUBRICS.values():
        schema = r.schema_for(3)
        assert schema["additionalProperties"] is False
        assert schema["required"] == list(schema["properties"])
        assert r.metric in RUBRIC_NAMES and r.name.endswith("/v2")
        for prop in schema["properties"].values():
            if prop["type"] == "array":
                assert prop["minItems"] == prop["maxItems"] == 3 and "enum" in prop["items"] or \
                    prop["items"] == {"type": "boolean"}
            if prop["type"] == "string" and "enum" not in prop:
                assert prop["maxLength"] == 200
    assert "error X" in feedback_message("invalid", "en", "error X")
    assert "repeated" in feedback_message("loop", "en", "'a b' repeated 9 times")


def test_language_detection():
    assert detect_language(["VPN-ERR-619 오류가 떠요. 어떻게 하나요?"]) == "ko"
    assert detect_language(["How do I reset my password?"]) == "en"
    assert detect_language(["Daon MDM 앱"]) == "en"  # 1 Hangul letter of 8: 0.125 < 0.3
    assert detect_language(["Daon MDM 앱은 어디서 받나요?"]) == "ko"  # 8 of 15
    assert hangul_ratio([""]) == 0.0
    assert hangul_ratio(["가a"]) == 0.5
