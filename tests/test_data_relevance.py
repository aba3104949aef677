"""Relevance judging: doc mode (first occurrence) and evidence mode (the crediting rule)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from ragexam.data import Chunk, Document, EvidenceIndex, Question, chunk_corpus, judge_ranking, judge_rankings
from ragexam.data.relevance import credit_positions
from ragexam.errors import InputError


def _c(cid: str, text: str = "x") -> Chunk:
    return Chunk(cid, cid.split("#")[0], 0, len(text), text)


# --- doc mode -------------------------------------------------------------------------------


def test_doc_mode_first_occurrence():
    q = Question("q", "?", relevant_doc_ids=("b", "d"))
    ranked = [_c("a#0"), _c("b#1"), _c("a#2"), _c("c#0"), _c("b#0")]
    j = judge_ranking(q, ranked, "doc")
    assert j.run == ["a", "b", "c"]                   # later chunks of listed documents dropped
    assert j.first_found == {"b": 2, "d": None}       # ranks among the chunks given
    assert j.qrels == {"b": 1, "d": 1} and j.judged


def test_doc_mode_graded_relevance_wins():
    q = Question("q", "?", relevant_doc_ids=("a",), relevance={"b": 2, "c": 0})
    j = judge_ranking(q, [_c("c#0"), _c("b#3"), _c("c#1")], "doc")
    assert j.qrels == {"b": 2, "c": 0}
    assert j.first_found == {"b": 2} and j.run == ["c", "b"]


# --- evidence mode: the worked example of the module docstring ------------------------------

EV1, EV2 = "VPN 재설치", "관리자 권한"
EXAMPLE_DOCS = [
    Document("hd_01", "소개 문단입니다.\n\nVPN 재설치 방법.\n\nVPN 재설치에는 관리자 권한이 필요합니다."),
    Document("hd_03", "프린터 안내."),
    Document("hd_05", "첫 문단.\n\n비밀번호 안내."),
]


def _example():
    chunking = chunk_corpus(EXAMPLE_DOCS, "paragraphs")
    q = Question("q1", "VPN?", relevant_doc_ids=("hd_01",), evidence=(EV1, EV2))
    ranked = [chunking[c] for c in ("hd_03#0", "hd_01#2", "hd_05#1", "hd_01#2")]
    return q, chunking, ranked


def test_crediting_rule_worked_example():
    q, chunking, ranked = _example()
    index = EvidenceIndex.build(EXAMPLE_DOCS, chunking)
    assert index.covering(EV1) == {"hd_01#1", "hd_01#2"} and index.covering(EV2) == {"hd_01#2"}
    j = judge_ranking(q, ranked, "evidence", index=index)
    assert j.first_found == {"ev1": 2, "ev2": 2}
    assert j.run == ["~hd_03#0", "ev1", "ev2", "~hd_01#2@4"]
    assert j.qrels == {"ev1": 1, "ev2": 1}
    assert j.units == {"ev1": EV1, "ev2": EV2}
    # same result without an index (chunk texts matched directly)
    assert judge_ranking(q, ranked, "evidence").run == j.run
    # the rule on plain data
    run, first = credit_positions([[], ["ev1", "ev2"], [], ["ev1", "ev2"]], ["p1", "p2", "p3", "p4"])
    assert run == ["p1", "ev1", "ev2", "p4"] and first == {"ev1": 2, "ev2": 2}


def test_worked_example_scores_with_ranking_engine():
    from ragexam.metrics.ranking import evaluate

    q, chunking, ranked = _example()
    res = judge_rankings([q], {"q1": ranked}, "evidence", documents=EXAMPLE_DOCS, chunking=chunking)
    m = evaluate(res.qrels, res.run, ["hit@1", "hit@2", "mrr", "r@2", "r@3", "p@4"]).mean
    assert m["hit@1"] == 0 and m["hit@2"] == 1 and m["mrr"] == pytest.approx(0.5)
    assert m["r@2"] == pytest.approx(0.5)          # the one-position lag
    assert m["r@3"] == pytest.approx(1.0) and m["p@4"] == pytest.approx(0.5)


def test_repeats_and_uncovering_chunks_are_not_rewarded():
    run, first = credit_positions([["ev1"], ["ev1"], [], ["ev1"]], ["~a#0", "~a#0@2", "~b#0", "~a#0@4"])
    assert run == ["ev1", "~a#0@2", "~b#0", "~a#0@4"] and first == {"ev1": 1}


def test_placeholders_unique_for_repeated_chunks():
    q = Question("q", "?", evidence=("없는 말",))
    j = judge_ranking(q, [_c("a#0"), _c("a#0"), _c("b#1"), _c("a#0")], "evidence")
    assert j.run == ["~a#0", "~a#0@2", "~b#1", "~a#0@4"]
    assert len(set(j.run)) == len(j.run) and j.first_found == {"ev1": None}


def test_unit_still_queued_at_the_end_is_not_credited():
    run, first = credit_positions([["ev1", "ev2", "ev3"], []], ["~a", "~b"])
    assert run == ["ev1", "ev2"] and first == {"ev1": 1, "ev2": 1, "ev3": 1}


def test_overlap_policy_in_judging():
    doc = Document("d", "가나다라마바사아자차")
    chunking = chunk_corpus([doc], "chars:6:0")           # d#0 = [0, 6), d#1 = [6, 10)
    q = Question("q", "?", evidence=("라마바사아",))      # 3 of 5 characters in d#0
    ranked = [chunking["d#1"], chunking["d#0"]]
    whole = judge_ranking(q, ranked, "evidence", index=EvidenceIndex.build([doc], chunking))
    assert whole.run == ["~d#1", "~d#0"] and whole.first_found == {"ev1": None}
    half = EvidenceIndex.build([doc], chunking, min_fraction=0.5)
    j = judge_ranking(q, ranked, "evidence", index=half)
    assert j.run == ["~d#1", "ev1"] and j.first_found == {"ev1": 2}
    # the text-based fallback (longest common substring) agrees here
    assert judge_ranking(q, ranked, "evidence", min_fraction=0.5).run == j.run
    assert judge_ranking(q, ranked, "evidence", min_fraction=0.4).run == ["ev1", "~d#0"]


def test_index_rejects_foreign_chunks():
    q, chunking, ranked = _example()
    index = EvidenceIndex.build(EXAMPLE_DOCS, chunking)
    with pytest.raises(InputError, match="not part of the chunking"):
        judge_ranking(q, ranked + [_c("zz#9")], "evidence", index=index)
    with pytest.raises(InputError, match="expected one of doc, evidence"):
        judge_ranking(q, ranked, "chunk")
    with pytest.raises(InputError, match="expected a Chunk"):
        judge_ranking(q, ["hd_01#0"], "doc")


def test_batch_judging():
    q, chunking, ranked = _example()
    qs = [q, Question("q2", "메뉴?", answerable=False), Question("q3", "?", relevant_doc_ids=("hd_05",))]
    res = judge_rankings(qs, {"q1": ranked, "q2": ranked[:1]}, "doc", chunker_spec="paragraphs")
    assert res.qrels == {"q1": {"hd_01": 1}, "q3": {"hd_05": 1}}
    assert res.run == {"q1": ["hd_03", "hd_01", "hd_05"], "q3": []}   # q3 was given no ranking
    assert res.unjudged == ["q2"] and res.per_question["q2"].run == ["hd_03"]
    assert res.signature == "judge:doc|chunker:paragraphs"
    ev = judge_rankings(qs, {"q1": ranked}, "evidence", documents=EXAMPLE_DOCS, chunking=chunking)
    assert ev.signature == "judge:evidence|chunker:paragraphs|norm:nfkc+ws|cover:whole"
    assert ev.unjudged == ["q2", "q3"] and ev.run == {"q1": ["~hd_03#0", "ev1", "ev2", "~hd_01#2@4"]}
    with pytest.raises(InputError, match="unknown question id"):
        judge_rankings(qs, {"nope": []}, "doc")


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(st.sampled_from(["ev1", "ev2", "ev3"]), unique=True).map(sorted), max_size=12))
def test_crediting_invariants(covered):
    n = len(covered)
    run, first = credit_positions(covered, [f"~p{i}" for i in range(n)])
    assert len(run) == n
    credited = [x for x in run if not x.startswith("~")]
    assert len(credited) == len(set(credited))                      # each unit at most once
    # first_found is exact
    for u in ("ev1", "ev2", "ev3"):
        ranks = [i for i, cov in enumerate(covered, 1) if u in cov]
        assert first.get(u) == (ranks[0] if ranks else None)
    # hit/MRR exact: the first credited position is the first position covering anything
    first_cov = next((i for i, cov in enumerate(covered, 1) if cov), None)
    first_cred = next((i for i, x in enumerate(run, 1) if not x.startswith("~")), None)
    assert first_cov == first_cred
    # credit never precedes discovery, and recall@k lags exact discovery by at most the queue
    for k in range(1, n + 1):
        found_by_k = sum(1 for r in first.values() if r <= k)
        credited_by_k = sum(1 for x in run[:k] if not x.startswith("~"))
        assert credited_by_k <= found_by_k


# --- sizes of the judged items, for metrics at a context budget ----------------------------------------------


def test_item_sizes_feed_budget_metrics():
    from ragexam.data.relevance import item_sizes
    from ragexam.metrics.ranking import ContextSizes, evaluate

    docs = [Document("a", "x" * 300 + "\n\n" + "VPN 재설치 안내." + "y" * 289), Document("b", "z" * 500)]
    chunking = chunk_corpus(docs, "paragraphs")
    q = Question("q", "?", relevant_doc_ids=("a",), evidence=("VPN 재설치",))
    ranked = [chunking["b#0"], chunking["a#0"], chunking["a#1"]]  # 500, 300, 300 characters
    ev = judge_ranking(q, ranked, "evidence", index=EvidenceIndex.build(docs, chunking))
    sizes = item_sizes(ev, ranked, lambda c: len(c.text))
    assert list(sizes.values()) == [(0.0, 500.0), (500.0, 300.0), (800.0, 300.0)]
    res = evaluate({"q": ev.qrels}, {"q": ev.run}, ["hit@900c", "hit@1100c", "r@1000c"],
                   sizes=[ContextSizes("c", {"q": sizes})]).per_query["q"]
    assert res == {"hit@900c": pytest.approx(1 / 3), "hit@1100c": 1.0, "r@1000c": pytest.approx(2 / 3)}
    doc = judge_ranking(q, ranked, "doc")
    assert doc.run == ["b", "a"] and item_sizes(doc, ranked, lambda c: len(c.text)) == {"b": (0.0, 500.0),
                                                                                        "a": (500.0, 300.0)}
