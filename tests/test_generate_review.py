"""The human review step: the sheet ``generate`` writes, edited by a person, applied by ``ragexam review apply``."""

from __future__ import annotations

import csv
import io
import json

import pytest

from qgen_stub import start_gen_stub
from ragexam import generate
from ragexam.questions import apply_review
from ragexam.errors import InputError
from test_generate_stub import DOCS, GOOD, by_doc


def generate_set(tmp, script, *, unsupported=(), out="qa.jsonl"):
    """Generate ``tmp/out`` from DOCS through the loopback stub answering with ``script(doc_id)``; returns the
    corpus file."""
    corpus = tmp / "docs.jsonl"
    corpus.write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in DOCS), encoding="utf-8")
    stub, shutdown = start_gen_stub()
    stub.unsupported.update(unsupported)
    stub.script = by_doc(lambda d, req: script(d))
    try:
        generate(corpus, model="stub-gen", base_url=stub.base_url, api_key="x", cache_dir=tmp / "cache", n=40,
                 mix="meaning=1", per_call=10, max_passes=1, out=tmp / out, cite="spans")
    finally:
        shutdown()
    return corpus


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("review")
    return tmp, generate_set(tmp, lambda d: GOOD[d])


def sheet(tmp):
    text = (tmp / "qa.review.csv").read_text(encoding="utf-8-sig")
    return list(csv.DictReader(io.StringIO(text)))


def write_sheet(path, rows, encoding="utf-8-sig"):
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(rows[0]), lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    path.write_text(buf.getvalue(), encoding=encoding)
    return path


