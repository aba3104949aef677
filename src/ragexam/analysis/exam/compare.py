"""``ragexam compare A B``: did run B change anything against run A, question by question?

For each pipeline compared (``pipeline`` in both runs, or the one named for each side), over the
questions **both runs scored** (matched by ``query_id``):

* per metric: mean in A, mean in B, ``diff`` = mean(B - A), its paired percentile-bootstrap 95%
  interval and the two-sided paired randomization p-value, then **Holm's correction across the
  metrics** of that pipeline pair, and the verdict decided on the Holm-adjusted p
  (:func:`ragexam.stats.compare_family`: the same wording ``ragexam run`` uses);
* the questions that **flipped** at the missed-cutoff ``k``: found in A (first correct chunk at
  rank <= k) and missed in B, or missed in A and found in B, each with its evidence and both
  rankings (``first_rank`` and the top chunk ids);
* how the question sets differ: questions scored only in A, only in B, and whether the corpus hashes differ.

Two runs **graded differently** -- another relevance rule (``evidence``/``doc``), evidence cover policy or matching,
or another question set (its hash) -- are refused: identical rankings score differently under another grading, so
B − A would report the change of grading as a change of retrieval.  With ``allow_grading_change`` they are
compared, and the notes say the differences include the change of grading.

Randomness is seeded (default: run A's ``config.seed``); the settings are in
:attr:`PipelineComparison.signature`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ragexam import fmt
from ragexam.errors import InputError, option, setting
from ragexam.signature import Signature
from ragexam.storage.runfolder import RunData, metric_columns, miss_cutoff

__all__ = ["MetricDiff", "Flip", "PipelineComparison", "RunComparison", "compare_runs", "grading_differences",
           "grading_changes", "GradingChange"]


@dataclass(frozen=True)
class MetricDiff:
    """One metric of one pipeline pair: B against A on the ``n`` shared questions."""

    metric: str
    n: int
    mean_a: float
    mean_b: float
    diff: float
    ci_low: float
    ci_high: float
    p_value: float
    p_holm: float
    method: str
    verdict: str
    reading: str
    #: what ``mean_a``/``mean_b`` are: ``mean`` (of per-question values), or for two scores' ``bleu``/``chrf``
    #: ``mean per answer`` (of sentence values: not the corpus statistic ``score`` and ``check`` report, so
    #: ``metric`` is then named ``chrf (mean per answer)`` wherever compare shows it, and ``column`` is ``chrf``)
    statistic: str = "mean"
    #: shared questions left out of this metric: no value in A or B (two scores: an answer not judged)
    left_out: int = 0
    #: the per-question column compared (``metric`` without what its mean is)
    column: str = ""


@dataclass(frozen=True)
class Flip:
    """A question found at ``k`` in one run and missed in the other."""

    query_id: str
    direction: str            # "found→missed" (B lost it) or "missed→found" (B gained it)
    type: Optional[str]
    question: Optional[str]
    evidence: List[str]
    first_rank_a: Optional[int]
    first_rank_b: Optional[int]
    top_a: List[str]
    top_b: List[str]
    #: two scores: each side's stage label and verdict of the answer (``generation_miss: incorrect``)
    verdict_a: Optional[str] = None
    verdict_b: Optional[str] = None


@dataclass
class PipelineComparison:
    """Run B's ``pipeline_b`` against run A's ``pipeline_a``."""

    pipeline_a: str
    pipeline_b: str
    n_shared: int
    only_a: List[str]
    only_b: List[str]
    k: int
    metrics: List[MetricDiff]
    flips: List[Flip]
    signature: str

    @property
    def lost(self) -> List[Flip]:
        return [f for f in self.flips if f.direction == "found→missed"]

    @property
    def gained(self) -> List[Flip]:
        return [f for f in self.flips if f.direction == "missed→found"]


@dataclass
class RunComparison:
    """Everything ``ragexam compare`` prints; :meth:`to_dict` is its ``--json`` form."""

    run_a: str
    run_b: str
    pipelines: List[PipelineComparison]
    notes: List[str] = field(default_factory=list)
    #: two scores: each judged metric's trust verdict on each side, ``{metric: {"A": verdict, "B": verdict}}``
    #: (:func:`ragexam.analysis.answers.trusted.compared_trust`)
    judge_trust: Dict[str, Dict[str, str]] = field(default_factory=dict)

    def to_dict(self) -> Dict[str, Any]:
        return {"run_a": self.run_a, "run_b": self.run_b, "notes": list(self.notes), "judge_trust": self.judge_trust,
                "pipelines": [{**{k: v for k, v in asdict(p).items() if k not in ("metrics", "flips")},
                               "metrics": [asdict(m) for m in p.metrics],
                               "flips": [asdict(f) for f in p.flips]} for p in self.pipelines]}


def _index(run: RunData, pipeline: str) -> Dict[str, Any]:
    return {r.query_id: r for r in run.rows(pipeline)}


def _missed_info(run: RunData, pipeline: str) -> Dict[str, Any]:
    """A run's missed questions of ``pipeline`` by query id (:class:`~ragexam.storage.summary.MissedQuestion`);
    none for a score."""
    if run.run is None:
        return {}
    return {e.query_id: e for e in run.run.missed.get(pipeline) or []}


def _label(run: RunData, which: str) -> str:
    return run.run_id or run.source or which


def _pairs(a: RunData, b: RunData, pipeline: Optional[str], pipeline_b: Optional[str]) -> List[tuple]:
    pa, pb = a.pipelines, b.pipelines
    if pipeline is not None or pipeline_b is not None:
        name_a = pipeline if pipeline is not None else pipeline_b
        name_b = pipeline_b if pipeline_b is not None else pipeline
        if name_a not in pa:
            raise InputError(f"received {name_a!r}, which is not a pipeline of run A "
                             f"({_label(a, 'A')}); its pipelines: {', '.join(pa) or 'none'}.",
                             source="compare", field=option("pipeline"))
        if name_b not in pb:
            raise InputError(f"received {name_b!r}, which is not a pipeline of run B "
                             f"({_label(b, 'B')}); its pipelines: {', '.join(pb) or 'none'}.",
                             source="compare", field=option("pipeline_b" if pipeline_b else "pipeline"))
        return [(name_a, name_b)]
    shared = [p for p in pa if p in pb]
    if not shared:
        raise InputError(f"the runs share no pipeline (A: {', '.join(pa)}; B: {', '.join(pb)}). Fix: name "
                         f"one of each with {setting('pipeline', 'A_NAME')} and {setting('pipeline_b', 'B_NAME')}.",
                         source="compare", field=option("pipeline"))
    return [(p, p) for p in shared]


def _found(rank: Optional[int], k: int) -> bool:
    return rank is not None and rank <= k


def _check_runs(a: RunData, b: RunData) -> None:
    for run, which in ((a, "A"), (b, "B")):
        if not run.per_question:
            raise InputError(f"run {which} ({_label(run, which)}) has no per-question rows "
                             "(per_question.csv); compare needs them.", source="compare")
    if a.is_score != b.is_score:
        kinds = ("a score" if a.is_score else "a run", "a score" if b.is_score else "a run")
        raise InputError(f"A ({_label(a, 'A')}) is {kinds[0]} and B ({_label(b, 'B')}) is {kinds[1]}; compare takes "
                         "two retrieval runs or two scores. Fix: give two `ragexam run --out` folders (or run ids), "
                         "or two `ragexam score --out` folders (or score ids).", source="compare")


#: the settings of a run that decide how a ranking is graded: (config key, what it is)
_GRADING = (("relevance", "relevance rule"), ("overlap", "evidence cover policy"),
            ("ignore_punctuation", "evidence matching (ignore punctuation)"))


@dataclass(frozen=True)
class GradingChange:
    """One way run B was graded differently from run A: ``key`` (``relevance``, ``overlap``, ``ignore_punctuation``
    -- a config key of :data:`_GRADING` -- or ``question_set``), the values in A and B (the question set: its
    ``qa_sha256``), ``what`` differs and the ``fix`` in words."""

    key: str
    a: object
    b: object
    what: str
    fix: str


def grading_changes(a: RunData, b: RunData) -> List[GradingChange]:
    """How the grading of ``b`` differs from ``a``'s (:func:`grading_differences`), one :class:`GradingChange` each."""
    from ragexam.errors import setting

    out: List[GradingChange] = []
    if a.run is not None and b.run is not None:
        ca, cb = a.config, b.config
        for key, what in _GRADING:
            va, vb = ca.get(key), cb.get(key)
            if key in ca and key in cb and va != vb and (key != "relevance" or (va and vb)):
                fix = f"with {setting(key, va)}" if va not in (None, False) else f"without {setting(key, vb)}"
                out.append(GradingChange(key, va, vb, f"the {what}: A {va!r}, B {vb!r}", f"run B again {fix}"))
    qa_a, qa_b = a.dataset.get("qa_sha256"), b.dataset.get("qa_sha256")
    if qa_a and qa_b and qa_a != qa_b:
        out.append(GradingChange("question_set", qa_a, qa_b, f"the question set (qa_sha256 {str(qa_a)[:12]}… vs "
                                 f"{str(qa_b)[:12]}…: its judgments, evidence or answers changed)",
                                 "run B again on A's question set"))
    return out


