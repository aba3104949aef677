"""Reading a judge's reply: from raw text to a checked verdict.

:func:`extract_json` finds the JSON object in a reply: the whole text if it is one object,
else the first ``{...}`` that parses, after dropping ``<think>...</think>`` blocks (reasoning
models) and Markdown code fences.  ``NaN``/``Infinity`` and duplicate keys are rejected.

The metric's contract (:mod:`ragexam.metrics.judge.contract`, the same declaration as the JSON schema sent
to the endpoint) checks the object and quotes the broken rule in a :class:`ReplyError`; then the metric's
reader turns the checked reply into a :class:`Verdict` -- each built-in metric's reader is in its own module
(:mod:`ragexam.metrics.judge.builtin`, whose docstrings give each reply, score and label); the helpers they
share are here (:func:`read_supported`, :func:`band_label`, :func:`average_precision`).  Custom rubrics
(:mod:`ragexam.metrics.judge.custom`) read ``{"score": one of the rubric's levels, "reasoning": str}``
(:func:`level_reply`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, Optional, Sequence, Tuple

from ragexam.metrics.judge.contract import NotApplicable, ReplyError, _int

__all__ = ["ReplyError", "NotApplicable", "Verdict", "extract_json", "average_precision", "band_label",
           "read_supported", "level_reply"]


@dataclass(frozen=True)
class Verdict:
    """A validated reply: ``score`` and ``label`` as the metric's module defines them (``faithful``/``unfaithful``,
    the correctness verdict, ``abstained``/``answered``; ``None`` for a metric without labels) and the
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


def read_supported(r: Dict[str, Any], units: Sequence[str], item: str, labels: Tuple[str, str]) -> Verdict:
    """A reply of one ``supported`` true/false per unit (``item``: ``claim`` / ``statement``): the supported
    share is the score, ``labels[1]`` when every unit is supported, else ``labels[0]``; the details list each
    unit with its flag (``<item>s``) and count them (``n_<item>s``, ``n_supported``)."""
    flags = r["supported"]
    n_sup = sum(flags)
    entries = [{item: u, "supported": s} for u, s in zip(units, flags)]
    details = {f"{item}s": entries, f"n_{item}s": len(flags), "n_supported": n_sup, "reasoning": r["reasoning"]}
    return Verdict(n_sup / len(flags), labels[1] if n_sup == len(flags) else labels[0], details)


def level_reply(r: Dict[str, Any], units: Sequence[str]) -> Verdict:
    """A custom rubric's reply: the level is the score, its text the label."""
    return Verdict(float(r["score"]), str(r["score"]), {"score": r["score"], "reasoning": r["reasoning"]})


_ = _int  # re-exported for custom rubrics written against earlier versions
