"""Reading a judge's reply: from raw text to a checked verdict.

:func:`extract_json` finds the JSON object in a reply: the whole text if it is one object,
else the first ``{...}`` that parses, after dropping ``<think>...</think>`` blocks (reasoning
models) and Markdown code fences.  ``NaN``/``Infinity`` and duplicate keys are rejected.

The metric's contract (:mod:`ragexam.metrics.judge.contract`, the same declaration as the JSON schema sent
to the endpoint) checks the object and quotes the broken rule in a :class:`ReplyError`; then the metric's
reader below turns the checked reply into a :class:`Verdict`:

=================== ================================================================ ============
metric              reply (in schema order)                                          score
=================== ================================================================ ============
context_relevance   ``scores``: exactly one integer 1-5 per context; ``average``:     mean, 1-5
                    a number; ``reasoning``
context_precision   ``useful``: exactly one true/false per context; ``reasoning``     rank-aware
                                                                                     AP, 0-1
context_recall      ``supported``: one true/false per statement of the reference      share, 0-1
faithfulness        ``supported``: one true/false per claim (sentence) of the answer   share, 0-1
answer_relevancy    ``declined``: true/false; ``score``: 1-5; ``reasoning``            1-5
answer_correctness  ``score``: 1-5; ``reasoning``                                      1-5
abstention          ``verdict``: "abstained" | "answered"; ``reasoning``               1 / 0
pairwise            ``winner``: "1" | "2" | "tie"; ``reasoning``                       1 / 0 / 0.5
=================== ================================================================ ============

Labels: ``answer_correctness`` is ``correct`` (4-5), ``partially_correct`` (2-3) or ``incorrect`` (1) by
the band of its score (:data:`CORRECTNESS_BANDS`); ``answer_relevancy`` likewise ``relevant`` /
``partially_relevant`` / ``irrelevant``, and an answer that declines is unjudged ``declined`` (not
applicable); ``faithfulness`` is ``faithful`` when every claim is supported, ``context_recall``
``complete`` when every statement is.  The judge's own ``average`` is never used: ragexam recomputes it and
records ``average_mismatch`` when the two differ by more than 0.005 (so two-decimal rounding such as 2.33
for 7/3 is not a mismatch).  Custom rubrics (:mod:`ragexam.metrics.judge.custom`) read ``{"score": one of
the rubric's levels, "reasoning": str}``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence

from ragexam.metrics.judge.contract import NotApplicable, ReplyError, _int

__all__ = ["ReplyError", "NotApplicable", "Verdict", "extract_json", "validate_reply", "average_precision",
           "CORRECTNESS_BANDS", "RELEVANCY_BANDS", "AVERAGE_TOLERANCE", "READERS", "band_label"]

#: verdict -> allowed scores of ``answer_correctness``.
CORRECTNESS_BANDS: Dict[str, tuple] = {"correct": (4, 5), "partially_correct": (2, 3), "incorrect": (1,)}
#: verdict -> allowed scores of ``answer_relevancy``.
RELEVANCY_BANDS: Dict[str, tuple] = {"relevant": (4, 5), "partially_relevant": (2, 3), "irrelevant": (1,)}
#: largest |reported - recomputed| average that is not a mismatch.
AVERAGE_TOLERANCE = 0.005


@dataclass(frozen=True)
class Verdict:
    """A validated reply: ``score`` (see the table above), ``label`` (``faithful``/``unfaithful``,
    the correctness verdict, ``abstained``/``answered``; ``None`` for context relevance) and the
    metric's ``details`` (per-context scores, claims, reasoning, ...)."""

    score: float
    label: Optional[str]
    details: Dict[str, Any] = field(default_factory=dict)


def extract_json(text: Optional[str]) -> Dict[str, Any]:
    """The JSON object in a reply (see the module docstring; the one reader,
    :func:`ragexam.llm.replies.extract_json_object`); :class:`ReplyError` if none."""
    from ragexam.llm.replies import ReplyParseError, extract_json_object

    try:
        return extract_json_object(text)
    except ReplyParseError as err:
        raise ReplyError("invalid_json", str(err)) from None


def band_label(score: int, bands: Dict[str, tuple]) -> str:
    """The label whose band holds ``score``."""
    return next(label for label, allowed in bands.items() if score in allowed)


