"""The quotation rule (:mod:`ragexam.metrics.judge.quoted`): a claim or statement a context states in the same words
is supported without the judge's say -- and nothing else is.  Its measured effect on the local model's recorded
replies is in tests/test_judge_replay.py."""

from __future__ import annotations

import json

import pytest

from ragexam.metrics.judge import Judge, JudgeItem
from ragexam.metrics.judge.quoted import quotes
from ragexam.testing.stub import JSONEndpoint, StubEndpoint

GUEST = "DAON-Guest는 방문객을 위한 인터넷 전용 망으로, 여기서는 사내 시스템에 접속할 수 없습니다."
CONTEXT = "사옥에는 세 가지 무선 네트워크가 있습니다. " + GUEST + " 일반 첨부 한도는 25MB입니다."


@pytest.mark.parametrize("claim, quoted", [
    # the local model's false verdict of docs/judge.md: the same content words, in order, other words between
    ("DAON-Guest는 방문객용 인터넷 전용 망이라 사내 시스템에 접속할 수 없습니다.", True),
    ("DAON-Guest에서는 사내 시스템에 접속할 수 없습니다.", True),                 # a part of the sentence
    ("DAON-Guest는 방문객용 인터넷 전용 망이라 사내 시스템에 접속할 수 있습니다.", False),  # negation dropped
    ("DAON-Guest에서는 사내 시스템에 접속하지 못합니다.", False),               # 못 for 없: not the same words
    ("일반 첨부 한도는 50MB입니다.", False),                                     # a number changed
    ("일반 첨부 한도는 25MB입니다.", True),
    ("사내 시스템에 DAON-Guest로 접속할 수 없습니다.", False),                   # the order changed
    ("DAON-Guest는 직원용 인터넷 전용 망입니다.", False),                        # a word the context lacks
    ("25MB입니다.", False),                                                      # too little to be a quotation
    ("DAON-Guest는 방문객을 위한 망이고, 첨부 한도는 25MB입니다.", False),       # two sentences' words
])
def test_a_claim_is_quoted_only_by_one_sentence_with_its_words_in_order_and_the_same_negations(claim, quoted):
    got = quotes([claim], ["프린터 용지를 넣으세요.", CONTEXT])
    assert (got[0] is not None) == quoted
    if quoted:
        assert got[0].context == 2 and got[0].sentence in CONTEXT


def test_a_negation_the_context_has_and_the_claim_lacks_is_not_quoted():
    ctx = ["재택근무는 따로 신청하지 않아도 됩니다."]
    assert [q is not None for q in quotes(["재택근무는 따로 신청해도 됩니다.", "재택근무는 따로 신청하지 않아도 됩니다."],
                                          ctx)] == [False, True]


def test_english_claims_follow_the_same_rule_with_contractions_as_negations():
    ctx = ["The guest network cannot reach internal systems. Large attachments are sent as links."]
    got = quotes(["The guest network cannot reach internal systems.", "The guest network can reach internal systems.",
                  "Large attachments are sent as download links.", "Large attachments are sent as links."], ctx)
    assert [q is not None for q in got] == [True, False, False, True]
    assert quotes(["The guest network doesn't reach internal systems."], ["The guest network does not reach internal "
                                                                         "systems."])[0] is not None
    assert quotes([], ctx) == []


