"""A person's review of a generated set: the review sheet, its checks, and ``ragexam review apply``.

``ragexam generate --out qa.jsonl`` writes ``qa.review.csv`` next to the set: one row per question,
``status`` ``pending``.  A reviewer sets ``status`` and may correct ``question``, ``ground_truth`` or
``evidence`` (a JSON list of strings, or one plain string), and write a ``note`` -- in a spreadsheet, or
in the browser (``ragexam serve --review qa.jsonl``, docs/serve.md), which writes the same sheet.  Then
:func:`apply_review` writes the reviewed set:

* ``status`` (case and surrounding spaces ignored): ``accept`` / ``accepted`` / ``ok`` / ``yes`` / ``y`` /
  ``keep`` / ``승인`` / ``채택`` / ``통과`` keep the question; ``reject`` / ``rejected`` / ``no`` / ``n`` /
  ``drop`` / ``delete`` / ``거절`` / ``탈락`` / ``삭제`` remove it; ``pending`` / ``보류`` / empty leave it
  undecided: kept with ``pending="keep"`` (the default), left out with ``pending="drop"``.  Anything else is
  an error naming the sheet's line.  A question of the set without a row is pending.
* an accepted or kept question keeps its verification record (``metadata.generation``), with
  ``review`` set to ``accepted`` or ``pending``, the ``note``, and ``edited`` listing the fields the
  reviewer changed;
* an edited question is checked again, without a model, by :func:`run_candidate_checks` -- the checks
  ``generate`` makes on a candidate before its LLM check, with the set's own thresholds (from its card):
  the question (not empty, in the corpus's language, not referring to the passage); every evidence string
  (length limits; verbatim, after normalisation, in some document of the corpus -- its offsets and the
  documents holding it are recomputed and those documents become relevant; with ``--ambiguous drop``, in
  one document only); an answerable question's answer (not blank, not a refusal); the question does not
  copy its evidence sentence and is no near-duplicate of another question the set keeps.  Overlap, anchors
  and type are measured again.  A failure is an :class:`~ragexam.errors.InputError` naming the sheet's line
  and column (fix the row, or reject it).  When the answer or the evidence changed, the answer check is
  ``{"method": "contained"}`` if the answer lies inside an evidence string, else ``{"method": "human"}`` (the
  reviewer vouches for it; no LLM is called).  Edits need the corpus (``corpus=``, default: the one named
  in the set's card).
* **rescue**: a row with a ``candidate`` column naming a candidate of the set's rejects file
  (``qa.rejects.jsonl``, its ``cid``) brings that rejected candidate into the set under the row's
  ``query_id`` (the browser writes ``<prefix>_<cid>``), with the row's question, answer and evidence, checked
  as an edit is; its record has ``metadata.generation.rescued`` = the reason it had been rejected for.
  Rescued questions follow the set's questions, in sheet order.
* a row whose ``query_id`` is not in the set (and that rescues nothing), or a ``query_id`` on two rows, is an
  error.
* **out of corpus**: a ``type`` cell set to ``out_of_corpus`` (also ``ooc``, ``문서 밖``) makes an answerable question
  one the documents do not answer: its evidence and relevant documents go, its answer becomes the decline
  sentence (unless the reviewer wrote another) and it is checked again; an out-of-corpus question cannot be made
  answerable in the sheet.  (Other ``type`` edits are ignored: the type is measured.)
* a question with ``metadata.generation.verified: false`` -- a traced question whose evidence was not located with
  confidence (``ragexam traces sample``) -- is checked even when unedited: accepted, an ``uncertain`` one takes the
  span its located record proposes (``metadata.generation.evidence_choice: proposed``); kept without evidence, it
  is refused naming its line, until the reviewer gives its evidence, makes it out of corpus, or rejects it.

A set ``ragexam locate-evidence`` wrote (its card's ``kind`` is ``located``; without a card, its records carry
``metadata.located``) has its own columns, decisions and verification: :mod:`ragexam.questions.locate_review`.
When the card, the records and the sheet's columns disagree on the kind, a note says so (:func:`kind_notes`).

The sheet is read as UTF-8 (with or without BOM), else as CP949 (what Korean Excel writes) with a note.
:class:`ReviewSheet` changes one row at a time under a file lock, re-reading the sheet each time and
writing it whole to a temporary file that is renamed into place, so two writers (two browser tabs, two
servers) never lose each other's rows; a row changed since the writer read it is a :class:`Conflict`.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import threading
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, FrozenSet, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

from ragexam import fmt
from ragexam.errors import InputError
from ragexam.questions.output import read_cell
from ragexam.storage.readback import parse_json, read_json

if TYPE_CHECKING:  # pragma: no cover
    from ragexam.questions.audit import AuditStatus, PendingBound

if TYPE_CHECKING:
    from ragexam.data.schema import Corpus
    from ragexam.questions.checks import CorpusFacts, Located, Rejection

__all__ = ["apply_review", "ReviewResult", "STATUS_WORDS", "status_of", "RESCUE_COLUMN", "DECISION_FIELDS",
           "Sheet", "read_sheet", "ReviewSheet", "Conflict", "CheckSettings", "Step", "CheckReport",
           "run_candidate_checks", "checked_record", "ReviewSet", "load_review_set", "rescue_id", "read_records"]

#: accepted spellings of each status
STATUS_WORDS: Dict[str, Tuple[str, ...]] = {
    "accepted": ("accept", "accepted", "ok", "yes", "y", "keep", "승인", "채택", "통과"),
    "rejected": ("reject", "rejected", "no", "n", "drop", "delete", "거절", "탈락", "삭제"),
    "pending": ("pending", "", "보류"),
}
_STATUS_OF = {w: status for status, words in STATUS_WORDS.items() for w in words}
_EDITABLE = ("question", "ground_truth", "evidence")
#: ``type`` cells that make a question out of corpus (:func:`_out_of_corpus`)
_OOC_WORDS = ("out_of_corpus", "out-of-corpus", "ooc", "문서 밖", "문서밖", "범위 밖")
#: the column naming a rescued candidate (its ``cid`` in the rejects file)
RESCUE_COLUMN = "candidate"
#: the cells a decision sets; a row's version is a hash of them
DECISION_FIELDS = ("status", "question", "ground_truth", "evidence", "note", RESCUE_COLUMN)
PathLike = Union[str, Path]


@dataclass
class ReviewResult:
    """The reviewed ``records`` and what happened: ``counts`` (accepted, rejected, pending kept, pending
    dropped, edited, rescued), the rejected ``query_id`` s, and ``notes``."""

    records: List[Dict[str, Any]]
    counts: Dict[str, int]
    rejected: List[str] = field(default_factory=list)
    notes: List[str] = field(default_factory=list)
    #: the reviewed set's audit
    audit: Optional["AuditStatus"] = None
    #: what the review left unread
    bound: Optional["PendingBound"] = None
    #: why nothing was written (``--max-junk``), else ``None``
    refused: Optional[str] = None
    #: the reviewed set's kind: ``generated``, or ``located`` (``ragexam locate-evidence``: the review decided its
    #: evidence, counted in ``counts``'s ``proposed``, ``runner_up`` and ``still_without_evidence`` too)
    kind: str = "generated"

    def to_dict(self) -> Dict[str, Any]:
        out: Dict[str, Any] = {"kind": self.kind, "counts": dict(self.counts), "rejected": list(self.rejected),
                               "notes": list(self.notes), "n_records": len(self.records)}
        if self.audit is not None:
            out["audit"] = self.audit.to_dict()
        if self.bound is not None:
            b = self.bound
            out["written_junk"] = {"bad_high": b.bad_high, "n": b.n_written,
                                   "rate_high": b.rate_high if b.known else None, "audited": b.audited,
                                   "pending": b.pending, "accepted": b.accepted, "method": b.method}
        if self.refused is not None:
            out["refused"] = self.refused
        return out


def status_of(value: str, file: str = "", line: Optional[int] = None) -> str:
    """``accepted``, ``rejected`` or ``pending`` for a status cell (see :data:`STATUS_WORDS`)."""
    status = _STATUS_OF.get(value.strip().lower())
    if status is not None:
        return status
    raise InputError(f"received {value!r}; expected accept, reject or pending (also: "
                     f"{', '.join(w for ws in STATUS_WORDS.values() for w in ws if w)})", source=file or None,
                     line=line, field="status")


# -- the sheet ------------------------------------------------------------------------------------------------
def _decode_sheet(path: Path) -> Tuple[str, List[str]]:
    if not path.exists():
        raise InputError("no such file", source=str(path))
    if path.is_dir():
        raise InputError("is a directory; expected the review sheet (CSV)", source=str(path))
    data = path.read_bytes()
    try:
        return data.decode("utf-8-sig"), []
    except UnicodeDecodeError:
        pass
    try:
        return data.decode("cp949"), [f"{path} is not UTF-8; it was read as CP949 (Korean Excel's CSV encoding)"]
    except UnicodeDecodeError:
        raise InputError("the sheet is neither UTF-8 nor CP949; save it as 'CSV UTF-8'", source=str(path)) from None


def _evidence_cell(text: str, file: str, line: Optional[int]) -> List[str]:
    t = text.strip()
    if not t:
        return []
    if t.startswith("["):
        value = parse_json(t, source=file, line=line, field="evidence",
                           fix='cannot read the evidence list; expected a JSON list of strings such as ["...", "..."], '
                               'or one plain string')
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise InputError("expected a JSON list of strings", source=file, line=line, field="evidence")
        return value
    return [t]


def _version(row: Mapping[str, Any]) -> str:
    cells = [str(row.get(k, "") or "").strip() for k in DECISION_FIELDS]
    try:
        cells[0] = status_of(cells[0])  # "ok" and "accepted" are one decision
    except InputError:
        pass
    return hashlib.sha256(json.dumps(cells, ensure_ascii=False).encode("utf-8")).hexdigest()[:16]


@dataclass
class Sheet:
    """A read review sheet: its ``header``, ``rows`` (``(line, {column: cell})`` in order), and ``notes``."""

    path: Path
    header: List[str]
    rows: List[Tuple[int, Dict[str, str]]]
    notes: List[str] = field(default_factory=list)

    @property
    def by_id(self) -> Dict[str, Tuple[int, Dict[str, str]]]:
        return {str(r.get("query_id", "")).strip(): (line, r) for line, r in self.rows}

    @staticmethod
    def version(row: Optional[Mapping[str, Any]]) -> str:
        """A short hash of the row's decision cells (:data:`DECISION_FIELDS`; ``""`` for no row)."""
        return _version(row) if row else ""

    def status(self, row: Mapping[str, Any], line: Optional[int] = None) -> str:
        return status_of(str(row.get("status", "") or ""), str(self.path), line)

    def evidence(self, row: Mapping[str, Any], line: Optional[int] = None) -> List[str]:
        return _evidence_cell(str(row.get("evidence", "") or ""), str(self.path), line)


