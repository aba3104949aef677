"""The one reader of a score's JSON (``score.json``, a score record of the history, or the ``judge`` and
``attribution`` sections ``ragexam score --report`` adds to a run's summary): typed records, read by attribute.

A score's summary is still the JSON object :meth:`ragexam.analysis.answers.scoring.ScoreReport.to_dict` writes (its
owner changes it); every page that shows one -- the static report's judge section and attribution matrix,
``ragexam serve``'s score page -- reads it through :meth:`ScoreView.of` and nothing else.  The records are
:class:`~ragexam.storage.records.Record` s: a key this version does not know is kept in ``extra`` (a newer
score still shows), a value of the wrong type is an :class:`~ragexam.errors.InputError` naming its path.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Tuple

from ragexam.storage.records import Record

__all__ = ["ScoreView", "JudgeView", "JudgeStat", "VsEvidence", "Disagreement", "AttributionView", "StageVerdict",
           "ScoreResult", "Coverage"]

Interval = Tuple[float, float]


@dataclass
class JudgeStat(Record):
    """One judge metric of one pipeline: mean and pass rate with their 95% intervals over the judged answers,
    coverage, why the others were not judged, and with repeats the share that flipped and the ties."""

    metric: str = ""
    n: int = 0
    n_judged: int = 0
    mean: Optional[float] = None
    ci95: Optional[Interval] = None
    pass_rate: Optional[float] = None
    pass_ci95: Optional[Interval] = None
    unjudged: Dict[str, int] = field(default_factory=dict)
    flip_share: Optional[float] = None
    ties: int = 0


@dataclass
class Disagreement(Record):
    query_id: str = ""


@dataclass
class VsEvidence(Record):
    """A judge metric beside its evidence-based twin on the same answers."""

    judge_metric: str = ""
    judge_value: str = ""
    judge: Optional[float] = None
    evidence_metric: str = ""
    evidence: Optional[float] = None
    agree: Optional[float] = None
    disagreements: List[Disagreement] = field(default_factory=list)


@dataclass
class JudgeView(Record):
    """The ``judge`` section: who judged, and per pipeline and metric its :class:`JudgeStat`."""

    model: Optional[str] = None
    endpoint: Optional[str] = None
    language: Optional[str] = None
    repeat: int = 1
    summary: Dict[str, Dict[str, JudgeStat]] = field(default_factory=dict)
    vs_evidence: Dict[str, List[VsEvidence]] = field(default_factory=dict)
    signatures: Dict[str, str] = field(default_factory=dict)


@dataclass
class StageVerdict(Record):
    """One answer's stage label (``attribution.questions``): what lost it, and the verdicts behind the label."""

    pipeline: str = ""
    query_id: str = ""
    type: Optional[str] = None
    answerable: bool = True
    label: str = ""
    reason: Optional[str] = None
    retrieved: Optional[bool] = None
    first_rank: Optional[int] = None
    correct: Optional[bool] = None
    correct_detail: Optional[str] = None
    faithful: Optional[bool] = None
    abstained: Optional[bool] = None

    @property
    def verdict(self) -> str:
        """The verdict in words: correctness (or abstention), unfaithful, and the reason of an unjudged one."""
        if self.answerable:
            words = self.correct_detail or ("" if self.correct is None else ("correct" if self.correct else
                                                                              "not correct"))
        else:
            words = "" if self.abstained is None else ("abstained" if self.abstained else "answered")
        if self.faithful is False:
            words += ("; " if words else "") + "unfaithful"
        if self.reason:
            words += ("; " if words else "") + self.reason
        return words


