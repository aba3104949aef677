"""The one run-folder module: typed rows, one true/false rule, ``ragexam-run/2`` folders that store the
chunk texts the run saw (so answer generation re-chunks nothing), ``ragexam-run/1`` folders still read."""

from __future__ import annotations

import csv
import json

import pytest

import ragexam
from ragexam.analysis.answers.files import run_contexts
from ragexam.errors import InputError
from ragexam.storage.runfolder import (RUN_FORMAT, ChunkRecord, RunData, RunRow, coerce_rows, read_folder,
                                       read_run_folder, write_run_folder)
from test_report_fixtures import make_run, write_run
from test_run_api import CORPUS, FixedRetriever, write_set


@pytest.fixture()
def saved(tmp_path):
    corpus, qa = write_set(tmp_path)
    res = ragexam.run(corpus, qa, retrievers=[FixedRetriever(), "bm25:whitespace"], chunkers=["paragraphs", "whole"],
                      k=(1, 3), n_resamples=50, n_permutations=50, progress=False)
    return res, res.save(tmp_path / "out"), corpus


def test_a_saved_run_reads_back_as_the_same_typed_rows(saved):
    res, out, _ = saved
    run = read_run_folder(out)
    assert run.format == RUN_FORMAT == res.summary["format"] == "ragexam-run/3"
    assert run.summary == res.summary and run.per_question == res.per_question
    assert all(isinstance(r, RunRow) for r in run.per_question + res.per_question)
    row = run.row("fixed | paragraphs", "q4")
    assert row.answerable is False and row.first_rank is None and row.value("hit@1") is None
    assert row["top_ids"] == row.top_ids and dict(row)["answerable"] is False
    assert list(row)[:9] == ["pipeline", "retriever", "chunker", "query_id", "type", "answerable", "first_rank",
                             "unit_ranks", "n_units"] and list(row)[-1] == "top_ids"
    assert row == row.to_dict() and row != dict(row.to_dict(), answerable=True)
    # summary.json is written last and every file is complete
    assert sorted(p.name for p in out.iterdir()) == ["chunks.jsonl", "per_question.csv", "runs", "summary.json"]


def test_chunks_jsonl_holds_the_text_of_every_chunk_in_a_top_list(saved):
    res, out, _ = saved
    run = read_run_folder(out)
    content = {d["doc_id"]: d["content"] for d in CORPUS}
    for p in res.pipelines:
        spec = p.chunker
        for r in run.rows(p.name):
            for cid in r.top_ids:
                c = run.chunks[spec][cid]
                assert c.text == content[c.doc_id][c.start:c.end] == res.chunkings[spec].by_id[cid].text
    wanted = {(r.chunker, c) for r in run.per_question for c in r.top_ids}
    stored = [json.loads(line) for line in (out / "chunks.jsonl").read_text(encoding="utf-8").splitlines()]
    assert {(c["chunker"], c["chunk_id"]) for c in stored} == wanted and len(stored) == len(wanted)
    assert set(stored[0]) == {"chunker", "chunk_id", "doc_id", "start", "end", "text"}


def test_contexts_come_from_the_folder_without_rechunking(saved, monkeypatch):
    res, out, corpus = saved
    run = read_run_folder(out)
    corpus.unlink()  # the corpus is not needed any more

    def no(*a, **k):
        raise AssertionError("re-chunked")

    monkeypatch.setattr("ragexam.data.chunking.chunk_corpus", no)
    notes: list = []
    ctx = run_contexts(run, "bm25:whitespace | whole", 2, notes=notes)
    row = run.row("bm25:whitespace | whole", "q1")
    assert [c for c, _ in ctx["q1"]] == row.top_ids[:2]
    assert [t for _, t in ctx["q1"]] == [res.chunkings["whole"].by_id[c].text for c in row.top_ids[:2]]
    assert notes == []


