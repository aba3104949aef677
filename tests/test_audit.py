"""The audited junk rate of a question set (ragexam.questions.audit / auditing): a seeded sample never picked by
the person, labels counted in the sample's order, the exact interval, a sidecar keyed by the set's hash (an edited
set is no longer audited), the audit sheet, undo, the card's audit block, and ``ragexam review audit``."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragexam.cli import app
from ragexam.errors import InputError
from ragexam.questions.audit import (AUDITED, NOT_AUDITED, STALE, audit_path, audit_status, read_audit, sample_order,
                                     set_sha256)
from ragexam.questions.auditing import label_question, next_question, open_audit, read_sheet, undo_label, write_sheet
from ragexam.stats.hypergeometric import hypergeometric_interval


def make_set(folder: Path, n: int = 60, name: str = "qa.jsonl", card: bool = True) -> Path:
    """A set of ``n`` questions q001.. (every 4th one "bad": its key is "wrong"), with a card beside it."""
    rows = [{"query_id": f"q{i:03d}", "question": f"질문 {i}은 무엇인가요?", "ground_truth": "wrong" if i % 4 == 0
             else f"답 {i}", "evidence": [f"근거 문장 {i}."], "type": "meaning", "answerable": True}
            for i in range(1, n + 1)]
    qa = folder / name
    qa.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    if card:
        qa.with_name(qa.stem + ".card.json").write_text(json.dumps({"format": "ragexam-questions-card/1"}),
                                                        encoding="utf-8")
    return qa


def truth(qa: Path):
    """The person's label of each question: bad (wrong key) when the key is "wrong"."""
    rows = [json.loads(line) for line in qa.read_text(encoding="utf-8").splitlines()]
    return {r["query_id"]: r["ground_truth"] == "wrong" for r in rows}


def label_all(qa: Path) -> None:
    bad = truth(qa)
    while (qid := next_question(read_audit(qa))) is not None:
        label_question(qa, qid, "bad", "wrong_key") if bad[qid] else label_question(qa, qid, "good")


def test_the_sample_is_seeded_never_picked_and_grows_as_a_prefix(tmp_path):
    qa = make_set(tmp_path)
    first = open_audit(qa, 10, 7)
    ids = [f"q{i:03d}" for i in range(1, 61)]
    assert first.audit.sample == sample_order(ids, 7)[:10] and len(set(first.audit.sample)) == 10
    assert first.status.state == AUDITED and first.status.text() == "not audited (a sample of 10 drawn, none labelled yet)"
    grown = open_audit(qa, 25)
    assert grown.audit.sample[:10] == first.audit.sample and len(grown.audit.sample) == 25
    assert "grew from 10 to 25" in grown.notes[0]
    not_sampled = next(q for q in ids if q not in grown.audit.sample)
    with pytest.raises(InputError, match="not in the audit's sample"):
        label_question(qa, not_sampled, "good")
    with pytest.raises(InputError, match="seed 7"):
        open_audit(qa, 25, 8)  # another seed would be another sample


def test_the_estimate_is_the_exact_interval_and_says_what_it_was_measured_on(tmp_path):
    qa = make_set(tmp_path)
    open_audit(qa, 20, 3)
    label_all(qa)
    status = audit_status(qa)
    audit = read_audit(qa)
    bad = sum(truth(qa)[q] for q in audit.sample)
    iv = hypergeometric_interval(bad, 20, 60)
    assert (status.n_audited, status.interval.bad, status.interval.low_count, status.interval.high_count) == \
        (20, bad, iv.low_count, iv.high_count)
    want = f"junk {round(100 * bad / 20)}% [{round(100 * iv.low)}%–{round(100 * iv.high)}%], 20 of 60 audited"
    assert status.text() == want
    assert status.text("ko").startswith(f"불량 {round(100 * bad / 20)}%") and "60개 중 20개 검수" in status.text("ko")
    assert dict(status.reasons) == {"wrong_key": bad}
    card = json.loads(qa.with_name("qa.card.json").read_text(encoding="utf-8"))
    assert card["audit"]["text"] == want and card["audit"]["junk_high"] == pytest.approx(iv.high)


