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

**Caveats** (``StageResult.caveats``): a label is kept, but marked, when what decided it is not worth the
label's word:

* ``judge_unchecked:<input>`` -- the verdict it rests on (``correct``, ``faithful``, ``abstained``) came from a
  judge metric that was not shown to separate good from bad (its trust verdict, :mod:`ragexam.analysis.answers.
  trusted`: no judge-check, one that did not separate, one measured on another data set, or a metric no check can
  measure): read the label as the judge's opinion, not a finding;
* ``short_answer`` -- an answer called not correct that is a short piece of the key (``"12시간"`` against
  "긴급 장애는 접수 후 12시간 이내에 ..."; :func:`short_answer`): a terse correct answer a judge may grade
  partially correct -- read it before blaming generation.

:func:`attribute` applies the table to one question; :class:`Attribution` holds all of them
with counts per pipeline (:meth:`Attribution.counts`) and per pipeline x question type
(:meth:`Attribution.matrix`), and says in :meth:`Attribution.caveat_notes` how many labels carry a caveat.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from ragexam import fmt
from ragexam.storage.score_summary import AttributionSection, StageVerdict

__all__ = ["LABELS", "StageInputs", "StageResult", "Attribution", "attribute", "attribute_all",
           "evidence_in_contexts", "short_answer", "SHORT_SHARE"]

#: an answer at most this share of the key's length (normalized characters) is short (:func:`short_answer`)
SHORT_SHARE = 1 / 3
#: the labels whose verdict is "the answer was not correct"
_NOT_CORRECT = ("generation_miss", "retrieval_miss", "evidence_split")

#: the labels, in report order
LABELS = ("ok", "retrieval_miss", "evidence_split", "generation_miss", "lucky", "abstained_ok", "hallucinated",
          "unjudged")


@dataclass
class StageInputs(StageVerdict):
    """What is known about one (pipeline, question) before it is labelled (see the module docstring): the fields of
    its :class:`~ragexam.storage.score_summary.StageVerdict` (``label``, ``reason`` and ``caveats`` not set yet), and
    what the label and its caveats need beyond them."""

    missing: Optional[str] = None  # why the answer verdict is unknown (correct / abstained is None)
    evidence_split: bool = False  # the run labelled the retrieval miss evidence_split (the chunking cut it)
    answer: Optional[str] = None  # the answer and the key, for the short-answer caveat
    key: Optional[str] = None


#: the fields a :class:`StageResult` sets on its inputs' verdict
_SET_BY_LABEL = ("label", "reason", "caveats")


@dataclass(frozen=True)
class StageResult:
    """The label of one (pipeline, question), with the inputs that produced it."""

    inputs: StageInputs
    label: str
    reason: Optional[str] = None
    caveats: Tuple[str, ...] = ()

    def to_record(self) -> StageVerdict:
        """The answer's entry of the score's ``attribution.questions``."""
        known = {f.name: getattr(self.inputs, f.name) for f in StageVerdict._fields() if f.name not in _SET_BY_LABEL}
        return StageVerdict(**known, label=self.label, reason=self.reason, caveats=list(self.caveats))


def short_answer(answer: Optional[str], key: Optional[str]) -> bool:
    """``answer`` is a short piece of ``key``: at most :data:`SHORT_SHARE` of its length (normalized, without
    spaces) and every word of it found in the key (``"12시간"`` against a key that says "12시간 이내에")."""
    if not answer or not key:
        return False
    from ragexam.data.normalization import normalize

    a, k = normalize(answer).strip(" .!?。"), normalize(key)
    if not a or len(a.replace(" ", "")) > SHORT_SHARE * len(k.replace(" ", "")):
        return False
    return all(w in k for w in a.split())


def _caveats(x: StageInputs, label: str, unverified: Mapping[str, str]) -> Tuple[str, ...]:
    """The caveats of one label (module docstring)."""
    used = ["abstained"] if not x.answerable else ["correct"] + (["faithful"] if x.faithful is not None else [])
    out = [f"judge_unchecked:{u} ({unverified[u]})" for u in used if u in unverified and label != "unjudged"]
    if label in _NOT_CORRECT and x.correct is False and short_answer(x.answer, x.key):
        out.append("short_answer (the answer is a short piece of the key: read it)")
    return tuple(out)


