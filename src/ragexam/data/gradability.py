"""Which questions each grading rule can grade, the rule ``ragexam run`` picks, and why it would refuse.

The one decision ``run`` makes about a question set (:func:`choose_mode`) and ``validate``'s prediction of it
(:func:`gradability`) are this module's, so the two cannot disagree.

Rules
-----
A question is *answerable* unless it is marked ``answerable: false``.  Under the rule ``evidence`` an answerable
question is *gradable* when it has an evidence string; under ``doc`` when it has a relevant document (grade > 0).
The *default* rule (no ``--relevance``) is ``evidence`` when some answerable question has evidence, else ``doc``.
A run under a rule that cannot grade every answerable question refuses: nothing is graded on a subset behind the
user's back.

Why a question lacks what the rule needs is said when it can be told: a field that looks like the one missing
(``evidance``: did you mean ``evidence``?) or ``evidence_status`` (``unlocated``/``uncertain``, written by
``ragexam locate-evidence`` for a span it did not find with confidence: review it).
"""

from __future__ import annotations

import difflib
import functools
from dataclasses import dataclass, field
from typing import AbstractSet, Dict, List, Optional, Sequence, Tuple

from ragexam import fmt
from ragexam.data.schema import Question
from ragexam.errors import InputError, command, setting

__all__ = ["RuleCount", "Gradability", "gradability", "choose_mode", "similar_field", "counts_line", "RULE_NEEDS"]

#: what each rule needs of an answerable question, in words
RULE_NEEDS = {"evidence": "evidence strings", "doc": "relevant documents"}
#: the top-level fields a question's evidence and judgments are read from (a near miss of one is worth naming)
_JUDGMENT_FIELDS = ("evidence", "relevant_doc_ids", "relevance")
#: how alike an unknown field and a known one must be to be named (:func:`difflib.SequenceMatcher` ratio)
SIMILAR_AT = 0.8


@functools.lru_cache(maxsize=4096)
def similar_field(name: str, known: Tuple[str, ...]) -> Optional[str]:
    """The known field ``name`` looks like (case and ``-``/``_``/space ignored, or a :data:`SIMILAR_AT` close
    spelling), or ``None``.  ``evidance`` → ``evidence``; ``Relevant-Doc-IDs`` → ``relevant_doc_ids``.  Memoized:
    a corpus of a million records with the same extra fields asks once per field name."""
    flat = name.strip().lower().replace("-", "_").replace(" ", "_")
    if flat in known and flat != name:
        return flat
    hit = difflib.get_close_matches(flat, list(known), n=1, cutoff=SIMILAR_AT)
    return hit[0] if hit and hit[0] != name else None


def _has(q: Question, mode: str, known: Optional[AbstractSet[str]] = None) -> bool:
    if mode == "evidence":
        return bool(q.evidence)
    return any(d in known for d in q.relevant_docs) if known is not None else bool(q.relevant_docs)


def _why(q: Question, mode: str, known: Optional[AbstractSet[str]] = None) -> str:
    """Why ``q`` lacks what ``mode`` needs, when it can be told (``""`` otherwise)."""
    if mode == "doc" and known is not None and q.relevant_docs:
        return f"relevant documents not in the corpus: {', '.join(q.relevant_docs[:3])}"
    wanted = ("evidence",) if mode == "evidence" else ("relevant_doc_ids", "relevance")
    for key in q.metadata:
        like = similar_field(str(key), _JUDGMENT_FIELDS)
        if like in wanted:
            return f"its field {key!r} looks like {like!r}"
    status = q.metadata.get("evidence_status")
    if mode == "evidence" and isinstance(status, str):
        return f"evidence_status {status}"
    return ""


@dataclass(frozen=True)
class RuleCount:
    """One rule on one question set: ``gradable`` of ``answerable`` questions, and the ``lacking`` ones with why
    (``(query_id, reason or "")``)."""

    mode: str
    gradable: int
    answerable: int
    lacking: Tuple[Tuple[str, str], ...] = ()

    @property
    def complete(self) -> bool:
        return self.answerable > 0 and self.gradable == self.answerable

    def to_dict(self) -> Dict[str, object]:
        return {"mode": self.mode, "gradable": self.gradable, "answerable": self.answerable,
                "complete": self.complete, "lacking": [{"query_id": q, "why": w} for q, w in self.lacking]}

    def lacking_text(self, limit: int = 5) -> str:
        shown = [f"{q} ({w})" if w else q for q, w in self.lacking[:limit]]
        more = len(self.lacking) - limit
        return ", ".join(shown) + (f" and {more} more" if more > 0 else "")


