"""``ragexam judge-check``: does this judge tell good from bad -- on the user's own questions, before it is trusted?

A **contrast set** is built from the question set itself (no labels needed).  What it holds depends on what the
metric judges (:class:`~ragexam.metrics.judge.metric.JudgeMetric`: its units and inputs), so any registered metric
or custom rubric of these kinds can be checked:

=============  ==========================  =====================================  ==================================
kind           metrics                     positive item                          negative items
=============  ==========================  =====================================  ==================================
``contexts``   one value per context       the question with the chunk that       ``hard_negative``: the best BM25
               (context_relevance,         holds its evidence (``evidence``)      chunk for the question that holds
               context_precision)                                                 no evidence of it; ``random``: a
                                                                                  seeded random chunk of another
                                                                                  document
``recall``     one value per statement     the reference with its evidence        the same with a ``random`` chunk
               (context_recall)            chunks
``grounding``  answer + contexts           the reference answer as the answer,    the ``perturbed`` reference (below)
               (faithfulness)              its evidence chunks as contexts        with the same contexts
``reference``  answer + ground truth       the question's evidence strings as     the same evidence with a
               (answer_correctness)        the answer, judged against the         contradicting change
               reference (``evidence``)    reference                              (``perturbed``, below)
=============  ==========================  =====================================  ==================================

The answer-correctness positive is never the reference judged against itself (any judge that can see two equal
texts "separates" that): it is the evidence -- a correct answer in the document's words -- and its negative the
same words with a change that contradicts the reference (only numbers that also occur in the reference are
changed), so both differ from the reference alike and only the content tells them apart.

A metric that judges the answer alone (answer_relevancy, abstention) has no contrast here.

Each item has one context (context metrics) so the judge's score of that context is the item's score.
**Perturbation** (:func:`perturb`, seeded, the same every run): every number is changed (``n`` -> ``2n``, ``0``
and ``1`` -> ``n + 2``; ``30분`` -> ``60분``, ``VPN-ERR-619`` -> ``VPN-ERR-1238``); a text without numbers has its
first affirmative ending negated (``할 수 있습니다`` -> ``할 수 없습니다``, ``됩니다`` -> ``되지 않습니다``, ``can`` ->
``cannot``, ...); a text with neither becomes another question's reference answer (``other_answer``).

The contrast set is judged like any score (cache, resume, retries, unjudged with reasons) -- with the quotation
rule off (:mod:`ragexam.metrics.judge.quoted`: a claim a context states word for word is supported without the
judge's say), so the check measures the judge and not the deterministic rule in front of it -- and for each metric
and each scoring available -- the written score (``sample``) and, when the endpoint returns log-probabilities, the
probability-weighted one (``probability``, from the same replies) -- ragexam reports, over the judged items:

* **ROC AUC** of positives against negatives (:func:`ragexam.stats.discrimination.auc`) with a 95 % bootstrap
  interval that resamples questions, and the AUC against each kind of negative;
* the **mean score gap** (positives minus negatives);
* the **share of pairs ordered correctly**: within each question, (positive, negative) pairs whose positive
  scored higher (ties are counted apart);
* a **verdict** (:func:`verdict_of`), over the items judged under that scoring:

  ============  ======================================================================================
  verdict       when
  ============  ======================================================================================
  ``unknown``   no item was judged: no AUC, no verdict (never a statistic of 0 items)
  ``too_few``   fewer than :data:`MIN_QUESTIONS` questions have both a good and a bad item judged: the AUC
                is shown, no verdict -- even a judge that orders every pair right cannot show more on so
                few (the interval is floored by the Wilson interval over the questions,
                :func:`ragexam.stats.discrimination.auc_ci`: 8 perfect questions give [0.68-1.00])
  ``does_not``  every score is the same ("scores are flat"), or the interval reaches 0.5
  ``inverted``  the interval lies wholly below 0.5: the judge scores the bad items *higher* -- a reversed
                scale or a swapped label in the prompt or the parsing, not a judge that cannot tell
  ``weakly``    the interval's lower end is above 0.5 and below :data:`SEPARATES` (0.70)
  ``separates`` the interval's lower end is at least 0.70
  ============  ======================================================================================

  in a sentence such as "this judge separates relevant from irrelevant contexts: AUC 0.93 [0.88-0.97], 24
  questions".

Each check is recorded in the LLM cache (kind ``judge-check``) keyed by model, endpoint, metric, rubric hash,
scoring and the data set it was measured on (:func:`ragexam.analysis.judging.trust.dataset_of`);
:mod:`ragexam.analysis.judging.trust` reads it back (:func:`~ragexam.analysis.judging.trust.recorded_check`), and
``ragexam score`` with the same judge puts its verdict beside each judged metric -- running a check on a sample
(:data:`SCORE_SAMPLE` questions) when none is recorded for the question set (:mod:`ragexam.analysis.answers.
trusted`).
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from ragexam import fmt
from ragexam.errors import InputError
from ragexam.metrics.judge.registry import default_metrics

__all__ = ["KINDS", "contrast_kind", "DEFAULT_CHECK_METRICS", "ContrastItem", "Separation", "MetricCheck",
           "JudgeCheck", "perturb", "build_contrast", "check_judge", "separation", "verdict_of", "judge_alone",
           "evidence_contrast", "contrast_questions", "CHECK_FORMAT", "SEPARATES", "FLAT", "MIN_QUESTIONS", "VERDICTS",
           "SCORE_SAMPLE"]

#: contrast kind -> (what the positives are, what the negatives are), for the verdict's sentence
KINDS: Dict[str, Tuple[str, str]] = {
    "contexts": ("relevant", "irrelevant contexts"),
    "recall": ("contexts that hold the reference", "contexts that do not"),
    "grounding": ("answers their contexts support", "answers that contradict them"),
    "reference": ("correct answers", "answers with a contradicting change"),
}
#: the metrics judge-check checks when none is named: the built-ins that declare it (``default_for``)
DEFAULT_CHECK_METRICS = default_metrics("check")
CHECK_FORMAT = "ragexam-judge-check/2"
#: lower end of the AUC interval from which a judge "separates"
SEPARATES = 0.70
#: questions (with a good and a bad item judged) a verdict needs: below it, ``too_few``
MIN_QUESTIONS = 10
#: the verdicts, best first (module docstring)
VERDICTS = ("separates", "weakly", "does_not", "inverted", "too_few", "unknown")
#: the questions of the judge-check ``ragexam score`` runs by default: a verdict needs :data:`MIN_QUESTIONS`, and
#: with the interval floored by Wilson's over the questions a judge that orders 94 % of the pairs right reads
#: "separates" on 20 questions (lower end 0.75) but only "weakly" on 12 (0.67); 20 leaves room for questions whose
#: evidence no chunk holds whole.  With the three default metrics: 7 judgments a question, 140 in all.
SCORE_SAMPLE = 20
FLAT = "scores are flat"
_NEGATIONS = (("할 수 있습니다", "할 수 없습니다"), ("할 수 없습니다", "할 수 있습니다"), ("수 있습니다", "수 없습니다"),
              ("수 없습니다", "수 있습니다"), ("됩니다", "되지 않습니다"), ("합니다", "하지 않습니다"),
              ("있습니다", "없습니다"), ("없습니다", "있습니다"), ("입니다", "이 아닙니다"),
              (" cannot ", " can "), (" can ", " cannot "), (" is ", " is not "), (" are ", " are not "))
_NUMBER = re.compile(r"\d+")


@dataclass(frozen=True)
class ContrastItem:
    """One judged item of the contrast set: its question, ``kind`` (``evidence``, ``key``, ``hard_negative``,
    ``random``, ``perturbed``), whether it is a ``positive``, the :class:`~ragexam.metrics.judge.JudgeItem` and
    how it was made (``detail``: the chunk id, the perturbation)."""

    query_id: str
    metric: str
    kind: str
    positive: bool
    item: Any
    detail: str = ""


def _changed(m: "re.Match[str]") -> str:
    n = int(m.group(0))
    return str(n * 2 if n >= 2 else n + 2)


def perturb(text: str, others: Sequence[str], rng: random.Random, *,
            within: Optional[str] = None) -> Tuple[str, str]:
    """``(changed text, how)`` (module docstring): ``numbers``, ``negation`` or ``other_answer``.  ``within``: only
    numbers that also occur in it (the reference) are changed, so the change contradicts it."""
    wanted = None if within is None else set(_NUMBER.findall(within))
    if any(wanted is None or n in wanted for n in _NUMBER.findall(text)):
        return _NUMBER.sub(lambda m: _changed(m) if wanted is None or m.group(0) in wanted else m.group(0),
                           text), "numbers"
    for old, new in _NEGATIONS:
        if old in text:
            return text.replace(old, new, 1), "negation"
    pool = [o for o in others if o != text]
    if not pool:
        raise InputError("the perturbation needs a second reference answer to swap in; the question set has only "
                         "one", field="ground_truth")
    return rng.choice(pool), "other_answer"


def contrast_kind(defn: Any) -> Optional[str]:
    """The contrast a metric can be checked on (module docstring), from what it judges; ``None`` when none."""
    if defn.unit_kind == "contexts":
        return "contexts"
    if defn.unit_kind == "statements":
        return "recall"
    needs = set(defn.needs)
    if {"answer", "contexts"} <= needs:
        return "grounding"
    if {"answer", "ground_truth"} <= needs and "second_answer" not in needs:
        return "reference"
    return None


def _evidence_chunks(q: Any, chunks: Sequence[Any], matcher: Any) -> List[Any]:
    ev = list(q.evidence or ())
    return [c for c in chunks if c.doc_id in set(q.relevant_doc_ids or ()) and matcher.covered(c.text, list(
        enumerate(ev)))]


def _negatives(q: Any, chunks: Sequence[Any], hits: Sequence[Tuple[str, float]], by_id: Dict[str, Any],
               matcher: Any, rng: random.Random) -> Dict[str, Any]:
    ev = list(enumerate(q.evidence or ()))
    hard = next((by_id[cid] for cid, _ in hits if not matcher.covered(by_id[cid].text, ev)), None)
    pool = [c for c in chunks if c.doc_id not in set(q.relevant_doc_ids or ()) and not matcher.covered(c.text, ev)]
    out = {"random": rng.choice(pool)} if pool else {}
    if hard is not None:
        out["hard_negative"] = hard
    return out


def _retrieve(questions: Sequence[Any], chunks: Sequence[Any], top: int = 10) -> List[List[Tuple[str, float]]]:
    from ragexam.retrieval.bm25 import BM25Retriever

    bm25 = BM25Retriever(progress=False).index([c.chunk_id for c in chunks], [c.text for c in chunks])
    return bm25.search([q.question for q in questions], top)


def _kinds(metrics: Sequence[Any]) -> Dict[str, str]:
    """``{metric name: contrast kind}`` of metric names (the registry) or objects; ``InputError`` for one
    without a contrast."""
    from ragexam.metrics.judge.metric import JudgeMetric
    from ragexam.metrics.judge.registry import registered, resolve_metrics

    defs = resolve_metrics(list(metrics))
    kinds = {d.name: contrast_kind(d) for d in defs}
    bad = [m for m, k in kinds.items() if k is None]
    if bad:
        able = [n for n, d in registered().items() if isinstance(d, JudgeMetric) and contrast_kind(d)]
        raise InputError(f"judge-check cannot build a contrast set for {', '.join(bad)} (it judges the answer "
                         f"alone); expected metrics that judge contexts or an answer against contexts or the "
                         f"reference: {', '.join(able)}", source="--metric", field="metric")
    return kinds  # type: ignore[return-value]


def build_contrast(qa: Any, corpus: Any, metrics: Sequence[Any], *, chunker: str = "paragraphs:400",
                   limit: Optional[int] = None, seed: int = 12345,
                   notes: Optional[List[str]] = None) -> Dict[str, List[ContrastItem]]:
    """The contrast set of each metric (names or :class:`~ragexam.metrics.judge.metric.JudgeMetric` objects;
    module docstring) from the answerable questions with evidence of ``qa`` (a seeded sample of ``limit`` of
    them) over ``corpus`` chunked with ``chunker``."""
    from ragexam.data.chunking import chunk_corpus
    from ragexam.data.evidence import EvidenceMatcher
    from ragexam.metrics.judge import JudgeItem

    notes = notes if notes is not None else []
    kinds = _kinds(metrics)
    rng = random.Random(seed)
    questions = contrast_questions(qa)
    if limit is not None:
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 2:
            raise InputError(f"received {limit!r}; expected an integer >= 2", source="--limit", field="limit")
        questions = sorted(rng.sample(questions, min(limit, len(questions))), key=lambda q: q.query_id)
    if len(questions) < 2:
        raise InputError(f"{qa.source} has {len(questions)} answerable question(s) with evidence and a ground_truth; "
                         "a contrast set needs at least 2", source=str(qa.source or "QASet"), field="evidence")
    chunks = list(chunk_corpus(corpus, chunker))
    by_id = {c.chunk_id: c for c in chunks}
    matcher = EvidenceMatcher()
    hits = _retrieve(questions, chunks)
    refs = [q.ground_truth for q in questions]
    evidence = [_as_answer(q) for q in questions]
    rng_ev = random.Random(f"{seed}:evidence")  # apart from ``rng``: the other kinds' items do not move
    out: Dict[str, List[ContrastItem]] = {m: [] for m in kinds}
    for q, q_hits in zip(questions, hits):
        pos = _evidence_chunks(q, chunks, matcher)
        if not pos:
            notes.append(f"{q.query_id}: no {chunker} chunk holds its evidence whole; left out of the contrast set")
            continue
        negs = _negatives(q, chunks, q_hits, by_id, matcher, rng)
        answers = {"reference": perturb(q.ground_truth, refs, rng)}
        if "reference" in kinds.values():
            answers["evidence"] = perturb(_as_answer(q), evidence, rng_ev, within=q.ground_truth)
        ctx = tuple(c.text for c in pos)
        for m, kind in kinds.items():
            out[m].extend(_items(m, kind, q, pos[0], ctx, negs, answers, JudgeItem))
    return out


def contrast_questions(qa: Any) -> List[Any]:
    """The questions of ``qa`` a contrast set can be built from: answerable, with evidence and a ground truth."""
    return [q for q in qa if q.answerable and q.evidence and q.ground_truth]


def _as_answer(q: Any) -> str:
    """The question's evidence strings as one answer (the answer-correctness positive)."""
    return " ".join(e.strip() for e in q.evidence)