def test_a_label_after_a_gap_is_kept_but_not_counted(tmp_path):
    qa = make_set(tmp_path)
    audit = open_audit(qa, 5, 1).audit
    label_question(qa, audit.sample[0], "good")
    label_question(qa, audit.sample[2], "bad", "vague")  # the person skipped the second question
    status = audit_status(qa)
    assert status.n_audited == 1 and status.out_of_order == 1
    assert "1 labelled after an unlabelled one not counted" in status.text()
    assert next_question(read_audit(qa)) == audit.sample[1]


def test_undo_removes_the_last_label_and_asks_that_question_again(tmp_path):
    qa = make_set(tmp_path)
    audit = open_audit(qa, 3, 1).audit
    label_question(qa, audit.sample[0], "good")
    label_question(qa, audit.sample[1], "bad", "broken_language")
    assert undo_label(qa) == audit.sample[1]
    assert next_question(read_audit(qa)) == audit.sample[1] and audit_status(qa).n_audited == 1
    assert undo_label(qa) == audit.sample[0] and undo_label(qa) is None


def test_a_bad_label_needs_one_of_the_reasons(tmp_path):
    qa = make_set(tmp_path)
    audit = open_audit(qa, 3, 1).audit
    with pytest.raises(InputError, match="wrong_key"):
        label_question(qa, audit.sample[0], "bad")
    with pytest.raises(InputError):
        label_question(qa, audit.sample[0], "so-so")


def test_an_edited_set_is_no_longer_audited_and_keeps_the_labels_of_unchanged_questions(tmp_path):
    qa = make_set(tmp_path)
    open_audit(qa, 20, 5)
    label_all(qa)
    old = read_audit(qa)
    assert audit_status(qa).state == AUDITED
    rows = [json.loads(line) for line in qa.read_text(encoding="utf-8").splitlines()]
    edited = old.sample[0]
    for r in rows:
        if r["query_id"] == edited:
            r["question"] += " (고침)"
    qa.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    status = audit_status(qa)
    assert status.state == STALE and status.junk_high is None
    assert status.text() == "not audited: the set changed after 20 of its questions were audited (audit it again)"
    again = open_audit(qa)
    assert again.audit.sample == old.sample  # same ids, same seed: the same sample
    assert set(again.audit.labels) == set(old.sample) - {edited}
    assert "19 labels carried over" in again.notes[0]
    assert next_question(again.audit) == edited and again.audit.set_sha256 == set_sha256(qa)


def test_the_sheet_round_trip_for_scripts_and_ci(tmp_path):
    qa = make_set(tmp_path)
    opened = open_audit(qa, 8, 2)
    sheet = write_sheet(opened, tmp_path / "audit.csv")
    assert sheet.read_bytes().startswith(b"\xef\xbb\xbf")
    rows = list(csv.DictReader(io.StringIO(sheet.read_text(encoding="utf-8-sig"))))
    assert [r["query_id"] for r in rows] == opened.audit.sample
    bad = truth(qa)
    for r in rows:
        r["label"], r["reason"] = ("불량", "1") if bad[r["query_id"]] else ("ok", "")
    write(sheet, rows)
    done = read_sheet(qa, sheet)
    assert done.status.n_audited == 8 and done.status.interval.bad == sum(bad[q] for q in opened.audit.sample)
    assert {lab.reason for lab in done.audit.labels.values() if lab.label == "bad"} <= {"wrong_key"}


def test_reasons_are_read_in_the_korean_words_the_pages_show():
    """E22: labels were read in Korean (좋음/불량) but a reason in Korean words (`정답 틀림`) was refused, and the
    error listed only the English codes."""
    from ragexam.questions.audit import REASONS, reason_of

    assert reason_of("정답 틀림") == reason_of("정답이 틀림") == reason_of("정답틀림") == "wrong_key"
    assert all(reason_of(ko) == code and reason_of(ko.replace("이 ", " ")) == code
               for code, (_, _, ko) in REASONS.items())
    assert reason_of("Wrong Key") == reason_of("1") == "wrong_key" and reason_of("not answerable") != ""
    with pytest.raises(InputError) as err:
        reason_of("엉망")
    assert "1 wrong_key (wrong key / 정답이 틀림)" in str(err.value) and "질문이 아님" in str(err.value)


