"""What a judge metric is -- one object that owns everything about it: the registry of LLM-judged metrics.

A :class:`JudgeMetric` is the one place the judge machinery, the command line, the stub endpoint,
``judge-agreement`` and ``judge-check`` learn about a metric, so the built-in metrics and custom rubrics
(:mod:`ragexam.metrics.judge.custom`) run through the same code (cache, resume, retries with feedback,
unjudged-with-reason, coverage, repeats, probability scoring):

* ``rubrics`` / :meth:`JudgeMetric.rubric`: the versioned prompt per language
  (:class:`~ragexam.metrics.judge.prompts.Rubric`), whose hash goes into every signature and cache key;
* :attr:`JudgeMetric.contract`: the reply contract -- the JSON schema sent to the endpoint *and* the
  parser, from one declaration (:mod:`ragexam.metrics.judge.contract`); ``reader`` turns a checked reply
  into a :class:`~ragexam.metrics.judge.replies.Verdict`;
* :attr:`JudgeMetric.unit_kind` / :attr:`JudgeMetric.per_context`: what the reply gives one value per
  (``contexts``, ``claims``, ``statements``: :mod:`ragexam.metrics.judge.units`), or ``None``;
* ``needs``: the inputs without which an item is ``unjudged`` (``no_answer``, ``no_contexts``,
  ``no_ground_truth``, ``no_second_answer``; no call is made); ``applies_to``: which questions
  ``ragexam score`` grades (``all``, ``answerable``, ``unanswerable``);
* ``allowance``: completion tokens a reply takes, ``(base, per unit)``, for dry runs;
* ``stub``: its reply when no model is behind the endpoint (:mod:`ragexam.metrics.judge.stubs`);
* ``question``: its help text (``--metric`` help, the docs' table);
* ``labels`` (worst to best), ``pass_rule``, ``unit_rule`` / ``unit_scale`` (agreement units),
  ``combine`` (how per-unit probabilities make the probability score: ``mean`` or ``ap``);
* ``quotable``: its units are true/false "supported by the contexts", so a unit a context states in the same
  words is supported without the judge's say (:mod:`ragexam.metrics.judge.quoted`).

Adding a metric: its prompts and contract in ``prompts.py`` (``_TEMPLATES``, ``CONTRACTS``), its reader in
``replies.py`` (``READERS``), its stub reply in ``stubs.py`` and one :func:`register` call here -- or, with
no code at all, a rubric file.  A metric built elsewhere (a plugin, a test) is registered with
:func:`register` and is then known to the CLI, the stub endpoint and the agreement commands.

Pass rules of the built-in metrics
----------------------------------
==================  =================================================================
context_relevance   some retrieved context scores 4 or 5 (the judge's "hit")
context_precision   none (the score is rank-aware; read the mean)
context_recall      every statement of the reference answer is supported ("complete")
faithfulness        every claim is supported ("faithful")
answer_relevancy    verdict "relevant" (score 4-5)
answer_correctness  verdict "correct" (score 4-5)
abstention          verdict "abstained" (graded on out-of-corpus questions only)
==================  =================================================================

Labels and pass rules read the judge's written reply; with probability scoring (``--scoring``) only the
score is the probability-weighted value (:meth:`JudgeMetric.probability_score`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from ragexam.metrics.judge import stubs
from ragexam.metrics.judge.contract import Contract
from ragexam.metrics.judge.prompts import LANGUAGES, RUBRIC_NAMES, RUBRICS, Rubric
from ragexam.metrics.judge.replies import READERS, Verdict, average_precision
from ragexam.metrics.judge.units import claims_of, split_sentences

__all__ = ["JudgeMetric", "BUILTIN", "builtin_metric", "register", "unregister", "registered", "metric_help",
           "INPUTS", "APPLIES_TO"]

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
    rubrics: Mapping[str, Rubric] = field(hash=False, compare=False)
    reader: Callable[[Dict[str, Any], Sequence[str]], Verdict] = field(hash=False, compare=False)
    pass_rule: Optional[Callable[[float, Optional[str], Mapping[str, Any]], bool]] = field(
        default=None, hash=False, compare=False)
    pass_text: Optional[str] = None
    unit_rule: Optional[Callable[[Optional[float], Optional[str], Mapping[str, Any]], List[int]]] = field(
        default=None, hash=False, compare=False)
    custom: bool = False
    source: str = "ragexam"
    allowance: Tuple[int, int] = (150, 0)
    stub: Callable[[stubs.StubInputs], Dict[str, Any]] = field(default=stubs.custom, hash=False, compare=False)
    combine: str = "mean"
    quotable: bool = False

    def rubric(self, language: str) -> Rubric:
        """The rubric in ``language`` (``ko``/``en``); a custom rubric written in one language uses it
        whatever the judge's language."""
        if language in self.rubrics:
            return self.rubrics[language]
        return next(iter(self.rubrics.values()))

    @property
    def contract(self) -> Contract:
        """The reply contract (the same in every language)."""
        return next(iter(self.rubrics.values())).contract

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


def _cr_units(score, label, details) -> List[int]:
    return [int(s) for s in details.get("scores", [])]


def _cp_units(score, label, details) -> List[int]:
    return [int(bool(u)) for u in details.get("useful", [])]


def _binary(positive: str):
    def rule(score, label, details) -> List[int]:
        return [1 if label == positive else 0] if label is not None else []
    return rule


_REGISTRY: Dict[str, JudgeMetric] = {}


def register(metric: JudgeMetric) -> JudgeMetric:
    """Make ``metric`` known by name to the judge, the CLI's help, the stub endpoint and the agreement
    commands; ``ValueError`` when another metric already has its name."""
    old = _REGISTRY.get(metric.name)
    if old is not None and old is not metric:
        raise ValueError(f"a judge metric named {metric.name!r} is already registered ({old.source})")
    _REGISTRY[metric.name] = metric
    return metric


