"""The review of a generated set in the browser: what each screen shows and what each action writes.

Nothing is kept in memory between requests except the set itself (questions, rejects, card, corpus): every
page reads the review sheet again, and every decision is one :meth:`ReviewSheet.update
<ragexam.questions.review.ReviewSheet.update>` (one row, under the sheet's lock, written to a
temporary file and renamed into place, refused as a conflict when another tab changed that row since this
one was opened).  So a closed tab loses nothing and two tabs never undo each other's decisions; the sheet
is the one ``ragexam review apply`` reads.

Items are the set's questions (key: the ``query_id``), questions rescued from the rejects (their new
``query_id``) and the candidates the generator rejected that have a question (key: ``c:`` + their ``cid``).
A located set and sampled traces add their located records, the proposed span and its runner-up, and a located
set its own evidence rule (:mod:`ragexam.serve.reviewing_located`).
"""

from __future__ import annotations

import json
import os
import threading
from dataclasses import dataclass, field
from functools import cached_property
from html import escape
from typing import Any, Dict, FrozenSet, List, Mapping, Optional, Sequence, Tuple, Union
from urllib.parse import urlencode

from ragexam.questions.output import CHECK_WORDS
from ragexam.questions.review import _OOC_WORDS as OUT_OF_CORPUS_WORDS
from ragexam.questions.review import (Conflict, CheckReport, ReviewSet, Sheet, run_candidate_checks)
from ragexam.serve.i18n import current
from ragexam.serve.reviewing_located import choice_of, located_check, located_marks, located_of, set_kind

__all__ = ["Item", "Filter", "ReviewSession", "Outcome", "STATUSES", "ACTIONS", "CLOSEST_PIECE_MAX_CHARS"]

#: the status filter's values
STATUSES = ("pending", "accepted", "rejected", "edited", "all")
#: decisions a form may ask for (``runner_up``: accept the located record's runner-up as evidence;
#: ``out_of_corpus``: accept a traced question as one the documents do not answer)
ACTIONS = ("accept", "reject", "pending", "save", "save_accept", "rescue", "runner_up", "out_of_corpus")
#: the actions after which the screen moves on to the next item of the filter
NEXT_AFTER = ("accept", "reject", "pending", "runner_up", "out_of_corpus")
_CANDIDATE = "c:"
#: longest document shown whole; longer ones are cut to windows around the evidence
WHOLE_DOCUMENT_CHARS = 12_000
WINDOW_CHARS = 1_500
#: longest evidence string (characters) whose closest verbatim piece is looked for in the passages: a longer one
#: is no sentence of a document (an edit pasting a whole file), and the page says so instead of searching
CLOSEST_PIECE_MAX_CHARS = 10_000


@dataclass
class Item:
    """One question or rejected candidate as the sheet has it now."""

    key: str
    origin: str  # set | rescued | candidate
    status: str  # accepted | rejected | pending | candidate
    question: str
    answer: str
    evidence: List[str]
    note: str
    type: str
    kind: str
    answerable: bool
    generated: Dict[str, Any]  # question, answer, evidence as generated
    record: Mapping[str, Any] = field(default_factory=dict)  # the set's record, or the reject's line
    reason: str = ""  # why the generator rejected it (candidates and rescued questions)
    rescued_as: str = ""
    row: Mapping[str, str] = field(default_factory=dict)
    #: the located record of a located set's or a traced question (:func:`located_of`; ``{}`` for others)
    located: Mapping[str, Any] = field(default_factory=dict)
    #: the fields ``review apply`` takes as edited from this row (:meth:`ReviewSession.applied_edits`); ``None``:
    #: a located set's row or one apply refuses (then the values as shown are compared with the set's)
    applied: Optional[List[str]] = None

    @property
    def evidence_status(self) -> str:
        """``located``, ``uncertain``, ``unlocated``, ... of the located record (``""`` without one)."""
        return str(self.located.get("status") or "")

    @property
    def proposal(self) -> List[str]:
        """The proposed span of each document the answer needs (what accepting without evidence takes)."""
        from ragexam.questions.locate_review import proposed_texts

        return proposed_texts(self.located)

    @property
    def runner_up(self) -> List[str]:
        from ragexam.questions.locate_review import runner_up_texts

        return runner_up_texts(self.located)

    @property
    def choice(self) -> str:
        """``proposed`` or ``runner_up`` when the evidence now is that span of the located record."""
        return choice_of(self.evidence, self.located)

    @property
    def query_id(self) -> str:
        return "" if self.origin == "candidate" else self.key

    @cached_property
    def version(self) -> str:
        """The version of the row this item was read from (:meth:`Sheet.version`)."""
        return Sheet.version(self.row)

    @cached_property
    def edited(self) -> List[str]:
        """The fields edited: what ``review apply`` counts as edited (and checks again), when it is known."""
        if self.applied is not None:
            return self.applied
        out = []
        for name, now in (("question", self.question), ("ground_truth", self.answer), ("evidence", self.evidence)):
            if name == "evidence" and self.choice:  # the located record's own span, picked: no edit
                continue
            if now != self.generated[name] and _norm(now) != _norm(self.generated[name]):
                out.append(name)
        return out

    @property
    def sections_docs(self) -> List[str]:
        g = self.record.get("metadata", {}).get("generation", {}) if self.origin == "set" else self.record
        return [str(s).rsplit("#s", 1)[0] for s in g.get("sections", [])]