def test_a_run_of_the_previous_format_is_read_and_answered_by_rechunking(tmp_path):
    summary, rows = make_run(n_questions=10, seed=2, n_resamples=20, n_permutations=20)
    run = read_folder(write_run(tmp_path / "old", summary, rows))
    assert run.format == "ragexam-run/1" and not run.has_chunk_texts
    assert run.per_question == coerce_rows(rows) and run.miss_k is None and run.corpus == "it_helpdesk"
    with pytest.raises(InputError, match="does not store its chunk texts"):
        run.contexts(run.pipelines[0], 3)
    # the legacy path: chunked again from config.corpus, with a note saying so
    from test_score_fixtures import DOCS, write_case

    _, _, _, folder = write_case(tmp_path / "case")
    run = read_folder(folder)
    notes: list = []
    ctx = run_contexts(run, "P1", 2, notes=notes)
    text = {f"{d['doc_id']}#0": d["content"] for d in DOCS}
    row = run.row("P1", "q2")
    assert ctx["q2"] == [(c, text[c]) for c in row.top_ids[:2]]
    assert len(notes) == 1 and "re-chunking the corpus" in notes[0] and "ragexam-run/1" in notes[0]


def test_one_true_false_rule(tmp_path):
    base = {"pipeline": "p", "query_id": "q", "hit@1": "1.0"}
    for cell, want in (("true", True), ("TRUE", True), ("1", True), ("yes", True), ("", True), ("false", False),
                       ("False", False), ("0", False), ("no", False)):
        (row,) = coerce_rows([dict(base, answerable=cell)])
        assert row.answerable is want, cell
    with pytest.raises(InputError) as err:
        coerce_rows([base, dict(base, answerable="maybe")], source="x.csv")
    assert (err.value.source, err.value.line, err.value.field) == ("x.csv", 3, "answerable")


def test_incomplete_or_wrong_folders_say_what_is_wrong(saved, tmp_path):
    res, out, _ = saved
    (out / "chunks.jsonl").write_text(
        (out / "chunks.jsonl").read_text(encoding="utf-8").splitlines()[0] + "\n", encoding="utf-8")
    with pytest.raises(InputError, match="not in chunks.jsonl"):
        read_run_folder(out).contexts("fixed | paragraphs", 3)
    (out / "chunks.jsonl").unlink()
    with pytest.raises(InputError, match="has no chunks.jsonl"):
        read_run_folder(out)
    with pytest.raises(InputError, match="without summary.json"):
        read_run_folder(tmp_path)
    with pytest.raises(InputError, match="writes 'ragexam-run/3'"):
        write_run_folder(tmp_path / "x", dict(res.summary, format="ragexam-run/1"), res.per_question, [])
    bad = tmp_path / "bad"
    write_run_folder(bad, res.summary, res.per_question, [ChunkRecord("whole", "d1#0", "d1", 0, 3, "abc")])
    with open(bad / "per_question.csv", encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    rows[1]["first_rank"] = "seven"
    with open(bad / "per_question.csv", "w", encoding="utf-8", newline="") as fh:
        w = csv.DictWriter(fh, list(rows[0]), lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    with pytest.raises(InputError) as err:
        read_run_folder(bad)
    assert (err.value.line, err.value.field) == (3, "first_rank")


def test_rundata_unpacks_and_types_what_it_is_given():
    summary, rows = make_run(n_questions=5, seed=1, n_resamples=10, n_permutations=10)
    run = RunData(summary, rows, "mem")
    s, pq = run
    from ragexam.storage.summary import RunSummary

    assert isinstance(s, RunSummary) and s == summary and all(isinstance(r, RunRow) for r in pq)
    assert run.pipelines == [p["name"] for p in summary["pipelines"]]
    assert run.row(run.pipelines[0], rows[0]["query_id"]).first_rank == rows[0]["first_rank"]


def test_a_question_twice_in_a_pipeline_is_an_error_not_a_silent_overwrite():
    summary, rows = make_run(n_questions=3, seed=1, n_resamples=10, n_permutations=10)
    with pytest.raises(InputError, match="rows 1 and 10 are both question"):
        RunData(summary, rows + [rows[0]], "mem")