def read_sheet(path: PathLike) -> Sheet:
    """Read the review sheet at ``path``: every status must be a known word and every ``query_id`` appear once
    (:class:`~ragexam.errors.InputError` naming the line otherwise)."""
    from ragexam.data.problems import ProblemCollector
    from ragexam.data.reading import iter_csv

    p = Path(path)
    text, notes = _decode_sheet(p)
    file = str(p)
    header = next(csv.reader(io.StringIO(text, newline="")), [])
    rows: List[Tuple[int, Dict[str, str]]] = []
    seen: Dict[str, int] = {}
    for line, row in iter_csv(text, file, ProblemCollector(strict=True), required=("query_id", "status"),
                              row_is="question"):
        cells = {k: "" if v is None else read_cell(str(v)) for k, v in row.items()}
        qid = cells["query_id"].strip()
        if qid in seen:
            raise InputError(f"query_id {qid!r} already appeared on line {seen[qid]}", source=file, line=line,
                             field="query_id")
        seen[qid] = line
        status_of(cells["status"], file, line)
        rows.append((line, cells))
    return Sheet(p, [h.strip() for h in header], rows, notes)


class Conflict(Exception):
    """A row changed since the writer read it: ``current`` is the row now on disk (``None``: no row)."""

    def __init__(self, query_id: str, current: Optional[Dict[str, str]]) -> None:
        super().__init__(f"{query_id} was changed by someone else (another tab or program) since you opened it")
        self.query_id = query_id
        self.current = current


_THREAD_LOCKS: Dict[str, threading.Lock] = {}
_THREAD_LOCKS_GUARD = threading.Lock()


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    """An exclusive lock on ``path`` (a lock file beside it) across threads and processes."""
    lock_path = path.with_name("." + path.name + ".lock")
    with _THREAD_LOCKS_GUARD:
        tlock = _THREAD_LOCKS.setdefault(str(lock_path.resolve()), threading.Lock())
    with tlock:
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            try:
                import fcntl

                fcntl.flock(fd, fcntl.LOCK_EX)
            except ImportError:  # Windows: a byte-range lock on the lock file
                import msvcrt

                msvcrt.locking(fd, msvcrt.LK_LOCK, 1)
            yield
        finally:
            os.close(fd)  # closing releases the lock


class ReviewSheet:
    """Decisions written to the sheet at ``path`` one row at a time (see the module docstring).

    :param columns: the header of a sheet that does not exist yet (it is created on the first write).
    :param rows_for_new: the cells of a row the sheet lacks, by ``query_id`` (the set's questions).
    """

    def __init__(self, path: PathLike, columns: Sequence[str], rows_for_new: Mapping[str, Mapping[str, str]]):
        self.path = Path(path)
        self.columns = list(columns)
        self.rows_for_new = rows_for_new

    def read(self) -> Sheet:
        if not self.path.exists():
            return Sheet(self.path, list(self.columns), [])
        return read_sheet(self.path)

    def update(self, query_id: str, cells: Mapping[str, str], expect: str) -> Dict[str, str]:
        """Set ``cells`` of ``query_id``'s row when its version is still ``expect`` (``""``: no row yet);
        :class:`Conflict` otherwise, unless the row already holds exactly these cells.  Returns the new row."""
        with _locked(self.path):
            sheet = self.read()
            header = list(sheet.header) or list(self.columns)
            for k in cells:
                if k not in header:
                    header.append(k)
            rows = [r for _, r in sheet.rows]
            index = {str(r.get("query_id", "")).strip(): i for i, r in enumerate(rows)}
            i = index.get(query_id)
            current = rows[i] if i is not None else None
            new = dict(current if current is not None else self.rows_for_new.get(query_id, {}), query_id=query_id)
            new.update({k: str(v) for k, v in cells.items()})
            if Sheet.version(current) != expect and Sheet.version(current) != Sheet.version(new):
                raise Conflict(query_id, current)
            if i is None:
                rows.append(new)
            else:
                rows[i] = new
            self._write(header, rows)
            return new

    def _write(self, header: List[str], rows: List[Dict[str, str]]) -> None:
        from ragexam.questions.output import write_sheet_rows
        from ragexam.storage.runfolder import write_text

        text = write_sheet_rows(header, [[r.get(h, "") for h in header] for r in rows])
        self.path.parent.mkdir(parents=True, exist_ok=True)
        write_text(self.path, "\ufeff" + text)  # temporary file + rename; with a BOM for Excel


