"""Applying a person's review of a generated set: ``ragexam review apply``.

``ragexam generate --out qa.jsonl`` writes ``qa.review.csv`` next to the set: one row per question,
``status`` ``pending``.  A reviewer sets ``status`` and may correct ``question``, ``ground_truth`` or
``evidence`` (a JSON list of strings, or one plain string), and write a ``note``.  Then
:func:`apply_review` writes the reviewed set:

* ``status`` (case and surrounding spaces ignored): ``accept`` / ``accepted`` / ``ok`` / ``yes`` / ``y`` /
  ``keep`` / ``승인`` / ``채택`` / ``통과`` keep the question; ``reject`` / ``rejected`` / ``no`` / ``n`` /
  ``drop`` / ``delete`` / ``거절`` / ``탈락`` / ``삭제`` remove it; ``pending`` / ``보류`` / empty leave it
  undecided: kept with ``pending="keep"`` (the default), left out with ``pending="drop"``.  Anything else is
  an error naming the sheet's line.  A question of the set without a row is pending.
* an accepted or kept question keeps its verification record (``metadata.generation``), with
  ``review`` set to ``accepted`` or ``pending``, the ``note``, and ``edited`` listing the fields the
  reviewer changed;
* an edited question is checked again, without a model: the question (not empty, in the corpus's
  language, not referring to the passage); every evidence string must occur verbatim (after
  normalisation) in the corpus -- its offsets and the documents holding it are recomputed and those
  documents become relevant; an answerable question's answer must not be blank or a refusal; overlap,
  anchors and type are measured again.  A failure is an :class:`~ragexam.errors.InputError` naming the
  sheet's line and column (fix the row, or reject it).  A changed answer is marked
  ``answer_check: {"method": "human"}`` (the reviewer vouches for it; no LLM is called).  Edits need the
  corpus (``corpus=``, default: the one named in the set's card).
* a row whose ``query_id`` is not in the set, or a ``query_id`` on two rows, is an error.

The sheet is read as UTF-8 (with or without BOM), else as CP949 (what Korean Excel writes) with a note.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple, Union

from ragexam.errors import InputError

__all__ = ["apply_review", "ReviewResult", "STATUS_WORDS"]

#: accepted spellings of each status
STATUS_WORDS: Dict[str, Tuple[str, ...]] = {
    "accepted": ("accept", "accepted", "ok", "yes", "y", "keep", "승인", "채택", "통과"),
    "rejected": ("reject", "rejected", "no", "n", "drop", "delete", "거절", "탈락", "삭제"),
    "pending": ("pending", "", "보류"),
}
_EDITABLE = ("question", "ground_truth", "evidence")


@dataclass
class ReviewResult:
    """The reviewed ``records`` and what happened: ``counts`` (accepted, rejected, pending kept, pending
    dropped, edited), the rejected ``query_id`` s, and ``notes``."""

    records: List[Dict[str, Any]]
    counts: Dict[str, int]
    rejected: List[str] = field(default_factory=list)
    notes: List[str] = field(default_factory=list)

    def to_dict(self) -> Dict[str, Any]:
        return {"counts": dict(self.counts), "rejected": list(self.rejected), "notes": list(self.notes),
                "n_records": len(self.records)}


def _status(value: str, file: str, line: int) -> str:
    v = value.strip().lower()
    for status, words in STATUS_WORDS.items():
        if v in words:
            return status
    raise InputError(f"received {value!r}; expected accept, reject or pending (also: "
                     f"{', '.join(w for ws in STATUS_WORDS.values() for w in ws if w)})", source=file, line=line,
                     field="status")


def _read_sheet(path: Path) -> Tuple[str, List[str]]:
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


def _evidence_cell(text: str, file: str, line: int) -> List[str]:
    t = text.strip()
    if not t:
        return []
    if t.startswith("["):
        try:
            value = json.loads(t)
        except ValueError as err:
            raise InputError(f"cannot read the evidence list: {err}; expected a JSON list of strings such as "
                             '["...", "..."], or one plain string', source=file, line=line, field="evidence") from None
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise InputError("expected a JSON list of strings", source=file, line=line, field="evidence")
        return value
    return [t]


def _load_set(path: Path) -> List[Tuple[int, Dict[str, Any]]]:
    from ragexam.data.problems import ProblemCollector
    from ragexam.data.reading import iter_jsonl, read_text

    col = ProblemCollector(strict=True)
    text = read_text(path, str(path), col)
    return list(iter_jsonl(text or "", str(path), col, example='{"query_id": ..., "question": ..., ...}'))


def _card(qa: Path) -> Dict[str, Any]:
    """The set's card next to ``qa`` (``{}`` when there is none or it cannot be read)."""
    from ragexam.analysis.generate.output import side_paths

    card = side_paths(qa)["card"]
    try:
        value = json.loads(card.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def apply_review(qa: Union[str, Path], review: Union[str, Path, None] = None, out: Union[str, Path, None] = None,
                 *, corpus: Any = None, pending: str = "keep") -> ReviewResult:
    """Apply the review sheet ``review`` (default: ``qa``'s ``.review.csv``) to the set ``qa``; with ``out``,
    write the reviewed set there (checked before anything is read).  See the module docstring."""
    from ragexam.analysis.generate.output import side_paths
    from ragexam.data.problems import ProblemCollector
    from ragexam.data.reading import iter_csv

    if pending not in ("keep", "drop"):
        raise InputError(f"received {pending!r}; expected keep or drop", source="--pending", field="pending")
    qa_path = Path(qa)
    sheet = Path(review) if review is not None else side_paths(qa_path)["review"]
    if out is not None:
        from ragexam.storage.paths import check_output_file

        check_output_file(out, option="--out")
    rows = _load_set(qa_path)
    by_id = {r["query_id"]: (line, r) for line, r in rows if isinstance(r.get("query_id"), str)}
    text, notes = _read_sheet(sheet)
    file = str(sheet)
    decisions: Dict[str, Tuple[int, str, Dict[str, Any]]] = {}
    for line, row in iter_csv(text, file, ProblemCollector(strict=True), required=("query_id", "status")):
        qid = str(row["query_id"]).strip()
        if qid not in by_id:
            raise InputError(f"query_id {qid!r} is not in {qa_path}; expected the ids of that set", source=file,
                             line=line, field="query_id")
        if qid in decisions:
            raise InputError(f"query_id {qid!r} already appeared on line {decisions[qid][0]}", source=file,
                             line=line, field="query_id")
        decisions[qid] = (line, _status(str(row["status"]), file, line), row)

    editor: Optional[_Editor] = None
    out_records: List[Dict[str, Any]] = []
    counts = {"accepted": 0, "rejected": 0, "pending_kept": 0, "pending_dropped": 0, "edited": 0}
    rejected: List[str] = []
    for _, rec in rows:
        qid = rec.get("query_id")
        line, status, row = decisions.get(qid, (0, "pending", {}))
        if status == "rejected":
            counts["rejected"] += 1
            rejected.append(qid)
            continue
        if status == "pending" and pending == "drop":
            counts["pending_dropped"] += 1
            continue
        rec = json.loads(json.dumps(rec))  # a copy
        changes = _changes(rec, row, file, line)
        if changes:
            if editor is None:
                editor = _Editor(corpus, qa_path)
            editor.apply(rec, changes, file, line)
            counts["edited"] += 1
        meta = rec.setdefault("metadata", {})
        g = meta.setdefault("generation", {})
        g["review"] = "accepted" if status == "accepted" else "pending"
        note = str(row.get("note", "") or "").strip()
        if note:
            g["review_note"] = note
        if changes:
            g["edited"] = sorted(changes)
        counts["accepted" if status == "accepted" else "pending_kept"] += 1
        out_records.append(rec)
    result = ReviewResult(out_records, counts, rejected, notes)
    if out is not None:
        from ragexam.analysis.generate.output import _jsonl, _write

        _write(Path(out), _jsonl(out_records))
    return result


def _lexical_at(card: Dict[str, Any]) -> float:
    """The ``lexical_at`` of the card's signature (the generator's default when it cannot be read)."""
    from ragexam.analysis.generate.engine import GenerateConfig
    from ragexam.signature import Signature

    try:
        return float(Signature.parse(str(card.get("signature", ""))).get("lexical_at"))
    except (TypeError, ValueError):
        return GenerateConfig.__dataclass_fields__["lexical_at"].default


def _changes(rec: Dict[str, Any], row: Dict[str, Any], file: str, line: int) -> Dict[str, Any]:
    out: Dict[str, Any] = {}
    for name in _EDITABLE:
        if name not in row:
            continue
        cell = str(row[name])
        if name == "evidence":
            new: Any = _evidence_cell(cell, file, line)
            if new != list(rec.get("evidence", [])):
                out[name] = new
        elif cell.strip() != str(rec.get(name, "") or "").strip():
            out[name] = cell.strip()
    return out


class _Editor:
    """Re-checks edited questions against the corpus (no model)."""

    def __init__(self, corpus: Any, qa_path: Path) -> None:
        from ragexam.analysis.generate.checks import CorpusFacts
        from ragexam.data.loaders import load_corpus
        from ragexam.data.schema import Corpus

        card = _card(qa_path)
        self.lexical_at = _lexical_at(card)
        if corpus is None:
            corpus = card.get("corpus", {}).get("source")
            if corpus is not None and not Path(corpus).exists():
                corpus = None
        if corpus is None:
            raise InputError("the review edits questions, which are checked against the corpus; pass --corpus (the "
                             f"set's card next to {qa_path} names none that exists)", source="--corpus",
                             field="corpus")
        self.corpus = corpus if isinstance(corpus, Corpus) else load_corpus(corpus)
        self.facts = CorpusFacts.build(self.corpus.documents)

    def apply(self, rec: Dict[str, Any], changes: Dict[str, Any], file: str, line: int) -> None:
        from ragexam.analysis.generate import checks as C
        from ragexam.analysis.generate import measure as M

        f = self.facts
        for name, value in changes.items():
            rec[name] = value
        g = rec.setdefault("metadata", {}).setdefault("generation", {})
        problem = C.question_problem(rec["question"], script=f.script, foreign=f.foreign)
        if problem is not None:
            raise InputError(f"the edited question is refused ({problem.reason}: {problem.detail}); fix it or "
                             "reject the row", source=file, line=line, field="question")
        answerable = rec.get("answerable", True)
        if not answerable:
            if rec.get("evidence"):
                raise InputError("an out-of-corpus question (answerable: false) cannot have evidence; clear the "
                                 "evidence cell or reject the row", source=file, line=line, field="evidence")
            return
        if "ground_truth" in changes:
            problem = C.answer_problem(rec["ground_truth"])
            if problem is not None:
                raise InputError(f"the edited answer is refused ({problem.reason}: {problem.detail})", source=file,
                                 line=line, field="ground_truth")
            g["answer_check"] = {"method": "human"}
        evidence = rec.get("evidence") or []
        if not evidence:
            raise InputError("an answerable question needs evidence; fill the evidence cell or reject the row",
                             source=file, line=line, field="evidence")
        from ragexam.data.normalization import normalize

        spans, docs, texts = [], [], []
        for i, e in enumerate(evidence, 1):
            occ = f.corpus_text.locate(e)
            if not occ:
                raise InputError(f"evidence {i} {normalize(e)[:50]!r} occurs in no document of the corpus (compared "
                                 "after NFKC and whitespace normalisation); copy it from the document exactly",
                                 source=file, line=line, field="evidence")
            texts.append(f.contents[occ[0].doc_id][occ[0].start:occ[0].end])
            for o in occ:
                spans.append({"evidence": i, "doc_id": o.doc_id, "start": o.start, "end": o.end})
                docs.append(o.doc_id)
        rec["evidence"] = texts
        old = [d for d in rec.get("relevant_doc_ids", []) if d in docs]
        rec["relevant_doc_ids"] = list(dict.fromkeys(old + docs))
        g["evidence_spans"] = spans
        by_doc: Dict[str, List[Tuple[int, int]]] = {}
        for s in spans:
            by_doc.setdefault(s["doc_id"], []).append((s["start"], s["end"]))
        paragraphs = "\n".join(M.scope_texts(f.contents[d], s, "paragraph") for d, s in by_doc.items())
        ov, anchors, style = M.measure_many([rec["question"]], [" ".join(normalize(e) for e in texts)], [paragraphs],
                                            language=f.language, latin_is_foreign=f.script != "latin",
                                            lexical_at=self.lexical_at)[0]
        g.update({"overlap": ov, "anchors": anchors, "style": style})
        if rec.get("type") in ("meaning", "lexical", "multi"):
            per_evidence = [[s["doc_id"] for s in spans if s["evidence"] == i] for i in range(1, len(texts) + 1)]
            rec["type"] = M.type_of(M.needs_two_documents(per_evidence), "meaning", style)
