"""Answers without a ``pipeline`` field (issue 9): with a one-pipeline run they take its contexts; with a
run of several pipelines the user is told up front why the context metrics cannot be judged."""

from __future__ import annotations

import pytest

import ragexam
from ragexam.analysis.answers.files import AnswerRecord
from ragexam.analysis.answers.scoring import prepare_rows
from ragexam.data.loaders import load_qa
from ragexam.storage.runfolder import read_run_folder


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    base = tmp_path_factory.mktemp("runs")
    kw = dict(chunkers=["paragraphs:400"], n_resamples=20, n_permutations=20, progress=False)
    ragexam.run("ai_concepts", "ai_concepts", retrievers=["bm25:whitespace"], **kw).save(base / "one")
    ragexam.run("ai_concepts", "ai_concepts", retrievers=["bm25:whitespace", "bm25"], **kw).save(base / "two")
    return read_run_folder(base / "one"), read_run_folder(base / "two")


def _answers(qa):
    return [AnswerRecord(q.query_id, "답변입니다.") for q in qa]


def test_one_pipeline_run_gives_its_contexts(runs):
    one, _ = runs
    qa = load_qa("ai_concepts")
    notes: list = []
    rows = prepare_rows(qa, _answers(qa), run=one, notes=notes)
    answerable = [r for r in rows if r.question.answerable]
    assert answerable and all(r.contexts_source == "run" for r in answerable)
    assert sum(1 for r in answerable if r.contexts) >= len(answerable) - 2  # bm25:whitespace may find nothing
    assert notes == []


def test_several_pipelines_say_why_contexts_are_unknown(runs):
    _, two = runs
    qa = load_qa("ai_concepts")
    notes: list = []
    rows = prepare_rows(qa, _answers(qa), run=two, notes=notes)
    assert all(r.contexts is None for r in rows)
    assert len(notes) == 1 and "pass --pipeline NAME" in notes[0] and "no_contexts" in notes[0]
    named = prepare_rows(qa, _answers(qa), run=two, pipeline=two.pipelines[1], notes=[])
    assert all(r.contexts_source == "run" for r in named if r.question.answerable)
