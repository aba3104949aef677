"""``ragexam locate-evidence``: a question set without evidence becomes an evidence-graded one, honestly.

For every question of the set (the input file is never changed; the located set is written to ``out``):

=================  ============================================================================================
question           what the located set holds
=================  ============================================================================================
out of corpus      unchanged (``answerable: false``: nothing to locate)
has evidence       unchanged (*kept*); its evidence is verified: ``metadata.located.verified`` is false, with the
                   strings that occur in no document, when some do not
answerable, no     located (:class:`~ragexam.questions.locate.Locator`) in its relevant documents, or in the whole
evidence           corpus when it has none (``scope: corpus``, and the span's document becomes relevant).  When
                   every document the answer needs got a span of confidence >= the threshold, the spans are its
                   ``evidence`` (*located*); otherwise it has no evidence and ``evidence_status`` says why:
                   ``uncertain`` (a span was found but not with confidence: its confidence, the runner-up, the
                   share of the answer it holds) or ``unlocated`` (no span holds even :data:`UNLOCATED_BELOW` of
                   the answer, or there was nothing to search)
=================  ============================================================================================

Every located or verified question carries ``metadata.located``, its *located record*: ``method`` (``offline``,
``offline+llm`` when a model confirmed it, ``given`` for kept evidence), ``status``, ``scope`` (``documents`` or
``corpus``), ``confidence`` (the question's: the lowest of the needed documents'), ``threshold``, ``reason`` and,
per document, the span (``doc_id``, ``start``, ``end``, ``text``), its score, confidence, margin and runner-up
(:meth:`~ragexam.questions.locate.Location.to_dict`).  Nothing is dropped and nothing below the threshold is
written as evidence.

Next to ``out`` (``qa.jsonl``): ``qa.card.json`` (format :data:`CARD_FORMAT`: the corpus, the settings' signature,
the counts, the model's calls and cost) and ``qa.review.csv``, the review sheet ``ragexam review apply`` reads
(:mod:`ragexam.questions.locate_review`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from ragexam import fmt
from ragexam.data.evidence import CorpusText
from ragexam.data.schema import Corpus, QASet, Question
from ragexam.errors import InputError
from ragexam.questions.locate import Location, LocateSettings, Locator, confidence_text

if TYPE_CHECKING:  # pragma: no cover
    from ragexam.llm.batch import CallPlan
    from ragexam.llm.settings import LLMSettings
    from ragexam.retrieval.cache import Cache
    from ragexam.retrieval.embedders import Embedder

__all__ = ["LocateResult", "LocatedQuestion", "locate_set", "plan_set", "CARD_FORMAT", "STATUSES",
           "UNLOCATED_BELOW", "write_located", "decide", "status_reason", "located_record"]

CARD_FORMAT = "ragexam-located-card/1"
#: every status a question of the located set can have, in the order the counts are shown
STATUSES = ("located", "uncertain", "unlocated", "kept", "kept_unverified", "out_of_corpus")
#: a question's best span holding less of the answer than this is ``unlocated`` (not worth a reviewer's look)
UNLOCATED_BELOW = 0.2
PathLike = Union[str, Path]
#: a corpus: a path, a bundled name or a loaded :class:`~ragexam.data.schema.Corpus`; a question set likewise
CorpusInput = Union[str, Path, Corpus]
QAInput = Union[str, Path, QASet]


@dataclass
class LocatedQuestion:
    """One question's outcome: its ``status`` (:data:`STATUSES`), the ``evidence`` written, the ``locations`` (one
    per document searched), the ``reason`` in words and the QA ``record`` written to the located set."""

    query_id: str
    status: str
    record: Dict[str, Any]
    evidence: List[str] = field(default_factory=list)
    locations: List[Location] = field(default_factory=list)
    reason: str = ""
    confidence: Optional[float] = None


@dataclass
class LocateResult:
    """What :func:`locate_set` did: every question's outcome, the counts by status, the card, the notes."""

    questions: List[LocatedQuestion]
    card: Dict[str, Any]
    notes: List[str] = field(default_factory=list)
    files: Dict[str, str] = field(default_factory=dict)
    #: what the model's checks gave (``--model``; :func:`_model_checks`), empty without a model
    model_checks: Dict[str, Any] = field(default_factory=dict)

    @property
    def unknown_doc_ids(self) -> Dict[str, List[str]]:
        """``{query_id: relevant documents not in the corpus}`` of the questions that named some."""
        return {q.query_id: q.record["metadata"]["located"]["unknown_doc_ids"] for q in self.questions
                if q.record.get("metadata", {}).get("located", {}).get("unknown_doc_ids")}

    @property
    def model_failed(self) -> bool:
        """A model was asked and every question's check failed: the model step produced nothing."""
        return bool(self.model_checks.get("questions")) and \
            self.model_checks.get("failed") == self.model_checks["questions"]

    @property
    def counts(self) -> Dict[str, int]:
        out = {s: 0 for s in STATUSES}
        for q in self.questions:
            out[q.status] += 1
        return out

    @property
    def records(self) -> List[Dict[str, Any]]:
        return [q.record for q in self.questions]

    @property
    def searched(self) -> int:
        """Questions the locator searched (answerable, without evidence)."""
        c = self.counts
        return c["located"] + c["uncertain"] + c["unlocated"]

    def to_dict(self) -> Dict[str, Any]:
        return {"counts": self.counts, "searched": self.searched, "notes": list(self.notes), "files": dict(self.files),
                "card": self.card,
                "questions": [{"query_id": q.query_id, "status": q.status, "confidence": q.confidence,
                               "reason": q.reason, "evidence": q.evidence} for q in self.questions]}