def _items(metric: str, kind: str, q: Any, pos: Any, ctx: Tuple[str, ...], negs: Dict[str, Any],
           answers: Dict[str, Tuple[str, str]], make: Callable[..., Any]) -> List[ContrastItem]:
    qid, gt = q.query_id, q.ground_truth

    def one(role: str, positive: bool, contexts: Tuple[str, ...], answer: Optional[str], detail: str) -> ContrastItem:
        return ContrastItem(qid, metric, role, positive, make(f"{qid} [{role}]", q.question, answer, contexts, gt),
                            detail)

    if kind == "contexts":
        return [one("evidence", True, (pos.text,), None, pos.chunk_id)] + [
            one(role, False, (c.text,), None, c.chunk_id) for role, c in negs.items()]
    if kind == "recall":
        rand = negs.get("random")
        return [one("evidence", True, ctx, None, pos.chunk_id)] + (
            [one("random", False, (rand.text,), None, rand.chunk_id)] if rand is not None else [])
    if kind == "grounding":
        bad_answer, how = answers["reference"]
        return [one("key", True, ctx, gt, "the reference answer"), one("perturbed", False, ctx, bad_answer, how)]
    bad_answer, how = answers["evidence"]
    return [one("evidence", True, (), _as_answer(q), "the question's evidence as the answer"),
            one("perturbed", False, (), bad_answer, f"{how} (of the evidence)")]


