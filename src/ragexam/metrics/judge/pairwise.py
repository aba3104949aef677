"""Pairwise judging: which of two answers to the same question is better, with position bias cancelled.

Judges prefer the answer they read first (or second) more often than chance.  :func:`judge_pairs`
therefore asks about every pair **twice**, once as (A, B) and once as (B, A) -- two calls of the
``pairwise`` rubric (:mod:`ragexam.metrics.judge.builtin.pairwise`), each cached, validated, retried and
possibly unjudged like any judgment -- and maps each reply's winner ("1", "2", "tie") back to A or B.

The order-swap rule
-------------------
================================  ===========================
order (A, B) says  /  (B, A) says  outcome of the pair
================================  ===========================
A / A                              ``A`` (counts as a win)
B / B                              ``B``
tie / tie                          ``tie``
anything else (A / B, A / tie...)  ``inconsistent`` (counted, no winner)
either order unjudged              ``unjudged`` with its reason
================================  ===========================

A verdict counts only when both orders agree.  With ``repeat=N`` each order's winner is first the
majority over its N repeats; a tie between repeats makes that order's winner ``tie``.

Summary (:meth:`PairwiseRun.summary`)
-------------------------------------
Over the judged pairs (both orders judged): the counts of each outcome, and per pair the value
``+1`` (B wins), ``-1`` (A wins), ``0`` (tie or inconsistent), whose mean is the **preference for
B** in [-1, 1] with a percentile-bootstrap 95% interval; the win rates of A and of B with their
intervals; ``consistency`` = share of judged pairs whose two orders agreed; and
``first_position_share``: of the orders that named a winner, the share that named the answer shown
first (0.5 for a judge without position bias).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from ragexam.signature import Signature
from ragexam.errors import InputError
from ragexam.metrics.judge.builtin.pairwise import METRIC as PAIRWISE
from ragexam.metrics.judge.core import INTERVAL_RESAMPLES, ItemScore, JudgeItem, JudgeRun

__all__ = ["PairItem", "PairResult", "PairwiseRun", "PairwiseSummary", "judge_pairs", "pair_items", "OUTCOMES"]

OUTCOMES = ("A", "B", "tie", "inconsistent", "unjudged")
_ORDERS = ("A|B", "B|A")


@dataclass(frozen=True)
class PairItem:
    """Two answers (``answer_a``, ``answer_b``) to one question, and the reference answer."""

    item_id: str
    question: str
    answer_a: Optional[str]
    answer_b: Optional[str]
    ground_truth: Optional[str]


@dataclass(frozen=True)
class PairResult:
    """One pair: ``outcome`` (:data:`OUTCOMES`), the winner each order named (``A``, ``B``, ``tie`` or
    ``None`` when that order was unjudged), the reason when unjudged, and each order's reasoning."""

    item_id: str
    outcome: str
    winner_ab: Optional[str]
    winner_ba: Optional[str]
    reason: Optional[str] = None
    reasoning_ab: Optional[str] = None
    reasoning_ba: Optional[str] = None

    @property
    def value(self) -> Optional[int]:
        """+1 (B wins), -1 (A wins), 0 (tie or inconsistent), ``None`` (unjudged)."""
        return {"A": -1, "B": 1, "tie": 0, "inconsistent": 0}.get(self.outcome)

    def to_dict(self) -> Dict[str, Any]:
        return {"item_id": self.item_id, "outcome": self.outcome, "winner_ab": self.winner_ab,
                "winner_ba": self.winner_ba, "reason": self.reason, "reasoning_ab": self.reasoning_ab,
                "reasoning_ba": self.reasoning_ba}


@dataclass(frozen=True)
class PairwiseSummary:
    """See the module docstring.  Intervals are ``(low, high)``; ``None`` when nothing was judged."""

    n: int
    n_judged: int
    counts: Dict[str, int]
    unjudged: Dict[str, int]
    preference_b: Optional[float]
    preference_ci95: Optional[Tuple[float, float]]
    win_rate_a: Optional[float]
    win_rate_a_ci95: Optional[Tuple[float, float]]
    win_rate_b: Optional[float]
    win_rate_b_ci95: Optional[Tuple[float, float]]
    consistency: Optional[float]
    first_position_share: Optional[float]
    n_decisive_orders: int
    interval: Optional[str]

    def to_dict(self) -> Dict[str, Any]:
        out = dict(self.__dict__)
        for k in ("preference_ci95", "win_rate_a_ci95", "win_rate_b_ci95"):
            out[k] = list(out[k]) if out[k] is not None else None
        return out