def _norm(value: Any) -> Any:
    from ragexam.data.normalization import normalize

    if isinstance(value, list):
        return [normalize(str(v)) for v in value if str(v).strip()]
    return normalize(str(value or ""))


@dataclass(frozen=True)
class Filter:
    """Which items a screen steps through: ``status`` (:data:`STATUSES`) and ``type`` of the set's questions,
    or -- with ``reason`` (a rejection reason, or ``any``) -- the candidates the generator rejected."""

    status: str = "pending"
    type: str = ""
    reason: str = ""
    #: ``queue``: the set's review queue order (:mod:`ragexam.questions.risk`), else the set's own
    order: str = ""

    @classmethod
    def of(cls, params: Mapping[str, Any]) -> "Filter":
        status = str(params.get("status") or "pending")
        return cls(status if status in STATUSES else "pending", str(params.get("type") or ""),
                   str(params.get("reason") or ""), "queue" if params.get("order") == "queue" else "")

    def matches(self, item: Item) -> bool:
        if self.reason:
            return item.origin == "candidate" and not item.rescued_as and self.reason in ("any", item.reason)
        if item.origin == "candidate":
            return False
        if self.type and item.type != self.type:
            return False
        if self.status == "edited":  # as counted: the edits review apply keeps (not a rejected question's)
            return bool(item.edited) and item.status != "rejected"
        return self.status in ("all", item.status)

    def query(self, **extra: str) -> str:
        d = {"status": self.status, "type": self.type, "reason": self.reason, "order": self.order}
        d.update(extra)
        return urlencode({k: v for k, v in d.items() if v})


@dataclass
class Outcome:
    """What a decision did: ``kind`` (``saved``, ``refused``, ``conflict``), the item's ``key`` afterwards,
    a ``message``, and for a refused edit the ``report`` and the ``values`` the reviewer typed."""

    kind: str
    key: str
    message: str
    report: Optional[CheckReport] = None
    values: Dict[str, Any] = field(default_factory=dict)
    current: Optional[Mapping[str, str]] = None