# --- the verdict ------------------------------------------------------------------------------------------
@dataclass
class Separation:
    """How one metric's scores (under one ``scoring``) separate its positives from its negatives: over
    ``n_scored`` of ``n_items`` items (those with a score under this scoring), ``n_questions`` questions with both
    a positive and a negative scored; ``auc`` is ``None`` when there is no such pair."""

    metric: str
    scoring: str
    auc: Optional[Any]
    by_kind: Dict[str, float]
    mean_pos: Optional[float]
    mean_neg: Optional[float]
    ordered: Optional[float]
    ties: Optional[float]
    n_pairs: int
    verdict: str
    text: str
    n_items: int = 0
    n_scored: int = 0
    n_questions: int = 0

    @property
    def gap(self) -> Optional[float]:
        return None if self.mean_pos is None or self.mean_neg is None else self.mean_pos - self.mean_neg

    def to_dict(self) -> Dict[str, Any]:
        return {"metric": self.metric, "scoring": self.scoring, "auc": self.auc.to_dict() if self.auc else None,
                "auc_by_negative": self.by_kind, "mean_positive": self.mean_pos, "mean_negative": self.mean_neg,
                "gap": self.gap, "ordered": self.ordered, "ties": self.ties, "n_pairs": self.n_pairs,
                "n_items": self.n_items, "n_scored": self.n_scored, "n_questions": self.n_questions,
                "verdict": self.verdict, "text": self.text}