def grading_differences(a: RunData, b: RunData) -> List[Tuple[str, str]]:
    """How the grading of ``b`` differs from ``a``'s: ``(what differs, how to grade B as A was)`` for the relevance
    rule, the evidence cover policy and matching (runs), and the question set (its hash: its judgments, evidence
    or answer keys changed).  The same ranking scores differently under another grading, so a difference would
    not be the pipelines'."""
    return [(c.what, c.fix) for c in grading_changes(a, b)]


def _check_grading(a: RunData, b: RunData, allow: bool, notes: List[str]) -> None:
    """Refuse (:class:`InputError`) two runs graded differently unless ``allow``; then say so in ``notes``."""
    from ragexam.errors import setting

    diffs = grading_differences(a, b)
    if not diffs:
        return
    what = "; ".join(d for d, _ in diffs)
    if not allow:
        fix = [" and ".join(f for _, f in diffs),
               f"or pass {setting('allow_grading_change')} to compare anyway: the differences then include the change "
               "of grading, not only the pipelines'"]
        raise InputError(f"A ({_label(a, 'A')}) and B ({_label(b, 'B')}) were graded differently -- {what}. "
                         "Identical rankings score differently under another grading, so B − A would report the "
                         f"change of grading as a change of retrieval. Fix: {'; '.join(fix)}.", source="compare",
                         field="grading")
    notes.append(f"the differences below include the change of grading, not only the pipelines': {what}")


