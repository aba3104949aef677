"""The textbook's rank helper: hit@1, hit@k and MRR from first-correct ranks."""

from __future__ import annotations

from typing import NamedTuple, Sequence

from ragexam.errors import InputError, integer_in

__all__ = ["RankMetrics", "rank_metrics"]


class RankMetrics(NamedTuple):
    """``hit_at_1``, ``hit_at_k`` and ``mrr`` over a list of questions (each in [0, 1])."""

    hit_at_1: float
    hit_at_k: float
    mrr: float


def rank_metrics(ranks: Sequence[int | None], k: int = 3) -> RankMetrics:
    """Score questions from the rank at which each one's answer was first found.

    ``ranks[i]`` is the 1-based rank of the first correct item for question ``i``, or
    ``None`` when it was not found.  With ``n = len(ranks)``:

    * ``hit_at_1`` = |{i : ranks[i] == 1}| / n
    * ``hit_at_k`` = |{i : ranks[i] <= k}| / n
    * ``mrr``      = Σ 1/ranks[i] over found questions / n (a question not found adds 0)

    Values are not rounded.  The textbook's examples:

    >>> [round(x, 3) for x in rank_metrics([1, 3, None], k=3)]
    [0.333, 0.667, 0.444]
    >>> [round(x, 3) for x in rank_metrics([1, 1, 2, 1, 5], k=3)]
    [0.6, 0.8, 0.74]

    Raises :class:`~ragexam.errors.InputError` on an empty list, ``k < 1`` or a rank that
    is not a positive integer.
    """
    integer_in(k, 1, source="rank_metrics()", field="k")
    if len(ranks) == 0:
        raise InputError("no ranks given: hit@k and MRR of zero questions are undefined", source="ranks")
    hit1 = hitk = 0
    rr = 0.0
    for i, r in enumerate(ranks):
        if r is None:
            continue
        if isinstance(r, bool) or not isinstance(r, int) or r < 1:
            raise InputError(f"rank #{i} is {r!r}; expected a positive integer (1 = first) or None (not found)",
                             source="ranks")
        hit1 += r == 1
        hitk += r <= k
        rr += 1.0 / r
    n = len(ranks)
    return RankMetrics(hit1 / n, hitk / n, rr / n)