class ReviewSession:
    """One set under review (see the module docstring)."""

    def __init__(self, rs: ReviewSet) -> None:
        self.rs = rs
        #: generated, located or traces (:func:`set_kind`)
        self.kind = set_kind(rs)
        self.writer = rs.sheet()
        self._grams: Dict[str, FrozenSet[str]] = {}
        self._checks: Dict[Tuple[Any, ...], CheckReport] = {}
        self._items: Tuple[Any, List[Item]] = (None, [])
        self._lock = threading.Lock()

    # -- reading -----------------------------------------------------------------------------------------------
    def items(self) -> List[Item]:
        """Every item, in order: the set's questions, rescued questions, then the rejected candidates (read again
        whenever the sheet file changed: it is replaced, never written in place, so a new inode, time or size)."""
        try:
            st = os.stat(self.rs.sheet_path)
            stamp: Any = (st.st_ino, st.st_mtime_ns, st.st_size)
        except FileNotFoundError:
            stamp = "missing"
        with self._lock:
            if self._items[0] != stamp or stamp == "missing":
                self._items = (stamp, self._read_items())
            return self._items[1]

    def _read_items(self) -> List[Item]:
        sheet = self.writer.read()
        by_id = sheet.by_id
        out: List[Item] = []
        for qid, rec in self.rs.records.items():
            line, row = by_id.get(qid, (None, {}))
            out.append(self._item(qid, "set", rec, row, sheet, line))
        rescued: Dict[str, str] = {}
        for line, row in sheet.rows:
            cid = str(row.get("candidate", "") or "").strip()
            if cid and cid in self.rs.rejects and row["query_id"].strip() not in self.rs.records:
                rescued[cid] = row["query_id"].strip()
                out.append(self._item(row["query_id"].strip(), "rescued", self.rs.rejects[cid], row, sheet, line))
        for cid, rej in self.rs.rejects.items():
            item = self._item(_CANDIDATE + cid, "candidate", rej, {}, sheet, None)
            item.rescued_as = rescued.get(cid, "")
            out.append(item)
        return out

    def _item(self, key: str, origin: str, rec: Mapping[str, Any], row: Mapping[str, str], sheet: Sheet,
              line: Optional[int]) -> Item:
        if origin == "set":
            gen = {"question": rec.get("question", ""), "ground_truth": rec.get("ground_truth", ""),
                   "evidence": list(rec.get("evidence") or [])}
            kind = rec.get("metadata", {}).get("generation", {}).get("kind") or rec.get("type") or "meaning"
            answerable, type_, reason = bool(rec.get("answerable", True)), str(rec.get("type") or ""), ""
        else:
            gen = {"question": rec.get("question", ""), "ground_truth": rec.get("answer", ""),
                   "evidence": list(rec.get("evidence") or [])}
            kind = str(rec.get("kind") or "meaning")
            answerable, type_, reason = kind != "out_of_corpus", str(rec.get("type") or kind), str(rec.get("reason"))
        status = "candidate" if origin == "candidate" else (sheet.status(row, line) if row else "pending")
        question = row.get("question", gen["question"]) if row else gen["question"]
        answer = row.get("ground_truth", gen["ground_truth"]) if row else gen["ground_truth"]
        evidence = sheet.evidence(row, line) if row and "evidence" in row else gen["evidence"]
        return Item(key, origin, status, question, answer, evidence, str(row.get("note", "") or ""),
                    str(row.get("type") or type_) if row else type_, kind, answerable, gen, rec, reason, row=row,
                    located=located_of(rec, origin), applied=self.applied_edits(origin, rec, row, line))

    def applied_edits(self, origin: str, rec: Mapping[str, Any], row: Mapping[str, str],
                      line: Optional[int]) -> Optional[List[str]]:
        """The fields ``ragexam review apply`` takes as edited from ``row`` -- its own definition, asked on a copy
        of the record (:func:`ragexam.questions.review._changes`; a rescued question against the candidate as
        generated): an out-of-corpus decision edits the type and the answer, the runner-up span the evidence.
        ``None`` for a located set (its rule: :mod:`ragexam.questions.locate_review`) and for a row apply refuses."""
        if self.kind == "located":
            return None
        if origin == "candidate" or not row:
            return []
        import copy

        from ragexam.errors import InputError
        from ragexam.questions import review as R

        language = (self.rs.card.get("corpus") or {}).get("language")
        try:
            base = R._rescued_record(self.rs, row) if origin == "rescued" else copy.deepcopy(dict(rec))
            return list(R._changes(base, row, str(self.rs.sheet_path), line or 0, language))
        except (InputError, KeyError, TypeError, ValueError):
            return None

    def find(self, items: Sequence[Item], key: str) -> Optional[Item]:
        return next((i for i in items if i.key == key), None)

    @staticmethod
    def counts(items: Sequence[Item]) -> Dict[str, int]:
        questions = [i for i in items if i.origin != "candidate"]
        out = {s: sum(1 for i in questions if i.status == s) for s in ("pending", "accepted", "rejected")}
        out.update(total=len(questions), edited=sum(1 for i in questions if i.edited and i.status != "rejected"),
                   rescued=sum(1 for i in questions if i.origin == "rescued"),
                   candidates=sum(1 for i in items if i.origin == "candidate" and not i.rescued_as))
        out["decided"] = out["accepted"] + out["rejected"]
        return out

    @staticmethod
    def neighbours(items: Sequence[Item], flt: Filter, key: str) -> Tuple[Optional[str], Optional[str], int, int]:
        """``(previous key, next key, position, count)`` of ``key`` among the items ``flt`` selects (position 0:
        ``key`` is not selected; next is then the first selected item after it)."""
        at = next((n for n, i in enumerate(items) if i.key == key), -1)
        chosen = [(n, i.key) for n, i in enumerate(items) if flt.matches(i)]
        before = [k for n, k in chosen if n < at]
        after = [k for n, k in chosen if n > at]
        if at >= 0 and flt.matches(items[at]):
            return (before[-1] if before else None, after[0] if after else None, len(before) + 1, len(chosen))
        return (before[-1] if before else None, (after or [k for _, k in chosen] or [None])[0], 0, len(chosen))

    # -- checks ------------------------------------------------------------------------------------------------------
    def check(self, items: Sequence[Item], item: Item, question: str, answer: str,
              evidence: Sequence[str]) -> CheckReport:
        """The generator's checks on these values (:func:`run_candidate_checks`), against the other questions
        the set keeps now (not rejected); a located set's own rule for a located set (:func:`located_check`: with
        no evidence, on the proposed span accepting takes)."""
        from ragexam.questions import measure as M

        if self.kind == "located":
            return located_check(item.record, self.rs.corpus_facts().corpus_text, str(self.rs.sheet_path), question,
                                 answer, evidence, item.proposal)

        others = []
        for i in items:
            if i.origin == "candidate" or i.status == "rejected" or i.key == item.key:
                continue
            if i.question not in self._grams:
                self._grams[i.question] = M.bigrams(i.question)
            others.append((i.key, self._grams[i.question]))
        docs = list(dict.fromkeys(list(item.record.get("relevant_doc_ids", []) or []) + item.sections_docs))
        key = (item.key, question, answer, tuple(evidence), tuple(o[0] for o in others))
        if key not in self._checks:
            if len(self._checks) > 512:
                self._checks.clear()
            self._checks[key] = run_candidate_checks(
                question, answer, list(evidence), answerable=item.answerable, kind=item.kind,
                facts=self.rs.corpus_facts(), settings=self.rs.settings, others=others, passage_docs=docs)
        return self._checks[key]

    # -- deciding ----------------------------------------------------------------------------------------------------
    def decide(self, key: str, action: str, version: str, values: Mapping[str, Any]) -> Outcome:
        """Carry out ``action`` (:data:`ACTIONS`) on the item ``key`` seen at ``version``; ``values``: ``note``
        and, for an edit or a rescue, ``question``, ``ground_truth``, ``evidence`` (a list)."""
        t = current().text
        items = self.items()
        item = self.find(items, key)
        if item is None:
            return Outcome("refused", key, t("outcome.no_item", key=key))
        note = str(values.get("note", item.note) or "").strip()
        try:
            if action in ("accept", "reject", "pending"):
                if item.origin == "candidate":
                    return Outcome("refused", key, t("outcome.candidate_first"))
                refused = self._accept_check(items, item, note) if action == "accept" else None
                if refused is not None:
                    return refused
                status = {"accept": "accepted", "reject": "rejected", "pending": "pending"}[action]
                cells = {"status": status, "note": note, **(self._undone(item) if action != "accept" else {})}
                self.writer.update(item.key, cells, version)
                return Outcome("saved", key, t("outcome.status", key=item.key, status=t("status." + status)))
            if action in ("save", "save_accept", "rescue"):
                return self._edit(items, item, action, version, values, note)
            if action == "runner_up":
                if item.origin == "candidate" or not item.runner_up:
                    return Outcome("refused", key, t("outcome.no_runner_up"))
                out = self._edit(items, item, "save_accept", version, {"evidence": item.runner_up}, note)
                if out.kind == "saved":
                    out.message = t("outcome.runner_up", key=item.key)
                return out
            if action == "out_of_corpus":
                if item.origin == "candidate" or self.kind == "located" or not item.answerable:
                    return Outcome("refused", key, t("outcome.no_out_of_corpus"))
                self.writer.update(item.key, {"status": "accepted", "type": "out_of_corpus", "note": note}, version)
                return Outcome("saved", key, t("outcome.out_of_corpus", key=item.key))
        except Conflict as err:
            typed = {}
            if action in ("save", "save_accept", "rescue"):  # kept for the form, not written (T8)
                typed = {"question": str(values.get("question", item.question)),
                         "ground_truth": str(values.get("ground_truth", item.answer)),
                         "evidence": [str(e) for e in values.get("evidence", item.evidence)], "note": note}
            return Outcome("conflict", key, t("outcome.conflict", key=err.query_id), values=typed,
                           current=err.current)
        return Outcome("refused", key, t("outcome.unknown", action=repr(action), choices=", ".join(ACTIONS)))

    def _undone(self, item: Item) -> Dict[str, str]:
        """The cells an accepting decision changed, as the set has them, when that decision is taken back (pending or
        rejected): an answerable question accepted as out of corpus gets its type back (else a later accept would
        accept it out of corpus), one accepted on its runner-up span its evidence."""
        cells: Dict[str, str] = {}
        if item.origin != "set":
            return cells
        if item.answerable and item.type.strip().lower() in OUT_OF_CORPUS_WORDS:
            cells["type"] = str(item.record.get("type") or "")
        if item.choice == "runner_up":
            gen = item.generated["evidence"]
            if self.kind == "located":
                from ragexam.questions.locate_review import evidence_cell

                cells["evidence"] = evidence_cell(gen)
            else:
                cells["evidence"] = json.dumps(gen, ensure_ascii=False) if gen else ""
        return cells

    def taken(self, item: Item) -> List[str]:
        """The evidence accepting ``item`` keeps: its own, else the span its located record proposes (a located set:
        any; a traced question: an ``uncertain`` one's, as ``review apply`` takes it)."""
        if item.evidence or not item.answerable:
            return list(item.evidence)
        if self.kind == "located" or (self.kind == "traces" and item.evidence_status == "uncertain"):
            return item.proposal
        return []

    def _accept_check(self, items: List[Item], item: Item, note: str) -> Optional[Outcome]:
        """Accepting a located or traced question without evidence takes the proposed span: checked now, and the
        acceptance refused with the reason when it fails or when there is no span (``None``: go ahead)."""
        t = current().text
        if self.kind == "generated" or item.evidence or not item.answerable or item.type == "out_of_corpus":
            return None
        taken = self.taken(item)
        typed = {"question": item.question, "ground_truth": item.answer, "evidence": taken, "note": note}
        if not taken:
            return Outcome("refused", item.key, t("outcome.no_evidence_to_accept"))
        rep = self.check(items, item, item.question, item.answer, taken)
        if not rep.ok:
            return Outcome("refused", item.key, t("outcome.proposal_refused", problem=rep.problem()), rep, typed)
        return None

    def _edit(self, items: List[Item], item: Item, action: str, version: str, values: Mapping[str, Any],
              note: str) -> Outcome:
        t = current().text
        if (action == "rescue") != (item.origin == "candidate"):
            return Outcome("refused", item.key, t("outcome.rescue_only_candidates") if action == "rescue"
                           else t("outcome.candidate_rescued"))
        question = str(values.get("question", item.question)).strip()
        answer = str(values.get("ground_truth", item.answer)).strip() if item.answerable else item.answer
        evidence = [str(e).strip() for e in values.get("evidence", item.evidence) if str(e).strip()] \
            if item.answerable else []  # an out-of-corpus question has no evidence to edit
        typed = {"question": question, "ground_truth": answer, "evidence": evidence, "note": note}
        rep = self.check(items, item, question, answer, evidence)
        if not rep.ok:
            return Outcome("refused", item.key, t("outcome.not_saved", problem=rep.problem()), rep, typed)
        cells = self._located_cells(item, question, answer, evidence, note) if self.kind == "located" else \
            self._cells(item, rep, question, answer, evidence, note)
        if action == "rescue":
            qid = self.rs.rescue_id(item.key[len(_CANDIDATE):])
            cells.update(status="accepted", candidate=item.key[len(_CANDIDATE):])
            self.writer.update(qid, cells, "")
            return Outcome("saved", qid, t("outcome.rescued", key=qid))
        cells["status"] = "accepted" if action == "save_accept" else (item.status if item.status != "candidate"
                                                                       else "pending")
        self.writer.update(item.key, cells, version)
        return Outcome("saved", item.key, t("outcome.edited", key=item.key, status=t("status." + cells["status"])))

    @staticmethod
    def _cells(item: Item, rep: CheckReport, question: str, answer: str, evidence: List[str],
               note: str) -> Dict[str, str]:
        """The sheet's cells for checked values (a value equal to the generated one after normalisation is
        written as generated, so ``review apply`` sees no edit there)."""
        gen = item.generated
        ev = [loc.text for loc in rep.located] if rep.located else evidence
        cells = {"question": gen["question"] if _norm(question) == _norm(gen["question"]) else question,
                 "ground_truth": gen["ground_truth"] if _norm(answer) == _norm(gen["ground_truth"]) else answer,
                 "evidence": json.dumps(gen["evidence"] if _norm(ev) == _norm(gen["evidence"]) else ev,
                                        ensure_ascii=False),
                 "note": note, "type": rep.type or item.type}
        if rep.located:
            cells.update(overlap=f"{rep.overlap:.3f}", anchors=" ".join(rep.anchors),
                         relevant_doc_ids=" ".join(rep.relevant),
                         answer_check=CHECK_WORDS["contained" if rep.answer_contained else "human"])
        return cells

    @staticmethod
    def _located_cells(item: Item, question: str, answer: str, evidence: List[str], note: str) -> Dict[str, str]:
        """A located set's decision cells (:mod:`ragexam.questions.locate_review`: the evidence as one string or a
        JSON list; a value equal to the set's is written as the set has it)."""
        from ragexam.questions.locate_review import evidence_cell

        gen = item.generated
        return {"question": gen["question"] if _norm(question) == _norm(gen["question"]) else question,
                "ground_truth": gen["ground_truth"] if _norm(answer) == _norm(gen["ground_truth"]) else answer,
                "evidence": evidence_cell(gen["evidence"] if _norm(evidence) == _norm(gen["evidence"]) else evidence),
                "note": note}

    # -- passages ------------------------------------------------------------------------------------------------------
    def passages(self, item: Item, evidence: Sequence[str]) -> List[Dict[str, Any]]:
        """The documents to show (those holding the evidence, then those the question was written from), each
        as ``{doc_id, title, html, marks, near, cut, unsearched}`` with the evidence marked in place; an evidence
        string found nowhere has its closest verbatim piece marked, when it is at most
        :data:`CLOSEST_PIECE_MAX_CHARS` long (``unsearched``: ``(number, length)`` of the longer ones)."""
        facts = self.rs.corpus_facts()
        spans: Dict[str, List[Tuple[int, int, Union[int, str]]]] = {}
        for n, e in enumerate(evidence, 1):
            for o in (facts.corpus_text.locate(e) if e.strip() else ()):
                spans.setdefault(o.doc_id, []).append((o.start, o.end, n))
        located = located_marks(item.located, evidence)
        hints = [str(h) for h in item.located.get("hints") or ()]
        docs = list(dict.fromkeys(list(spans) + list(located) + list(item.record.get("relevant_doc_ids", []) or [])
                                  + item.sections_docs + hints))
        titles = {d.doc_id: d.title for d in self.rs.corpus().documents} if docs else {}
        missing = [(n, e) for n, e in enumerate(evidence, 1) if e.strip() and not facts.corpus_text.locate(e)]
        unsearched = [(n, len(e)) for n, e in missing if len(e) > CLOSEST_PIECE_MAX_CHARS]
        missing = [(n, e) for n, e in missing if len(e) <= CLOSEST_PIECE_MAX_CHARS]
        out = []
        for d in docs:
            if d not in facts.contents:
                continue
            content = facts.contents[d]
            near = [(s, e, -n) for n, ev in missing for s, e in closest_piece(content, ev)]
            marks = spans.get(d, []) + located.get(d, []) + near
            html, cut = marked_html(content, sorted(marks, key=lambda m: (m[0], m[1])))
            out.append({"doc_id": d, "title": titles.get(d) or "", "html": html, "marks": len(spans.get(d, [])),
                        "near": len(near), "cut": cut, "unsearched": unsearched if not out else [],
                        "proposed": sum(1 for m in located.get(d, []) if m[2] == "proposed"),
                        "runner": sum(1 for m in located.get(d, []) if m[2] == "runner")})
        return out


