"""Probability-weighted judge scores (G-Eval): token log-probabilities read where the score was written.

ragexam.llm.logprobs reads the distribution over the allowed values at a JSON value's place (a token may hold
text before the value, a value may need two tokens to tell apart, the server may have taken a code fence off
the content but not off the tokens); the judge turns it into the expected score (1-5) or P(yes), keeps the
written score and the distributions, says ``scoring:probability`` in the signature, and leaves a reply whose
log-probabilities do not cover its score unjudged (``no_probabilities``) -- never a mix."""

from __future__ import annotations

import math

import pytest

from ragexam.llm.logprobs import TokenLogprob, distribution_at, parse_logprobs, value_offsets
from ragexam.metrics.judge import BUILTIN, Judge, JudgeItem
from ragexam.testing.stub import StubEndpoint


def tok(text, logprob=0.0, alts=()):
    return TokenLogprob(text.encode(), logprob, tuple((a.encode(), math.log(p)) for a, p in alts))


def test_value_offsets_by_path():
    text = 'Sure: {"scores": [4, 2], "average": 3.0, "reasoning": "a \\"b\\""} done'
    spans = value_offsets(text)
    assert text[slice(*spans[("scores", 0)])] == "4" and text[slice(*spans[("scores", 1)])] == "2"
    assert text[slice(*spans[("reasoning",)])] == '"a \\"b\\""' and text[slice(*spans[("average",)])] == "3.0"
    assert value_offsets("no json") == {}


def test_a_digit_after_a_prefix_in_the_same_token():
    content = '{"score":4,"reasoning":""}'
    toks = [tok('{"'), tok("score"), tok('":4', alts=[('":4', .5), ('":3', .3), ('":5', .15), ('":', .05)]),
            tok(',"'), tok("reasoning"), tok('":""'), tok("}")]
    d = distribution_at(toks, content, value_offsets(content)[("score",)][0], [str(i) for i in range(1, 6)])
    assert d.probs == pytest.approx({"4": .5 / .95, "3": .3 / .95, "5": .15 / .95}) and d.mass == pytest.approx(.95)
    assert d.expected({str(i): float(i) for i in range(1, 6)}) == pytest.approx((4 * .5 + 3 * .3 + 5 * .15) / .95)


def test_an_enum_told_apart_on_its_second_token():
    content = '{"verdict": "answered", "reasoning": ""}'
    toks = [tok('{"'), tok("verdict"), tok('":'), tok(' "'), tok("a", alts=[("a", .9), ("x", .1)]),
            tok("nswered", alts=[("nswered", .6), ("bstained", .3), ("n", .1)]), tok('",'), tok(' "reasoning'),
            tok('":'), tok(' ""'), tok("}")]
    d = distribution_at(toks, content, value_offsets(content)[("verdict",)][0], ['"abstained"', '"answered"'])
    # "n" after "a" can only become "answered": it counts for it; "x" after "a" fits neither
    assert d.probs == pytest.approx({'"answered"': .7, '"abstained"': .3}) and d.mass == pytest.approx(1.0)


def test_tokens_that_spell_more_than_the_content_are_aligned():
    """llama.cpp took a ```json fence off the message, not off the tokens (a real reply of the local model)."""
    content = '{\n  "scores": [3],\n  "average": 3}'
    toks = [tok("```"), tok("json"), tok("\n"), tok("{\n"), tok("  "), tok('"scores'), tok('":'), tok(" ["),
            tok("3", alts=[("3", .3), ("4", .26), ("5", .25), ("2", .1), ("1", .09)]), tok("],\n"), tok("  "),
            tok('"average'), tok('":'), tok(" 3"), tok("}")]
    d = distribution_at(toks, content, value_offsets(content)[("scores", 0)][0], list("12345"))
    assert max(d.probs, key=d.probs.get) == "3" and d.mass == pytest.approx(1.0)
    assert distribution_at(toks[:5], content, 3, list("12345")) is None  # the tokens do not hold the content


def test_parse_logprobs_reads_bytes_and_refuses_a_broken_list():
    choice = {"logprobs": {"content": [{"token": "\ufffd", "bytes": [236, 149], "logprob": -0.1,
                                        "top_logprobs": [{"token": "x", "logprob": -3.0}]}]}}
    (t,) = parse_logprobs(choice)
    assert t.data == bytes([236, 149]) and t.top == ((b"x", -3.0),)
    assert parse_logprobs({"logprobs": {"content": [{"token": "a"}]}}) is None  # no logprob
    assert parse_logprobs({"message": {}}) is None


