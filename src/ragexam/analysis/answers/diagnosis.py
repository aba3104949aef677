"""Stage attribution: for each question, which stage of the pipeline failed (or did not).

The lecture's rule (section 7): record whether retrieval found the evidence and whether the
generator used it *separately* -- a good retrieval score can hide a missed answer, and a
correct answer can come without the evidence.  Each (pipeline, question) gets one label:

==================  ============================================================================
label               when
==================  ============================================================================
ok                  answerable; evidence retrieved; answer correct (and not unfaithful)
retrieval_miss      answerable; evidence not retrieved; answer not correct
evidence_split      answerable; evidence not retrieved because the chunking cut it (the run labelled the miss
                    ``evidence_split``: a top-k chunk holds part of it); answer not correct
generation_miss     answerable; evidence retrieved; answer not correct, or correct but unfaithful
lucky               answerable; evidence not retrieved; answer correct anyway
abstained_ok        out-of-corpus; the answer declined
hallucinated        out-of-corpus; the answer gave an answer (invented: the documents lack it)
unjudged            a needed verdict is missing; ``reason`` says which and why
==================  ============================================================================

Inputs (:class:`StageInputs`):

* **retrieved** -- ``True``/``False``/``None`` (unknown).  From a run: ``first_rank <= k``
  (``first_rank`` from ``per_question.csv``; ``k`` = the number of chunks the generator was
  given).  Without a run, from the answer's own ``contexts``: ``True`` if any evidence string
  of the question occurs in them (after :func:`ragexam.data.normalization.normalize`).  Else
  unknown.  Out-of-corpus questions need no retrieval verdict.
* **correct** -- answerable questions: ``True``/``False``/``None``.  From the judge's
  ``answer_correctness`` (``correct`` is correct; ``partially_correct`` and ``incorrect`` are
  not), or from a text-metric threshold (``--correct-if chrf>=0.5``).
* **faithful** -- ``True``/``False``/``None``: the judge's ``faithfulness`` (every claim
  supported).  ``None`` (not judged, no judge, or no claims) never turns ``ok`` into a miss.
* **abstained** -- out-of-corpus questions: the judge's ``abstention`` verdict, or the phrase
  list of :mod:`ragexam.metrics.verdicts`.

``unjudged`` reasons: ``no_answer``, ``no_correctness_source`` (no judge and no
``--correct-if``), ``retrieval_unknown`` (answer verdict known but no run and no contexts),
``judge:<reason>`` (the judge left it unjudged, e.g. ``judge:invalid_json``).

:func:`attribute` applies the table to one question; :class:`Attribution` holds all of them
with counts per pipeline (:meth:`Attribution.counts`) and per pipeline x question type
(:meth:`Attribution.matrix`).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Optional, Sequence

from ragexam.storage.score_summary import AttributionSection, StageVerdict

__all__ = ["LABELS", "StageInputs", "StageResult", "Attribution", "attribute", "attribute_all",
           "evidence_in_contexts"]

#: the labels, in report order
LABELS = ("ok", "retrieval_miss", "evidence_split", "generation_miss", "lucky", "abstained_ok", "hallucinated",
          "unjudged")


@dataclass(frozen=True)
class StageInputs:
    """What is known about one (pipeline, question); see the module docstring."""

    pipeline: str
    query_id: str
    type: Optional[str]
    answerable: bool
    retrieved: Optional[bool] = None
    first_rank: Optional[int] = None
    correct: Optional[bool] = None
    correct_detail: Optional[str] = None
    faithful: Optional[bool] = None
    abstained: Optional[bool] = None
    missing: Optional[str] = None  # why the answer verdict is unknown (correct / abstained is None)
    evidence_split: bool = False  # the run labelled the retrieval miss evidence_split (the chunking cut it)


@dataclass(frozen=True)
class StageResult:
    """The label of one (pipeline, question), with the inputs that produced it."""

    inputs: StageInputs
    label: str
    reason: Optional[str] = None

    def to_record(self) -> StageVerdict:
        """The answer's entry of the score's ``attribution.questions``."""
        i = self.inputs
        return StageVerdict(pipeline=i.pipeline, query_id=i.query_id, type=i.type, answerable=i.answerable,
                            label=self.label, reason=self.reason, retrieved=i.retrieved, first_rank=i.first_rank,
                            correct=i.correct, correct_detail=i.correct_detail, faithful=i.faithful,
                            abstained=i.abstained)


def attribute(x: StageInputs) -> StageResult:
    """The label of one question (the table in the module docstring)."""
    if not x.answerable:
        if x.abstained is None:
            return StageResult(x, "unjudged", x.missing or "no_abstention_verdict")
        return StageResult(x, "abstained_ok" if x.abstained else "hallucinated")
    if x.correct is None:
        return StageResult(x, "unjudged", x.missing or "no_correctness_source")
    answer_ok = x.correct and x.faithful is not False
    if x.retrieved is None:
        return StageResult(x, "unjudged", "retrieval_unknown (answer " + ("correct" if x.correct else "not correct")
                           + ")")
    if x.retrieved:
        return StageResult(x, "ok" if answer_ok else "generation_miss")
    return StageResult(x, "lucky" if x.correct else "evidence_split" if x.evidence_split else "retrieval_miss")


@dataclass
class Attribution:
    """Every question's label, plus the settings that produced them (``signature``)."""

    results: List[StageResult]
    signature: str = ""
    notes: List[str] = field(default_factory=list)

    @property
    def pipelines(self) -> List[str]:
        return list(dict.fromkeys(r.inputs.pipeline for r in self.results))

    def counts(self, pipeline: Optional[str] = None) -> Dict[str, int]:
        """Label -> count (every label present, 0 included) for one pipeline or all."""
        c = Counter(r.label for r in self.results if pipeline is None or r.inputs.pipeline == pipeline)
        return {lab: c.get(lab, 0) for lab in LABELS}

    def matrix(self, pipeline: str) -> Dict[str, Dict[str, int]]:
        """``{type: {label: count}}`` for one pipeline (type ``(none)`` when unlabelled), types sorted."""
        out: Dict[str, Counter] = {}
        for r in self.results:
            if r.inputs.pipeline == pipeline:
                out.setdefault(r.inputs.type or "(none)", Counter())[r.label] += 1
        return {t: {lab: out[t].get(lab, 0) for lab in LABELS} for t in sorted(out)}

    def unjudged_reasons(self, pipeline: Optional[str] = None) -> Dict[str, int]:
        c = Counter(r.reason for r in self.results
                    if r.label == "unjudged" and (pipeline is None or r.inputs.pipeline == pipeline))
        return dict(c.most_common())

    def to_section(self) -> AttributionSection:
        """The score's ``attribution`` section."""
        return AttributionSection(signature=self.signature, labels=list(LABELS), notes=list(self.notes),
                                  counts={p: self.counts(p) for p in self.pipelines},
                                  by_type={p: self.matrix(p) for p in self.pipelines},
                                  unjudged_reasons={p: self.unjudged_reasons(p) for p in self.pipelines},
                                  questions=[r.to_record() for r in self.results])

    def to_dict(self) -> Dict[str, object]:
        """The section's JSON object."""
        return self.to_section().to_dict()


def attribute_all(inputs: Iterable[StageInputs], *, signature: str = "",
                  notes: Sequence[str] = ()) -> Attribution:
    """:func:`attribute` for each input, collected into an :class:`Attribution`."""
    return Attribution([attribute(x) for x in inputs], signature, list(notes))


def evidence_in_contexts(evidence: Sequence[str], contexts: Sequence[str], *,
                         ignore_punctuation: bool = False) -> Optional[bool]:
    """``True`` if any context covers any evidence string (the text-level rule of
    :class:`ragexam.data.evidence.EvidenceMatcher`), ``False`` if none does, ``None`` when the question has no
    evidence strings or there are no contexts."""
    if not evidence or not contexts:
        return None
    from ragexam.data.evidence import EvidenceMatcher

    matcher = EvidenceMatcher(ignore_punctuation=ignore_punctuation)
    units = [(str(i), e) for i, e in enumerate(evidence)]
    return any(matcher.covered(c, units) for c in contexts)