def _dataset_notes(a: RunData, b: RunData, k: int) -> List[str]:
    notes: List[str] = []
    ds_a, ds_b = a.dataset, b.dataset
    for key in ("corpus_sha256",):
        if ds_a.get(key) and ds_b.get(key) and ds_a.get(key) != ds_b.get(key):
            notes.append(f"the corpus differs between the runs ({key} {str(ds_a[key])[:12]}… vs "
                         f"{str(ds_b[key])[:12]}…): questions are matched by query_id only")
    k_b = miss_cutoff(b.summary)
    if k_b != k:
        notes.append(f"the runs used different missed cutoffs (A: {k}, B: {k_b}); flips use k={k}")
    return notes


def _chosen_metrics(a: RunData, b: RunData, metrics: Optional[Sequence[str]]) -> List[str]:
    cols_a, cols_b = metric_columns(a.per_question), metric_columns(b.per_question)
    available = [m for m in cols_a if m in cols_b]
    if metrics:
        from ragexam.metrics.ranking.names import canonical

        meant = [canonical(m, available) for m in metrics]  # recall@5 is r@5, as check reads it
        unknown = [m for m, c in zip(metrics, meant) if c is None]
        if unknown:
            from ragexam.errors import MetricNameError

            raise MetricNameError(f"received {', '.join(map(repr, unknown))}; the metrics both runs have are: "
                                  f"{', '.join(available) or 'none'}.", source="compare",
                                  field=option("metrics", "--metric"))
        return [c for c in meant if c is not None]
    if not available:
        raise InputError("the runs have no metric column in common.", source="compare")
    return available


#: two scores' text metrics whose per-answer values are sentence statistics: their mean is not the corpus
#: statistic ``score`` and ``check`` report under the same name (docs/report.md)
_SENTENCE_MEANS = ("bleu", "chrf")


def _values(ia: Dict[str, Any], ib: Dict[str, Any], order: Sequence[str], m: str, scores: bool):
    """``(questions, A, B)`` of metric ``m`` over the shared scored questions ``order``: every one for two runs (an
    empty value is refused); for two scores, those both have a value for (an answer not judged -- it declines, the
    judge failed -- has none)."""
    import numpy as np

    va = [ia[q].value(m) for q in order]
    vb = [ib[q].value(m) for q in order]
    missing = [q for q, x, y in zip(order, va, vb) if x is None or y is None]
    if missing and not scores:
        raise InputError(f"metric {m!r} is empty for {fmt.plural(len(missing), 'shared scored question')} "
                         f"(first: {missing[0]}); expected a value for every scored question.",
                         source="compare", field=m)
    kept = [(q, x, y) for q, x, y in zip(order, va, vb) if x is not None and y is not None]
    return ([q for q, _, _ in kept], np.array([x for _, x, _ in kept], dtype=float),
            np.array([y for _, _, y in kept], dtype=float))


