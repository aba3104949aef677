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


def test_a_run_of_another_question_set_is_refused_naming_run(runs):
    """Answers to it_helpdesk joined to a run of ai_concepts: no answer's question is in the run, so every retrieval
    would be unknown -- an error naming --run with the counts and the fix, not a silent score."""
    from ragexam.errors import InputError

    one, _ = runs
    qa = load_qa("it_helpdesk")
    with pytest.raises(InputError) as ei:
        prepare_rows(qa, _answers(qa), run=one)
    e = ei.value
    assert e.field == "--run" and e.source == one.source
    assert "shares no questions" in e.message and "12 questions (question set 'ai_concepts')" in e.message
    assert f"71 of the 71 questions of {qa.source}" in e.message and "Fix:" in e.message


def test_a_run_with_only_some_of_the_questions_says_how_many_were_matched(runs):
    from dataclasses import replace

    from ragexam.data.schema import QASet, Question

    one, _ = runs
    base = load_qa("ai_concepts")
    extra = [Question(f"extra{i}", "무엇인가요?", evidence=("무엇",), ground_truth="이것") for i in range(3)]
    qa = replace(base, questions=list(base.questions) + extra)
    notes: list = []
    rows = prepare_rows(qa, _answers(qa), run=one, notes=notes)
    assert [n for n in notes if "are in the run" in n] == [
        f"--run {one.source}: only 12 of the answers' 15 questions are in the run (the run has 12 questions "
        f"(question set 'ai_concepts'), the answers answer 15 of the 15 questions of {qa.source}); retrieval is "
        "unknown for the other 3 -- is the run of this question set?"]
    assert {r.retrieval_source for r in rows if r.query_id.startswith("extra")} == {"unknown"}


def test_score_cli_refuses_a_run_of_another_question_set(runs, tmp_path, capsys, monkeypatch):
    from ragexam.cli import main

    monkeypatch.setenv("RAGEXAM_HOME", str(tmp_path))
    one, _ = runs
    with pytest.raises(SystemExit) as ei:
        main(["score", "--qa", "it_helpdesk", "--answers", "it_helpdesk", "--run", one.source, "--no-history"])
    err = capsys.readouterr().err
    assert ei.value.code == 2 and "field '--run'" in err and "shares no questions" in err
    assert "Traceback" not in err