def _open_mark(n: Union[int, str]) -> str:
    """The opening tag of a mark (:func:`marked_html`)."""
    if isinstance(n, str):
        title = current().text({"proposed": "item.mark_proposed", "runner": "item.mark_runner"}[n])
        return f'<mark class="{escape(n)}" title="{escape(title)}">'
    if n > 0:
        return f'<mark class="ev" data-ev="{n}">'
    return f'<mark class="near" data-ev="{-n}" title="{escape(current().text("item.near_title", n=-n))}">'


def closest_piece(content: str, evidence: str, min_chars: int = 6) -> List[Tuple[int, int]]:
    """The raw span of the longest piece of ``evidence`` found verbatim (after normalisation) in ``content``
    (``[]`` when under ``min_chars``): what a reworded or cut evidence string was copied from."""
    from ragexam.data.evidence import longest_common_piece
    from ragexam.data.normalization import normalize, normalize_with_offsets

    nt = normalize_with_offsets(content)
    piece = longest_common_piece(normalize(evidence), nt.text)
    if len(piece) < min_chars:
        return []
    at = nt.text.find(piece)
    return [nt.raw_span(at, at + len(piece))]


def marked_html(content: str, spans: Sequence[Tuple[int, int, Union[int, str]]]) -> Tuple[str, bool]:
    """``content`` as escaped HTML with ``<mark class="ev" data-ev="N">`` around each ``(start, end, N)`` (a negative
    ``N``: ``<mark class="near">`` around the closest piece of evidence ``-N``, which is not verbatim; ``"proposed"``
    or ``"runner"``: ``<mark class="proposed">`` / ``<mark class="runner">`` around a located record's proposed
    span and its runner-up); a document over :data:`WHOLE_DOCUMENT_CHARS` is cut to windows of :data:`WINDOW_CHARS`
    around the marks (``True`` as second value when cut)."""
    windows: List[Tuple[int, int]] = [(0, len(content))]
    cut = len(content) > WHOLE_DOCUMENT_CHARS
    if cut:
        windows = []
        for s, e, _ in spans or [(0, 0, 0)]:
            a, b = max(0, s - WINDOW_CHARS), min(len(content), e + WINDOW_CHARS)
            if windows and a <= windows[-1][1]:
                windows[-1] = (windows[-1][0], max(windows[-1][1], b))
            else:
                windows.append((a, b))
    parts: List[str] = []
    for a, b in windows:
        if a > 0:
            parts.append('<span class="cut">[…]</span> ')
        pos = a
        for s, e, n in spans:
            if e <= pos or s >= b:
                continue
            s = max(s, pos)
            parts.append(escape(content[pos:s]))
            parts.append(_open_mark(n))
            parts.append(f'{escape(content[s:min(e, b)])}</mark>')
            pos = min(e, b)
        parts.append(escape(content[pos:b]))
        if b < len(content):
            parts.append(' <span class="cut">[…]</span>')
    return "".join(parts), cut