class _SaysFalse(JSONEndpoint):
    """A judge that writes false for every claim (what the local 1.5B model did to a quoted second sentence)."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def handle(self, path, body, headers):
        schema = (body.get("response_format") or {}).get("json_schema") or {}
        n = schema.get("schema", {}).get("properties", {}).get("supported", {}).get("minItems", 1)
        with self.lock:
            self.calls += 1
        content = json.dumps({"supported": [False] * n, "reasoning": ""})
        return 200, {"id": "x", "object": "chat.completion", "created": 0, "model": "m",
                     "choices": [{"index": 0, "finish_reason": "stop",
                                  "message": {"role": "assistant", "content": content}}],
                     "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}


def _items():
    quoted = JudgeItem("all", "게스트망으로 사내 시스템에 접속되나요?", "DAON-Guest에서는 사내 시스템에 접속할 수 없습니다.",
                       (CONTEXT,))
    mixed = JudgeItem("mixed", "게스트망은?", "DAON-Guest에서는 사내 시스템에 접속할 수 없습니다. 비밀번호는 매달 바꿉니다.",
                      (CONTEXT,))
    return [quoted, mixed]


def test_the_judge_is_not_asked_about_an_answer_a_context_quotes_and_is_overruled_only_on_quoted_claims(tmp_path):
    with _SaysFalse() as ep:
        judge = Judge("m", base_url=ep.base_url, api_key="x", cache_dir=str(tmp_path), scoring="sample")
        run = judge.run(_items(), ["faithfulness"])
        calls = ep.calls
    by = {j.item_id: j for j in run.judgments}
    assert calls == 1  # only the mixed answer: every claim of the other is quoted
    a = by["all"]
    assert (a.status, a.score, a.label, a.requests) == ("judged", 1.0, "faithful", 0)
    assert a.details["n_quoted"] == 1 and a.details["claims"][0]["quoted"]["context"] == 1
    assert "judge_supported" not in a.details["claims"][0]  # the judge was not asked
    m = by["mixed"]
    assert (m.score, m.label, m.details["n_quoted"]) == (0.5, "unfaithful", 1)
    first, second = m.details["claims"]
    assert (first["supported"], first["judge_supported"], first["quoted"]["sentence"]) == (True, False, GUEST)
    assert (second["supported"], "quoted" in second) == (False, False)  # the judge's verdict stands
    assert "|quoted:v2|" in run.signatures["faithfulness"] + "|"
    summary = run.summary("faithfulness")
    assert summary.quoted == (2, 3) and summary.to_dict()["quoted"] == {"units": 2, "of": 3}


def test_the_score_table_says_how_many_claims_were_quoted(tmp_path):
    import io

    from rich.console import Console

    from ragexam.report.console_judge import print_judge

    with _SaysFalse() as ep:
        run = Judge("m", base_url=ep.base_url, api_key="x", cache_dir=str(tmp_path), scoring="sample").run(
            _items(), ["faithfulness"])
    buf = io.StringIO()
    print_judge({"model": "m", "endpoint": "e", "language": "ko",
                                                       "summary": {"P": {"faithfulness": run.summary(
                                                           "faithfulness").to_dict()}}}, Console(file=buf, width=200))
    assert "quoted: 2/3 claims" in buf.getvalue()


def test_the_rule_switched_off_reads_the_judges_verdicts_from_the_same_cache(tmp_path):
    with _SaysFalse() as ep:
        on = Judge("m", base_url=ep.base_url, api_key="x", cache_dir=str(tmp_path), scoring="sample")
        on.run(_items(), ["faithfulness"])
        before = ep.calls
        off = Judge("m", base_url=ep.base_url, api_key="x", cache_dir=str(tmp_path), scoring="sample", quoted=False)
        run = off.run(_items(), ["faithfulness"])
        assert ep.calls == before + 1  # the mixed answer's reply is cached; the all-quoted one was never asked
    assert {j.item_id: (j.score, j.label) for j in run.judgments} == {"all": (0.0, "unfaithful"),
                                                                       "mixed": (0.0, "unfaithful")}
    assert all("quoted" not in c for j in run.judgments for c in j.details["claims"])
    assert "quoted:off" in run.signatures["faithfulness"]
    with pytest.raises(Exception, match="--judge-quoted"):
        Judge("m", base_url=ep.base_url, api_key="x", cache=False, quoted="yes")


def test_context_recall_quotes_statements_and_the_plan_counts_no_call_for_them(tmp_path):
    item = JudgeItem("r", "게스트망은?", None, (CONTEXT,), "DAON-Guest에서는 사내 시스템에 접속할 수 없습니다.")
    with StubEndpoint() as ep:
        judge = Judge("stub", base_url=ep.base_url, api_key="x", cache_dir=str(tmp_path), scoring="sample")
        plan = judge.plan([item], ["context_recall", "faithfulness"])
        run = judge.run([item], ["context_recall"])
        sent = [b for b in ep.requests if (b.get("response_format") or {}).get("json_schema", {}).get("name")
                == "context_recall"]
    assert plan.calls == 0 and sent == []  # faithfulness: no answer (unjudged, no call); context_recall: quoted
    j = run.judgments[0]
    assert (j.status, j.score, j.label, j.details["statements"][0]["quoted"]["context"]) == ("judged", 1.0,
                                                                                          "complete", 1)
    assert "quoted:v2" in run.signatures["context_recall"]


def test_probability_scoring_gives_a_quoted_claim_probability_one_and_keeps_the_judges():
    from ragexam.metrics.judge.core import _Task, _with_quotes
    from ragexam.metrics.judge.registry import BUILTIN
    from ragexam.metrics.judge.quoted import Quote

    defn = BUILTIN["faithfulness"]
    t = _Task("faithfulness", _items()[1], 0, defn.rubric("ko"), [], "k", None, defn, ["a", "b"], 10,
              (Quote(1, GUEST), None))
    value = {"status": "judged", "score": 0.0, "label": "unfaithful",
             "details": {"claims": [{"claim": "a", "supported": False}, {"claim": "b", "supported": False}],
                         "n_claims": 2, "n_supported": 0, "reasoning": ""},
             "probability": {"field": "supported", "score": 0.3, "distributions": [{"true": 0.35, "false": 0.65},
                                                                                    {"true": 0.25, "false": 0.75}]}}
    out = _with_quotes(value, t)
    assert out["probability"]["score"] == pytest.approx((1.0 + 0.25) / 2)
    assert out["probability"]["judge_distributions"][0] == {"true": 0.35, "false": 0.65}
    assert (out["score"], out["details"]["n_supported"]) == (0.5, 1)
    assert value["details"]["claims"][0]["supported"] is False  # the cached value is not changed


def test_many_items_are_quoted_in_one_batch_with_the_same_result():
    from ragexam.data.loaders import load_corpus, load_qa
    from ragexam.metrics.judge.quoted import quotes_many
    from ragexam.metrics.judge.units import claims_of

    docs = load_corpus("it_helpdesk")
    pairs = [(claims_of(q.ground_truth), [d.content for d in docs if d.doc_id in q.relevant_doc_ids])
             for q in load_qa("it_helpdesk") if q.answerable]
    batched = quotes_many(pairs)
    assert batched == [quotes(u, c) for u, c in pairs]
    # the bundled keys are written in their own words: a fifth of their sentences are their documents' words
    assert 15 <= sum(q is not None for r in batched for q in r) <= 40
    assert quotes_many([]) == [] and quotes_many([([], ["x"])]) == [[]]


def test_a_citation_marker_is_not_a_word_of_the_claim():
    """``ragexam answer`` numbers contexts ``[1] …`` and answers echo it: a sentence copied from its context with the
    marker is quoted (v1 read the marker's 1 as a number the context lacks: "correct; unfaithful")."""
    c = ["예비군 훈련과 민방위 교육에 참석하는 날은 공가로 처리되며, 연차휴가에서 차감되지 않습니다."]
    for unit in ("[1] " + c[0], c[0] + " [1]", "[1][2] " + c[0], "【1】" + c[0], c[0][:-1] + "[^1]."):
        (q,) = quotes([unit], c)
        assert q is not None and q.context == 1, unit
    # a marker does not hide a changed fact, and words in brackets are words
    assert quotes(["[1] 예비군 훈련과 민방위 교육에 참석하는 날은 연차휴가에서 차감됩니다."], c) == [None]
    assert quotes(["[출처 3] " + c[0]], c) == [None]  # "출처", "3": words the context does not have