def _question_record(q: Question) -> Dict[str, Any]:
    """``q`` (a :class:`~ragexam.data.schema.Question`) as a line of a QA file, its fields in the usual order."""
    from ragexam.data.convert import ragexam_record

    return ragexam_record(q)


def _verify_kept(q: Question, corpus_text: CorpusText) -> LocatedQuestion:
    """A question that has evidence: kept as is, its evidence checked against the corpus."""
    missing = [i for i, ev in enumerate(q.evidence, 1) if not corpus_text.locate(ev)]
    rec = _question_record(q)
    located = {"method": "given", "status": "kept", "verified": not missing}
    reason = ""
    if missing:
        reason = (f"evidence string{'s' if len(missing) > 1 else ''} {', '.join(map(str, missing))} occur"
                  f"{'' if len(missing) > 1 else 's'} in no document of the corpus (compared after NFKC and whitespace "
                  "normalization): fix the string or the corpus")
        located.update({"missing": missing, "reason": reason})
    rec.setdefault("metadata", {})["located"] = located
    return LocatedQuestion(q.query_id, "kept_unverified" if missing else "kept", rec, list(q.evidence), reason=reason)


def status_reason(status: str, locs: Sequence[Location], threshold: float, scope_note: str,
                  verdict: str = "") -> str:
    """Why a searched question has its ``status`` (:func:`decide`), in words (``""`` for a plain located one).
    Confidences read as the sheet shows them (:func:`~ragexam.questions.locate.confidence_text`)."""
    if status == "located":
        bits = ["a model confirmed the span" + (
            f" (offline confidence {confidence_text(min(x.confidence for x in locs if x.needed))})"
            if verdict == "confirmed" else "")] if verdict == "confirmed" else []
        return "; ".join(bits + ([scope_note] if scope_note else []))
    if verdict == "refuted":
        return "the model did not confirm that the span (or its runner-up) supports the answer" + (
            f" ({scope_note})" if scope_note else "")
    needed = [x for x in locs if x.needed]
    if not needed or all(x.best is None for x in needed):
        return "nothing to search: the documents have no sentence" + (f" ({scope_note})" if scope_note else "")
    weak = min(needed, key=lambda x: x.confidence)
    bits = [f"confidence {confidence_text(weak.confidence, threshold)} < {threshold:g}"]
    if weak.best is not None:
        held = max(x.best.coverage for x in needed if x.best is not None) if status == "unlocated" else \
            weak.best.coverage
        where = weak.doc_id if status != "unlocated" else next(
            x.doc_id for x in needed if x.best is not None and x.best.coverage == held)
        bits.append(f"the span in {where} holds {held:.0%} of the "
                    + ("answer" if weak.has_answer else "question's words (it has no answer key, ground_truth: only "
                                                        "the question was matched)"))
        if status == "unlocated":
            bits.append(f"nothing holds {UNLOCATED_BELOW:.0%} of it")
        if weak.runner_up is not None and weak.margin < 0.3:
            bits.append(f"the runner-up scores within {weak.margin:.2f}")
    elif not weak.has_answer:
        bits.append("the question has no answer key (ground_truth): only the question was matched")
    return "; ".join(bits) + (f" ({scope_note})" if scope_note else "")