# -- the checks -------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class CheckSettings:
    """The thresholds a set was generated with (:meth:`from_card`: its card's signature, the generator's defaults
    -- :class:`~ragexam.questions.config.GenerateConfig` -- where the card says nothing).  ``any_language``: a
    question need not be in the corpus's language -- a set of traced questions (card ``kind: traces``), the users'
    own words: a question ``traces sample`` rejected as ``wrong_language`` (an English question to a Korean corpus)
    is kept when a reviewer rescues it."""

    lexical_at: float
    copy_at: float
    dedup_at: float
    min_evidence_chars: int
    max_evidence_chars: int
    ambiguous: str
    any_language: bool = False

    @classmethod
    def from_card(cls, card: Mapping[str, Any]) -> "CheckSettings":
        from ragexam.questions.config import GenerateConfig
        from ragexam.signature import Signature

        d = GenerateConfig.__dataclass_fields__
        out: Dict[str, Any] = {k: d[k].default for k in ("lexical_at", "copy_at", "dedup_at", "min_evidence_chars",
                                                         "max_evidence_chars", "ambiguous")}
        out["any_language"] = card.get("kind") == "traces"
        try:
            sig = Signature.parse(str(card.get("signature", "")))
        except ValueError:
            return cls(**out)

        def number(key: str, name: str, after: str = "") -> None:
            value = str(sig.get(key, "") or "")
            try:
                out[name] = float(value.split(after, 1)[1] if after else value)
            except (IndexError, ValueError):
                pass

        number("lexical_at", "lexical_at")
        number("copy", "copy_at", ">=")
        number("dedup", "dedup_at", ">=")
        low, _, high = str(sig.get("evidence", "") or "").partition("-")
        if low.isdigit() and high.isdigit():
            out["min_evidence_chars"], out["max_evidence_chars"] = int(low), int(high)
        if sig.get("ambiguous") in ("join", "drop"):
            out["ambiguous"] = sig.get("ambiguous")
        return cls(**out)


@dataclass(frozen=True)
class Step:
    """One check: ``name``, ``passed`` (``None``: not made, with ``detail`` saying why), ``reason`` (a key of
    :data:`ragexam.questions.checks.REASONS`) and ``detail``."""

    name: str
    passed: Optional[bool]
    reason: str = ""
    detail: str = ""


@dataclass
class CheckReport:
    """What :func:`run_candidate_checks` found: every ``step``; for answerable questions that passed the
    evidence step, the ``located`` evidence, the ``spans`` (dicts as in ``metadata.generation.evidence_spans``),
    the ``relevant`` documents and the measured ``overlap``, ``anchors``, ``style`` and ``type``."""

    steps: List[Step]
    located: List[Any] = field(default_factory=list)
    spans: List[Dict[str, Any]] = field(default_factory=list)
    relevant: List[str] = field(default_factory=list)
    overlap: Optional[float] = None
    anchors: List[str] = field(default_factory=list)
    style: Optional[str] = None
    type: Optional[str] = None
    answer_contained: bool = False

    @property
    def failures(self) -> List[Step]:
        return [s for s in self.steps if s.passed is False]

    @property
    def ok(self) -> bool:
        return not self.failures

    def problem(self) -> str:
        """The failures in words (``""`` when every check passed)."""
        from ragexam.questions.checks import REASONS

        return "; ".join(f"{s.reason} ({REASONS.get(s.reason, ('', ''))[1] or s.name}): {s.detail}"
                         for s in self.failures)


def run_candidate_checks(question: str, answer: str, evidence: Sequence[str], *, answerable: bool, kind: str,
                         facts: CorpusFacts, settings: CheckSettings, others: Sequence[Tuple[str, FrozenSet[str]]] = (),
                         passage_docs: Sequence[str] = ()) -> CheckReport:
    """Every check ``generate`` makes on a candidate before its LLM check (:mod:`.checks`, in the engine's
    order), on a reviewer's question: each step's result (all of them, not only the first failure), then the
    measurements of :mod:`.measure` when the evidence was found.

    ``facts``: the corpus's :class:`~ragexam.questions.checks.CorpusFacts`; ``others``: ``(query_id,
    bigrams)`` of the other questions the set keeps (the near-duplicate check); ``passage_docs``: the documents
    the reviewer was shown (to tell a reworded evidence string from an invented one).  Evidence may come from
    any document of the corpus.  The LLM checks (answer support, the out-of-corpus search) are not made here.
    """
    from ragexam.questions import checks as C
    from ragexam.questions import measure as M

    rep = CheckReport([_step("question", C.question_problem(question, script=facts.script, foreign=facts.foreign,
                                                            scripts=facts.scripts,
                                                            language=not settings.any_language))])
    if not answerable:
        rep.steps.append(Step("evidence", False, "answered_in_corpus", "an out-of-corpus question (answerable: false) "
                                                                        "cannot have evidence; remove it")
                         if any(e.strip() for e in evidence) else Step("evidence", True, "", "no evidence (out of "
                                                                                              "corpus)"))
        rep.steps.append(_duplicate_step(question, others, settings))
        rep.type = "out_of_corpus"
        return rep
    located, problem = C.locate_evidence(
        list(evidence), shown_docs=list(facts.contents), shown_texts=[facts.contents[d] for d in passage_docs
                                                                      if d in facts.contents],
        corpus_text=facts.corpus_text, contents=facts.contents, min_chars=settings.min_evidence_chars,
        max_chars=settings.max_evidence_chars, ambiguous="join")
    if problem is None and settings.ambiguous == "drop":
        many = next((loc for loc in located if len(loc.doc_ids) > 1), None)
        if many is not None:
            problem = C.Rejection("ambiguous_evidence", f"evidence {many.index} occurs in "
                                                        f"{', '.join(many.doc_ids[:5])} "
                                                        "(the set was generated with --ambiguous drop)")
    if problem is not None and problem.reason in ("evidence_not_found", "evidence_paraphrased"):
        problem = C.Rejection(problem.reason, f"{problem.detail}; it occurs in no document of the corpus (compared "
                                              "after NFKC and whitespace normalisation): copy it from the document "
                                              "exactly")
    rep.steps.append(_step("evidence", problem))
    rep.steps.append(_step("answer", C.answer_problem(answer)))
    if problem is None:
        _measure(rep, question, answer, located, kind, facts, settings)
        spans = C.spans_by_doc(located)
        sentences = "\n".join(M.scope_texts(facts.contents[d], s, "sentence") for d, s in spans.items())
        rep.steps.append(_step("copy", C.copy_problem(question, sentences, located, settings.copy_at)))
    else:
        rep.steps.append(Step("copy", None, "", "not checked: the evidence was not found"))
    rep.steps.append(_duplicate_step(question, others, settings))
    return rep


def _step(name: str, rejection: Optional[Rejection]) -> Step:
    return Step(name, True) if rejection is None else Step(name, False, rejection.reason, rejection.detail)


def _duplicate_step(question: str, others: Sequence[Tuple[str, FrozenSet[str]]], settings: CheckSettings) -> Step:
    from ragexam.questions import checks as C
    from ragexam.questions import measure as M

    return _step("duplicate", C.find_duplicate(M.bigrams(question), others, settings.dedup_at))