def _ends(x: float, digits: int, tests: Sequence[Callable[[float], bool]]) -> str:
    """``x`` with ``digits`` decimals, or more (up to 4) when fewer would put it on the other side of a verdict's
    boundary than it is: a low end of 0.6985 reads 0.699, not 0.70 (a "separates" that is not one)."""
    while digits < 4 and any(t(x) != t(round(x, digits)) for t in tests):
        digits += 1
    return fmt.num(x, digits)


def auc_interval(a: Any) -> str:
    """``AUC 0.86 [0.699–0.94]``: an AUC with its interval, each end with enough decimals that its rounding does not
    cross a boundary of :func:`verdict_of` (0.5 and :data:`SEPARATES`), so the shown interval never contradicts the
    verdict beside it."""
    return f"AUC {fmt.num(a.auc, 2)} [{auc_ci_text(a.low, a.high)}]"


def auc_ci_text(low: float, high: float) -> str:
    """An AUC's interval as :func:`auc_interval` shows it: ``0.699–0.94``."""
    return (f"{_ends(low, 2, (lambda v: v >= SEPARATES, lambda v: v > 0.5))}–"
            f"{_ends(high, 2, (lambda v: v < 0.5,))}")


def verdict_of(kind: str, a: Any, values: Sequence[float], n_questions: int, n_items: int,
               n_answers: Optional[int] = None) -> Tuple[str, str]:
    """``(verdict, sentence)`` of an AUC interval ``a`` (``None``: no pair scored) over ``n_questions`` questions
    with scores ``values`` of ``n_items`` items (the table in the module docstring); ``n_answers``: the items are
    contexts of that many answers, several to a question (traced traffic), said as ``54 answers of 22 questions``."""
    good, bad = KINDS[kind]
    if a is None:
        return "unknown", (f"no verdict: {len(values)} of {fmt.plural(n_items, 'item')} judged, no question with "
                           "both a good and a bad item judged")
    of = (f"{fmt.plural(n_answers, 'answer')} of " if n_answers is not None and n_answers != n_questions else "")
    where = f"{auc_interval(a)}, {of}{fmt.plural(n_questions, 'question')}"
    if n_questions < MIN_QUESTIONS:
        return "too_few", (f"no verdict: {fmt.plural(n_questions, 'question')} judged, too few -- a verdict needs "
                           f"at least {MIN_QUESTIONS} ({where}); check on more questions (--limit)")
    if len(set(values)) <= 1:
        return "does_not", f"this judge does not separate {good} from {bad}: {FLAT} ({where})"
    if a.high < 0.5:
        return "inverted", (f"this judge scores {bad} above {good}: an inverted scale ({where}) -- a prompt or "
                            "parsing fault (a reversed scale, a swapped label), not a judge that cannot tell; read "
                            "the rubric and a few replies")
    if a.low >= SEPARATES:
        return "separates", f"this judge separates {good} from {bad}: {where}"
    if a.low > 0.5:
        return "weakly", f"this judge separates {good} from {bad} only weakly: {where}"
    return "does_not", f"this judge does not separate {good} from {bad}: {where}"