def decide(locs: Sequence[Location], threshold: float, verdict: str = "") -> Tuple[str, float]:
    """``(status, confidence)`` of a searched question from its locations (module docstring) and the model's
    ``verdict`` (:func:`ragexam.questions.locate_llm.confirm`: ``confirmed`` locates, ``refuted`` leaves it
    uncertain; ``failed`` or none: the offline decision).  The confidence is the stored one (4 decimals), the
    one compared with the threshold and shown."""
    needed = [x for x in locs if x.needed]
    if not needed or any(x.best is None for x in needed):
        return "unlocated", 0.0
    conf = round(min(x.confidence for x in needed), 4)
    if verdict == "confirmed":
        return "located", conf
    if verdict == "refuted":
        return "uncertain", conf
    if conf >= threshold:
        return "located", conf
    if max(x.best.coverage for x in needed) < UNLOCATED_BELOW:
        return "unlocated", conf
    return "uncertain", conf


def located_question(q: Question, locs: List[Location], settings: LocateSettings, *, scope: str, method: str = "offline",
                     notes: Sequence[str] = (), checks: Optional[List[Dict[str, Any]]] = None,
                     verdict: str = "") -> LocatedQuestion:
    """The outcome of a searched question from its ``locs`` (:meth:`Locator.locate`, possibly checked by a model:
    ``verdict`` and ``checks``)."""
    status, conf = decide(locs, settings.threshold, verdict)
    scope_note = "; ".join(notes)
    rec = _question_record(q)
    evidence: List[str] = []
    if status == "located":
        evidence = [x.best.span.text for x in locs if x.needed and x.best is not None]
        rec["evidence"] = evidence
        if scope == "corpus":
            docs = list(dict.fromkeys(x.best.span.doc_id for x in locs if x.needed and x.best is not None))
            rec["relevant_doc_ids"] = docs
            rec.pop("relevance", None)
    else:
        rec["evidence_status"] = status
    reason = status_reason(status, locs, settings.threshold, scope_note, verdict)
    record = located_record(locs, settings, status, conf, scope=scope, method=method, reason=reason, checks=checks)
    rec["answerable"] = True
    rec.setdefault("metadata", {})["located"] = record
    return LocatedQuestion(q.query_id, status, _ordered(rec), evidence, list(locs), reason, conf)


def located_record(locs: Sequence[Location], settings: LocateSettings, status: str, conf: float, *, scope: str,
                   method: str = "offline", reason: str = "", checks: Optional[List[Dict[str, Any]]] = None
                   ) -> Dict[str, Any]:
    """The *located record* of a searched question (module docstring): what ``metadata.located`` holds."""
    record: Dict[str, Any] = {"method": method, "status": status, "scope": scope, "confidence": round(conf, 4),
                              "threshold": settings.threshold, "spans": [x.to_dict() for x in locs],
                              "signature": settings.signature}
    if reason:
        record["reason"] = reason
    if checks:
        record["checks"] = checks
    return record