@dataclass
class PairwiseRun:
    """The pairs' results, the underlying :class:`JudgeRun` (two judgments per pair and repeat) and
    the names of A and B."""

    results: List[PairResult]
    judge_run: JudgeRun
    name_a: str = "A"
    name_b: str = "B"
    seed: Optional[int] = None
    notes: List[str] = field(default_factory=list)

    @property
    def signature(self) -> Signature:
        """The judge signature of the ``pairwise`` rubric plus ``orders:both``."""
        return Signature.parse(self.judge_run.signatures[PAIRWISE.name]).extend({"orders": "both"})

    def summary(self) -> PairwiseSummary:
        from ragexam.stats import DEFAULT_SEED, bootstrap_ci

        seed = DEFAULT_SEED if self.seed is None else self.seed
        judged = [r for r in self.results if r.outcome != "unjudged"]
        counts = {o: sum(1 for r in self.results if r.outcome == o) for o in OUTCOMES}
        unjudged = dict(Counter(r.reason for r in self.results if r.outcome == "unjudged").most_common())
        orders = [w for r in judged for w in ((r.winner_ab, "A"), (r.winner_ba, "B"))]
        decisive = [(w, first) for w, first in orders if w in ("A", "B")]
        first_share = sum(1 for w, first in decisive if w == first) / len(decisive) if decisive else None
        if not judged:
            return PairwiseSummary(len(self.results), 0, counts, unjudged, None, None, None, None, None, None, None,
                                   first_share, len(decisive), None)

        def ci(values: Sequence[float]):
            c = bootstrap_ci(list(values), n_resamples=INTERVAL_RESAMPLES, seed=seed)
            return c.mean, (c.low, c.high), c.signature

        pref, pref_ci, sig = ci([float(r.value) for r in judged])
        wa, wa_ci, _ = ci([float(r.outcome == "A") for r in judged])
        wb, wb_ci, _ = ci([float(r.outcome == "B") for r in judged])
        consistency = 1.0 - counts["inconsistent"] / len(judged)
        return PairwiseSummary(len(self.results), len(judged), counts, unjudged, pref, pref_ci, wa, wa_ci, wb, wb_ci,
                               consistency, first_share, len(decisive), sig)

    def to_dict(self) -> Dict[str, Any]:
        return {"a": self.name_a, "b": self.name_b, "signature": self.signature, "summary": self.summary().to_dict(),
                "results": [r.to_dict() for r in self.results], "usage": self.judge_run.usage,
                "model": self.judge_run.model, "endpoint": self.judge_run.endpoint,
                "language": self.judge_run.language, "repeat": self.judge_run.repeat,
                "rubric": self.judge_run.rubrics.get(PAIRWISE.name), "notes": list(self.notes)}


def _winner(score: ItemScore, first: str, second: str) -> Optional[str]:
    if not score.judged:
        return None
    if score.tie:
        return "tie"
    return {"1": first, "2": second, "tie": "tie"}[score.label]


def pair_items(pairs: Sequence[PairItem]) -> List[JudgeItem]:
    """The judge items of ``pairs``: per pair ``"<id> [A|B]"`` (A shown first) and ``"<id> [B|A]"``."""
    items: List[JudgeItem] = []
    for p in pairs:
        items.append(JudgeItem(f"{p.item_id} [A|B]", p.question, p.answer_a, (), p.ground_truth, p.answer_b))
        items.append(JudgeItem(f"{p.item_id} [B|A]", p.question, p.answer_b, (), p.ground_truth, p.answer_a))
    return items


def judge_pairs(judge: Any, pairs: Sequence[PairItem], *, repeat: int = 1, name_a: str = "A", name_b: str = "B",
                progress: Optional[Callable[[int, int], None]] = None, seed: Optional[int] = None) -> PairwiseRun:
    """Judge every pair in both orders with ``judge`` (a :class:`~ragexam.metrics.judge.Judge`) and
    apply the order-swap rule of the module docstring."""
    ids = [p.item_id for p in pairs]
    if len(set(ids)) != len(ids):
        dup = sorted({i for i in ids if ids.count(i) > 1})[:5]
        raise InputError(f"pair ids must be unique; repeated: {dup}", source=PAIRWISE.name, field="item_id")
    run = judge.run(None, {PAIRWISE.name: pair_items(pairs)}, repeat=repeat, progress=progress)
    scores = run.items(PAIRWISE.name)
    results = []
    for p in pairs:
        ab, ba = scores[f"{p.item_id} [A|B]"], scores[f"{p.item_id} [B|A]"]
        w_ab, w_ba = _winner(ab, "A", "B"), _winner(ba, "B", "A")
        if w_ab is None or w_ba is None:
            outcome, reason = "unjudged", (ab.reason if w_ab is None else ba.reason)
        else:
            outcome, reason = (w_ab if w_ab == w_ba else "inconsistent"), None
        results.append(PairResult(p.item_id, outcome, w_ab, w_ba, reason, ab.details.get("reasoning"),
                                  ba.details.get("reasoning")))
    return PairwiseRun(results, run, name_a, name_b, seed)
