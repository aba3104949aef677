"""What every page showing a run reads: :class:`RunView`, the typed view of a run's summary, rows and answers.

The static report (:mod:`ragexam.report.html`) and ``ragexam serve``'s run and score pages render from the same
view and the same section functions (:mod:`ragexam.report.sections`), so they cannot disagree.  The view reads
the typed :class:`~ragexam.storage.summary.RunSummary` by attribute -- with, after ``ragexam score --report``,
the score's typed judge section and attribution matrices -- and a score's
:class:`~ragexam.storage.score_summary.ScoreSummary` the same way; the one input that is still JSON, the answers
given to the report, is read by :meth:`AnswerView.of`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from ragexam import fmt
from ragexam.report import svg
from ragexam.storage.runfolder import RunRow, check_summary, coerce_rows
from ragexam.storage.score_summary import JudgeSection
from ragexam.storage.summary import MissedQuestion, PipelineResult, RetrievedChunk, RunSummary

__all__ = ["RunView", "AnswerView", "MissedEntry", "interval", "dot", "fmt_e"]


def interval(pair: Any) -> Optional[Tuple[float, float]]:
    """``pair`` as two finite floats, or None."""
    if isinstance(pair, (list, tuple)) and len(pair) == 2 and all(fmt.is_number(v) for v in pair):
        return float(pair[0]), float(pair[1])
    return None


@dataclass
class AnswerView:
    """A generated answer and what judged it, for a missed question's details."""

    answer: Optional[str] = None
    ground_truth: Optional[str] = None
    verdict: Optional[str] = None
    score: Any = None
    reasoning: Optional[str] = None
    stage: Optional[str] = None

    @classmethod
    def of(cls, entry: Any) -> "AnswerView":
        """The view of one entry of the report's ``answers`` (the answer text, or a dict with any of ``answer``,
        ``ground_truth``, ``reasoning`` / ``judge_reasoning`` / ``explanation``, ``verdict`` / ``label``,
        ``score``, ``stage``)."""
        if entry is None:
            return cls()
        if isinstance(entry, str):
            return cls(answer=entry)
        if not isinstance(entry, Mapping):
            return cls(answer=str(entry))

        def first(*keys: str) -> Any:
            return next((entry[k] for k in keys if entry.get(k) is not None), None)

        text = lambda v: None if v is None else str(v)  # noqa: E731
        return cls(answer=text(entry.get("answer")), ground_truth=text(entry.get("ground_truth") or None),
                   verdict=text(first("verdict", "label")), score=entry.get("score"),
                   reasoning=text(first("reasoning", "judge_reasoning", "explanation") or None),
                   stage=text(entry.get("stage") or None))

    def __bool__(self) -> bool:
        return any(getattr(self, f.name) is not None for f in fields(self))

    @property
    def cell(self) -> str:
        """The short cell of the missed table: the verdict (else the score), or ✓ when there is an answer."""
        v = self.verdict if self.verdict is not None else self.score
        return str(v) if v is not None else ("✓" if self.answer else "")


@dataclass
class MissedEntry:
    """One missed question of one pipeline (``seq``: its position in the run's list of missed questions)."""

    seq: int
    pipeline: str
    question: MissedQuestion

    @property
    def query_id(self) -> str:
        return self.question.query_id

    @property
    def short_question(self) -> str:
        q = self.question.question or ""
        return q if len(q) <= 90 else q[:89] + "…"


