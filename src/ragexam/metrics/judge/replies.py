"""Reading and validating a judge's reply: from raw text to a checked verdict.

:func:`extract_json` finds the JSON object in a reply: the whole text if it is one object,
else the first ``{...}`` that parses, after dropping ``<think>...</think>`` blocks (reasoning
models) and Markdown code fences.  ``NaN``/``Infinity`` and duplicate keys are rejected.

:func:`validate_reply` checks that object against the metric's contract and returns a
:class:`Verdict`, or raises :class:`ReplyError` naming what is wrong in words that are fed back
to the judge on the retry:

=================== ================================================================ ============
metric              contract                                                         score
=================== ================================================================ ============
context_relevance   ``scores``: exactly one integer 1-5 per context, in order;        mean of the
                    ``average``: a number; ``reasoning``: a string                    scores, 1-5
faithfulness        ``claims``: list of ``{claim: str, supported: bool,               supported /
                    context: int 1..n or null}``; ``supported: true`` needs a context  claims, 0-1
                    number; ``reasoning``: a string.  No claim -> not applicable
answer_correctness  ``verdict``: correct | partially_correct | incorrect; ``score``:   the score,
                    integer 1-5 in the verdict's band (correct 4-5, partially 2-3,     1-5
                    incorrect 1); ``reasoning``: a string
abstention          ``verdict``: abstained | answered; ``reasoning``: a string          1 / 0
=================== ================================================================ ============

Integers may be written ``4`` or ``4.0``; ``true`` is not an integer; strings are not numbers.
Keys the contract does not name are ignored.  The judge's own ``average`` is never used: ragexam
recomputes it and records ``average_mismatch`` when the two differ by more than 0.005 (so
two-decimal rounding such as 2.33 for 7/3 is not a mismatch).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

__all__ = ["ReplyError", "NotApplicable", "Verdict", "extract_json", "validate_reply",
           "CORRECTNESS_BANDS", "AVERAGE_TOLERANCE"]

#: verdict -> allowed scores of ``answer_correctness``.
CORRECTNESS_BANDS: Dict[str, tuple] = {"correct": (4, 5), "partially_correct": (2, 3), "incorrect": (1,)}
#: largest |reported - recomputed| average that is not a mismatch.
AVERAGE_TOLERANCE = 0.005


class ReplyError(Exception):
    """An unusable reply.  ``kind`` is ``invalid_json`` (no JSON object could be read) or
    ``invalid_reply`` (JSON that breaks the contract); ``message`` says what, for the judge."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


class NotApplicable(Exception):
    """A valid reply that yields no score (``faithfulness`` of an answer without claims)."""

    def __init__(self, reason: str, message: str, details: Optional[Dict[str, Any]] = None) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message
        self.details = details or {}


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


def _int(v: Any) -> Optional[int]:
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, float) and math.isfinite(v) and v.is_integer():
        return int(v)
    return None


def _require(obj: Dict[str, Any], key: str, what: str) -> Any:
    if key not in obj or obj[key] is None:
        raise ReplyError("invalid_reply", f'the required field "{key}" is missing; expected {what}')
    return obj[key]


def _reasoning(obj: Dict[str, Any]) -> str:
    r = _require(obj, "reasoning", "a string")
    if not isinstance(r, str):
        raise ReplyError("invalid_reply", f'"reasoning" is a {type(r).__name__}; expected a string')
    return r


def _context_relevance(obj: Dict[str, Any], n_contexts: int) -> Verdict:
    scores = _require(obj, "scores", f"a list of {n_contexts} integers from 1 to 5")
    if not isinstance(scores, list):
        raise ReplyError("invalid_reply", f'"scores" is a {type(scores).__name__}; expected a list of '
                                          f"{n_contexts} integers from 1 to 5")
    if len(scores) != n_contexts:
        raise ReplyError("invalid_reply", f'"scores" has {len(scores)} values but there are {n_contexts} '
                                          f"contexts; expected exactly {n_contexts}, one per context in order")
    ints: List[int] = []
    for i, v in enumerate(scores, 1):
        iv = _int(v)
        if iv is None:
            raise ReplyError("invalid_reply", f"score {i} is {json.dumps(v, ensure_ascii=False)}; expected "
                                              "an integer from 1 to 5")
        if not 1 <= iv <= 5:
            raise ReplyError("invalid_reply", f"score {i} is {iv}, out of range; expected an integer "
                                              "from 1 to 5")
        ints.append(iv)
    avg = _require(obj, "average", "a number")
    if isinstance(avg, bool) or not isinstance(avg, (int, float)) or not math.isfinite(avg):
        raise ReplyError("invalid_reply", f'"average" is {json.dumps(avg, ensure_ascii=False)}; expected '
                                          "a number")
    reasoning = _reasoning(obj)
    mean = sum(ints) / len(ints)
    return Verdict(mean, None, {"scores": ints, "average": mean, "average_reported": float(avg),
                                "average_mismatch": abs(float(avg) - mean) > AVERAGE_TOLERANCE + 1e-12,
                                "reasoning": reasoning})