def records(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_the_review_sheet_lists_every_question_as_pending(made):
    tmp, _ = made
    rows = sheet(tmp)
    assert (tmp / "qa.review.csv").read_bytes().startswith(b"\xef\xbb\xbf")  # spreadsheet programs read Korean
    assert [r["query_id"] for r in rows] == [r["query_id"] for r in records(tmp / "qa.jsonl")]
    assert {r["status"] for r in rows} == {"pending"}
    assert all(json.loads(r["evidence"]) for r in rows)


def test_accept_reject_and_edit(made, tmp_path):
    tmp, corpus = made
    rows = sheet(tmp)
    rows[0]["status"] = "승인"
    rows[1]["status"] = "reject"
    rows[2]["status"] = "accept"
    rows[2]["evidence"] = "비밀번호는 90일마다 바꿔야 하며"
    rows[2]["question"] = "90일이 지나면 비밀번호를 새로 정해야 하나요?"
    rows[2]["ground_truth"] = "90일마다 바꿔야 합니다."
    rows[2]["note"] = "근거를 더 정확한 문장으로 바꿈"
    rows[3]["status"] = ""
    review = write_sheet(tmp_path / "edited.csv", rows)
    out = tmp_path / "reviewed.jsonl"
    res = apply_review(tmp / "qa.jsonl", review, out)
    assert res.counts == {"accepted": 2, "rejected": 1, "pending_kept": 1, "pending_dropped": 0, "edited": 1,
                          "rescued": 0}
    assert res.rejected == [rows[1]["query_id"]]
    got = {r["query_id"]: r for r in records(out)}
    assert list(got) == [rows[0]["query_id"], rows[2]["query_id"], rows[3]["query_id"]]
    first = got[rows[0]["query_id"]]["metadata"]["generation"]
    assert first["review"] == "accepted" and "evidence_spans" in first and "edited" not in first
    edited = got[rows[2]["query_id"]]
    g = edited["metadata"]["generation"]
    assert g["edited"] == ["evidence", "ground_truth", "question"] and g["review_note"] == "근거를 더 정확한 문장으로 바꿈"
    assert g["answer_check"] == {"method": "human"}
    assert edited["relevant_doc_ids"] == ["d3"] and edited["evidence"] == ["비밀번호는 90일마다 바꿔야 하며"]
    content = DOCS[2]["content"]
    span = g["evidence_spans"][0]
    assert content[span["start"]:span["end"]] == "비밀번호는 90일마다 바꿔야 하며"
    assert g["anchors"] == ["90"] and edited["type"] == "lexical"  # measured again: it now quotes a number
    assert got[rows[3]["query_id"]]["metadata"]["generation"]["review"] == "pending"

    from ragexam.data.validation import validate

    assert validate(corpus, out).ok

    dropped = apply_review(tmp / "qa.jsonl", review, tmp_path / "only.jsonl", pending="drop")
    assert dropped.counts["pending_dropped"] == 1 + (len(rows) - 4) and len(records(tmp_path / "only.jsonl")) == 2


@pytest.mark.parametrize("field,value,match", [
    ("status", "maybe", "expected accept, reject or pending"),
    ("query_id", "gen_9999", "is not in"),
    ("evidence", '["지어낸 근거 문장입니다 정말로"]', "occurs in no document"),
    ("evidence", '["unclosed', "cannot read the evidence list"),
    ("question", "위 글에 따르면 무엇인가요?", "refers_to_passage"),
    ("ground_truth", "문서에서 찾을 수 없습니다.", "answer_declines"),
])
def test_a_bad_row_is_an_error_naming_the_sheet_line(made, tmp_path, field, value, match):
    tmp, _ = made
    rows = sheet(tmp)
    rows[1]["status"] = "accept"
    rows[1][field] = value
    review = write_sheet(tmp_path / "bad.csv", rows)
    with pytest.raises(InputError, match=match) as err:
        apply_review(tmp / "qa.jsonl", review, tmp_path / "out.jsonl")
    assert err.value.source == str(review) and err.value.line == 3
    assert not (tmp_path / "out.jsonl").exists()


def test_a_repeated_row_and_a_cp949_sheet(made, tmp_path):
    tmp, _ = made
    rows = sheet(tmp)
    with pytest.raises(InputError, match="already appeared on line 2"):
        apply_review(tmp / "qa.jsonl", write_sheet(tmp_path / "dup.csv", rows[:1] + rows[:1]), None)
    rows[0]["status"] = "채택"
    korean_excel = write_sheet(tmp_path / "excel.csv", rows, encoding="cp949")
    res = apply_review(tmp / "qa.jsonl", korean_excel, None)
    assert res.counts["accepted"] == 1 and "CP949" in res.notes[0]


def test_review_apply_on_the_command_line(made, tmp_path):
    import subprocess
    import sys

    tmp, _ = made
    rows = sheet(tmp)
    rows[0]["status"] = "accept"
    review = write_sheet(tmp_path / "cli.csv", rows)
    out = tmp_path / "cli.jsonl"
    done = subprocess.run([sys.executable, "-m", "ragexam.cli", "review", "apply", "--qa", str(tmp / "qa.jsonl"),
                           "--review", str(review), "--out", str(out), "--json"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["counts"]["accepted"] == 1 and len(records(out)) == len(rows)
    bad = subprocess.run([sys.executable, "-m", "ragexam.cli", "review", "apply", "--qa", str(tmp / "qa.jsonl"),
                          "--out", str(tmp_path), "--json"], capture_output=True, text=True)
    assert bad.returncode == 2 and "--out" in bad.stderr


def test_a_review_that_leaves_out_every_question_writes_no_empty_set(made, tmp_path):
    """Every row rejected wrote a 0-byte set and exited 0: a set nobody can run."""
    tmp, _ = made
    rows = sheet(tmp)
    for r in rows:
        r["status"] = "reject"
    review = write_sheet(tmp_path / "all_rejected.csv", rows)
    out = tmp_path / "none.jsonl"
    res = apply_review(tmp / "qa.jsonl", review, out)
    assert not out.exists() and not res.records
    assert res.refused == (f"refused: every question was left out ({len(rows)} rejected), and a set of no "
                           "questions cannot be run; nothing written. Fix: accept some rows, or keep the rows nobody "
                           "reviewed (--pending keep).")
    rows[0]["status"] = "pending"
    res = apply_review(tmp / "qa.jsonl", write_sheet(tmp_path / "one_pending.csv", rows), out, pending="drop")
    assert not out.exists() and f"({len(rows) - 1} rejected, 1 pending dropped)" in res.refused
    from rich.console import Console

    from ragexam.report.console_generate import print_review

    console = Console(record=True, width=300)
    print_review(res, console, out)
    text = console.export_text()  # no line about a written set that was not written
    assert "the written set" not in text and "refused: every question was left out" in text


# --- rescue, the checks of an edit, and the sheet's writer ------------------------------------------------------
@pytest.fixture(scope="module")
def with_rejects(tmp_path_factory):
    """A set generated from good and bad candidates: its rejects file holds every kind of rejection."""
    from test_generate_stub import BAD, UNSUPPORTED_ANSWER

    tmp = tmp_path_factory.mktemp("rescue")
    generate_set(tmp, lambda d: GOOD[d] + [b for _, b in BAD.get(d, [])], unsupported=[UNSUPPORTED_ANSWER])
    return tmp


def rejects_by_reason(tmp):
    return {r["reason"]: r for r in records(tmp / "qa.rejects.jsonl") if "cid" in r}


def test_a_rescued_candidate_joins_the_set_after_its_checks(with_rejects, tmp_path):
    from ragexam.questions.review import rescue_id

    tmp = with_rejects
    rows = sheet(tmp)
    para = rejects_by_reason(tmp)["evidence_paraphrased"]
    qid = rescue_id(records(tmp / "qa.jsonl"), para["cid"])
    assert qid == "gen_" + para["cid"]
    rescued = dict.fromkeys(rows[0], "")
    rescued.update(query_id=qid, status="accept", candidate=para["cid"], question=para["question"],
                   ground_truth=para["answer"], evidence=json.dumps(para["evidence"], ensure_ascii=False))
    for r in rows:
        r["candidate"] = ""
    with pytest.raises(InputError, match="evidence_paraphrased") as err:  # rescued as it was: refused again
        apply_review(tmp / "qa.jsonl", write_sheet(tmp_path / "as_is.csv", rows + [rescued]), None)
    assert err.value.line == len(rows) + 2 and err.value.field == "evidence"

    rescued["evidence"] = json.dumps(["번호는 '다온 OTP' 앱이 30초마다 새로 만들어 줍니다"], ensure_ascii=False)
    res = apply_review(tmp / "qa.jsonl", write_sheet(tmp_path / "fixed.csv", rows + [rescued]), tmp_path / "out.jsonl")
    assert res.counts["rescued"] == 1 and res.counts["edited"] == 1
    got = records(tmp_path / "out.jsonl")
    assert [r["query_id"] for r in got] == [r["query_id"] for r in records(tmp / "qa.jsonl")] + [qid]
    new = got[-1]
    g = new["metadata"]["generation"]
    assert g["rescued"] == "evidence_paraphrased" and g["candidate"] == para["cid"] and g["edited"] == ["evidence"]
    assert new["relevant_doc_ids"] == ["d1"] and new["answerable"] is True and g["answer_check"] == {"method": "human"}
    assert DOCS[0]["content"][g["evidence_spans"][0]["start"]:g["evidence_spans"][0]["end"]] == new["evidence"][0]

    for bad, match in ((dict(candidate="p9-c9999-9"), "is not in qa.jsonl's rejects file"),
                       (dict(query_id=rows[0]["query_id"]), "needs a new id")):
        with pytest.raises(InputError, match=match):
            apply_review(tmp / "qa.jsonl", write_sheet(tmp_path / "bad.csv", rows[1:] + [dict(rescued, **bad)]), None)


def test_an_edit_that_duplicates_or_copies_is_refused(with_rejects, tmp_path):
    tmp = with_rejects
    rows = sheet(tmp)
    rows[1]["question"] = rows[0]["question"]
    with pytest.raises(InputError, match="duplicate") as err:
        apply_review(tmp / "qa.jsonl", write_sheet(tmp_path / "dup.csv", rows), None)
    assert err.value.line == 3 and err.value.field == "question"
    rows[0]["status"] = "reject"  # the question it repeats is rejected: now it may stay
    assert apply_review(tmp / "qa.jsonl", write_sheet(tmp_path / "dup2.csv", rows), None).counts["edited"] == 1
    rows = sheet(tmp)
    ev = json.loads(rows[2]["evidence"])[0]
    rows[2]["question"] = ev + "?"
    with pytest.raises(InputError, match="copies_evidence"):
        apply_review(tmp / "qa.jsonl", write_sheet(tmp_path / "copy.csv", rows), None)


def test_the_sheet_writer_merges_rows_and_detects_conflicts(with_rejects, tmp_path):
    import shutil
    from concurrent.futures import ThreadPoolExecutor

    from ragexam.questions.review import Conflict, Sheet, load_review_set, read_sheet

    tmp = with_rejects
    review = tmp_path / "qa.review.csv"
    shutil.copy(tmp / "qa.review.csv", review)
    rs = load_review_set(tmp / "qa.jsonl", review)
    writer = rs.sheet()
    ids = list(rs.records)
    versions = {qid: Sheet.version(r) for qid, (_, r) in read_sheet(review).by_id.items()}

    def decide(qid):
        return writer.update(qid, {"status": "accepted", "note": f"노트 {qid}"}, versions[qid])

    with ThreadPoolExecutor(4) as pool:  # four "tabs" at once, each on its own question: nothing is lost
        list(pool.map(decide, ids * 3))
    now = read_sheet(review)
    assert [r["query_id"] for _, r in now.rows] == ids
    assert all(r["status"] == "accepted" and r["note"] == f"노트 {r['query_id']}" for _, r in now.rows)
    assert review.read_bytes().startswith(b"\xef\xbb\xbf")

    stale = versions[ids[0]]  # a tab that still shows the question as pending
    with pytest.raises(Conflict) as err:
        writer.update(ids[0], {"status": "rejected", "note": ""}, stale)
    assert err.value.current["status"] == "accepted"
    assert read_sheet(review).by_id[ids[0]][1]["status"] == "accepted"
    # a sheet without a row for a question: the row is added with the set's cells
    missing = tmp_path / "missing.csv"
    fresh = load_review_set(tmp / "qa.jsonl", missing).sheet()
    fresh.update(ids[1], {"status": "rejected"}, "")
    row = read_sheet(missing).by_id[ids[1]][1]
    assert row["status"] == "rejected" and row["question"] == rs.records[ids[1]]["question"]
    assert apply_review(tmp / "qa.jsonl", missing, None).rejected == [ids[1]]


def test_deleted_rows_an_edited_relevant_cell_and_a_missing_sheet_are_said(made, tmp_path):
    """E21: rows deleted from the sheet became pending without a word; E13: a generated set's relevant_doc_ids
    cell is not read, and an edit of it was ignored silently; E23: a set without a sheet failed with only
    "no such file"."""
    import shutil

    tmp, _ = made
    rows = sheet(tmp)
    gone = [rows[1]["query_id"], rows[3]["query_id"]]
    rows[0]["relevant_doc_ids"] = "d1 d2 d3"
    review = write_sheet(tmp_path / "cut.csv", [r for r in rows if r["query_id"] not in gone])
    res = apply_review(tmp / "qa.jsonl", review, None)
    assert res.counts["pending_kept"] == len(rows)
    note = next(n for n in res.notes if "no row in cut.csv" in n)
    assert note.startswith(f"2 questions of qa.jsonl have no row in cut.csv (deleted from the sheet?): "
                           f"{gone[0]}, {gone[1]}; kept as pending")
    dropped = apply_review(tmp / "qa.jsonl", review, None, pending="drop")
    assert any("left out as pending (--pending drop)" in n for n in dropped.notes)
    assert any(f"had an edited relevant_doc_ids cell, which a generated set does not read: {rows[0]['query_id']}" in n
               for n in res.notes)
    assert not any("no row" in n or "relevant_doc_ids" in n for n in apply_review(tmp / "qa.jsonl", None, None).notes)
    bare = tmp_path / "bare.jsonl"
    shutil.copy(tmp / "qa.jsonl", bare)
    with pytest.raises(InputError) as err:
        apply_review(bare, None, tmp_path / "out.jsonl")
    said = str(err.value)
    assert "no such file" in said and "--review FILE" in said and "`ragexam serve --review" in said
    assert ("`ragexam generate`, `ragexam locate-evidence` and `ragexam traces sample` write it beside the set"
            in said)