def _measure(rep: CheckReport, question: str, answer: str, located: List[Located], kind: str, facts: CorpusFacts,
             settings: CheckSettings) -> None:
    from ragexam.questions import checks as C
    from ragexam.questions import measure as M

    rep.located = located
    rep.relevant = C.evidence_doc_ids(located, join=True)
    rep.spans = [{"evidence": loc.index, "doc_id": o.doc_id, "start": o.start, "end": o.end}
                 for loc in located for o in loc.shown]
    by_doc = C.spans_by_doc(located)
    paragraphs = "\n".join(M.scope_texts(facts.contents[d], s, "paragraph") for d, s in by_doc.items())
    ov, anchors, style = M.measure_many([question], [" ".join(loc.normalized for loc in located)], [paragraphs],
                                        language=facts.language, latin_is_foreign=facts.script != "latin",
                                        lexical_at=settings.lexical_at)[0]
    rep.overlap, rep.anchors, rep.style = ov, anchors, style
    rep.type = M.type_of(M.needs_two_documents([loc.doc_ids for loc in located]), kind, style)
    rep.answer_contained = C.answer_contained(answer, located)


def _passage_docs(rec: Mapping[str, Any]) -> List[str]:
    """The documents a record's question was written from: its relevant documents, then those of the sections
    the generator showed."""
    g = rec.get("metadata", {}).get("generation", {})
    sections = [str(s).rsplit("#s", 1)[0] for s in g.get("sections", [])]
    return list(dict.fromkeys(list(rec.get("relevant_doc_ids", [])) + sections))


def checked_record(rec: Dict[str, Any], rep: CheckReport, changed: Sequence[str]) -> Dict[str, Any]:
    """``rec`` (a QA record with the reviewer's values) updated from a passing :class:`CheckReport`: evidence
    as the documents' own text, relevant documents, spans, overlap, anchors, style, type and -- when the answer
    or the evidence changed -- the answer check."""
    g = rec.setdefault("metadata", {}).setdefault("generation", {})
    if not rec.get("answerable", True):
        return rec
    rec["evidence"] = [loc.text for loc in rep.located]
    old = [d for d in rec.get("relevant_doc_ids", []) if d in rep.relevant]
    rec["relevant_doc_ids"] = list(dict.fromkeys(old + rep.relevant))
    g.update({"evidence_spans": rep.spans, "overlap": rep.overlap, "anchors": rep.anchors, "style": rep.style})
    if rep.type is not None:
        rec["type"] = rep.type
    if "ground_truth" in changed or "evidence" in changed:
        g["answer_check"] = {"method": "contained"} if rep.answer_contained else {"method": "human"}
    return rec


# -- the set under review ----------------------------------------------------------------------------------------
def _load_jsonl(path: Path) -> List[Tuple[int, Dict[str, Any]]]:
    from ragexam.data.problems import ProblemCollector
    from ragexam.data.reading import iter_jsonl, read_text

    col = ProblemCollector(strict=True)
    text = read_text(path, str(path), col)
    return list(iter_jsonl(text or "", str(path), col, example='{"query_id": ..., "question": ..., ...}'))


def read_records(qa: Path) -> Dict[str, Dict[str, Any]]:
    """The records of the set file ``qa`` by ``query_id``, in file order; an :class:`InputError` naming the line of
    a record without an id or with an id an earlier line has."""
    records: Dict[str, Dict[str, Any]] = {}
    for line, r in _load_jsonl(qa):
        qid = r.get("query_id")
        if not isinstance(qid, str) or not qid.strip():
            raise InputError(f"received {qid!r}; expected a non-empty string", source=str(qa), line=line,
                             field="query_id")
        if qid in records:
            raise InputError(f"query_id {qid!r} appears on an earlier line too; expected each id once", source=str(qa),
                             line=line, field="query_id")
        records[qid] = r
    return records


def _card_path(qa: Path) -> Path:
    from ragexam.questions.output import side_paths

    return side_paths(qa)["card"]


def _card(qa: Path) -> Dict[str, Any]:
    """The set's card next to ``qa`` (``{}`` when there is none or it cannot be read)."""
    card = _card_path(qa)
    if not card.is_file():
        return {}
    try:
        value = read_json(card)
    except InputError:
        return {}
    return value if isinstance(value, dict) else {}


def _located_records(records: Mapping[str, Mapping[str, Any]]) -> List[str]:
    """The ids of the records that carry a located record (``metadata.located``: ``ragexam locate-evidence`` wrote
    them)."""
    return [q for q, r in records.items()
            if isinstance(r.get("metadata"), dict) and isinstance(r["metadata"].get("located"), dict)]


#: columns only a located set's review sheet has (:data:`ragexam.questions.locate_review.COLUMNS`)
_LOCATED_COLUMNS = ("evidence_status", "proposed", "runner_up")


def kind_notes(rs: "ReviewSet", sheet: Sheet) -> List[str]:
    """What tells ``rs``'s kind (its card, its records' ``metadata.located``, the sheet's columns), in words when
    they disagree or when the card is missing: the same sheet means the same thing with or without the card."""
    located = _located_records(rs.records)
    card_kind = rs.card.get("kind")
    sheet_located = [c for c in _LOCATED_COLUMNS if c in sheet.header]
    card_name = _card_path(rs.qa).name
    kind = rs.kind
    notes = []
    if kind == "located" and card_kind is None:
        notes.append(f"{rs.qa.name} has no card ({card_name}) naming its kind; its records carry metadata.located "
                     f"({len(located)} of {len(rs.records)}), so it is reviewed as a set `ragexam locate-evidence` "
                     "wrote")
    if kind == "located" and card_kind == "located" and rs.records and not located:
        notes.append(f"{card_name} says the set is a located one, but none of its records carries metadata.located: "
                     "it is reviewed as a located set (each question as ragexam would have located nothing)")
    if kind != "located" and located:
        notes.append(f"{len(located)} of {rs.qa.name}'s records carry metadata.located, but {card_name} says the "
                     f"set is {card_kind!r}: it is reviewed as that kind (the located columns of the sheet are not "
                     "read)")
    if kind == "located" and sheet.header and not sheet_located:
        notes.append(f"{sheet.path.name} has none of a located set's columns ({', '.join(_LOCATED_COLUMNS)}) though "
                     f"{rs.qa.name} is a located set: its rows are read as a located set's (accept with an empty "
                     f"evidence cell takes the proposed span)")
    if kind != "located" and sheet_located:
        notes.append(f"{sheet.path.name} has a located set's columns ({', '.join(sheet_located)}) but {rs.qa.name} "
                     "is not a located set (no card saying so, no record carrying metadata.located): its rows are "
                     "read as a generated set's; those columns are ignored")
    return notes


def rescue_id(records: Sequence[Mapping[str, Any]], cid: str) -> str:
    """The ``query_id`` a rescued candidate gets: ``<prefix>_<cid>``, the prefix of the set's ids
    (``gen`` for ``gen_0001``; ``rescued`` when the ids share none)."""
    prefixes = {str(r.get("query_id", "")).rpartition("_")[0] for r in records}
    prefix = prefixes.pop() if len(prefixes) == 1 and "" not in prefixes else "rescued"
    return f"{prefix}_{cid}"


