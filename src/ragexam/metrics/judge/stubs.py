"""Stub replies: each judge metric's answer when no model is behind the endpoint (tests, CI, offline docs).

Every :class:`~ragexam.metrics.judge.metric.JudgeMetric` owns a ``stub`` function (a built-in metric's is in its
module, :mod:`ragexam.metrics.judge.builtin`; built from the helpers below) that turns the inputs read back from
its prompt (:class:`StubInputs`) into a *valid* reply computed from word overlap -- character bigrams of the
words, so Korean works: a context that shares much of the question is relevant, a claim found in a context is
supported, an answer close to the reference is correct, an answer with a declining phrase abstains -- and from the
two plainest signs of a contradiction (:func:`contradicts`): a number swapped for another, or a statement negated.
So the stub tells a changed number or a negated ending from the text it changes, as ``ragexam judge-check``'s
contrast asks (:mod:`ragexam.analysis.judging.check`), and a judge that could not would be caught.  :class:`ragexam.testing.StubEndpoint` serves them.  The numbers measure
overlap, nothing about quality: never report them as a model's.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Dict, List, Sequence, Tuple

from ragexam.metrics.judge.units import is_abstention

__all__ = ["StubInputs", "bigrams", "overlap", "f1", "band", "declines", "supported", "supported_reply", "custom",
           "contradicts", "SAME_WORDS", "WHY"]

WHY = "stub: word overlap"
_WORD = re.compile(r"\w+", re.UNICODE)
_NUMBER = re.compile(r"\d+")
_SENTENCE = re.compile(r"(?<=[.!?。])\s+|\n+")
_CLAUSE = re.compile(r"[.!?。,]\s*|\n+")
#: the share of a sentence's bigrams another must hold to be read as the same sentence (:func:`contradicts`)
SAME_WORDS = 0.8
#: a word that negates: Korean stems (없다, 않다, 아니다, 못하다) and English words
_NEGATING = re.compile(r"없|않|^아니|^아닙|^못|^not$|^cannot$|^never$|n't$", re.IGNORECASE)


@dataclass(frozen=True)
class StubInputs:
    """What a stub reply may read: the texts of the prompt and its units (contexts, claims or statements)."""

    question: str = ""
    contexts: Tuple[str, ...] = ()
    answer: str = ""
    ground_truth: str = ""
    second_answer: str = ""
    units: Tuple[str, ...] = ()
    levels: Tuple[int, ...] = field(default=(1, 2, 3, 4, 5))


def bigrams(text: str) -> Counter:
    """Character bigrams of each word of ``text`` (lowercased; a one-letter word counts as itself)."""
    out: Counter = Counter()
    for w in _WORD.findall((text or "").lower()):
        if len(w) == 1:
            out[w] += 1
        else:
            out.update(w[i:i + 2] for i in range(len(w) - 1))
    return out


def overlap(a: str, b: str) -> float:
    """Share of ``a``'s bigrams found in ``b`` (0 when ``a`` has none)."""
    ga, gb = bigrams(a), bigrams(b)
    total = sum(ga.values())
    return sum(min(c, gb[g]) for g, c in ga.items()) / total if total else 0.0


def f1(a: str, b: str) -> float:
    """Harmonic mean of :func:`overlap` both ways."""
    p, r = overlap(a, b), overlap(b, a)
    return 2 * p * r / (p + r) if p + r else 0.0


def band(x: float, cuts: Sequence[float]) -> int:
    """5 when ``x >= cuts[0]``, 4 when ``>= cuts[1]``, ... 1 below the last cut."""
    for i, c in enumerate(cuts):
        if x >= c:
            return 5 - i
    return 1


def declines(text: str) -> bool:
    """The text declines to answer (:func:`ragexam.metrics.judge.units.is_abstention`)."""
    return is_abstention(text) is not None


def _negated(text: str) -> bool:
    return any(_NEGATING.search(w) for w in _WORD.findall(text or ""))


def contradicts(unit: str, text: str, *, clauses: bool = False) -> bool:
    """``unit`` says otherwise than ``text``: it states a number ``text`` does not while ``text`` states one ``unit``
    does not (a number swapped: ``60분`` where the text says ``30분``), or a sentence of it (with ``clauses``, a
    clause: a sentence cut at its commas) is a sentence of ``text`` negated -- nearly the same words
    (:data:`SAME_WORDS` of its bigrams) with the opposite polarity (``없습니다`` against ``있습니다``).  A paraphrase
    says no, can't or is prohibited in words of its own: only a near copy is read for polarity."""
    a, b = set(_NUMBER.findall(unit or "")), set(_NUMBER.findall(text or ""))
    if a - b and b - a:
        return True
    cut = _CLAUSE if clauses else _SENTENCE
    theirs = [t for t in cut.split(text or "") if t.strip()]
    for mine in (m for m in cut.split(unit or "") if m.strip()):
        closest = max(theirs, key=lambda t: overlap(mine, t), default=None)
        if closest is not None and overlap(mine, closest) >= SAME_WORDS and _negated(mine) != _negated(closest):
            return True
    return False


def supported(units: Sequence[str], contexts: Sequence[str]) -> List[bool]:
    """Per unit: some context holds at least half of its bigrams and does not say otherwise (:func:`contradicts`)."""
    return [any(overlap(u, c) >= 0.5 and not contradicts(u, c) for c in contexts) for u in units]


def supported_reply(x: StubInputs) -> Dict[str, Any]:
    """The reply of a metric with one ``supported`` true/false per unit (claims, statements): :func:`supported`."""
    return {"supported": supported(x.units, x.contexts), "reasoning": WHY}


def custom(x: StubInputs) -> Dict[str, Any]:
    """A custom rubric: a level from the overlap of the answer with the reference (else with the question)."""
    levels = list(x.levels) or [1, 2, 3, 4, 5]
    value = f1(x.answer, x.ground_truth) if x.ground_truth and x.answer else \
        overlap(x.question, x.answer or " ".join(x.contexts))
    idx = min(len(levels) - 1, int(round(min(1.0, value * 1.5) * (len(levels) - 1))))
    return {"score": levels[idx], "reasoning": WHY}
