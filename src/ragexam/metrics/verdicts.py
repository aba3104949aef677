"""Answer verdicts without an LLM: a text-metric threshold for correctness, a phrase list for abstention.

Correctness (``--correct-if``)
------------------------------
A condition is ``METRIC OP VALUE`` with METRIC one of ``chrf``, ``bleu``, ``rouge_l`` (the
sentence-level scores of :mod:`ragexam.analysis.answers.scoring`, all in [0, 1]), OP one of ``>=``,
``>``, ``<=``, ``<`` and VALUE a number in [0, 1]; several conditions joined with ``,`` or
``&`` must all hold (``chrf>=0.5,rouge_l>=0.3``).  An answer to an answerable question is
*correct* when the condition holds against its ``ground_truth``.  A threshold on surface
overlap is a rough proxy: a correct paraphrase can fall below it and a wrong answer that
copies most of the reference (one number changed) can pass it.  The signature records it
(``correct:chrf>=0.5``).

Abstention (phrase list)
------------------------
An answer *abstains* when, after NFKC normalization, lowercasing and collapsing whitespace, it
contains one of :data:`ABSTAIN_PHRASES` (Korean and English; defined with the judge's units,
:mod:`ragexam.metrics.judge.units`, whose faithfulness claims leave declining sentences out).  The list is deliberately short
and specific to declining; the signature records ``abstain:phrases-v1`` (or ``phrases-custom``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Dict, Iterable, Optional, Tuple

from ragexam.errors import InputError
from ragexam.metrics.judge.units import ABSTAIN_PHRASES, ABSTAIN_PHRASES_VERSION, is_abstention, normalize_phrase

__all__ = ["Condition", "CorrectIf", "parse_correct_if", "ABSTAIN_PHRASES", "ABSTAIN_PHRASES_VERSION",
           "is_abstention", "normalize_phrase"]

TEXT_METRICS = ("chrf", "bleu", "rouge_l")
_ALIASES = {"chrf": "chrf", "bleu": "bleu", "rouge_l": "rouge_l", "rougel": "rouge_l", "rouge-l": "rouge_l"}
_OPS = {">=": lambda a, b: a >= b, ">": lambda a, b: a > b, "<=": lambda a, b: a <= b, "<": lambda a, b: a < b}
_COND = re.compile(r"^\s*([A-Za-z_\-]+)\s*(>=|<=|>|<)\s*([0-9]*\.?[0-9]+)\s*$")



@dataclass(frozen=True)
class Condition:
    metric: str
    op: str
    value: float

    def holds(self, scores: Dict[str, float]) -> bool:
        return _OPS[self.op](scores[self.metric], self.value)

    def __str__(self) -> str:
        return f"{self.metric}{self.op}{self.value:g}"


@dataclass(frozen=True)
class CorrectIf:
    """All of ``conditions`` must hold; ``str()`` is the canonical text (``chrf>=0.5``)."""

    conditions: Tuple[Condition, ...]

    def holds(self, scores: Dict[str, float]) -> bool:
        return all(c.holds(scores) for c in self.conditions)

    @property
    def metrics(self) -> Tuple[str, ...]:
        return tuple(dict.fromkeys(c.metric for c in self.conditions))

    def __str__(self) -> str:
        return ",".join(map(str, self.conditions))


def parse_correct_if(text: str) -> CorrectIf:
    """Parse ``chrf>=0.5`` / ``chrf>=0.5,rouge_l>=0.3`` (see the module docstring)."""
    if not isinstance(text, str) or not text.strip():
        raise InputError("expected a condition such as chrf>=0.5", source="--correct-if", field="correct_if")
    conds = []
    for part in re.split(r"[,&]", text):
        m = _COND.match(part)
        if not m:
            raise InputError(f"cannot read {part.strip()!r}; expected METRIC OP VALUE such as chrf>=0.5 (metrics: "
                             f"{', '.join(TEXT_METRICS)}; operators >=, >, <=, <)", source="--correct-if",
                             field="correct_if")
        name = _ALIASES.get(m.group(1).lower())
        if name is None:
            raise InputError(f"unknown metric {m.group(1)!r}; expected one of {', '.join(TEXT_METRICS)}",
                             source="--correct-if", field="correct_if")
        value = float(m.group(3))
        if not 0.0 <= value <= 1.0:
            raise InputError(f"threshold {value:g} is outside [0, 1]; the text metrics are in [0, 1] "
                             "(chrf>=0.5, not chrf>=50)", source="--correct-if", field="correct_if")
        conds.append(Condition(name, m.group(2), value))
    return CorrectIf(tuple(conds))


def load_phrases(lines: Iterable[str], *, source: Optional[str] = None) -> Tuple[str, ...]:
    """Phrases from a text file's lines (blank lines and ``#`` comments skipped); ``source`` (the file) is
    named when there are none."""
    out = tuple(s.strip() for s in lines if s.strip() and not s.lstrip().startswith("#"))
    if not out:
        raise InputError("the phrase file has no phrases (only blank lines or # comments); expected one phrase "
                         "per line", source=source, field="abstain_phrases")
    return out
