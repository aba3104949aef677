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
context_precision   ``useful``: exactly one true/false per context, in order;         rank-aware
                    ``reasoning``: a string                                           precision
                                                                                     (AP), 0-1
context_recall      ``statements``: a non-empty list of ``{statement: str,             supported /
                    supported: bool, context: int 1..n or null}``; ``supported:        statements,
                    true`` needs a context number; ``reasoning``: a string             0-1
faithfulness        ``claims``: list of ``{claim: str, supported: bool,               supported /
                    context: int 1..n or null}``; ``supported: true`` needs a context  claims, 0-1
                    number; ``reasoning``: a string.  No claim -> not applicable
answer_relevancy    ``verdict``: relevant | partially_relevant | irrelevant |          the score,
                    declined; ``score``: integer 1-5 in the verdict's band (relevant   1-5
                    4-5, partially 2-3, irrelevant 1), null for declined (-> not
                    applicable); ``reasoning``: a string
answer_correctness  ``verdict``: correct | partially_correct | incorrect; ``score``:   the score,
                    integer 1-5 in the verdict's band (correct 4-5, partially 2-3,     1-5
                    incorrect 1); ``reasoning``: a string
abstention          ``verdict``: abstained | answered; ``reasoning``: a string          1 / 0
pairwise            ``winner``: "1" | "2" | "tie"; ``reasoning``: a string             1 / 0 / 0.5
=================== ================================================================ ============

