"""What a judge metric is -- one object that owns everything about it: the registry of LLM-judged metrics.

A :class:`JudgeMetric` is the one place the judge machinery, the command line, the stub endpoint,
``judge-agreement`` and ``judge-check`` learn about a metric, so the built-in metrics, plugin metrics and custom
rubrics (:mod:`ragexam.metrics.judge.custom`) run through the same code (cache, resume, retries with feedback,
unjudged-with-reason, coverage, repeats, probability scoring).  It is declared with keywords:

* ``prompts``: its texts per language (:class:`~ragexam.metrics.judge.prompts.Prompts`: inline or files, one
  version -- computed from the texts when none is given) and ``contract``: the reply contract -- the JSON
  schema sent to the endpoint *and* the parser, from one declaration (:mod:`ragexam.metrics.judge.contract`);
  they make ``rubrics`` / :meth:`JudgeMetric.rubric`, whose hash goes into every signature and cache key
  (``rubrics`` may be given instead, as custom rubrics do);
* ``reader``: turns a checked reply into a :class:`~ragexam.metrics.judge.replies.Verdict`;
* :attr:`JudgeMetric.unit_kind` / :attr:`JudgeMetric.per_context` (from the contract): what the reply gives
  one value per (``contexts``, ``claims``, ``statements``: :mod:`ragexam.metrics.judge.units`), or ``None``;
* ``needs``: the inputs without which an item is ``unjudged`` (``no_answer``, ``no_contexts``,
  ``no_ground_truth``, ``no_second_answer``; no call is made); ``applies_to``: which questions
  ``ragexam score`` grades (``all``, ``answerable``, ``unanswerable``);
* ``allowance``: completion tokens a reply takes, :class:`Allowance` ``(base, per_unit)``, for dry runs;
* ``stub``: its reply when no model is behind the endpoint (helpers in :mod:`ragexam.metrics.judge.stubs`);
* ``question``: its help text (``--metric`` help, the docs' table);
* ``labels`` (worst to best), ``pass_rule``, ``unit_rule`` / ``unit_scale`` (agreement units),
  ``combine`` (how per-unit probabilities make the probability score: ``mean`` or ``ap``);
* its special cases, as fields: ``quotable`` (its units are true/false "supported by the contexts", so a unit
  a context states in the same words is supported without the judge's say: :mod:`ragexam.metrics.judge.quoted`),
  ``evidence_twin`` (the evidence-based metric ``ragexam score`` reports beside it), ``average_check`` (the
  reply carries the judge's own average, which ragexam recomputes and counts mismatches of),
  ``per_answer`` (``False``: it compares two answers, ``pairwise``), ``default_for`` (the commands that judge
  it when no ``--metric`` is named: ``score``, ``check``), ``order`` (its place in reports and help),
  ``human_example`` (a human label of it, for examples in messages).

A built-in metric is one module of :mod:`ragexam.metrics.judge.builtin` (found there, nothing else to edit); a
metric built elsewhere (a plugin, a test) is registered with :func:`ragexam.metrics.judge.registry.register`
and is then known to the CLI, the stub endpoint and the agreement commands; without code, a rubric file is one.
The registry (:mod:`ragexam.metrics.judge.registry`) is what every other part asks.  Each built-in module's docstring
is its metric's definition, pass rule included.

Labels and pass rules read the judge's written reply; with probability scoring (``--scoring``) only the
score is the probability-weighted value (:meth:`JudgeMetric.probability_score`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, NamedTuple, Optional, Sequence, Tuple

from ragexam.metrics.judge import stubs
from ragexam.metrics.judge.contract import Contract
from ragexam.metrics.judge.prompts import Prompts, Rubric
from ragexam.metrics.judge.replies import Verdict, average_precision
from ragexam.metrics.judge.units import claims_of, split_sentences

__all__ = ["JudgeMetric", "Allowance", "Prompts", "binary_units", "INPUTS", "APPLIES_TO"]

#: a reply as the contract checked it (field -> value)
Reply = Dict[str, Any]
#: ``(score, label, details) -> passed`` of a judged result
PassRule = Callable[[float, Optional[str], Mapping[str, Any]], bool]
#: ``(score, label, details) -> values`` on the agreement units of a judged result
UnitRule = Callable[[Optional[float], Optional[str], Mapping[str, Any]], List[int]]


class Allowance(NamedTuple):
    """Completion tokens a reply is assumed to take in a dry run: ``base`` plus ``per_unit`` for each unit."""

    base: int
    per_unit: int = 0


#: The inputs a metric may need (``question`` is always there).
INPUTS = ("answer", "contexts", "ground_truth", "second_answer")
#: Which questions a metric grades in ``ragexam score``.
APPLIES_TO = ("all", "answerable", "unanswerable")


@dataclass(frozen=True)
class JudgeMetric:
    """One judge metric (see the module docstring).

    :ivar name: the metric's name (a column in tables, ``<name>`` in ``check --min``).
    :ivar question: one line: what the judge is asked (the metric's help).
    :ivar score_range: ``(lowest, highest)`` score.
    :ivar custom: ``True`` for a metric from a rubric file.
    :ivar source: where a custom metric came from (its file), else ``"ragexam"``.
    """

    name: str
    question: str
    needs: Tuple[str, ...]
    applies_to: str
    labels: Tuple[str, ...]
    score_range: Tuple[float, float]
    unit_scale: Tuple[int, ...]
    ordinal: bool
    rubrics: Mapping[str, Rubric] = field(default_factory=dict, hash=False, compare=False)
    reader: Optional[Callable[[Reply, Sequence[str]], Verdict]] = field(default=None, hash=False, compare=False)
    pass_rule: Optional[PassRule] = field(default=None, hash=False, compare=False)
    pass_text: Optional[str] = None
    unit_rule: Optional[UnitRule] = field(default=None, hash=False, compare=False)
    custom: bool = False
    source: str = "ragexam"
    allowance: Tuple[int, int] = Allowance(150, 0)
    stub: Callable[[stubs.StubInputs], Reply] = field(default=stubs.custom, hash=False, compare=False)
    combine: str = "mean"
    quotable: bool = False
    prompts: Optional[Prompts] = field(default=None, hash=False, compare=False, repr=False)
    contract: Optional[Contract] = field(default=None, hash=False, compare=False, repr=False)
    order: int = 1000
    default_for: Tuple[str, ...] = ()
    per_answer: bool = True
    evidence_twin: Optional[Tuple[str, str]] = None
    average_check: bool = False
    human_example: Optional[object] = None

    def __post_init__(self) -> None:
        if self.prompts is not None:
            if self.contract is None:
                raise ValueError(f"judge metric {self.name!r}: prompts= needs the reply contract= too")
            object.__setattr__(self, "rubrics", self.prompts.rubrics(self.name, self.contract))
        if not self.rubrics:
            raise ValueError(f"judge metric {self.name!r}: give its prompts= (and contract=) or its rubrics=")
        if self.contract is None:
            object.__setattr__(self, "contract", next(iter(self.rubrics.values())).contract)
        if self.reader is None:
            raise ValueError(f"judge metric {self.name!r}: give its reader= (reply -> Verdict)")
        object.__setattr__(self, "allowance", Allowance(*self.allowance))

    def rubric(self, language: str) -> Rubric:
        """The rubric in ``language`` (``ko``/``en``); a custom rubric written in one language uses it
        whatever the judge's language."""
        if language in self.rubrics:
            return self.rubrics[language]
        return next(iter(self.rubrics.values()))

    @property
    def unit_kind(self) -> Optional[str]:
        """``contexts``, ``claims``, ``statements`` (one reply value per unit) or ``None``."""
        return self.contract.unit

    @property
    def per_context(self) -> bool:
        """The reply holds one value per retrieved context."""
        return self.unit_kind == "contexts"

    def unit_texts(self, *, contexts: Sequence[str] = (), answer: Optional[str] = None,
                   ground_truth: Optional[str] = None) -> List[str]:
        """The units of one item (:mod:`ragexam.metrics.judge.units`); ``[]`` for a metric without units."""
        kind = self.unit_kind
        if kind == "contexts":
            return list(contexts)
        if kind == "claims":
            return claims_of(answer)
        if kind == "statements":
            return split_sentences(ground_truth)
        return []

    def validate(self, obj: Dict[str, Any], units: Sequence[str]) -> Verdict:
        """The contract's check, then the reader: a :class:`Verdict`, or ``ReplyError`` / ``NotApplicable``."""
        return self.reader(self.contract.check(obj, len(units)), units)

    def allowance_for(self, n_units: int) -> int:
        """Completion tokens a reply about ``n_units`` units is assumed to take (dry runs)."""
        return self.allowance[0] + self.allowance[1] * n_units

    def probability_score(self, distributions: Sequence[Mapping[str, float]]) -> Optional[float]:
        """The probability-weighted score from the scored field's value distributions (one per unit, or one):
        each distribution's expected value over the field's options (:meth:`Contract.options`: a level, or 1
        for true / the positive label), combined by ``combine`` (mean, or the rank-aware ``ap``).  ``None``
        when the field has no options to weigh."""
        opts = dict(self.contract.options())
        if not opts or not distributions:
            return None
        values = [sum(p * opts[o] for o, p in d.items() if o in opts) for d in distributions]
        return average_precision(values) if self.combine == "ap" else sum(values) / len(values)

    def passed(self, score: Optional[float], label: Optional[str], details: Mapping[str, Any]) -> Optional[bool]:
        """Whether a judged result passes (``None`` when the metric has no pass rule or it was not judged)."""
        if self.pass_rule is None or score is None:
            return None
        return bool(self.pass_rule(score, label, details))

    def units(self, score: Optional[float], label: Optional[str], details: Mapping[str, Any]) -> List[int]:
        """The values of one judged result on the metric's agreement units."""
        if self.unit_rule is not None:
            return self.unit_rule(score, label, details)
        return [int(score)] if score is not None else []

    def human_units(self, value: Any) -> List[int]:
        """A human label as agreement-unit values; ``ValueError`` saying what was expected.  Per-context
        metrics take a list, one value per context; two-valued metrics true/false; the others an integer of
        their scale."""
        scale = tuple(self.unit_scale)
        binary = scale == (0, 1)
        if self.per_context:
            if binary:
                if not (isinstance(value, list) and value and all(isinstance(v, bool) for v in value)):
                    raise ValueError("expected a list of true/false, one per context")
                return [int(v) for v in value]
            if not (isinstance(value, list) and value and all(
                    isinstance(v, int) and not isinstance(v, bool) and v in scale for v in value)):
                raise ValueError(f"expected a list of integers {scale[0]}-{scale[-1]}, one per context")
            return list(value)
        if binary:
            if not isinstance(value, bool):
                raise ValueError("expected true or false")
            return [int(value)]
        if isinstance(value, bool) or not isinstance(value, int) or value not in scale:
            raise ValueError(f"expected an integer from {scale[0]} to {scale[-1]}")
        return [value]

    @property
    def human_on_pass(self) -> bool:
        """A human label of this metric is a pass/fail verdict (true/false on a metric with a pass rule and a
        finer score, e.g. faithful vs the share of supported claims): it is compared with the judge's pass."""
        return tuple(self.unit_scale) == (0, 1) and not self.per_context and self.pass_rule is not None

    def human_value(self, value: Any) -> float:
        """A human label as one number on the scale it is compared on: the mean of per-context values
        (``ap`` for rank-aware metrics), 1/0 for true/false, else the level."""
        units = self.human_units(value)
        if self.per_context and self.combine == "ap":
            return average_precision(units)
        return sum(units) / len(units)

    def judge_value(self, score: Any) -> Optional[float]:
        """A judged item's number on the scale :meth:`human_value` uses (``score`` is an
        :class:`~ragexam.metrics.judge.core.ItemScore`): its pass (1/0) when :attr:`human_on_pass`, else its
        score; ``None`` when unjudged."""
        if not score.judged:
            return None
        if self.human_on_pass:
            return None if score.passed is None else float(score.passed)
        return float(score.score)

    def label_rank(self, label: Optional[str]) -> int:
        """Position of ``label`` from worst (0) to best; -1 for an unknown label."""
        return self.labels.index(label) if label in self.labels else -1


def binary_units(positive: str) -> UnitRule:
    """The agreement-unit rule of a two-label verdict: 1 when the label is ``positive``, else 0."""
    def rule(score: Optional[float], label: Optional[str], details: Mapping[str, Any]) -> List[int]:
        return [1 if label == positive else 0] if label is not None else []
    return rule