def separation(metric: str, scoring: str, rows: Sequence[Tuple[ContrastItem, Optional[float]]], *,
               seed: int, n_resamples: int = 2000, kind: str = "contexts",
               n_answers: Optional[int] = None) -> Separation:
    """The :class:`Separation` of ``(item, score)`` rows (rows without a score under this scoring have ``None``)
    of a metric whose contrast is of ``kind`` (:data:`KINDS`, for the verdict's words); the items' ``query_id`` is
    the cluster the interval resamples (a question); ``n_answers`` as :func:`verdict_of` says it."""
    from ragexam.stats.discrimination import auc, auc_ci

    judged = [(c, s) for c, s in rows if s is not None]
    pos = [(c, s) for c, s in judged if c.positive]
    neg = [(c, s) for c, s in judged if not c.positive]
    a = auc_ci([s for _, s in pos], [s for _, s in neg], [c.query_id for c, _ in pos], [c.query_id for c, _ in neg],
               n_resamples=n_resamples, seed=seed) if pos and neg else None
    kinds = sorted({c.kind for c, _ in neg})
    by_kind = {k: auc([s for _, s in pos], [s for c, s in neg if c.kind == k]) for k in kinds} if pos else {}
    best = {c.query_id: s for c, s in pos}
    pairs = [(best[c.query_id], s) for c, s in neg if c.query_id in best]
    ordered = sum(p > n for p, n in pairs) / len(pairs) if pairs else None
    ties = sum(p == n for p, n in pairs) / len(pairs) if pairs else None
    n_questions = len({c.query_id for c, _ in neg if c.query_id in best})
    verdict, text = verdict_of(kind, a, [s for _, s in judged], n_questions, len(rows), n_answers)
    mean = (lambda xs: sum(s for _, s in xs) / len(xs) if xs else None)
    return Separation(metric, scoring, a, by_kind, mean(pos), mean(neg), ordered, ties, len(pairs), verdict, text,
                      len(rows), len(judged), n_questions)