def _faithfulness(obj: Dict[str, Any], n_contexts: int) -> Verdict:
    claims = _require(obj, "claims", "a list of claim objects")
    if not isinstance(claims, list):
        raise ReplyError("invalid_reply", f'"claims" is a {type(claims).__name__}; expected a list')
    reasoning = _reasoning(obj)
    out = []
    for i, c in enumerate(claims, 1):
        if not isinstance(c, dict):
            raise ReplyError("invalid_reply", f"claim {i} is a {type(c).__name__}; expected an object "
                                              '{"claim": ..., "supported": ..., "context": ...}')
        text = c.get("claim")
        if not isinstance(text, str) or not text.strip():
            raise ReplyError("invalid_reply", f'claim {i}: "claim" must be a non-empty string')
        sup = c.get("supported")
        if not isinstance(sup, bool):
            raise ReplyError("invalid_reply", f'claim {i}: "supported" is {json.dumps(sup)}; expected '
                                              "true or false")
        ctx = c.get("context")
        if ctx is not None:
            ci = _int(ctx)
            if ci is None or not 1 <= ci <= n_contexts:
                raise ReplyError("invalid_reply", f'claim {i}: "context" is {json.dumps(ctx)}; expected a '
                                                  f"context number from 1 to {n_contexts} or null")
            ctx = ci
        if sup and ctx is None:
            raise ReplyError("invalid_reply", f'claim {i} is "supported": true but names no context; '
                                              f"give the number (1-{n_contexts}) of the supporting context")
        out.append({"claim": text, "supported": sup, "context": ctx})
    details = {"claims": out, "n_claims": len(out), "n_supported": sum(c["supported"] for c in out),
               "reasoning": reasoning}
    if not out:
        raise NotApplicable("no_claims", "the answer makes no factual claim (e.g. it declines), so "
                                         "faithfulness is not defined", details)
    score = details["n_supported"] / len(out)
    return Verdict(score, "faithful" if details["n_supported"] == len(out) else "unfaithful", details)


def _answer_correctness(obj: Dict[str, Any], n_contexts: int) -> Verdict:
    reasoning = _reasoning(obj)
    verdict = _require(obj, "verdict", '"correct", "partially_correct" or "incorrect"')
    if verdict not in CORRECTNESS_BANDS:
        raise ReplyError("invalid_reply", f'"verdict" is {json.dumps(verdict, ensure_ascii=False)}; '
                                          'expected "correct", "partially_correct" or "incorrect"')
    raw = _require(obj, "score", "an integer from 1 to 5")
    score = _int(raw)
    if score is None or not 1 <= score <= 5:
        raise ReplyError("invalid_reply", f'"score" is {json.dumps(raw, ensure_ascii=False)}; expected an '
                                          "integer from 1 to 5")
    band = CORRECTNESS_BANDS[verdict]
    if score not in band:
        raise ReplyError("invalid_reply", f'"score" {score} does not match "verdict" "{verdict}" '
                                          f"(which allows {' or '.join(map(str, band))})")
    return Verdict(float(score), verdict, {"verdict": verdict, "score": score, "reasoning": reasoning})


def _abstention(obj: Dict[str, Any], n_contexts: int) -> Verdict:
    reasoning = _reasoning(obj)
    verdict = _require(obj, "verdict", '"abstained" or "answered"')
    if verdict not in ("abstained", "answered"):
        raise ReplyError("invalid_reply", f'"verdict" is {json.dumps(verdict, ensure_ascii=False)}; '
                                          'expected "abstained" or "answered"')
    return Verdict(1.0 if verdict == "abstained" else 0.0, verdict,
                   {"verdict": verdict, "reasoning": reasoning})


_VALIDATORS = {"context_relevance": _context_relevance, "faithfulness": _faithfulness,
               "answer_correctness": _answer_correctness, "abstention": _abstention}


def validate_reply(metric: str, obj: Dict[str, Any], *, n_contexts: int = 0) -> Verdict:
    """Check ``obj`` against ``metric``'s contract; :class:`ReplyError` / :class:`NotApplicable`."""
    return _VALIDATORS[metric](obj, n_contexts)