Custom rubrics (:mod:`ragexam.metrics.judge.custom`) validate ``{"reasoning": str, "score": one of
the rubric's levels}`` with their own validator.

Integers may be written ``4`` or ``4.0``; ``true`` is not an integer; strings are not numbers.
Keys the contract does not name are ignored.  The judge's own ``average`` is never used: ragexam
recomputes it and records ``average_mismatch`` when the two differ by more than 0.005 (so
two-decimal rounding such as 2.33 for 7/3 is not a mismatch).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

__all__ = ["ReplyError", "NotApplicable", "Verdict", "extract_json", "validate_reply", "average_precision",
           "CORRECTNESS_BANDS", "RELEVANCY_BANDS", "AVERAGE_TOLERANCE"]

#: verdict -> allowed scores of ``answer_correctness``.
CORRECTNESS_BANDS: Dict[str, tuple] = {"correct": (4, 5), "partially_correct": (2, 3), "incorrect": (1,)}
#: verdict -> allowed scores of ``answer_relevancy`` (``declined`` has none: not applicable).
RELEVANCY_BANDS: Dict[str, tuple] = {"relevant": (4, 5), "partially_relevant": (2, 3), "irrelevant": (1,)}
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


def _supported_list(obj: Dict[str, Any], key: str, item: str, n_contexts: int) -> List[Dict[str, Any]]:
    """The ``claims`` / ``statements`` list: ``[{<item>: str, supported: bool, context: int 1..n or null}]``,
    ``supported: true`` naming its context."""
    entries = _require(obj, key, f"a list of {item} objects")
    if not isinstance(entries, list):
        raise ReplyError("invalid_reply", f'"{key}" is a {type(entries).__name__}; expected a list')
    out = []
    for i, c in enumerate(entries, 1):
        if not isinstance(c, dict):
            raise ReplyError("invalid_reply", f"{item} {i} is a {type(c).__name__}; expected an object "
                                              f'{{"{item}": ..., "supported": ..., "context": ...}}')
        text = c.get(item)
        if not isinstance(text, str) or not text.strip():
            raise ReplyError("invalid_reply", f'{item} {i}: "{item}" must be a non-empty string')
        sup = c.get("supported")
        if not isinstance(sup, bool):
            raise ReplyError("invalid_reply", f'{item} {i}: "supported" is {json.dumps(sup)}; expected '
                                              "true or false")
        ctx = c.get("context")
        if ctx is not None:
            ci = _int(ctx)
            if ci is None or not 1 <= ci <= n_contexts:
                raise ReplyError("invalid_reply", f'{item} {i}: "context" is {json.dumps(ctx)}; expected a '
                                                  f"context number from 1 to {n_contexts} or null")
            ctx = ci
        if sup and ctx is None:
            raise ReplyError("invalid_reply", f'{item} {i} is "supported": true but names no context; '
                                              f"give the number (1-{n_contexts}) of the supporting context")
        out.append({item: text, "supported": sup, "context": ctx})
    return out


def _faithfulness(obj: Dict[str, Any], n_contexts: int) -> Verdict:
    claims = _supported_list(obj, "claims", "claim", n_contexts)
    reasoning = _reasoning(obj)
    details = {"claims": claims, "n_claims": len(claims), "n_supported": sum(c["supported"] for c in claims),
               "reasoning": reasoning}
    if not claims:
        raise NotApplicable("no_claims", "the answer makes no factual claim (e.g. it declines), so "
                                         "faithfulness is not defined", details)
    score = details["n_supported"] / len(claims)
    return Verdict(score, "faithful" if details["n_supported"] == len(claims) else "unfaithful", details)


def _context_recall(obj: Dict[str, Any], n_contexts: int) -> Verdict:
    statements = _supported_list(obj, "statements", "statement", n_contexts)
    reasoning = _reasoning(obj)
    if not statements:
        raise ReplyError("invalid_reply", '"statements" is empty, but the reference answer states something; '
                                          "list its statements, at least one")
    n_sup = sum(s["supported"] for s in statements)
    details = {"statements": statements, "n_statements": len(statements), "n_supported": n_sup,
               "reasoning": reasoning}
    return Verdict(n_sup / len(statements), "complete" if n_sup == len(statements) else "incomplete", details)


def average_precision(useful: List[bool]) -> float:
    """Rank-aware precision of a list of useful/useless contexts, in retrieved order: with
    ``v_k`` 1 when context ``k`` is useful, ``AP = sum_k v_k * precision@k / sum_k v_k`` and
    ``precision@k = (v_1 + ... + v_k) / k``.  0.0 when no context is useful (every precision is 0).

    >>> average_precision([True, False, True])   # (1/1 + 2/3) / 2
    0.8333333333333333
    >>> average_precision([False, True])         # (1/2) / 1
    0.5
    """
    hits = 0
    total = 0.0
    for k, v in enumerate(useful, 1):
        if v:
            hits += 1
            total += hits / k
    return total / hits if hits else 0.0


def _context_precision(obj: Dict[str, Any], n_contexts: int) -> Verdict:
    useful = _require(obj, "useful", f"a list of {n_contexts} values true or false")
    if not isinstance(useful, list):
        raise ReplyError("invalid_reply", f'"useful" is a {type(useful).__name__}; expected a list of '
                                          f"{n_contexts} values true or false")
    if len(useful) != n_contexts:
        raise ReplyError("invalid_reply", f'"useful" has {len(useful)} values but there are {n_contexts} '
                                          f"contexts; expected exactly {n_contexts}, one per context in order")
    for i, v in enumerate(useful, 1):
        if not isinstance(v, bool):
            raise ReplyError("invalid_reply", f"value {i} of \"useful\" is {json.dumps(v, ensure_ascii=False)}; "
                                              "expected true or false")
    reasoning = _reasoning(obj)
    return Verdict(average_precision(useful), None, {"useful": list(useful), "n_useful": sum(useful),
                                                     "reasoning": reasoning})


def _answer_correctness(obj: Dict[str, Any], n_contexts: int) -> Verdict:
    reasoning = _reasoning(obj)
    verdict = _require(obj, "verdict", '"correct", "partially_correct" or "incorrect"')
    if verdict not in CORRECTNESS_BANDS:
        raise ReplyError("invalid_reply", f'"verdict" is {json.dumps(verdict, ensure_ascii=False)}; '
                                          'expected "correct", "partially_correct" or "incorrect"')
    return _banded(verdict, _require(obj, "score", "an integer from 1 to 5"), CORRECTNESS_BANDS, reasoning)


def _banded(verdict: str, raw: Any, bands: Dict[str, tuple], reasoning: str) -> Verdict:
    """A 1-5 ``score`` that must lie in ``verdict``'s band."""
    score = _int(raw)
    if score is None or not 1 <= score <= 5:
        raise ReplyError("invalid_reply", f'"score" is {json.dumps(raw, ensure_ascii=False)}; expected an '
                                          "integer from 1 to 5")
    band = bands[verdict]
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


def _answer_relevancy(obj: Dict[str, Any], n_contexts: int) -> Verdict:
    reasoning = _reasoning(obj)
    verdict = _require(obj, "verdict", '"relevant", "partially_relevant", "irrelevant" or "declined"')
    if verdict not in RELEVANCY_BANDS and verdict != "declined":
        raise ReplyError("invalid_reply", f'"verdict" is {json.dumps(verdict, ensure_ascii=False)}; expected '
                                          '"relevant", "partially_relevant", "irrelevant" or "declined"')
    if "score" not in obj:
        raise ReplyError("invalid_reply", 'the required field "score" is missing; expected an integer from 1 to 5 '
                                          '(null when "verdict" is "declined")')
    raw = obj["score"]
    if verdict == "declined":
        if raw is not None:
            raise ReplyError("invalid_reply", f'"score" is {json.dumps(raw, ensure_ascii=False)} but "verdict" is '
                                              '"declined"; expected null')
        raise NotApplicable("declined", "the answer declines to answer, so whether it addresses the question is "
                                        "not defined (the abstention metric grades declining)",
                            {"verdict": verdict, "reasoning": reasoning})
    return _banded(verdict, raw, RELEVANCY_BANDS, reasoning)


def _pairwise(obj: Dict[str, Any], n_contexts: int) -> Verdict:
    reasoning = _reasoning(obj)
    winner = _require(obj, "winner", '"1", "2" or "tie"')
    if isinstance(winner, int) and not isinstance(winner, bool) and winner in (1, 2):
        winner = str(winner)
    if winner not in ("1", "2", "tie"):
        raise ReplyError("invalid_reply", f'"winner" is {json.dumps(winner, ensure_ascii=False)}; expected '
                                          '"1", "2" or "tie"')
    return Verdict({"1": 1.0, "2": 0.0, "tie": 0.5}[winner], winner, {"winner": winner, "reasoning": reasoning})


_VALIDATORS = {"context_relevance": _context_relevance, "context_precision": _context_precision,
               "context_recall": _context_recall, "faithfulness": _faithfulness,
               "answer_relevancy": _answer_relevancy, "answer_correctness": _answer_correctness,
               "abstention": _abstention, "pairwise": _pairwise}


def validate_reply(metric: str, obj: Dict[str, Any], *, n_contexts: int = 0) -> Verdict:
    """Check ``obj`` against ``metric``'s contract; :class:`ReplyError` / :class:`NotApplicable`."""
    return _VALIDATORS[metric](obj, n_contexts)
