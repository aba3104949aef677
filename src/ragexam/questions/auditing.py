"""Doing an audit (:mod:`ragexam.questions.audit`): drawing the sample, labelling, undo, the audit sheet.

Every function here reads the sidecar again and writes it under the review sheet's lock
(:func:`ragexam.questions.review._locked`), so the browser's audit page, a second tab and ``ragexam review audit`` in
a terminal never lose each other's labels.  A label is refused when the set file changed since its sample was drawn
(the label would be about another set).

The **sheet** (``ragexam review audit QA --sheet audit.csv``, for scripts and CI): one row per sampled question in
the sample's order, columns :data:`SHEET_COLUMNS`, UTF-8 with BOM (Excel reads the Korean); a person fills
``label`` (``good`` / ``bad``, also ``ok``, ``좋음``, ``불량`` ...) and, for a bad one, ``reason`` (its code, its
number 1-6 or its English or Korean words, as the audit pages show them: ``정답 틀림`` is ``wrong_key``);
``--labels audit.csv`` reads it back.  A row left empty has no label; a row whose
``query_id`` is not in the sample, or a bad label without a reason, is an error naming the line.
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple, Union

from ragexam.errors import InputError
from ragexam.questions.audit import (DEFAULT_SAMPLE, DEFAULT_SEED, REASONS, AuditFile, AuditStatus, Label, audit_path,
                                     label_of, read_audit, reason_of, record_sha256, sample_order, set_sha256,
                                     status_of, with_label, write_audit)

if TYPE_CHECKING:  # pragma: no cover
    from ragexam.questions.risk import ReviewQueue, StopPoint

__all__ = ["AuditSet", "open_audit", "label_question", "undo_label", "next_question", "write_sheet", "read_sheet",
           "SHEET_COLUMNS", "AuditOpened", "SetQueue", "set_queue"]

SHEET_COLUMNS = ("order", "query_id", "label", "reason", "note", "type", "question", "ground_truth", "evidence")
PathLike = Union[str, Path]


@dataclass
class AuditSet:
    """The set under audit: its path, records by ``query_id`` (file order) and the hash of its bytes."""

    qa: Path
    records: Dict[str, Dict[str, Any]]
    sha256: str

    @classmethod
    def load(cls, qa: PathLike) -> "AuditSet":
        from ragexam.questions.review import read_records

        path = Path(qa)
        if not path.is_file():
            raise InputError("no such file; expected a question set (JSONL)", source=str(path))
        records = read_records(path)
        if not records:
            raise InputError("the set holds no question; nothing to audit", source=str(path))
        return cls(path, records, set_sha256(path))


@dataclass
class AuditOpened:
    """What :func:`open_audit` found and did: the set, the sidecar now on disk, and notes in words."""

    set: AuditSet
    audit: AuditFile
    notes: List[str]

    @property
    def status(self) -> AuditStatus:
        return status_of(self.audit, self.set.sha256, audit_path(self.set.qa))


def _locked(qa: Path) -> Any:
    from ragexam.questions.review import _locked as lock

    return lock(audit_path(qa))


def _carried(old: AuditFile, aset: AuditSet, sample: List[str]) -> Dict[str, Label]:
    """The old labels of questions in the new sample that a person would read the same (:func:`record_sha256`)."""
    out = {}
    for qid in sample:
        lab = old.labels.get(qid)
        if lab is not None and qid in aset.records and lab.record_sha256 == record_sha256(aset.records[qid]):
            out[qid] = lab
    return out


def _extend(old: AuditFile, aset: AuditSet, size: int, seed: Optional[int]) -> Tuple[AuditFile, List[str]]:
    if seed is not None and seed != old.seed and old.sample:
        raise InputError(f"this set's audit drew its sample with seed {old.seed}; --seed {seed} would be another "
                         f"sample. Fix: leave --seed out (or give {old.seed}), or pass --restart to discard its "
                         f"{len(old.labels)} labels", source=str(audit_path(aset.qa)), field="seed")
    if size <= len(old.sample):
        return old, []
    use_seed = old.seed if old.sample or seed is None else seed
    order = sample_order(list(aset.records), use_seed)
    grew = [f"the sample grew from {len(old.sample)} to {size} (the same seeded order, seed {use_seed})"] \
        if old.sample else []
    return replace(old, seed=use_seed, sample=order[:size]), grew


def open_audit(qa: PathLike, sample: Optional[int] = None, seed: Optional[int] = None, *,
               restart: bool = False) -> AuditOpened:
    """Open (or start) the audit of ``qa``: the sidecar's sample when it audits these bytes (grown to ``sample``
    when that is larger), else a new sample of ``sample`` (default 20, at most the set) drawn with ``seed`` (default:
    the old audit's, else 12345), carrying over the labels of questions that are unchanged.  ``restart`` discards
    the old labels.  The sample is written before anyone reads a question."""
    if sample is not None and (isinstance(sample, bool) or int(sample) < 1):
        raise InputError(f"received {sample!r}; expected at least 1", source="--sample", field="sample")
    aset = AuditSet.load(qa)
    n = len(aset.records)
    notes: List[str] = []
    with _locked(aset.qa):
        old = read_audit(aset.qa)
        kept = len(old.sample) if old is not None and old.set_sha256 == aset.sha256 and old.sample else 0
        size = min(n, sample if sample is not None else (kept or DEFAULT_SAMPLE))
        if sample is not None and sample > n:
            notes.append(f"--sample {sample} is more than the set's {n} questions: every question is in the sample")
        if old is not None and old.set_sha256 == aset.sha256 and not restart:
            new, more = _extend(old, aset, size, seed)
            notes += more
        else:
            use_seed = seed if seed is not None else (old.seed if old is not None else DEFAULT_SEED)
            order = sample_order(list(aset.records), use_seed)[:size]
            carried = _carried(old, aset, order) if old is not None and not restart else {}
            if old is not None and not restart and old.set_sha256 != aset.sha256:
                notes.append(f"the set changed since its last audit ({len(old.labels)} labelled): a new sample; "
                             f"{len(carried)} labels carried over (questions read the same), the rest to read again")
            derived = old.derived if old is not None and old.set_sha256 == aset.sha256 else None
            new = AuditFile(aset.qa.name, aset.sha256, n, int(use_seed), order, carried, derived)
        if new != old:
            write_audit(aset.qa, new)
    return AuditOpened(aset, new, notes)


def _current(qa: Path) -> AuditFile:
    audit = read_audit(qa)
    if audit is None or not audit.sample:
        raise InputError("no audit sample drawn for this set; start with `ragexam review audit` (or the audit page)",
                         source=str(audit_path(qa)))
    if audit.set_sha256 != set_sha256(qa):
        raise InputError("the set changed since its audit sample was drawn; the label would be about another set. "
                         "Fix: open the audit again (`ragexam review audit`), which draws a new sample",
                         source=str(audit_path(qa)), field="set_sha256")
    return audit


def label_question(qa: PathLike, query_id: str, label: str, reason: Optional[str] = None, note: str = "") -> AuditFile:
    """Record a person's label of the sampled question ``query_id`` (``good``, or ``bad`` with a reason)."""
    path = Path(qa)
    records = AuditSet.load(path).records
    with _locked(path):
        audit = _current(path)
        rec = records.get(query_id)
        new = with_label(audit, Label(query_id, label, reason if label == "bad" else None, note.strip(),
                                      record_sha256(rec) if rec is not None else ""))
        write_audit(path, new)
    return new


def next_question(audit: AuditFile) -> Optional[str]:
    """The first sampled question without a label (``None``: the sample is done)."""
    return next((q for q in audit.sample if q not in audit.labels), None)


def undo_label(qa: PathLike) -> Optional[str]:
    """Remove the last counted label (the one before :func:`next_question`); its ``query_id`` (``None``: none)."""
    path = Path(qa)
    with _locked(path):
        audit = _current(path)
        counted, _ = audit.counted()
        if not counted:
            return None
        last = counted[-1].query_id
        labels = dict(audit.labels)
        del labels[last]
        write_audit(path, replace(audit, labels=labels))
    return last


# -- the sheet -----------------------------------------------------------------------------------------------------
def write_sheet(opened: AuditOpened, out: PathLike) -> Path:
    """Write the sample as a sheet (module docstring), labels given so far filled in."""
    from ragexam.storage.paths import In, Out, check_outputs
    from ragexam.storage.runfolder import write_text

    path = Path(out)
    qa = opened.set.qa
    check_outputs([Out(path, "--sheet")], [In(qa, "`review audit`"), In(audit_path(qa), "the set's audit file")])
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(SHEET_COLUMNS)
    for i, qid in enumerate(opened.audit.sample, 1):
        r = opened.set.records[qid]
        lab = opened.audit.labels.get(qid)
        w.writerow([i, qid, lab.label if lab else "", (lab.reason or "") if lab else "", lab.note if lab else "",
                    r.get("type", ""), r.get("question", ""), r.get("ground_truth", ""),
                    json.dumps(r.get("evidence") or [], ensure_ascii=False)])
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text(path, "\ufeff" + buf.getvalue())
    return path


def _sheet_labels(opened: AuditOpened, sheet: PathLike) -> Dict[str, Optional[Label]]:
    from ragexam.data.problems import ProblemCollector
    from ragexam.data.reading import iter_csv
    from ragexam.questions.review import _decode_sheet

    path = Path(sheet)
    file = str(path)
    text, _ = _decode_sheet(path)
    sample = set(opened.audit.sample)
    out: Dict[str, Optional[Label]] = {}
    for line, row in iter_csv(text, file, ProblemCollector(strict=True), required=("query_id", "label"),
                              row_is="question"):
        qid = str(row.get("query_id") or "").strip()
        if qid not in sample:
            raise InputError(f"{qid!r} is not in the audit's sample; expected the rows ragexam wrote (the sample is "
                             "drawn at random, never picked)", source=file, line=line, field="query_id")
        if qid in out:
            raise InputError(f"{qid!r} is on two rows", source=file, line=line, field="query_id")
        label = label_of(str(row.get("label") or ""), file=file, line=line)
        reason_cell = str(row.get("reason") or "").strip()
        if label == "bad" and not reason_cell:
            raise InputError("a bad question needs a reason: " + ", ".join(
                f"{k} {c} ({ko})" for c, (k, _, ko) in REASONS.items()), source=file, line=line, field="reason")
        reason = reason_of(reason_cell, file=file, line=line) if label == "bad" else None
        rec = opened.set.records[qid]
        out[qid] = Label(qid, label, reason, str(row.get("note") or "").strip(), record_sha256(rec)) \
            if label is not None else None
    return out


def read_sheet(qa: PathLike, sheet: PathLike) -> AuditOpened:
    """Read a filled sheet back into the audit of ``qa`` (its rows replace those questions' labels; an empty
    label removes one)."""
    opened = open_audit(qa)
    labels = _sheet_labels(opened, sheet)
    path = opened.set.qa
    with _locked(path):
        audit = _current(path)
        merged = dict(audit.labels)
        for qid, lab in labels.items():
            merged.pop(qid, None)
            if lab is not None:
                merged[qid] = lab
        new = replace(audit, labels=merged)
        write_audit(path, new)
    return AuditOpened(opened.set, new, opened.notes)


@dataclass
class SetQueue:
    """A set's review queue (:func:`ragexam.questions.risk.review_queue`) with its audit and where to stop."""

    set: AuditSet
    status: AuditStatus
    queue: "ReviewQueue"
    stop: Optional["StopPoint"]
    target: float


def set_queue(qa: PathLike, target: float = 0.1) -> SetQueue:
    """The review queue of the set ``qa``; ``target``: the junk rate the rest must be predicted under to stop."""
    from ragexam.questions.audit import AUDITED
    from ragexam.questions.risk import review_queue, stop_point

    if isinstance(target, bool) or not 0.0 <= float(target) <= 1.0:
        raise InputError(f"received {target!r}; expected a share from 0 to 1 (0.1 for 10%)", source="--target",
                         field="target")
    aset = AuditSet.load(qa)
    audit = read_audit(aset.qa)
    status = status_of(audit, aset.sha256, audit_path(aset.qa))
    usable = audit if status.state == AUDITED else None
    queue = review_queue(aset.records, usable)
    return SetQueue(aset, status, queue, stop_point(queue, usable, float(target)), float(target))