def evidence_contrast(metric: str, scoring: str, rows: Sequence[Tuple[Any, ...]], *,
                      seed: int = 12345) -> Separation:
    """The :class:`Separation` of a context metric's values against the evidence, no LLM call: ``rows`` are
    ``(question, the judge's value of one context, whether that context holds the question's evidence)`` -- the
    data of ``score``'s "judge beside the evidence" table -- read like a judge-check's ``contexts`` contrast
    (relevant vs irrelevant contexts, :func:`verdict_of`), the interval resampling questions (clusters).

    Traced traffic answers a few questions many times: give ``(answer, question, value, holds)`` rows, ``question``
    the question the answer answers (its exam question, else its normalised text), and the answers of one question
    are resampled together and counted as one question -- the sentence says ``54 answers of 22 questions`` --, as
    judge-check's clustered AUC does (:func:`ragexam.stats.discrimination.auc_ci`), not as 54 independent ones."""
    answers = {r[0] for r in rows if len(r) == 4}
    items = [(ContrastItem(r[-3], metric, "evidence" if r[-1] else "no_evidence", bool(r[-1]), None), float(r[-2]))
             for r in rows]
    return separation(metric, scoring, items, seed=seed, kind="contexts", n_answers=len(answers) if answers else None)


@dataclass
class MetricCheck:
    """One metric's check: the items, how many were judged, why the others were not, and the separation under
    each scoring."""

    metric: str
    items: List[ContrastItem]
    scores: Dict[str, Any]
    separations: Dict[str, Separation] = field(default_factory=dict)

    @property
    def n_judged(self) -> int:
        return sum(1 for s in self.scores.values() if s.judged)

    def unjudged(self) -> Dict[str, int]:
        from collections import Counter

        return dict(Counter(s.reason for s in self.scores.values() if not s.judged).most_common())

    def to_dict(self) -> Dict[str, Any]:
        rows = []
        for c in self.items:
            s = self.scores[c.item.item_id]
            rows.append({"query_id": c.query_id, "kind": c.kind, "positive": c.positive, "detail": c.detail,
                         "status": s.status, "score": s.score, "score_sample": s.details.get("score_sample", s.score),
                         "reason": s.reason, "message": s.message, "answer": c.item.answer})
        return {"metric": self.metric, "n": len(self.items), "n_judged": self.n_judged, "unjudged": self.unjudged(),
                "separation": {k: v.to_dict() for k, v in self.separations.items()}, "items": rows}