@dataclass
class AttributionView(Record):
    """The ``attribution`` section of a score: per pipeline the matrix type x stage label, and every answer's
    label."""

    signature: str = ""
    labels: List[str] = field(default_factory=list)
    notes: List[str] = field(default_factory=list)
    counts: Dict[str, Dict[str, int]] = field(default_factory=dict)
    by_type: Dict[str, Dict[str, Dict[str, int]]] = field(default_factory=dict)
    unjudged_reasons: Dict[str, Dict[str, int]] = field(default_factory=dict)
    questions: List[StageVerdict] = field(default_factory=list)

    def matrix(self, pipeline: str) -> Tuple[List[str], List[str], List[List[int]]]:
        """``(types, labels, counts)`` of one pipeline (labels: the section's order, then any other seen)."""
        by_type = self.by_type.get(pipeline) or {}
        labels = list(self.labels)
        for counts in by_type.values():
            labels += [s for s in counts if s not in labels]
        types = list(by_type)
        return types, labels, [[int(by_type[t].get(s, 0)) for s in labels] for t in types]


@dataclass
class Coverage(Record):
    n: int = 0
    n_judged: int = 0


@dataclass
class ScoreResult(Record):
    """``results[pipeline]`` of a score: text metrics, ``ok_share``, judge means (and pass rates) with their
    intervals and coverage."""

    n: Optional[int] = None
    metrics: Dict[str, Optional[float]] = field(default_factory=dict)
    ci95: Dict[str, Optional[Interval]] = field(default_factory=dict)
    coverage: Dict[str, Coverage] = field(default_factory=dict)


@dataclass
class ScoreView(Record):
    """A score's JSON, typed (module docstring)."""

    format: str = ""
    kind: str = "score"
    run_id: str = ""
    created: str = ""
    ragexam_version: Optional[str] = None
    scored_run: Optional[str] = None
    settings: Dict[str, Any] = field(default_factory=dict)
    config: Dict[str, Any] = field(default_factory=dict)
    dataset: Dict[str, Any] = field(default_factory=dict)
    results: Dict[str, ScoreResult] = field(default_factory=dict)
    judge: Optional[JudgeView] = None
    attribution: Optional[AttributionView] = None
    notes: List[str] = field(default_factory=list)

    @classmethod
    def of(cls, data: Mapping[str, Any], source: str = "score.json") -> "ScoreView":
        """The view of a score's JSON object (``InputError`` naming ``source`` and the path of a wrong value)."""
        return cls.from_dict(data, source=source)

    @property
    def pipelines(self) -> List[str]:
        names = [str(p) for p in self.dataset.get("pipelines") or [] if isinstance(p, str)]
        return names + [p for p in self.results if p not in names]

    @property
    def used_settings(self) -> Dict[str, Any]:
        """The score's settings (a folder's ``settings``; a history record's ``config``)."""
        return self.settings or self.config

    @property
    def dataset_label(self) -> str:
        """The question set scored (``corpus / qa`` of the scored run, else the score's ``qa`` setting)."""
        corpus, qa = self.dataset.get("corpus"), self.dataset.get("qa") or self.used_settings.get("qa")
        if corpus and qa and corpus != qa:
            return f"{corpus} / {qa}"
        return str(qa or corpus or "?")

    def verdicts(self) -> Dict[Tuple[str, str], StageVerdict]:
        """``{(pipeline, query_id): stage verdict}`` of every answer."""
        return {(v.pipeline, v.query_id): v for v in (self.attribution.questions if self.attribution else [])}


def run_extras(extra: Mapping[str, Any]) -> Tuple[Optional[JudgeView], Dict[str, Dict[str, Dict[str, int]]]]:
    """``(judge, attribution matrices)`` that ``ragexam score --report`` puts into a run's summary (its
    ``judge`` section and ``attribution`` ``{pipeline: {type: {label: count}}}``), from the summary's extra keys."""
    judge = extra.get("judge")
    att = extra.get("attribution")
    view = JudgeView.from_dict(judge, source="summary.judge") if isinstance(judge, Mapping) and judge else None
    matrices = AttributionView.from_dict({"by_type": att}, source="summary.attribution").by_type \
        if isinstance(att, Mapping) else {}
    return view, matrices