def _metric_diffs(ia: Dict[str, Any], ib: Dict[str, Any], order: Sequence[str], chosen: Sequence[str],
                  scores: bool, opts: Dict[str, Any], notes: List[str], pair: str) -> List[MetricDiff]:
    """Each metric of ``chosen`` compared on the questions it has a value for in both (:func:`_values`), Holm's
    correction over them; a note for every metric compared on fewer than the shared questions, and for a
    metric with nothing to compare (it is left out)."""
    from ragexam import stats
    from ragexam.stats.comparison import holm_family

    raw, kept, partly, empty = [], [], {}, []
    for m in chosen:
        qs, va, vb = _values(ia, ib, order, m, scores)
        if not qs:
            empty.append(m)
            continue
        if len(qs) < len(order):
            partly.setdefault(len(qs), []).append(m)
        raw.append(stats.compare(va, vb, names=("A", "B"), **opts))
        kept.append((m, va, vb, len(order) - len(qs)))
    for n, ms in partly.items():
        reasons = " / ".join(dict.fromkeys(f"{m[:-len('_pass')] if m.endswith('_pass') else m}_reason" for m in ms))
        notes.append(f"{pair}: {', '.join(ms)} compared on the {fmt.plural(n, 'question')} both scores have a "
                     f"value for; {len(order) - n} of the {len(order)} shared left out: no value in A or B (a judge "
                     f"metric: not judged, e.g. no_claims: the answer declines; per_answer.csv's {reasons} says why)")
    if empty:
        notes.append(f"{pair}: {', '.join(empty)} not compared: no value on any of the {len(order)} shared "
                     "questions in A or B")
    out = []
    for (m, va, vb, left), c in zip(kept, holm_family(raw)):
        statistic = "mean per answer" if scores and m in _SENTENCE_MEANS else "mean"
        out.append(MetricDiff(metric=m if statistic == "mean" else f"{m} ({statistic})", column=m, n=c.n, mean_a=float(va.mean()), mean_b=float(vb.mean()), diff=c.diff,
                              ci_low=c.ci_low, ci_high=c.ci_high, p_value=c.p_value, p_holm=float(c.p_adjusted),
                              method=c.method, verdict=c.verdict, reading=c.reading, statistic=statistic,
                              left_out=left))
    if any(d.statistic != "mean" for d in out):
        notes.append(f"{pair}: " + ", ".join(d.column for d in out if d.statistic != "mean") + " here are means of "
                     "per-answer (sentence) values, not the corpus statistics score and check report under the "
                     "same name: a mean of sentence scores is another number")
    return out


def _stage_verdicts(run: RunData, pipeline: str) -> Dict[str, str]:
    """A score's stage label and verdict of each answer of ``pipeline`` (``generation_miss: incorrect``); none
    for a run."""
    if not run.is_score:
        return {}
    return {q: f"{v.label}: {v.verdict}" if v.verdict else v.label
            for (p, q), v in run.score.verdicts().items() if p == pipeline}


def _flips(a: RunData, b: RunData, names: Tuple[str, str], ia: Dict[str, Any], ib: Dict[str, Any],
           order: Sequence[str], k: int) -> List[Flip]:
    """The questions found at ``k`` in one run and missed in the other, with their evidence."""
    miss_a, miss_b = _missed_info(a, names[0]), _missed_info(b, names[1])
    said_a, said_b = _stage_verdicts(a, names[0]), _stage_verdicts(b, names[1])
    flips: List[Flip] = []
    for q in order:
        ra, rb = ia[q].first_rank, ib[q].first_rank
        fa, fb = _found(ra, k), _found(rb, k)
        if fa == fb:
            continue
        info = miss_b.get(q) or miss_a.get(q)
        flips.append(Flip(query_id=q, direction="found→missed" if fa else "missed→found",
                          type=ia[q].type or ib[q].type, question=info.question if info is not None else None,
                          evidence=list(info.evidence) if info is not None else [], first_rank_a=ra,
                          first_rank_b=rb, top_a=list(ia[q].top_ids), top_b=list(ib[q].top_ids),
                          verdict_a=said_a.get(q), verdict_b=said_b.get(q)))
    return flips