def _ordered(rec: Dict[str, Any]) -> Dict[str, Any]:
    """The record's fields in the order of docs/data-format.md (``evidence_status`` after ``evidence``)."""
    order = ("query_id", "question", "relevant_doc_ids", "relevance", "evidence", "evidence_status", "ground_truth",
             "type", "answerable", "metadata")
    return {**{k: rec[k] for k in order if k in rec}, **{k: v for k, v in rec.items() if k not in order}}


def _search_plan(q: Question, corpus: Corpus) -> Tuple[List[str], str, List[str]]:
    """``(documents, scope, notes)``: where a question is searched."""
    known = [d for d in q.relevant_docs if d in corpus]
    notes: List[str] = []
    unknown = [d for d in q.relevant_docs if d not in corpus]
    if unknown:
        notes.append(f"relevant document(s) {', '.join(unknown)} are not in the corpus: "
                     + ("searched in the others" if known else "the whole corpus was searched instead"))
    if known:
        return known, "documents", notes
    if not unknown:
        notes.append("no relevant document given: the whole corpus was searched")
    return [], "corpus", notes


def unknown_ids(q: Question, corpus: Corpus) -> List[str]:
    """The relevant documents of ``q`` that are not in ``corpus``."""
    return [d for d in q.relevant_docs if d not in corpus]


def _load_questions(qa: QAInput) -> QASet:
    """The question set, strictly but for two things ``locate-evidence`` is for: evidence that is not in the corpus
    (reported per question, not refused: it is not checked against the corpus here) and questions with an answer
    but no judgments, which are read as answerable (their evidence is looked for in the whole corpus)."""
    from dataclasses import replace as _replace

    from ragexam.data.loaders import parse_qa
    from ragexam.data.problems import ERROR, ProblemCollector

    if isinstance(qa, QASet):
        return qa
    col = ProblemCollector(strict=False)
    parsed = parse_qa(qa, col)
    bad = [p for p in col.problems if p.level == ERROR and p.kind != "no_judgments"]
    if bad:
        p = bad[0]
        raise InputError(p.message, source=p.file, line=p.line, field=p.field)
    unjudged = {p.line for p in col.problems if p.kind == "no_judgments"}
    return QASet([_replace(q, answerable=True) if q.line in unjudged else q for q in parsed.questions],
                 source=parsed.file)


@dataclass
class _Offline:
    """The offline pass: the loaded corpus and questions, the locator and where each question was found."""

    corpus: Corpus
    qa: QASet
    locator: Locator
    todo: List[Any]
    found: Dict[str, Tuple[List[Location], str, List[str]]]


def _offline(corpus: CorpusInput, qa: QAInput, settings: LocateSettings,
             progress: Optional[Callable[[int, int], None]], embedder: Optional[Embedder], cache: Optional[Cache]
             ) -> _Offline:
    from ragexam.data.loaders import load_corpus

    corpus_obj = corpus if isinstance(corpus, Corpus) else load_corpus(corpus)
    qa_obj = _load_questions(qa)
    if len(corpus_obj) == 0:
        raise InputError("the corpus has no documents; expected at least one.", source=str(corpus_obj.source or "Corpus"))
    locator = Locator(corpus_obj.documents, settings, embedder=embedder, cache=cache)
    todo = [q for q in qa_obj if q.answerable and not q.evidence]
    locator.prepare(d for q in todo for d in q.relevant_docs if d in corpus_obj)
    found: Dict[str, Tuple[List[Location], str, List[str]]] = {}
    for i, q in enumerate(todo, 1):
        docs, scope, notes = _search_plan(q, corpus_obj)
        found[q.query_id] = (locator.locate(q.question, q.ground_truth, docs), scope, notes)
        if progress is not None:
            progress(i, len(todo))
    return _Offline(corpus_obj, qa_obj, locator, todo, found)


