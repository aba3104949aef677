"""The review of a located set (``ragexam locate-evidence``): its sheet, and ``ragexam review apply`` on it.

The sheet is the review sheet generated sets use (:mod:`ragexam.questions.review`: one row per question, ``status``
``pending``, read and written by the same code, in a spreadsheet or -- later -- the browser), with the columns of a
located set (:data:`COLUMNS`): ``evidence_status`` and ``confidence`` (the located record's), ``evidence`` (what the
set holds now), ``proposed`` (the located span, one per document the answer needs: a JSON list of strings, or one
plain string) with its ``doc_id``, the ``runner_up`` with its ``runner_up_doc``, and the ``reason``.

Decisions (``status``, the same words as for generated sets):

* **accept**: the question keeps the ``evidence`` cell's strings -- for a question that had none (``uncertain``,
  ``unlocated``) the cell is empty, and accepting takes the ``proposed`` span(s);
* **pick the runner-up**: put the ``runner_up`` cell's text in the ``evidence`` cell and accept;
* **edit**: write any other evidence in the ``evidence`` cell (a JSON list of strings, or one plain string) and
  accept; ``question`` and ``ground_truth`` may be corrected too;
* **reject**: the question is left out of the reviewed set (counted and listed);
* **pending** (or no row): kept as located -- a question without evidence stays without it.

Evidence a reviewer chose is verified at once, without a model: every string must occur verbatim (after NFKC and
whitespace normalization) in a relevant document of the question, or, for a question without relevant documents,
in the corpus (whose documents holding it become relevant); anything else is an :class:`~ragexam.errors.InputError`
naming the sheet's line and column.  A reviewed question loses its ``evidence_status`` and keeps its located record
with ``review`` (``accepted``/``pending``), ``choice`` (``located``, ``proposed``, ``runner_up`` or ``edited``), the
``edited`` fields and the ``note``.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Protocol, Sequence, Tuple

from ragexam import fmt
from ragexam.data.evidence import CorpusText
from ragexam.errors import InputError
from ragexam.questions.locate import confidence_text

if TYPE_CHECKING:  # pragma: no cover
    from pathlib import Path

    from ragexam.data.schema import Corpus


class Sheet(Protocol):
    """What is read of a review sheet (:class:`ragexam.questions.review.Sheet`, which imports this module)."""

    path: "Path"
    rows: List[Tuple[int, Dict[str, str]]]
    notes: List[str]

    @property
    def by_id(self) -> Dict[str, Tuple[int, Dict[str, str]]]: ...

    def status(self, row: Mapping[str, Any], line: Optional[int] = None) -> str: ...

    def evidence(self, row: Mapping[str, Any], line: Optional[int] = None) -> List[str]: ...


class ReviewSet(Protocol):
    """What is read of the set under review (:class:`ragexam.questions.review.ReviewSet`)."""

    qa: "Path"
    records: Dict[str, Dict[str, Any]]

    def corpus(self) -> "Corpus": ...

__all__ = ["COLUMNS", "COUNTS", "sheet_text", "sheet_rows", "apply_located", "check_rows", "proposal", "runner_up",
           "needed_spans", "proposed_texts", "runner_up_texts", "verify_evidence", "evidence_cell"]

#: columns of a located set's review sheet, in order
COLUMNS = ("query_id", "status", "evidence_status", "confidence", "question", "ground_truth", "evidence", "proposed",
           "doc_id", "runner_up", "runner_up_doc", "relevant_doc_ids", "type", "reason", "note")


def _located(rec: Mapping[str, Any]) -> Dict[str, Any]:
    meta = rec.get("metadata")
    located = meta.get("located") if isinstance(meta, Mapping) else None
    return located if isinstance(located, dict) else {}


def needed_spans(located: Mapping[str, Any]) -> List[Dict[str, Any]]:
    """The locations of a located record (``metadata.located``) for the documents the answer needs."""
    spans = located.get("spans") if isinstance(located, Mapping) else None
    return [s for s in spans or [] if isinstance(s, dict) and s.get("needed", True)]


def _needed(rec: Mapping[str, Any]) -> List[Dict[str, Any]]:
    return needed_spans(_located(rec))


def proposed_texts(located: Mapping[str, Any]) -> List[str]:
    """The located span of each document the answer needs, from a located record."""
    return [s["best"]["text"] for s in needed_spans(located) if s.get("best")]


def runner_up_texts(located: Mapping[str, Any]) -> List[str]:
    """The runner-up of each document the answer needs, from a located record."""
    return [s["runner_up"]["text"] for s in needed_spans(located) if s.get("runner_up")]


def proposal(rec: Mapping[str, Any]) -> List[str]:
    """The located span of each document the answer needs (the ``proposed`` cell)."""
    return proposed_texts(_located(rec))


def runner_up(rec: Mapping[str, Any]) -> List[str]:
    """The runner-up of each document the answer needs (the ``runner_up`` cell)."""
    return runner_up_texts(_located(rec))


def evidence_cell(texts: Sequence[str]) -> str:
    """One plain string, or a JSON list for several (what the sheet's evidence cells hold)."""
    if not texts:
        return ""
    return texts[0] if len(texts) == 1 else json.dumps(list(texts), ensure_ascii=False)


def _evidence(rec: Mapping[str, Any]) -> List[str]:
    ev = rec.get("evidence")
    return [ev] if isinstance(ev, str) else list(ev or [])


def sheet_rows(records: Sequence[Mapping[str, Any]]) -> List[Dict[str, str]]:
    """One pending row per question (:data:`COLUMNS`)."""
    rows = []
    for r in records:
        loc = _located(r)
        needed = _needed(r)
        status = r.get("evidence_status") or loc.get("status") or ("out_of_corpus" if r.get("answerable") is False
                                                                  else "")
        conf = loc.get("confidence")
        rows.append({
            "query_id": str(r.get("query_id", "")), "status": "pending", "evidence_status": str(status),
            "confidence": "" if conf is None else confidence_text(conf, loc.get("threshold")), "question": str(r.get("question", "")),
            "ground_truth": str(r.get("ground_truth") or ""), "evidence": evidence_cell(_evidence(r)),
            "proposed": evidence_cell(proposal(r)),
            "doc_id": " ".join(s["best"]["doc_id"] for s in needed if s.get("best")),
            "runner_up": evidence_cell(runner_up(r)),
            "runner_up_doc": " ".join(s["runner_up"]["doc_id"] for s in needed if s.get("runner_up")),
            "relevant_doc_ids": " ".join(r.get("relevant_doc_ids") or []), "type": str(r.get("type") or ""),
            "reason": str(loc.get("reason", "")), "note": ""})
    return rows


def sheet_text(records: Sequence[Mapping[str, Any]]) -> str:
    """The review sheet of a located set as CSV text (no BOM)."""
    from ragexam.questions.output import write_sheet_rows

    return write_sheet_rows(COLUMNS, [[row[c] for c in COLUMNS] for row in sheet_rows(records)])


# -- review apply ------------------------------------------------------------------------------------------------
def verify_evidence(strings: Sequence[str], rec: Mapping[str, Any], corpus_text: CorpusText, file: str,
                    line: Optional[int] = None) -> List[str]:
    """The documents that make ``strings`` the question's evidence (module docstring); :class:`InputError` naming
    the sheet's line otherwise.  Returns the documents holding them (for a question without relevant ones)."""
    from ragexam.data.normalization import normalize

    relevant = set(rec.get("relevant_doc_ids") or []) | {d for d, g in (rec.get("relevance") or {}).items() if g > 0}
    holding: List[str] = []
    seen = set()
    for i, ev in enumerate(strings, 1):
        n = normalize(ev)
        if not n:
            raise InputError(f"evidence string {i} is blank; expected text copied from a document", source=file,
                             line=line, field="evidence")
        if n in seen:
            raise InputError(f"evidence string {i} repeats another one; remove it", source=file, line=line,
                             field="evidence")
        seen.add(n)
        docs = corpus_text.docs_containing(ev)
        if not docs:
            raise InputError(f"evidence string {i} {ev[:60]!r} occurs in no document of the corpus (compared after "
                             "NFKC and whitespace normalization); copy it from the document exactly, or reject the row",
                             source=file, line=line, field="evidence")
        if relevant and not relevant & set(docs):
            raise InputError(f"evidence string {i} {ev[:60]!r} occurs only in {', '.join(docs[:5])}, none of the "
                             f"question's relevant documents ({', '.join(sorted(relevant))}); pick a span of those, or "
                             "add the document to relevant_doc_ids", source=file, line=line, field="evidence")
        holding.extend(docs)
    return list(dict.fromkeys(holding))


def _choice(chosen: List[str], rec: Dict[str, Any], had: List[str]) -> str:
    if chosen == had:
        return "located" if _located(rec).get("status") == "located" else "given"
    if chosen == proposal(rec):
        return "proposed"
    if chosen == runner_up(rec) or (len(chosen) == 1 and chosen[0] in runner_up(rec)):
        return "runner_up"
    return "edited"


def _accept(rec: Dict[str, Any], row: Mapping[str, str], sheet: Sheet, line: int, corpus_text: CorpusText
            ) -> Tuple[str, List[str]]:
    """Apply an accepted row to ``rec`` (a copy): ``(choice, edited fields)``."""
    file = str(sheet.path)
    had = _evidence(rec)
    cell = sheet.evidence(row, line) if "evidence" in row else had
    chosen = cell if cell else (had or proposal(rec))
    edited = []
    for name in ("question", "ground_truth"):
        if name in row and str(row[name]).strip() and str(row[name]).strip() != str(rec.get(name) or "").strip():
            rec[name] = str(row[name]).strip()
            edited.append(name)
    if rec.get("answerable") is False:
        if chosen:
            raise InputError("an out-of-corpus question (answerable: false) cannot have evidence; empty the cell or "
                             "reject the row", source=file, line=line, field="evidence")
        return "given", edited
    if not chosen:
        raise InputError("accepted without evidence: the question has no proposed span; write the evidence in the "
                         "evidence cell, leave the row pending, or reject it", source=file, line=line, field="evidence")
    choice = _choice(chosen, rec, had)
    if chosen != had:
        docs = verify_evidence(chosen, rec, corpus_text, file, line)
        if not rec.get("relevant_doc_ids") and not rec.get("relevance"):
            rec["relevant_doc_ids"] = docs
        rec["evidence"] = chosen
        edited.append("evidence")
    rec.pop("evidence_status", None)
    return choice, edited


def _pending_changes(rec: Mapping[str, Any], row: Mapping[str, str], sheet: Sheet, line: int) -> List[str]:
    """The cells of a pending row that differ from its record (edits a pending row does not apply)."""
    changed = [name for name in ("question", "ground_truth")
               if name in row and str(row[name]).strip() and str(row[name]).strip() != str(rec.get(name) or "").strip()]
    if "evidence" in row and str(row["evidence"]).strip():
        try:
            cell = sheet.evidence(row, line)
        except InputError:
            cell = None
        if cell != _evidence(rec):
            changed.append("evidence")
    return changed


#: the counts a located set's review adds to those of every review
COUNTS = ("proposed", "runner_up", "still_without_evidence")


def check_rows(rs: ReviewSet, sheet: Sheet) -> None:
    """Every row of the sheet names a question of the set (:class:`InputError` naming the line otherwise)."""
    for line, row in sheet.rows:
        qid = row["query_id"].strip()
        if qid not in rs.records:
            raise InputError(f"query_id {qid!r} is not in {rs.qa}; expected the ids of that set", source=str(sheet.path),
                             line=line, field="query_id")


def apply_located(rs: ReviewSet, sheet: Sheet, kept: Sequence[Tuple[str, Dict[str, Any], int, Dict[str, str], str]],
                  counts: Dict[str, int]) -> Tuple[List[Dict[str, Any]], List[str]]:
    """``ragexam review apply`` on a located set ``rs`` (module docstring): the ``kept`` rows (``(query_id, a copy
    of its record, line, row, status)``, rejected and dropped ones already left out by
    :func:`~ragexam.questions.review.apply_review`) applied; ``(records, notes)``, ``counts`` updated."""
    corpus_text: Optional[CorpusText] = None
    out: List[Dict[str, Any]] = []
    unapplied: List[str] = []
    for qid, rec, line, row, status in kept:
        located = rec.setdefault("metadata", {}).setdefault("located", {})
        if status == "accepted":
            if corpus_text is None:
                corpus_text = CorpusText(rs.corpus().documents)
            choice, edited = _accept(rec, row, sheet, line, corpus_text)
            located.update({"review": "accepted", "choice": choice})
            if edited:
                located["edited"] = edited
                counts["edited"] += choice == "edited" or edited != ["evidence"]
            counts["accepted"] += 1
            counts["proposed"] += choice == "proposed"
            counts["runner_up"] += choice == "runner_up"
        else:
            located["review"] = "pending"
            counts["pending_kept"] += 1
            changed = _pending_changes(rec, row, sheet, line)
            if changed:
                unapplied.append(f"{qid} ({', '.join(changed)})")
        note = str(row.get("note", "") or "").strip()
        if note:
            located["review_note"] = note
        counts["still_without_evidence"] += bool(rec.get("answerable", True) and not rec.get("evidence"))
        out.append(rec)
    notes = []
    if unapplied:
        notes.append(f"{fmt.plural(len(unapplied), 'row')} left pending had edited cells, not applied (a pending row "
                     f"keeps what locate-evidence wrote): {', '.join(unapplied[:8])}"
                     + (" ..." if len(unapplied) > 8 else "") + "; set their status to accept to apply the edits")
    if counts["still_without_evidence"]:
        notes.append(f"{counts['still_without_evidence']} kept question(s) still have no evidence (pending): `ragexam "
                     "run` by evidence refuses them; accept or reject their rows, or grade by document (--relevance "
                     "doc)")
    return out, notes