@dataclass
class ReviewSet:
    """A generated set under review: its ``records`` (by ``query_id``, in order), the rescuable ``rejects``
    (by ``cid``: rejected candidates that have a question), the ``card`` and the paths of the set, its rejects
    and the ``sheet``.  ``facts`` and ``settings`` come with :meth:`corpus_facts`."""

    qa: Path
    sheet_path: Path
    records: Dict[str, Dict[str, Any]]
    rejects: Dict[str, Dict[str, Any]]
    call_rejects: List[Dict[str, Any]]
    card: Dict[str, Any]
    settings: CheckSettings
    corpus_source: Union[Corpus, str, Path, None] = None
    _facts: Optional[CorpusFacts] = None
    _corpus: Optional[Corpus] = None
    _lock: threading.RLock = field(default_factory=threading.RLock, repr=False)

    @property
    def kind(self) -> str:
        """``located`` for a set ``ragexam locate-evidence`` wrote (:mod:`ragexam.questions.locate_review`): its
        card says so, or -- without a card that names a kind -- its records carry ``metadata.located``;
        ``generated`` otherwise.  (:func:`kind_notes` says when the card, records and sheet disagree.)"""
        card_kind = self.card.get("kind")
        if card_kind == "located":
            return "located"
        return "located" if card_kind is None and _located_records(self.records) else "generated"

    def sheet(self) -> ReviewSheet:
        """The writer of the sheet (the set's own rows for questions the sheet lacks)."""
        from ragexam.questions.output import REVIEW_COLUMNS, review_cells

        if self.kind == "located":
            from ragexam.questions.locate_review import COLUMNS, sheet_rows

            rows = sheet_rows(list(self.records.values()))
            return ReviewSheet(self.sheet_path, list(COLUMNS), {r["query_id"]: r for r in rows})
        new = {row[0]: dict(zip(REVIEW_COLUMNS, row)) for row in review_cells(list(self.records.values()))}
        return ReviewSheet(self.sheet_path, list(REVIEW_COLUMNS), new)

    def corpus(self) -> Corpus:
        with self._lock:
            return self._load_corpus()

    def _load_corpus(self) -> Corpus:
        if self._corpus is None:
            from ragexam.data.loaders import load_corpus
            from ragexam.data.schema import Corpus

            src = self.corpus_source
            if src is None:
                src = self.card.get("corpus", {}).get("source")
                if src is not None and not Path(str(src)).exists():
                    src = None
            if src is None:
                raise InputError("the review edits questions, which are checked against the corpus; pass --corpus "
                                 f"(the set's card next to {self.qa} names none that exists)", source="--corpus",
                                 field="corpus")
            self._corpus = src if isinstance(src, Corpus) else load_corpus(src)
        return self._corpus

    def corpus_facts(self) -> CorpusFacts:
        with self._lock:
            return self._load_facts()

    def _load_facts(self) -> CorpusFacts:
        if self._facts is None:
            from ragexam.questions.checks import CorpusFacts

            lang = (self.card.get("corpus") or {}).get("language") or "auto"
            self._facts = CorpusFacts.build(self.corpus().documents, lang if lang in ("ko", "en") else "auto")
        return self._facts

    def rescue_id(self, cid: str) -> str:
        return rescue_id(list(self.records.values()), cid)


def load_review_set(qa: PathLike, review: Optional[PathLike] = None, *,
                    corpus: Union[Corpus, str, Path, None] = None) -> ReviewSet:
    """The set ``qa`` with its card, its rejects (when the file exists) and the path of its sheet (``review``,
    default: ``qa``'s ``.review.csv``)."""
    from ragexam.questions.output import side_paths

    qa_path = Path(qa)
    paths = side_paths(qa_path)
    records = read_records(qa_path)
    rejects: Dict[str, Dict[str, Any]] = {}
    calls: List[Dict[str, Any]] = []
    if paths["rejects"].is_file() and paths["rejects"].read_bytes().strip():  # an empty rejects file: none
        for _, r in _load_jsonl(paths["rejects"]):
            if isinstance(r.get("cid"), str) and isinstance(r.get("question"), str):
                rejects[r["cid"]] = r
            else:
                calls.append(r)
    card = _card(qa_path)
    return ReviewSet(qa_path, Path(review) if review is not None else paths["review"], records, rejects, calls, card,
                     CheckSettings.from_card(card), corpus)


# -- review apply --------------------------------------------------------------------------------------------------
def apply_review(qa: PathLike, review: Optional[PathLike] = None, out: Optional[PathLike] = None,
                 *, corpus: Union[Corpus, str, Path, None] = None, pending: str = "keep",
                 max_junk: Optional[float] = None) -> ReviewResult:
    """Apply the review sheet ``review`` (default: ``qa``'s ``.review.csv``) to the set ``qa``; with ``out``,
    write the reviewed set there (checked before anything is read: it may be none of the files the command reads --
    the set, its sheet, rejects and card, the corpus) and its audit sidecar, derived from the set's audit and the
    review (:func:`ragexam.questions.risk.pending_bound`).  With ``max_junk``, nothing is written when the
    written set's junk upper bound is above it (``result.refused`` says why; a set whose every question was read
    by a person always passes).  See the module docstring."""
    if pending not in ("keep", "drop"):
        raise InputError(f"received {pending!r}; expected keep or drop", source="--pending", field="pending")
    if max_junk is not None and not 0.0 <= float(max_junk) <= 1.0:
        raise InputError(f"received {max_junk!r}; expected a share of questions from 0 to 1 (0.1 for 10%)",
                         source="--max-junk", field="max_junk")
    if out is not None:
        _check_apply_outputs(qa, review, out, corpus)
    rs = load_review_set(qa, review, corpus=corpus)
    sheet = _read_set_sheet(rs, review)
    sheet.notes.extend(kind_notes(rs, sheet) + _rowless(rs, sheet, pending))
    by_id = sheet.by_id
    rejected: List[str] = []
    decisions: Dict[str, str] = {}
    if rs.kind == "located":  # a set `ragexam locate-evidence` wrote: its own decisions and verification
        from ragexam.questions.locate_review import COUNTS, apply_located, check_rows

        check_rows(rs, sheet)
        counts = {k: 0 for k in ("accepted", "rejected", "pending_kept", "pending_dropped", "edited") + COUNTS}
        kept = _triage([(qid, rec, by_id.get(qid, (0, {}))) for qid, rec in rs.records.items()], sheet, pending,
                       counts, rejected, decisions)
        relevant, unapplied = _relevant_edits(rs, sheet, kept)
        records, notes = apply_located(rs, sheet, kept, counts)
        notes = _checked_relevant_edits(rs, sheet, kept, relevant, counts) + notes + unapplied
        return _finish(rs, ReviewResult(records, counts, rejected, sheet.notes + notes, kind="located"), decisions,
                       max_junk, out)
    file = str(rs.sheet_path)
    rescued = _rescue_rows(rs, sheet, file)
    counts = {"accepted": 0, "rejected": 0, "pending_kept": 0, "pending_dropped": 0, "edited": 0, "rescued": 0}
    items = [(qid, rec, by_id.get(qid, (0, {}))) for qid, rec in rs.records.items()]
    items += [(row["query_id"].strip(), _rescued_record(rs, row), (line, row)) for line, row in rescued]
    language = (rs.card.get("corpus") or {}).get("language")
    kept = [(line, rec, sorted(_changes(rec, row, file, line, language)), status, row)
            for _, rec, line, row, status in _triage(items, sheet, pending, counts, rejected, decisions)]
    for line, rec, changes, status, row in kept:
        if status == "accepted":
            _take_proposal(rec)
        if changes or row.get(RESCUE_COLUMN, "").strip() or _unverified(rec):
            _recheck(rs, rec, changes, kept, file, line)
    out_records = []
    for line, rec, changes, status, row in kept:
        g = rec.setdefault("metadata", {}).setdefault("generation", {})
        g["review"] = "accepted" if status == "accepted" else "pending"
        note = str(row.get("note", "") or "").strip()
        if note:
            g["review_note"] = note
        if changes:
            g["edited"] = changes
            counts["edited"] += 1
        counts["rescued"] += bool(g.get("rescued"))
        counts["accepted" if status == "accepted" else "pending_kept"] += 1
        out_records.append(rec)
    return _finish(rs, ReviewResult(out_records, counts, rejected, sheet.notes + _unread_relevant(rs, sheet)),
                   decisions, max_junk, out)