def plan_set(corpus: CorpusInput, qa: QAInput, llm: LLMSettings, *, settings: Optional[LocateSettings] = None,
             embedder: Optional[Embedder] = None, cache: Optional[Cache] = None) -> CallPlan:
    """The dry run of :func:`locate_set` with a model: the spans are located (offline), the model's calls counted
    and priced (:func:`ragexam.questions.locate_llm.plan`), nothing sent."""
    from ragexam.questions.locate_llm import plan

    settings = settings or LocateSettings()
    off = _offline(corpus, qa, settings, None, embedder, cache)
    return plan(llm, [(q, off.found[q.query_id][0]) for q in off.todo], settings, off.locator.language)


def locate_set(corpus: CorpusInput, qa: QAInput, *, settings: Optional[LocateSettings] = None,
               llm: Optional[LLMSettings] = None, progress: Optional[Callable[[int, int], None]] = None,
               embedder: Optional[Embedder] = None, cache: Optional[Cache] = None) -> LocateResult:
    """Locate the evidence of every answerable question of ``qa`` without evidence in ``corpus`` (module
    docstring); nothing is written (:func:`write_located` writes the result).  ``llm``: an
    :class:`~ragexam.llm.settings.LLMSettings` whose model confirms each proposed span
    (:mod:`ragexam.questions.locate_llm`)."""
    settings = settings or LocateSettings()
    off = _offline(corpus, qa, settings, progress, embedder, cache)
    checked: Dict[str, Tuple[List[Location], str, str, List[Dict[str, Any]]]] = {}
    usage: Dict[str, Any] = {}
    if llm is not None and off.todo:
        from ragexam.questions.locate_llm import confirm

        checked, usage = confirm(llm, [(q, off.found[q.query_id][0]) for q in off.todo], settings,
                                 lang=off.locator.language)
    corpus_text = CorpusText(off.corpus.documents)
    out: List[LocatedQuestion] = []
    for q in off.qa:
        if not q.answerable:
            out.append(LocatedQuestion(q.query_id, "out_of_corpus", _question_record(q)))
        elif q.evidence:
            out.append(_verify_kept(q, corpus_text))
        else:
            locs, scope, notes = off.found[q.query_id]
            method, checks, verdict = "offline", None, ""
            if q.query_id in checked:
                locs, verdict, method, checks = checked[q.query_id]
            lq = located_question(q, locs, settings, scope=scope, method=method, notes=notes, checks=checks,
                                  verdict=verdict)
            missing = unknown_ids(q, off.corpus)
            if missing:
                lq.record["metadata"]["located"]["unknown_doc_ids"] = missing
            out.append(lq)
    result = LocateResult(out, {}, model_checks=_model_checks(checked) if llm is not None and off.todo else {})
    result.card = _card(off.corpus, off.qa, settings, result, llm, usage)
    result.notes = _notes(result)
    return result


def _model_checks(checked: Mapping[str, Tuple[Any, str, str, List[Dict[str, Any]]]]) -> Dict[str, Any]:
    """What the model's checks gave: questions by verdict, and the failed calls by reason (the kind before the
    colon: ``invalid_reply``, ``timeout``...)."""
    verdicts = [verdict for _, verdict, _, checks in checked.values() if checks]  # a question with no span: not asked
    reasons: Dict[str, int] = {}
    for _, _, _, checks in checked.values():
        for c in checks:
            if c.get("status") == "failed":
                kind = str(c.get("reason") or "unknown").split(":", 1)[0].strip() or "unknown"
                reasons[kind] = reasons.get(kind, 0) + 1
    return {"questions": len(verdicts), **{v: verdicts.count(v) for v in ("confirmed", "refuted", "failed")},
            "failed_calls": dict(sorted(reasons.items(), key=lambda kv: -kv[1]))}