@dataclass
class RunView:
    """A run as the pages show it: pipelines in order with their colours, the metric columns, question types,
    the missed questions, answers, and -- after ``ragexam score`` -- the judge and the stage attribution."""

    summary: RunSummary
    rows: List[RunRow] = field(default_factory=list)
    answers: Mapping[str, Any] = field(default_factory=dict)
    judge: Optional[JudgeSection] = None
    #: ``{pipeline: {type: {stage label: count}}}``
    attribution: Dict[str, Dict[str, Dict[str, int]]] = field(default_factory=dict)
    notes: List[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        s = self.summary
        self.pipelines: List[str] = list(s.pipeline_names) or list(s.results)
        self.pipelines += [p for p in s.results if p not in self.pipelines]
        self.index = {p: i for i, p in enumerate(self.pipelines)}
        self.all_metrics: List[str] = list(dict.fromkeys(m for p in self.pipelines for m in s.result(p).metrics))
        # the main table: the run's main_metrics when it names them, else every metric
        self.metrics = [m for m in s.main_metrics if m in self.all_metrics] or list(self.all_metrics)
        self.k = s.miss_k
        self.headline = s.headline
        self.ignore_punct = bool(s.config.ignore_punctuation)
        self.per_pipeline_answers = bool(self.answers) and all(
            k in self.index and isinstance(v, Mapping) for k, v in self.answers.items())
        self.row_of = {(r.pipeline, r.query_id): r for r in self.rows}
        if self.judge is None and not self.attribution:
            self.judge, self.attribution = s.judge, s.attribution
        self._missed: Optional[List[MissedEntry]] = None

    @classmethod
    def of(cls, summary: Any, per_question: Sequence[Any] = (),
           answers: Optional[Mapping[str, Any]] = None) -> "RunView":
        """The view of a run's summary (a :class:`RunSummary` or its JSON object, checked), its rows (dicts, CSV
        strings or :class:`RunRow`) and the report's ``answers``; the judge and attribution that ``ragexam score
        --report`` adds to the summary are read from it."""
        if not isinstance(summary, RunSummary):  # a typed summary was checked when it was read
            summary = RunSummary.from_dict(check_summary(dict(summary), "summary"), source="summary")
        return cls(summary, coerce_rows(per_question or [], source="per_question"), answers or {})

    # -- what the sections ask ------------------------------------------------------------------------------

    def result(self, pipeline: str) -> PipelineResult:
        return self.summary.result(pipeline)

    def color(self, pipeline: str) -> str:
        """The pipeline's colour (its SVG series colour)."""
        return svg.color(self.index.get(pipeline, len(self.index)))

    def dot(self, pipeline: str) -> str:
        """The coloured dot before a pipeline's name (a class of the page's CSS: no inline style)."""
        return dot(self.index.get(pipeline, len(self.index)))

    def answer(self, pipeline: str, qid: str) -> AnswerView:
        src = self.answers.get(pipeline) if self.per_pipeline_answers else self.answers
        return AnswerView.of(src.get(qid) if isinstance(src, Mapping) else None)

    def types(self) -> List[str]:
        seen: Dict[str, None] = dict.fromkeys(str(t) for t in self.summary.dataset.types)
        for p in self.pipelines:
            seen.update(dict.fromkeys(str(t) for t in self.result(p).by_type))
        seen.update(dict.fromkeys(str(r.type) for r in self.rows if r.type is not None))
        return list(seen)

    def missed(self) -> List[MissedEntry]:
        """Every missed question, pipeline by pipeline in order.  A summary without a ``missed`` section gets the
        list from the rows (without question or chunk texts; a note says so)."""
        if self._missed is None:
            missed = self.summary.missed
            names = [p for p in self.pipelines if p in missed] + [p for p in missed if p not in self.index]
            pairs = [(p, e) for p in names for e in missed[p]]
            if not pairs:
                pairs = self._missed_from_rows()
            self._missed = [MissedEntry(i, p, e) for i, (p, e) in enumerate(pairs)]
        return self._missed

    def _missed_from_rows(self) -> List[Tuple[str, MissedQuestion]]:
        out = [(r.pipeline, MissedQuestion(query_id=r.query_id, type=r.type, first_rank=r.first_rank,
                                           unit_ranks=dict(r.unit_ranks), k=self.k,
                                           top=[RetrievedChunk(rank=i + 1, chunk_id=c) for i, c in
                                                enumerate(r.top_ids)]))
               for r in self.rows if r.answerable and (r.first_rank is None or r.first_rank > self.k)]
        if out:
            self.notes.append("missed questions: the summary has no 'missed' section, so the list was derived "
                              "from per_question.csv without question or chunk texts")
        return out

    def find_missed(self, pipeline: str, query_id: str) -> Optional[MissedEntry]:
        return next((e for e in self.missed() if e.pipeline == pipeline and e.query_id == query_id), None)

    def facts(self) -> List[str]:
        """The run in one line of HTML pieces: dataset, pipelines, scored questions, id, date."""
        from ragexam.report.i18n import current

        s, t = self.summary, current().t
        bits: List[str] = [t("r.facts.dataset", name=s.dataset_label), t("r.facts.pipelines", n=len(self.pipelines))]
        if s.dataset.n_scored or s.dataset.n_answerable:
            bits.append(t("r.facts.scored", n=s.dataset.n_scored or s.dataset.n_answerable))
        if s.config.relevance:  # the grading rule: two runs under different rules are not comparable
            rule = f"r.facts.rule.{s.config.relevance}"  # ragexam.data.relevance.RULES, in the page's language
            bits.append(t("r.facts.relevance", rule=s.config.relevance)
                        + (t(rule) if rule in current().strings else ""))
        bits.append(t("r.facts.run", id=s.run_id))
        if s.created:
            bits.append(fmt_e(s.created))
        return bits


def dot(i: int) -> str:
    """The dot of series ``i``'s colour, before a pipeline's name."""
    return f'<i class="dot {svg.color_class(i)}"></i>'


def fmt_e(x: Any) -> str:
    """``x`` as HTML-escaped text (``None``: empty)."""
    from html import escape

    return escape("" if x is None else str(x), quote=True)