def _unread_relevant(rs: ReviewSet, sheet: Sheet) -> List[str]:
    """A note naming the rows of a generated set's sheet whose ``relevant_doc_ids`` cell was changed: the column
    is not read (a question's relevant documents are those holding its evidence)."""
    changed = [qid for qid, (_, row) in sheet.by_id.items() if qid in rs.records and "relevant_doc_ids" in row
               and _doc_ids_cell(str(row["relevant_doc_ids"] or "")) != list(rs.records[qid].get("relevant_doc_ids")
                                                                            or [])]
    if not changed:
        return []
    return [f"{fmt.plural(len(changed), 'row')} of {sheet.path.name} had an edited relevant_doc_ids cell, which "
            f"a generated set does not read: {', '.join(changed[:8])}" + (" ..." if len(changed) > 8 else "")
            + "; a question's relevant documents are the ones holding its evidence: edit the evidence cell"]


def _read_set_sheet(rs: ReviewSet, review: Optional[PathLike]) -> Sheet:
    """The sheet of ``rs`` (:func:`read_sheet`); when it does not exist, an error that says which command writes
    it."""
    if review is None and not rs.sheet_path.exists():
        writer = "`ragexam locate-evidence` writes it" if rs.kind == "located" else \
            "`ragexam traces sample` writes it" if rs.card.get("kind") == "traces" else \
            "`ragexam generate` writes it" if rs.card else \
            "`ragexam generate`, `ragexam locate-evidence` and `ragexam traces sample` write it"
        raise InputError(
            f"no such file: the review sheet of {rs.qa.name} (expected beside it, {rs.sheet_path.name}); {writer} "
            f"beside the set, and `ragexam serve --review {rs.qa}` writes it as you decide. Fix: "
            "pass the sheet you edited with --review FILE; for a set that no command of ragexam wrote, decide its "
            f"questions in `ragexam serve --review {rs.qa}` (or write a CSV with the columns query_id and status)",
            source=str(rs.sheet_path), field="review")
    return read_sheet(rs.sheet_path)


def _rowless(rs: ReviewSet, sheet: Sheet, pending: str) -> List[str]:
    """A note naming the questions of the set without a row in the sheet (deleted rows): they are pending."""
    missing = [q for q in rs.records if q not in sheet.by_id]
    if not missing or not sheet.path.exists():
        return []
    n = len(missing)
    then = "kept as pending" if pending == "keep" else "left out as pending (--pending drop)"
    return [f"{fmt.plural(n, 'question')} of {rs.qa.name} {'has' if n == 1 else 'have'} no row in {sheet.path.name} "
            f"(deleted from the sheet?): {', '.join(missing[:8])}" + (" ..." if n > 8 else "")
            + f"; {then}. To decide {'it' if n == 1 else 'them'}, add {'its row' if n == 1 else 'their rows'} back "
            f"(`ragexam serve --review {rs.qa}` shows every question)"]


#: a kept row of the sheet: ``(query_id, a copy of its record, sheet line, row, status)``
Kept = Tuple[str, Dict[str, Any], int, Dict[str, str], str]


def _doc_ids_cell(text: str) -> List[str]:
    """The document ids of a ``relevant_doc_ids`` cell: separated by spaces or commas (a JSON list is read too)."""
    t = text.strip()
    if t.startswith("[") and t.endswith("]"):
        t = t[1:-1].replace('"', " ").replace("'", " ")
    return list(dict.fromkeys(x for x in t.replace(",", " ").split() if x))


def _relevant_edits(rs: ReviewSet, sheet: Sheet, kept: Sequence[Kept]) -> Tuple[Dict[str, List[str]], List[str]]:
    """A located set's ``relevant_doc_ids`` cells that differ from their records: on an accepted row the ids
    (every one a document of the corpus) become the question's relevant documents before its evidence is checked
    against them; ``({query_id: the documents it had}, notes)`` -- a note names the pending rows whose edit was
    not applied."""
    changed: Dict[str, List[str]] = {}
    pending: List[str] = []
    file = str(sheet.path)
    for qid, rec, line, row, status in kept:
        if "relevant_doc_ids" not in row:
            continue
        had = [str(d) for d in rec.get("relevant_doc_ids") or []]
        ids = _doc_ids_cell(str(row["relevant_doc_ids"] or ""))
        if ids == had:
            continue
        if status != "accepted":
            pending.append(qid)
            continue
        if rec.get("answerable") is False and ids:
            raise InputError(f"received {' '.join(ids)!r}; an out-of-corpus question (answerable: false) has no "
                             "relevant documents: empty the cell or reject the row", source=file, line=line,
                             field="relevant_doc_ids")
        if isinstance(rec.get("relevance"), dict) and rec["relevance"]:
            raise InputError(f"received {' '.join(ids)!r}; this question's relevant documents are its graded "
                             f"relevance in {rs.qa.name} (the relevance field): change them there", source=file,
                             line=line, field="relevant_doc_ids")
        known = {d.doc_id for d in rs.corpus().documents}
        unknown = [d for d in ids if d not in known]
        if unknown:
            raise InputError(f"received {', '.join(unknown[:5])}: not a document of the corpus; expected document ids "
                             "(doc_id) of the corpus, separated by spaces", source=file, line=line,
                             field="relevant_doc_ids")
        changed[qid] = had
        rec["relevant_doc_ids"] = ids
    notes = [f"{fmt.plural(len(pending), 'row')} left pending had an edited relevant_doc_ids cell, not applied: "
             f"{', '.join(pending[:8])}" + (" ..." if len(pending) > 8 else "") + "; set their status to accept to "
             "apply the edit"] if pending else []
    return changed, notes


def _checked_relevant_edits(rs: ReviewSet, sheet: Sheet, kept: Sequence[Kept], changed: Mapping[str, List[str]],
                            counts: Dict[str, int]) -> List[str]:
    """The accepted rows whose relevant documents changed (:func:`_relevant_edits`): their evidence must lie in one
    of them (:class:`InputError` naming the line otherwise); marked edited in their located record."""
    if not changed:
        return []
    from ragexam.data.evidence import CorpusText
    from ragexam.questions.locate_review import verify_evidence

    corpus_text = CorpusText(rs.corpus().documents)
    shown = []
    for qid, rec, line, row, status in kept:
        if qid not in changed:
            continue
        if rec.get("evidence"):
            verify_evidence(list(rec["evidence"]), rec, corpus_text, str(sheet.path), line)
        located = rec.setdefault("metadata", {}).setdefault("located", {})
        edited = list(located.get("edited") or [])
        counted = located.get("choice") == "edited" or edited not in ([], ["evidence"])
        located["edited"] = edited + ["relevant_doc_ids"]
        counts["edited"] += not counted
        shown.append(f"{qid} ({' '.join(changed[qid]) or 'none'} -> {' '.join(rec['relevant_doc_ids']) or 'none'})")
    return [f"relevant documents changed in {sheet.path.name}: {', '.join(shown[:8])}"
            + (" ..." if len(shown) > 8 else "")]