def _compare_pair(a: RunData, b: RunData, names: Tuple[str, str], chosen: Sequence[str], k: int, alpha: float,
                  n_resamples: int, n_permutations: int, seed: int, notes: List[str]) -> PipelineComparison:
    name_a, name_b = names
    ia, ib = _index(a, name_a), _index(b, name_b)
    scored_a = {q for q, r in ia.items() if r.answerable}
    scored_b = {q for q, r in ib.items() if r.answerable}
    order = [q for q in ia if q in scored_a and q in scored_b]
    only_a, only_b = sorted(scored_a - scored_b), sorted(scored_b - scored_a)
    if not order:
        raise InputError(f"pipeline {name_a!r} of run A and {name_b!r} of run B share no scored question "
                         f"(A scored {len(scored_a)}, B {len(scored_b)}); nothing to compare.", source="compare")
    pair = name_a if name_a == name_b else f"{name_a} / {name_b}"
    metric_diffs = _metric_diffs(ia, ib, order, chosen, a.is_score, dict(
        alpha=alpha, n_resamples=n_resamples, n_permutations=n_permutations, seed=seed), notes, pair)
    if only_a or only_b:
        notes.append(f"{pair}: the question sets differ — "
                     f"compared on the {len(order)} questions both runs scored; "
                     + ", ".join(f"{n} {'scored ' if i == 0 else ''}only in {side}" for i, (n, side) in enumerate(
                         (n, side) for n, side in ((len(only_a), "A"), (len(only_b), "B")) if n)))
    sig = Signature([("compare", "paired"), ("ci", "percentile"), ("conf", 0.95), ("bs", n_resamples),
                     ("test", "paired-randomization"), ("perm", n_permutations), ("seed", seed),
                     ("mcc", "holm"), ("alpha", float(alpha)), ("k", k), ("n", len(order))])
    return PipelineComparison(pipeline_a=name_a, pipeline_b=name_b, n_shared=len(order), only_a=only_a,
                              only_b=only_b, k=k, metrics=metric_diffs,
                              flips=_flips(a, b, names, ia, ib, order, k), signature=sig)


def compare_runs(a: RunData, b: RunData, *, pipeline: Optional[str] = None, pipeline_b: Optional[str] = None,
                 metrics: Optional[Sequence[str]] = None, miss_k: Optional[int] = None, alpha: float = 0.05,
                 n_resamples: Optional[int] = None, n_permutations: Optional[int] = None,
                 seed: Optional[int] = None, allow_grading_change: bool = False) -> RunComparison:
    """Compare run ``b`` against run ``a`` (see the module docstring).

    :param pipeline: the pipeline to compare (in both runs; with ``pipeline_b``, A's side).
    :param pipeline_b: B's pipeline when it has another name than A's.
    :param metrics: metric columns to compare (default: every metric column both runs have).
    :param miss_k: the found/missed cutoff for flips (default: run A's ``miss_k``).
    :param n_resamples, n_permutations, seed: default to run A's config (else 2000, 10000, 12345).
    :param allow_grading_change: compare runs graded differently (:func:`grading_differences`: another relevance
        rule, cover policy or question set); refused otherwise, and then noted.
    :raises InputError: no per-question rows, a run against a score, runs graded differently (without
        ``allow_grading_change``), no shared pipeline or question, an unknown metric.
    """
    from ragexam import stats

    from ragexam.errors import names

    metrics = names(metrics, source="compare", field="metrics", what="a metric name")
    _check_runs(a, b)
    cfg = a.config
    seed = int(seed if seed is not None else cfg.get("seed", stats.DEFAULT_SEED))
    n_resamples = int(n_resamples if n_resamples is not None else cfg.get("n_resamples", 2000))
    n_permutations = int(n_permutations if n_permutations is not None else cfg.get("n_permutations", 10000))
    k = int(miss_k if miss_k is not None else miss_cutoff(a.summary))
    if k < 1:
        raise InputError(f"received {k}; expected a cutoff >= 1.", source="compare", field=option("miss_k"))
    notes: List[str] = []
    _check_grading(a, b, allow_grading_change, notes)
    notes += _dataset_notes(a, b, k)
    chosen = _chosen_metrics(a, b, metrics)
    trust = _judge_trust(a, b, chosen, notes)
    out = [_compare_pair(a, b, names, chosen, k, alpha, n_resamples, n_permutations, seed, notes)
           for names in _pairs(a, b, pipeline, pipeline_b)]
    return RunComparison(run_a=_label(a, "A"), run_b=_label(b, "B"), pipelines=out, notes=notes, judge_trust=trust)


def _judge_trust(a: RunData, b: RunData, chosen: Sequence[str], notes: List[str]) -> Dict[str, Dict[str, str]]:
    """Two scores: each judged metric's trust verdict on each side, and a note where a judge was not shown to
    separate (:func:`ragexam.analysis.answers.trusted.compared_trust`)."""
    if not a.is_score:
        return {}
    from ragexam.analysis.answers.trusted import compared_trust

    verdicts, said = compared_trust(a.score.judge, b.score.judge, chosen)
    notes.extend(said)
    return verdicts