@dataclass
class JudgeCheck:
    """What ``judge-check`` found: per metric a :class:`MetricCheck`; the judge run; notes."""

    checks: Dict[str, MetricCheck]
    judge_run: Any
    settings: Dict[str, Any]
    notes: List[str] = field(default_factory=list)

    def to_dict(self) -> Dict[str, Any]:
        jr = self.judge_run
        return {"format": CHECK_FORMAT, "settings": self.settings,
                "judge": {"model": jr.model, "endpoint": jr.endpoint, "language": jr.language,
                          "signatures": jr.signatures, "scoring": jr.scoring, "usage": jr.usage, "probe": jr.probe},
                "metrics": {m: c.to_dict() for m, c in self.checks.items()}, "notes": list(self.notes)}


def judge_alone(judge: Any) -> Any:
    """``judge`` with the quotation rule off (a copy when it was on): what a check measures."""
    import copy

    if not getattr(judge, "quoted", False):
        return judge
    alone = copy.copy(judge)
    alone.quoted = False
    return alone


def check_judge(judge: Any, contrast: Dict[str, List[ContrastItem]], *, seed: int = 12345,
                progress: Optional[Callable[[int, int], None]] = None, notes: Optional[List[str]] = None,
                settings: Optional[Dict[str, Any]] = None, dataset: Any = None) -> JudgeCheck:
    """Judge the contrast set with ``judge`` (the quotation rule off: the judge's own verdicts) and measure each
    metric's separation (module docstring); with ``dataset`` (:func:`ragexam.analysis.judging.trust.dataset_of` of
    the question set the contrast came from) the checks are recorded in the judge's cache under it."""
    judge = judge_alone(judge)
    run = judge.run(None, {m: [c.item for c in items] for m, items in contrast.items()}, progress=progress)
    checks: Dict[str, MetricCheck] = {}
    for m, items in contrast.items():
        scores = run.items(m)
        mc = MetricCheck(m, items, scores)
        scorings = ["sample"] + (["probability"] if run.scoring.get(m) == "probability" else [])
        kind = contrast_kind(run.definition(m)) or "reference"
        for sc in scorings:
            rows = [(c, _score(scores[c.item.item_id], sc)) for c in items]
            mc.separations[sc] = separation(m, sc, rows, seed=seed, kind=kind)
        checks[m] = mc
    out = JudgeCheck(checks, run, dict(settings or {}), list(notes or []) + list(run.notes))
    if dataset is not None:
        from ragexam.analysis.judging.trust import record_check

        out.settings.setdefault("dataset", {"name": dataset.name, "sha": dataset.sha, "n": dataset.n})
        record_check(judge, out, dataset)
    return out


def _score(s: Any, scoring: str) -> Optional[float]:
    """An item's score under ``scoring``: the written one (kept beside a probability score, and kept when only the
    probabilities could not be read), or the probability-weighted one."""
    if scoring == "sample" and s.details.get("score_sample") is not None:
        return float(s.details["score_sample"])
    return float(s.score) if s.judged else None