def _triage(items: Sequence[Tuple[str, Dict[str, Any], Tuple[int, Dict[str, str]]]], sheet: Sheet, pending: str,
            counts: Dict[str, int], rejected: List[str], decisions: Dict[str, str]) -> List[Kept]:
    """The rows that stay: a rejected question is left out (counted and listed), a pending one too with
    ``pending="drop"`` (counted); every other record is copied, with its line, row and status.  ``decisions``
    gets each question's outcome (accepted, rejected, pending or dropped) for the audit."""
    kept: List[Kept] = []
    for qid, rec, (line, row) in items:
        status = sheet.status(row, line) if row else "pending"
        decisions[qid] = {"pending": "pending" if pending == "keep" else "dropped"}.get(status, status)
        if status == "rejected":
            counts["rejected"] += 1
            rejected.append(qid)
            continue
        if status == "pending" and pending == "drop":
            counts["pending_dropped"] += 1
            continue
        kept.append((qid, json.loads(json.dumps(rec)), line, row, status))
    return kept


def _finish(rs: ReviewSet, result: ReviewResult, decisions: Mapping[str, str], max_junk: Optional[float],
            out: Optional[PathLike]) -> ReviewResult:
    """``result`` with the set's audit and what the review leaves unread (:func:`_audit_outcome`); its records
    written to ``out`` (atomically) with their audit sidecar when given, unless ``max_junk`` refused them."""
    _audit_outcome(rs, result, decisions, max_junk)
    if out is not None and result.refused is None and not result.records:
        c = result.counts
        why = ", ".join(f"{n} {w}" for n, w in ((c.get("rejected", 0), "rejected"),
                                                (c.get("pending_dropped", 0), "pending dropped")) if n)
        result.refused = (f"refused: every question was left out ({why or 'the set has none'}), and a set of no "
                          "questions cannot be run; nothing written. Fix: accept some rows, or keep the rows nobody "
                          "reviewed (--pending keep).")
    if out is not None and result.refused is None:
        from ragexam.questions.output import _jsonl, _write

        _write(Path(out), _jsonl(result.records))
        _write_derived_audit(rs, result, Path(out))
    return result


def _check_apply_outputs(qa: PathLike, review: Optional[PathLike], out: PathLike,
                         corpus: Union[Corpus, str, Path, None]) -> None:
    from ragexam.questions.audit import audit_path
    from ragexam.questions.output import side_paths
    from ragexam.storage.paths import In, Out, check_outputs

    sides = side_paths(qa)
    carded = _card(Path(qa)).get("corpus")
    check_outputs([Out(out, "--out"), Out(audit_path(out), "--out's audit file")], [
        In(qa, "--qa"), In(review if review is not None else sides["review"], "--review"),
        In(sides["rejects"], "--qa's rejects file"), In(sides["card"], "--qa's card"),
        In(audit_path(qa), "--qa's audit file"), In(getattr(corpus, "source", corpus), "--corpus"),
        In(carded.get("source") if isinstance(carded, dict) else None, "the corpus the set's card names")])


def _rescue_rows(rs: ReviewSet, sheet: Sheet, file: str) -> List[Tuple[int, Dict[str, str]]]:
    """The sheet's rows that rescue a rejected candidate; an error for a row naming an id the set lacks."""
    rescued: List[Tuple[int, Dict[str, str]]] = []
    for line, row in sheet.rows:
        qid = row["query_id"].strip()
        cid = str(row.get(RESCUE_COLUMN, "") or "").strip()
        if cid:
            if qid in rs.records:
                raise InputError(f"query_id {qid!r} is a question of {rs.qa}; a rescued candidate needs a new id",
                                 source=file, line=line, field="query_id")
            if cid not in rs.rejects:
                raise InputError(f"candidate {cid!r} is not in {rs.qa.name}'s rejects file; expected the cid of a "
                                 "rejected candidate", source=file, line=line, field=RESCUE_COLUMN)
            rescued.append((line, row))
        elif qid not in rs.records:
            raise InputError(f"query_id {qid!r} is not in {rs.qa}; expected the ids of that set", source=file,
                             line=line, field="query_id")
    return rescued


def _audit_outcome(rs: ReviewSet, result: ReviewResult, decisions: Mapping[str, str],
                   max_junk: Optional[float]) -> None:
    """The set's audit and what the review leaves unread (:func:`ragexam.questions.risk.pending_bound`; a rescued
    question left pending counts as possibly bad), and the refusal of ``max_junk``."""
    from ragexam.questions.audit import AUDITED, audit_status, read_audit
    from ragexam.questions.risk import pending_bound, review_queue

    status = audit_status(rs.qa)
    audit = read_audit(rs.qa) if status.state == AUDITED else None
    own = {q: d for q, d in decisions.items() if q in rs.records}
    bound = pending_bound(review_queue(rs.records, audit), audit, status.interval if audit else None, own)
    extra = sum(1 for q, d in decisions.items() if q not in rs.records and d == "pending")
    if extra:
        bound = replace(bound, accepted=bound.accepted + sum(1 for q, d in decisions.items() if q not in rs.records
                                                             and d == "accepted"),
                        pending=bound.pending + extra, bad_high=bound.bad_high + extra,
                        method=bound.method + " (rescued questions left pending counted as possibly bad)")
    result.audit, result.bound = status, bound
    if max_junk is not None and not bound.known:
        result.refused = (
            f"refused: {rs.qa.name} is {status.text()}, and {bound.pending} of the {bound.n_written} questions the "
            f"review writes were not reviewed by a person, so nothing is known of their junk: --max-junk passes a set "
            f"nobody audited only when every question it keeps was reviewed. Fix: review the pending questions, "
            f"leave them out (--pending drop), or audit the set (`ragexam review audit {rs.qa}`)")
    elif max_junk is not None and bound.rate_high > max_junk:
        result.refused = (
            f"refused: the reviewed set could hold up to {fmt.percent(bound.rate_high)} junk (at most "
            f"{bound.bad_high} of its {bound.n_written} questions: {bound.pending} not reviewed; {bound.method}; "
            f"{rs.qa.name}: {status.text()}), more than --max-junk {fmt.percent(max_junk)}. Fix: "
            + "; ".join(_junk_fixes(rs, status, decisions)) + "; or raise --max-junk")


def _junk_fixes(rs: ReviewSet, status: "AuditStatus", decisions: Mapping[str, str]) -> List[str]:
    """What brings a refused set's junk bound down: reject the questions the audit labelled bad that the review
    keeps unread (pending; an accepted one was read by a person), review the pending ones, and -- when the audit
    has not read its whole sample, or its sample is not the whole set -- audit more."""
    from ragexam.questions.audit import read_audit

    audit = read_audit(rs.qa)
    counted = audit.counted()[0] if audit is not None else []
    bad = [lab.query_id for lab in counted if lab.label == "bad" and decisions.get(lab.query_id) == "pending"]
    fixes = []
    if bad:
        shown = ", ".join(bad[:10]) + (f" and {len(bad) - 10} more" if len(bad) > 10 else "")
        fixes.append(f"reject the {fmt.plural(len(bad), 'question')} the audit labelled bad ({shown}): status reject "
                     f"on their rows of {rs.sheet_path.name} (or in `ragexam serve --review {rs.qa}`)")
    fixes.append(f"review the pending questions (`ragexam review queue --qa {rs.qa}` lists the likely junk first)")
    if status.n_audited < status.n_sample:
        fixes.append(f"label the rest of the audit's sample of {status.n_sample} (`ragexam review audit {rs.qa}`)")
    elif status.n_sample < status.n_set:
        more = min(status.n_set, max(40, 2 * status.n_sample))
        fixes.append(f"audit a larger sample (`ragexam review audit {rs.qa} --sample {more}`)")
    return fixes