def _card(corpus: Corpus, qa: QASet, settings: LocateSettings, result: LocateResult, llm: Optional[LLMSettings],
          usage: Dict[str, Any]) -> Dict[str, Any]:
    card = {"format": CARD_FORMAT, "kind": "located", "signature": settings.signature,
            "threshold": settings.threshold, "corpus": {"source": str(corpus.source) if corpus.source else None,
                                                        "n_documents": len(corpus)},
            "qa": {"source": str(qa.source) if qa.source else None, "n_questions": len(qa)},
            "counts": result.counts, "model": llm.model if llm is not None else None,
            "this_run": {"usage": usage}}
    unknown = result.unknown_doc_ids
    if unknown:
        card["unknown_doc_ids"] = {"questions": len(unknown), "ids": sorted({d for ids in unknown.values()
                                                                             for d in ids})}
    if result.model_checks:
        card["model_checks"] = result.model_checks
    return card


def _notes(result: LocateResult) -> List[str]:
    c = result.counts
    notes = []
    mc = result.model_checks
    if mc.get("failed"):
        why = ", ".join(f"{k} {n}" for k, n in mc["failed_calls"].items())
        calls = sum(mc["failed_calls"].values())
        notes.append(f"the model's check failed for {mc['failed']} of the {fmt.plural(mc['questions'], 'question')} "
                     f"it was asked of ({why} call{'s' if calls > 1 else ''}; metadata.located.checks says why): "
                     "their offline decision stands; run again to retry (replies that worked are cached)")
    if c["uncertain"] or c["unlocated"]:
        notes.append(f"{fmt.plural(c['uncertain'] + c['unlocated'], 'question')} got no evidence "
                     f"(uncertain {c['uncertain']}, unlocated {c['unlocated']}): review them (the review sheet), or "
                     "grade by document (--relevance doc); `ragexam run` by evidence refuses a set with "
                     "answerable questions without evidence")
    if c["kept_unverified"]:
        notes.append(f"{fmt.plural(c['kept_unverified'], 'question')} already had evidence that occurs in no "
                     "document: fix them (metadata.located.missing names the strings)")
    unknown = result.unknown_doc_ids
    if unknown:
        ids = sorted({d for v in unknown.values() for d in v})
        notes.append(f"{fmt.plural(len(unknown), 'question')} named relevant documents that are not in the corpus: "
                     f"{', '.join(ids[:8])}{' ...' if len(ids) > 8 else ''} (first: {next(iter(unknown))}); "
                     "searched in their other relevant documents, or in the whole corpus when they had none (the "
                     "located span's document then replaces the id); `validate` and `run` refuse an unknown id: "
                     "fix it in the question set (metadata.located.unknown_doc_ids)")
    corpus_scope = sum(1 for q in result.questions if q.record.get("metadata", {}).get("located", {}).get("scope")
                       == "corpus" and q.query_id not in unknown)
    if corpus_scope:
        notes.append(f"{fmt.plural(corpus_scope, 'question')} had no relevant document: searched in the whole corpus "
                     "(metadata.located.scope = corpus; the span's document became relevant when located)")
    return notes


def write_located(result: LocateResult, out: PathLike) -> Dict[str, Path]:
    """Write the located set to ``out``, its card and its review sheet next to it (each atomically)."""
    from ragexam.questions.locate_review import sheet_text
    from ragexam.questions.output import _jsonl, _write, side_paths

    paths = side_paths(out)
    _write(paths["qa"], _jsonl(result.records))
    _write(paths["card"], json.dumps(result.card, ensure_ascii=False, indent=2, allow_nan=False) + "\n")
    _write(paths["review"], "\ufeff" + sheet_text(result.records))  # with a BOM: Excel then reads UTF-8
    result.files = {k: str(v) for k, v in paths.items() if k != "rejects"}
    return {k: v for k, v in paths.items() if k != "rejects"}
