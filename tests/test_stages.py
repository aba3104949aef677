"""The data's journey, one stage at a time (analysis/exam/stages.py): a user can call each stage alone from Python, and
the stages composed by hand give what ``ragexam.run`` gives."""

from __future__ import annotations

import numpy as np

import ragexam
from ragexam.analysis.exam import stages as S

OPTS = dict(progress=False, n_resamples=50, n_permutations=50)


def test_the_stages_by_hand_equal_run():
    plan = S.plan(["bm25:whitespace"], ["paragraphs:400", "sentences"])
    data = S.load("it_helpdesk", "it_helpdesk")
    assert isinstance(data, S.Dataset) and data.relevance == "evidence" and len(data.scored) == 65
    chunks = S.chunk(data, plan.chunkers)
    assert chunks.specs == ["paragraphs:400", "sentences"] and len(chunks["paragraphs:400"].chunking) == 81
    rankings = S.retrieve(data, chunks, plan, depth=100)
    names = [r.name for r in rankings]
    assert names == ["bm25:whitespace | paragraphs:400", "bm25:whitespace | sentences"]
    judged = S.judge_relevance(data, rankings, miss_k=5)
    sizes = S.size(chunks, rankings, plan, miss_k=5)  # two chunkings: an equal context budget is chosen
    assert sizes.budgets
    table = S.score(data, judged, S.metric_names((1, 3, 5, 10), 5, sizes.budgets), sizes=sizes)
    whole = ragexam.run("it_helpdesk", "it_helpdesk", ["bm25:whitespace"], ["paragraphs:400", "sentences"], **OPTS)
    for name in names:
        assert np.array_equal(table[name].values, whole.values[name])
        assert table[name].signature == whole.summary.pipelines[names.index(name)].signature
        assert rankings[name].ranked == whole.rankings[name]


def test_a_stage_alone_judges_another_systems_lists():
    """Grade a ranking made outside ragexam with the same judge and metrics (no retriever, no corpus run)."""
    data = S.load("it_helpdesk", "it_helpdesk")
    plan = S.plan(["bm25:whitespace"], ["paragraphs:400"])
    chunks = S.chunk(data, plan.chunkers)
    cs = chunks["paragraphs:400"]
    # a "system" that returns the chunks of the relevant document first, in document order
    ranked = {q.query_id: [(c.chunk_id, 1.0) for c in cs.chunking if c.doc_id in q.relevant_docs]
              for q in data.questions}
    ranking = S.Ranking(plan.pipelines[0], ranked, cs.by_id, "mine", cs.index)
    judged = S.judge_relevance(data, S.Rankings({ranking.name: ranking}))
    table = S.score(data, judged, ["hit@10", "mrr"])
    assert table[ranking.name].values[:, 0].mean() == 1.0 and table[ranking.name].signature.startswith("mine||")