def _write_derived_audit(rs: ReviewSet, result: ReviewResult, out: Path) -> None:
    """The written set's audit sidecar: what the review left and the source set's audit (:class:`DerivedAudit`)."""
    from ragexam.questions.audit import DEFAULT_SEED, AuditFile, DerivedAudit, set_sha256, write_audit

    b, status = result.bound, result.audit
    if b is None or status is None:
        return
    derived = DerivedAudit(rs.qa.name, set_sha256(rs.qa), status.text(), b)
    write_audit(out, AuditFile(out.name, set_sha256(out), len(result.records), DEFAULT_SEED, [], {}, derived))


def _rescued_record(rs: ReviewSet, row: Mapping[str, str]) -> Dict[str, Any]:
    """The QA record of the rejected candidate a row rescues, as the generator wrote it (the row's cells are
    applied as changes)."""
    from ragexam.questions.prompts import DECLINE

    x = rs.rejects[str(row[RESCUE_COLUMN]).strip()]
    answerable = x.get("kind") != "out_of_corpus"
    g = {k: x[k] for k in ("kind", "model_type", "pass", "call", "sections") if k in x}
    g.update({"candidate": x["cid"], "prompt": (rs.card.get("prompt") or {}).get("name"), "rescued": x.get("reason"),
              "rejection_detail": x.get("detail")})
    lang = (rs.card.get("corpus") or {}).get("language", "ko")
    rec: Dict[str, Any] = {"query_id": str(row["query_id"]).strip(), "question": x.get("question", ""),
                           "relevant_doc_ids": [], "evidence": list(x.get("evidence") or []),
                           "ground_truth": x.get("answer", "") if answerable else DECLINE.get(lang, DECLINE["en"]),
                           "type": x.get("type") or x.get("kind"), "answerable": answerable,
                           "metadata": {"generation": g}}
    if not answerable:
        del rec["relevant_doc_ids"], rec["evidence"]
    return rec


def _unverified(rec: Mapping[str, Any]) -> bool:
    """A question whose evidence nobody found yet (``metadata.generation.verified: false``: a traced question whose
    evidence was not located, :mod:`ragexam.questions.traces_sample`): checked at apply even when unedited."""
    return rec.get("metadata", {}).get("generation", {}).get("verified") is False


def _take_proposal(rec: Dict[str, Any]) -> None:
    """An accepted traced question whose evidence was located without confidence (``evidence_status: uncertain``,
    no evidence) takes the proposed span of its located record, as an accepted row of a located set does (it is
    then checked like an edit)."""
    g = rec.get("metadata", {}).get("generation", {})
    if not _unverified(rec) or rec.get("evidence") or not rec.get("answerable", True) or \
            g.get("evidence_status") != "uncertain":
        return
    from ragexam.questions.locate_review import proposed_texts

    spans = proposed_texts(g.get("located") or {})
    if spans:
        rec["evidence"] = spans
        g["evidence_choice"] = "proposed"


def _out_of_corpus(rec: Dict[str, Any], row: Mapping[str, Any], language: Optional[str], file: str,
                   line: int) -> bool:
    """Make ``rec`` an out-of-corpus question when the reviewer set its ``type`` cell to ``out_of_corpus`` (also
    ``ooc``, ``문서 밖``): not answerable, no evidence nor relevant documents, the decline sentence as its answer
    (unless the reviewer wrote another).  True when it changed."""
    from ragexam.questions.output import DECLINE

    cell = str(row.get("type", "") or "").strip().lower()
    if cell not in _OOC_WORDS:
        if cell and not rec.get("answerable", True) and cell not in _OOC_WORDS:
            raise InputError(f"received {cell!r} for an out-of-corpus question; an out-of-corpus question cannot be "
                             "made answerable in the sheet (reject it instead)", source=file, line=line, field="type")
        return False
    if not rec.get("answerable", True):
        return False
    old = str(rec.get("ground_truth", "") or "").strip()
    cell_answer = str(row.get("ground_truth", "") or "").strip()
    rec.update(answerable=False, type="out_of_corpus",
               ground_truth=cell_answer if cell_answer and cell_answer != old else DECLINE.get(language or "ko",
                                                                                               DECLINE["en"]))
    rec.pop("evidence", None)
    rec.pop("relevant_doc_ids", None)
    g = rec.setdefault("metadata", {}).setdefault("generation", {})
    g["converted"] = "out_of_corpus"
    g.pop("verified", None)
    return True


def _changes(rec: Dict[str, Any], row: Mapping[str, Any], file: str, line: int,
             language: Optional[str] = None) -> Dict[str, Any]:
    out: Dict[str, Any] = {}
    for name in _EDITABLE:
        if name not in row:
            continue
        cell = str(row[name])
        if name == "evidence":
            new: Union[str, List[str]] = _evidence_cell(cell, file, line)
            if new != list(rec.get("evidence", [])):
                out[name] = new
        elif cell.strip() != str(rec.get(name, "") or "").strip():
            out[name] = cell.strip()
    if _out_of_corpus(rec, row, language, file, line):
        out.pop("evidence", None)
        out["type"] = "out_of_corpus"
        out["ground_truth"] = rec["ground_truth"]
    rec.update(out)
    return out


def _recheck(rs: ReviewSet, rec: Dict[str, Any], changes: List[str], kept: Sequence[Tuple[Any, ...]], file: str,
             line: int) -> None:
    """Check an edited or rescued record (:func:`run_candidate_checks`) against the other kept questions; an
    :class:`InputError` naming the sheet's line and the failing column when a check fails."""
    from ragexam.questions import measure as M

    g = rec.get("metadata", {}).get("generation", {})
    if _unverified(rec) and rec.get("answerable", True) and not rec.get("evidence"):
        proposed = "accept the row to take the span its located record proposes, " \
            if g.get("evidence_status") == "uncertain" else ""
        raise InputError(f"this question has no evidence yet (it was not located with confidence: "
                         f"{g.get('evidence_status') or 'unlocated'}); {proposed}paste the sentence that answers it "
                         "from the document into the evidence cell, set its type to out_of_corpus if the documents do "
                         "not answer it, or reject it", source=file, line=line, field="evidence")
    facts = rs.corpus_facts()
    others = [(r["query_id"], M.bigrams(r.get("question", ""))) for _, r, *_ in kept if r is not rec]
    rep = run_candidate_checks(rec.get("question", ""), rec.get("ground_truth", ""), rec.get("evidence") or [],
                               answerable=rec.get("answerable", True),
                               kind=g.get("kind") or rec.get("type") or "meaning",
                               facts=facts, settings=rs.settings, others=others,
                               passage_docs=_passage_docs(rec))
    if not rep.ok:
        step = rep.failures[0]
        column = {"question": "question", "copy": "question", "duplicate": "question", "answer": "ground_truth",
                  "evidence": "evidence"}[step.name]
        what = "the rescued candidate" if g.get("rescued") else "the proposed evidence it took" \
            if g.get("evidence_choice") == "proposed" and not changes else f"the edited {column}"
        raise InputError(f"{what} is refused: {rep.problem()}; fix the row or reject it", source=file, line=line,
                         field=column)
    checked_record(rec, rep, list(changes) + (["evidence"] if g.get("rescued") else []))
    if _unverified(rec):
        g["verified"] = True