@dataclass(frozen=True)
class Gradability:
    """What each rule can grade (``rules``), the rule a run picks without ``--relevance`` (``default``), the
    questions' ``evidence_status`` counts, and ``refusal``: the reason the run of ``requested`` (default: the
    default rule) would refuse, with the fix (``None``: it would grade every answerable question)."""

    answerable: int
    rules: Dict[str, RuleCount]
    default: str
    requested: Optional[str] = None
    statuses: Dict[str, int] = field(default_factory=dict)
    refusal: Optional[str] = None

    @property
    def mode(self) -> str:
        """The rule the run would use."""
        return self.requested or self.default

    def to_dict(self) -> Dict[str, object]:
        return {"answerable": self.answerable, "default": self.default, "requested": self.requested,
                "mode": self.mode, "rules": {m: r.to_dict() for m, r in self.rules.items()},
                "evidence_status": dict(self.statuses), "refusal": self.refusal}


def gradability(questions: Sequence[Question], requested: Optional[str] = None, *, corpus: str = "CORPUS",
                qa: str = "QA", known: Optional[AbstractSet[str]] = None) -> Gradability:
    """Count what each rule grades and decide whether the run of ``requested`` (``None``: the default rule) would
    refuse (module docstring).  ``corpus``/``qa`` name the files in the suggested ``locate-evidence`` command;
    ``known``: the corpus's document ids, when read -- a question whose relevant documents are none of them is not
    gradable by ``doc`` (``validate`` reports them as errors too)."""
    if requested is not None and requested not in RULE_NEEDS:
        raise InputError(f"received {requested!r}; expected one of {', '.join(RULE_NEEDS)}.", source="relevance",
                         field="relevance")
    answerable = [q for q in questions if q.answerable]
    rules = {m: RuleCount(m, sum(_has(q, m, known) for q in answerable), len(answerable),
                          tuple((q.query_id, _why(q, m, known)) for q in answerable if not _has(q, m, known)))
             for m in RULE_NEEDS}
    default = "evidence" if rules["evidence"].gradable else "doc"
    statuses: Dict[str, int] = {}
    for q in answerable:
        s = q.metadata.get("evidence_status")
        if isinstance(s, str):
            statuses[s] = statuses.get(s, 0) + 1
    g = Gradability(len(answerable), rules, default, requested, statuses)
    return Gradability(g.answerable, rules, default, requested, statuses, _refusal(g, corpus, qa))


def _refusal(g: Gradability, corpus: str, qa: str) -> Optional[str]:
    if not g.answerable:
        return ("no question is answerable (none has evidence or a relevant document), so there is nothing to "
                "retrieve; add questions with evidence or relevant documents.")
    rule = g.rules[g.mode]
    if rule.complete:
        return None
    what = RULE_NEEDS[g.mode]
    chosen = f"the rule {g.mode} ({setting('relevance', g.mode)})" if g.requested else f"the default rule, {g.mode},"
    head = (f"{chosen} needs {what} for every answerable question, but {rule.answerable - rule.gradable} of "
            f"{rule.answerable} have none: {rule.lacking_text()}.")
    fixes: List[str] = []
    if any(w.startswith("its field") for _, w in rule.lacking):
        fixes.append("rename the misspelt field")
    other = "doc" if g.mode == "evidence" else "evidence"
    if g.rules[other].complete:
        fixes.append(f"grade every question by {'document' if other == 'doc' else 'evidence'} with "
                     f"{setting('relevance', other)} ({g.rules[other].gradable} of {g.answerable} gradable)")
    if g.mode == "evidence":
        if any(w.startswith("evidence_status") for _, w in rule.lacking):
            fixes.append("review the located spans and apply the review "
                         + command(f"ragexam review apply --qa {qa} --out REVIEWED.jsonl",
                                   f"ragexam.api.review_apply({qa!r}, 'REVIEWED.jsonl')"))
        else:
            fixes.append("find their evidence in the documents with "
                         + command(f"ragexam locate-evidence --corpus {corpus} --qa {qa} --out LOCATED.jsonl",
                                   f"ragexam.api.locate_evidence({corpus!r}, {qa!r}, out='LOCATED.jsonl')"))
    else:
        fixes.append("add relevant_doc_ids to them")
    fixes.append("or mark them answerable: false if the corpus does not answer them")
    return f"{head} Fix: {'; '.join(fixes)}."


def choose_mode(requested: Optional[str], questions: Sequence[Question], source: str, *, corpus: str = "CORPUS"
                ) -> str:
    """The rule a run grades ``questions`` with: ``requested``, or the default; :class:`InputError` naming
    ``source`` (the question set) with the reason and the fix when that rule cannot grade every answerable
    question (:func:`gradability`)."""
    g = gradability(questions, requested, corpus=corpus, qa=source)
    if g.refusal is not None:
        raise InputError(g.refusal, source=source, field="relevance")
    return g.mode


def counts_line(g: Gradability) -> str:
    """Each rule's count in one line: ``evidence 64 of 65 gradable (the default) · doc 65 of 65``."""
    parts = []
    for m, r in g.rules.items():
        tag = " (the default)" if m == g.default else ""
        parts.append(f"{m}: {r.gradable} of {fmt.plural(r.answerable, 'answerable question')} gradable{tag}")
    return " · ".join(parts)