def attribute(x: StageInputs, unverified: Optional[Mapping[str, str]] = None) -> StageResult:
    """The label of one question (the table in the module docstring), with its caveats; ``unverified``: ``{input:
    why}`` of the verdicts (``correct``, ``faithful``, ``abstained``) that came from a judge metric not shown to
    separate."""
    got = _label(x)
    caveats = _caveats(x, got.label, unverified or {})
    return StageResult(x, got.label, got.reason, caveats) if caveats else got


def _label(x: StageInputs) -> StageResult:
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


def _ids_by_pipeline(results: Sequence[StageResult], ids: int) -> str:
    """Up to ``ids`` question ids of ``results`` (at least 3 a pipeline), each pipeline's named when there are
    several (a question of two pipelines is two labels: ``A: hq_011, hq_022 ...; B: hq_011 ...``, never the same
    id twice unnamed)."""
    by: Dict[str, List[str]] = {}
    for r in results:
        by.setdefault(r.inputs.pipeline, []).append(r.inputs.query_id)
    each = max(3, ids // len(by)) if by else ids

    def listed(qs: List[str]) -> str:
        return ", ".join(qs[:each]) + (" ..." if len(qs) > each else "")

    if len(by) == 1:
        return listed(next(iter(by.values())))
    return "; ".join(f"{p}: {listed(qs)}" for p, qs in by.items())


@dataclass
class Attribution:
    """Every question's label, plus the settings that produced them (``signature``)."""

    results: List[StageResult]
    signature: str = ""
    notes: List[str] = field(default_factory=list)

    def caveat_notes(self, ids: int = 8) -> List[str]:
        """One line per kind of caveat (module docstring): how many labels carry it, of which labels, which
        questions."""
        out = []
        for kind, what in (("judge_unchecked", "rest on a judge verdict not shown to separate good from bad"),
                           ("short_answer", "are short answers found in the key, called not correct: read them "
                                            "before blaming the stage")):
            hit = [r for r in self.results if any(c.startswith(kind) for c in r.caveats)]
            if hit:
                labels = ", ".join(f"{k}: {v}" for k, v in Counter(r.label for r in hit).most_common())
                qids = _ids_by_pipeline(hit, ids)
                whys = sorted({c.split(" (", 1)[1].rstrip(")") for r in hit for c in r.caveats
                               if c.startswith(kind) and " (" in c}) if kind == "judge_unchecked" else []
                out.append(f"stage attribution: {len(hit)} of {fmt.plural(len(self.results), 'label')} ({labels}) "
                           f"{what}" + (f"; {'; '.join(whys)}" if whys else "") + f" -- {qids}")
        return out

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

    def caveat_counts(self, pipeline: str) -> Dict[str, int]:
        """``{caveat kind: labels carrying it}`` of one pipeline (``judge_unchecked:correct``, ``short_answer``)."""
        return dict(Counter(c.split(" ", 1)[0] for r in self.results if r.inputs.pipeline == pipeline
                            for c in r.caveats))

    def to_section(self) -> AttributionSection:
        """The score's ``attribution`` section."""
        return AttributionSection(signature=self.signature, labels=list(LABELS), notes=list(self.notes),
                                  counts={p: self.counts(p) for p in self.pipelines},
                                  by_type={p: self.matrix(p) for p in self.pipelines},
                                  unjudged_reasons={p: self.unjudged_reasons(p) for p in self.pipelines},
                                  caveats={p: self.caveat_counts(p) for p in self.pipelines},
                                  questions=[r.to_record() for r in self.results])

    def to_dict(self) -> Dict[str, object]:
        """The section's JSON object."""
        return self.to_section().to_dict()


def attribute_all(inputs: Iterable[StageInputs], *, signature: str = "", notes: Sequence[str] = (),
                  unverified: Optional[Mapping[str, str]] = None) -> Attribution:
    """:func:`attribute` for each input (``unverified`` as there), collected into an :class:`Attribution`."""
    return Attribution([attribute(x, unverified) for x in inputs], signature, list(notes))


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