def unregister(name: str) -> None:
    """Forget the registered metric ``name`` (a built-in cannot be unregistered)."""
    if name in BUILTIN:
        raise ValueError(f"{name!r} is a built-in judge metric")
    _REGISTRY.pop(name, None)


def registered() -> Dict[str, JudgeMetric]:
    """Every registered metric by name (the built-ins first)."""
    return dict(_REGISTRY)


def _builtin(name: str, question: str, needs: Tuple[str, ...], applies_to: str, labels: Tuple[str, ...],
             score_range: Tuple[float, float], unit_scale: Tuple[int, ...], ordinal: bool, pass_rule, pass_text,
             unit_rule, allowance: Tuple[int, int], combine: str = "mean", quotable: bool = False) -> JudgeMetric:
    return register(JudgeMetric(
        name, question, needs, applies_to, labels, score_range, unit_scale, ordinal,
        {lang: RUBRICS[(name, lang)] for lang in LANGUAGES}, READERS[name], pass_rule, pass_text, unit_rule,
        allowance=allowance, stub=getattr(stubs, name), combine=combine, quotable=quotable))


_BUILT = (
    _builtin("context_relevance", "how relevant is each retrieved context to the question (1-5)", ("contexts",),
             "all", (), (1.0, 5.0), (1, 2, 3, 4, 5), True,
             lambda s, lab, d: max(d.get("scores") or [0]) >= 4, "some context scores 4 or 5", _cr_units, (60, 8)),
    _builtin("context_precision", "is each retrieved context useful for reaching the reference answer; "
             "rank-aware share", ("contexts", "ground_truth"), "answerable", (), (0.0, 1.0), (0, 1), False,
             None, None, _cp_units, (60, 6), "ap"),
    _builtin("context_recall", "which share of the reference answer's statements do the contexts support",
             ("contexts", "ground_truth"), "answerable", ("incomplete", "complete"), (0.0, 1.0), (0, 1), False,
             lambda s, lab, d: lab == "complete", "every statement supported", _binary("complete"), (60, 6),
             quotable=True),
    _builtin("faithfulness", "is every claim (sentence) of the answer supported by the contexts",
             ("answer", "contexts"), "all", ("unfaithful", "faithful"), (0.0, 1.0), (0, 1), False,
             lambda s, lab, d: lab == "faithful", "every claim supported", _binary("faithful"), (60, 6),
             quotable=True),
    _builtin("answer_relevancy", "does the answer address the question asked (not: is it correct)", ("answer",),
             "all", ("irrelevant", "partially_relevant", "relevant"), (1.0, 5.0), (1, 2, 3, 4, 5), True,
             lambda s, lab, d: lab == "relevant", "verdict relevant (4-5)", None, (80, 0)),
    _builtin("answer_correctness", "does the answer agree with the ground truth (1-5)", ("answer", "ground_truth"),
             "answerable", ("incorrect", "partially_correct", "correct"), (1.0, 5.0), (1, 2, 3, 4, 5), True,
             lambda s, lab, d: lab == "correct", "verdict correct (4-5)", None, (80, 0)),
    _builtin("abstention", "(out-of-corpus questions) did the answer decline", ("answer",), "unanswerable",
             ("answered", "abstained"), (0.0, 1.0), (0, 1), False,
             lambda s, lab, d: lab == "abstained", "verdict abstained", _binary("abstained"), (70, 0)),
    _builtin("pairwise", "which of two answers is better (asked in both orders)", ("answer", "second_answer",
             "ground_truth"), "all", ("2", "tie", "1"), (0.0, 1.0), (0, 1), False, None, None,
             lambda s, lab, d: [{"1": 1, "2": 0}[lab]] if lab in ("1", "2") else [], (80, 0)),
)

#: The built-in metrics by name (:data:`ragexam.metrics.judge.prompts.RUBRIC_NAMES`).
BUILTIN: Dict[str, JudgeMetric] = {n: _REGISTRY[n] for n in RUBRIC_NAMES}


def metric_help(*, per_answer: bool = True) -> str:
    """The registered metrics' names for ``--metric`` help (``per_answer``: without ``pairwise``)."""
    names = [n for n in _REGISTRY if not (per_answer and n == "pairwise")]
    return ", ".join(names) + ", or a --rubric file's name"


def builtin_metric(name: str) -> JudgeMetric:
    """The registered metric ``name``; ``InputError`` listing the names otherwise."""
    m = _REGISTRY.get(name)
    if m is None:
        from ragexam.errors import InputError

        raise InputError(f"unknown judge metric {name!r}; expected one of {metric_help()} (--rubric FILE)",
                         source="judge", field="metric")
    return m


def resolve_metrics(metrics: Sequence[Any], custom: Mapping[str, JudgeMetric] = {}) -> List[JudgeMetric]:
    """Names or :class:`JudgeMetric` objects as metric objects (names looked up in ``custom``, then the
    registry); a name given twice is kept once."""
    out: Dict[str, JudgeMetric] = {}
    for m in metrics:
        if isinstance(m, JudgeMetric):
            obj = m
        elif m in custom:
            obj = custom[m]
        else:
            obj = builtin_metric(m)
        if obj.name in out and out[obj.name] is not obj and out[obj.name].rubrics != obj.rubrics:
            from ragexam.errors import InputError

            raise InputError(f"two different metrics are named {obj.name!r} ({out[obj.name].source} and "
                             f"{obj.source}); give one of them another name", source="judge", field="metric")
        out.setdefault(obj.name, obj)
    return list(out.values())