def test_probability_scores_through_the_stub(tmp_path):
    item = JudgeItem("q", "VPN-ERR-619 오류는 어떻게 고치나요?", "TCP 443 모드로 바꾸면 됩니다.",
                     ("VPN-ERR-619 오류는 TCP 443 모드로 바꾸면 됩니다.", "프린터 용지를 넣으세요."), "TCP 443 모드로 바꾸면 됩니다.")
    with StubEndpoint() as ep:
        # quoted=False: the answer is context 1's own words, which the quotation rule would support without a call
        judge = Judge("stub", base_url=ep.base_url, api_key="x", cache_dir=str(tmp_path), quoted=False)
        run = judge.run([item], ["context_relevance", "faithfulness", "answer_correctness"])
        sent = [b for b in ep.requests if (b.get("response_format") or {}).get("json_schema", {}).get("name")
                != "ragexam_probe"]
    assert all(b["logprobs"] is True and b["top_logprobs"] == 10 for b in sent)
    by = {j.metric: j for j in run.judgments}
    cr = by["context_relevance"]
    # the stub writes [5, 1] with 0.6 on the written digit, 0.15 on each neighbour, 0.05 on the others
    e5, e1 = (5 * .6 + 4 * .15 + .05 * 6) / .9, (.6 + 2 * .15 + .05 * 12) / .9
    assert cr.scoring == "probability" and cr.details["score_sample"] == 3.0
    assert cr.score == pytest.approx((e5 + e1) / 2) and len(cr.details["probabilities"]["distributions"]) == 2
    assert by["faithfulness"].score == pytest.approx(0.8) and by["faithfulness"].label == "faithful"
    assert by["answer_correctness"].score == pytest.approx(e5) and by["answer_correctness"].passed is True
    assert all("|scoring:probability|" in s for s in run.signatures.values())
    assert run.scoring == {"context_relevance": "probability", "faithfulness": "probability",
                           "answer_correctness": "probability"}


def test_sample_scoring_asks_for_no_logprobs_and_a_reply_without_them_is_unjudged(tmp_path):
    item = JudgeItem("q", "질문?", "답입니다.", ("답입니다.",), "답입니다.")
    with StubEndpoint() as ep:
        run = Judge("stub", base_url=ep.base_url, api_key="x", cache_dir=str(tmp_path / "a"),
                    scoring="sample").run([item], ["answer_correctness"])
        assert "logprobs" not in ep.requests[-1] and run.judgments[0].scoring == "sample"
    defn = BUILTIN["answer_correctness"]
    from ragexam.metrics.judge.core import probabilities

    got = probabilities(defn, [], '{"score": 5, "reasoning": ""}', None)
    assert got == {"score": None, "error": "the reply carried no token log-probabilities"}
    assert probabilities(BUILTIN["pairwise"], [], '{"winner": "1"}', [tok("x")])["score"] is None


def test_pairwise_is_always_sampled(tmp_path):
    from ragexam.metrics.judge import PairItem, judge_pairs

    with StubEndpoint() as ep:
        judge = Judge("stub", base_url=ep.base_url, api_key="x", cache_dir=str(tmp_path))
        run = judge_pairs(judge, [PairItem("p", "질문?", "정답입니다.", "모릅니다.", "정답입니다.")])
    assert run.judge_run.scoring == {"pairwise": "sample"} and "scoring:sample" in run.signature


def test_no_reasoning_sends_an_empty_reasoning_schema_and_says_so(tmp_path):
    item = JudgeItem("q", "질문?", "답입니다.", ("답입니다.",), "답입니다.")
    with StubEndpoint() as ep:
        judge = Judge("stub", base_url=ep.base_url, api_key="x", cache_dir=str(tmp_path), reasoning=False)
        run = judge.run([item], ["answer_correctness"])
        body = ep.requests[-1]
    assert body["response_format"]["json_schema"]["schema"]["properties"]["reasoning"] == {"type": "string",
                                                                                            "maxLength": 0}
    assert "|reasoning:off|" in run.signatures["answer_correctness"] and run.judgments[0].judged


def test_a_failing_probe_falls_back_to_sampled_scores(tmp_path):
    """An endpoint that fails every request: ``auto`` judges with sampled scores (the calls say why they fail),
    ``probability`` stops with an input error before any judgment."""
    from test_judge_stub import start_stub

    stub, shutdown = start_stub()
    try:
        item = JudgeItem("q", "질문 [[s:r500]]", "답입니다.", ("답입니다.",), "답입니다.")
        stub.probes_fail = True
        judge = Judge("stub", base_url=stub.base_url, api_key="x", cache_dir=str(tmp_path), max_retries=0)
        run = judge.run([item], ["answer_correctness"])
        assert run.probe is None and run.scoring == {"answer_correctness": "sample"}
        assert run.judgments[0].reason == "server_error"
        with pytest.raises(Exception) as ei:
            Judge("stub", base_url=stub.base_url, api_key="x", cache_dir=str(tmp_path), max_retries=0,
                  scoring="probability").run([item], ["answer_correctness"])
        assert "could not ask" in str(ei.value) and "--scoring sample" in str(ei.value)
    finally:
        shutdown()