def average_precision(useful: Sequence[float]) -> float:
    """Rank-aware precision of a list of useful/useless contexts, in retrieved order: with
    ``v_k`` 1 when context ``k`` is useful, ``AP = sum_k v_k * precision@k / sum_k v_k`` and
    ``precision@k = (v_1 + ... + v_k) / k``.  0.0 when no context is useful (every precision is 0).
    Values between 0 and 1 (probabilities of "useful") are used as weights in the same formula.

    >>> average_precision([True, False, True])   # (1/1 + 2/3) / 2
    0.8333333333333333
    >>> average_precision([False, True])         # (1/2) / 1
    0.5
    """
    hits = 0.0
    total = 0.0
    for k, v in enumerate(useful, 1):
        v = float(v)
        if v:
            hits += v
            total += v * hits / k
    return total / hits if hits else 0.0


def _context_relevance(r: Dict[str, Any], units: Sequence[str]) -> Verdict:
    ints: List[int] = r["scores"]
    mean = sum(ints) / len(ints)
    return Verdict(mean, None, {"scores": ints, "average": mean, "average_reported": r["average"],
                                "average_mismatch": abs(r["average"] - mean) > AVERAGE_TOLERANCE + 1e-12,
                                "reasoning": r["reasoning"]})


def _supported(r: Dict[str, Any], units: Sequence[str], item: str, labels: tuple) -> Verdict:
    flags = r["supported"]
    n_sup = sum(flags)
    entries = [{item: u, "supported": s} for u, s in zip(units, flags)]
    details = {f"{item}s": entries, f"n_{item}s": len(flags), "n_supported": n_sup, "reasoning": r["reasoning"]}
    return Verdict(n_sup / len(flags), labels[1] if n_sup == len(flags) else labels[0], details)


def _faithfulness(r: Dict[str, Any], units: Sequence[str]) -> Verdict:
    return _supported(r, units, "claim", ("unfaithful", "faithful"))


def _context_recall(r: Dict[str, Any], units: Sequence[str]) -> Verdict:
    return _supported(r, units, "statement", ("incomplete", "complete"))


def _context_precision(r: Dict[str, Any], units: Sequence[str]) -> Verdict:
    useful = r["useful"]
    return Verdict(average_precision(useful), None, {"useful": list(useful), "n_useful": sum(useful),
                                                     "reasoning": r["reasoning"]})


def _answer_correctness(r: Dict[str, Any], units: Sequence[str]) -> Verdict:
    label = band_label(r["score"], CORRECTNESS_BANDS)
    return Verdict(float(r["score"]), label, {"verdict": label, "score": r["score"], "reasoning": r["reasoning"]})


def _answer_relevancy(r: Dict[str, Any], units: Sequence[str]) -> Verdict:
    if r["declined"]:
        raise NotApplicable("declined", "the answer declines to answer, so whether it addresses the question is "
                                        "not defined (the abstention metric grades declining)",
                            {"declined": True, "reasoning": r["reasoning"]})
    label = band_label(r["score"], RELEVANCY_BANDS)
    return Verdict(float(r["score"]), label, {"verdict": label, "score": r["score"], "reasoning": r["reasoning"]})


def _abstention(r: Dict[str, Any], units: Sequence[str]) -> Verdict:
    v = r["verdict"]
    return Verdict(1.0 if v == "abstained" else 0.0, v, {"verdict": v, "reasoning": r["reasoning"]})


def _pairwise(r: Dict[str, Any], units: Sequence[str]) -> Verdict:
    w = r["winner"]
    return Verdict({"1": 1.0, "2": 0.0, "tie": 0.5}[w], w, {"winner": w, "reasoning": r["reasoning"]})


def level_reply(r: Dict[str, Any], units: Sequence[str]) -> Verdict:
    """A custom rubric's reply: the level is the score, its text the label."""
    return Verdict(float(r["score"]), str(r["score"]), {"score": r["score"], "reasoning": r["reasoning"]})


#: metric -> reader of the checked reply
READERS = {"context_relevance": _context_relevance, "context_precision": _context_precision,
           "context_recall": _context_recall, "faithfulness": _faithfulness,
           "answer_relevancy": _answer_relevancy, "answer_correctness": _answer_correctness,
           "abstention": _abstention, "pairwise": _pairwise}


def validate_reply(metric: str, obj: Dict[str, Any], *, n_contexts: int = 0,
                   units: Optional[Sequence[str]] = None) -> Verdict:
    """Check ``obj`` against the built-in ``metric``'s contract and read it; :class:`ReplyError` /
    :class:`NotApplicable`.  ``units``: the claims / statements (default ``n_contexts`` unnamed units)."""
    from ragexam.metrics.judge.prompts import CONTRACTS

    units = list(units) if units is not None else [f"{i}" for i in range(1, n_contexts + 1)]
    return READERS[metric](CONTRACTS[metric].check(obj, len(units)), units)


_ = _int  # re-exported for custom rubrics written against earlier versions