@pytest.mark.parametrize("change,field,line", [
    (lambda rows: rows[2].update(label="bad", reason=""), "reason", 4),
    (lambda rows: rows[1].update(label="maybe"), "label", 3),
    (lambda rows: rows[0].update(query_id="q999"), "query_id", 2),
    (lambda rows: rows[0].update(label="bad", reason="too long"), "reason", 2),
])
def test_a_bad_sheet_row_is_an_error_naming_its_line_and_column(tmp_path, change, field, line):
    qa = make_set(tmp_path)
    sheet = write_sheet(open_audit(qa, 4, 2), tmp_path / "audit.csv")
    rows = list(csv.DictReader(io.StringIO(sheet.read_text(encoding="utf-8-sig"))))
    change(rows)
    write(sheet, rows)
    with pytest.raises(InputError) as err:
        read_sheet(qa, sheet)
    assert (err.value.field, err.value.line, err.value.source) == (field, line, str(sheet))


def write(path: Path, rows) -> None:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(rows[0]), lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    path.write_text("\ufeff" + buf.getvalue(), encoding="utf-8")


def test_a_set_nobody_audited_says_so(tmp_path):
    qa = make_set(tmp_path)
    status = audit_status(qa)
    assert (status.state, status.text(), status.text("ko"), status.junk_high) == (NOT_AUDITED, "not audited",
                                                                                  "검수 안 됨", None)
    assert not audit_path(qa).exists()


def test_review_audit_on_the_keyboard_good_bad_with_reasons_undo_and_stop(tmp_path):
    """``--interactive`` (the default on a terminal): g good, 1-6 bad with a reason, u undo, q stop."""
    qa = make_set(tmp_path)
    res = CliRunner().invoke(app, ["review", "audit", str(qa), "--sample", "4", "--seed", "9", "--interactive"],
                             input="g3u4gq")
    assert res.exit_code == 0, res.output
    audit = read_audit(qa)
    labels = [audit.labels.get(q) for q in audit.sample]
    assert [(lab.label, lab.reason) if lab else None for lab in labels] == [
        ("good", None), ("bad", "broken_language"), ("good", None), None]
    assert "question 2 of 4 sampled" in res.output and "undone: " + audit.sample[1] in res.output
    assert "junk 33% [" in res.output and "3 of 60 audited (so far: 3 of the 4 sampled)" in res.output


def test_review_audit_without_a_terminal_prints_the_status_and_json(tmp_path):
    qa = make_set(tmp_path)
    res = CliRunner().invoke(app, ["review", "audit", str(qa), "--sample", "5", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert out["audit"]["state"] == "audited" and out["audit"]["n_audited"] == 0 and len(out["sample"]) == 5
    assert out["signals"]["helps"] is False and "not measured" in out["signals"]["text"]


def test_review_audit_sheet_then_labels_on_the_command_line(tmp_path):
    qa = make_set(tmp_path)
    sheet = tmp_path / "audit.csv"
    res = CliRunner().invoke(app, ["review", "audit", str(qa), "--sample", "6", "--sheet", str(sheet)])
    assert res.exit_code == 0 and f"--labels {sheet}" in res.output
    rows = list(csv.DictReader(io.StringIO(sheet.read_text(encoding="utf-8-sig"))))
    for r in rows:
        r["label"], r["reason"] = ("bad", "vague") if truth(qa)[r["query_id"]] else ("good", "")
    write(sheet, rows)
    res = CliRunner().invoke(app, ["review", "audit", str(qa), "--labels", str(sheet)])
    assert res.exit_code == 0 and "6 of 60 audited" in res.output
    res = CliRunner().invoke(app, ["review", "audit", str(qa), "--sheet", str(qa)])
    assert res.exit_code != 0 and "reads" in str(res.exception or res.output)


def test_a_damaged_audit_file_is_an_error_naming_it_and_the_fix(tmp_path):
    qa = make_set(tmp_path)
    audit_path(qa).write_text("[" * 100_000, encoding="utf-8")  # nested far too deep for Python's json
    with pytest.raises(InputError) as err:
        audit_status(qa)
    assert err.value.source == str(audit_path(qa)) and "audit the set again" in str(err.value)
    audit_path(qa).write_text(json.dumps({"format": "ragexam-audit/1", "set": "qa.jsonl"}), encoding="utf-8")
    with pytest.raises(InputError, match="missing or has the wrong type"):
        audit_status(qa)
