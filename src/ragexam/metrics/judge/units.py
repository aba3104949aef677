"""What the judge gives one verdict per: contexts, the answer's claims, the reference answer's statements.

A per-unit metric's reply holds exactly one value per unit, in order, and the JSON schema says how many
(:mod:`ragexam.metrics.judge.contract`), so ragexam -- not the judge -- decides the units:

* ``contexts``: the item's retrieved contexts, as given;
* ``claims`` (``faithfulness``): the sentences of the answer (:func:`split_sentences`) without those that
  decline to answer (:func:`is_abstention`: "문서에서 찾을 수 없습니다" claims nothing).  An answer with no
  claim left is unjudged ``no_claims`` without a call;
* ``statements`` (``context_recall``): the sentences of the reference answer.

Sentences: the text is cut after ``.``, ``!``, ``?``, ``。`` (and Korean ``다.``/``요.`` endings, which are
the same rule) when whitespace follows, and at line breaks; pieces without a letter or digit are dropped.
A number such as ``1.5`` is not cut (no whitespace after the point).

Abstention phrases (:data:`ABSTAIN_PHRASES`): an answer *declines* when, after NFKC normalization,
lowercasing and collapsing whitespace, it contains one of them (Korean and English); the list is short and
specific to declining (``abstain:phrases-v1`` in signatures).
"""

from __future__ import annotations

import re
import unicodedata
from typing import List, Optional, Sequence, Tuple

__all__ = ["ABSTAIN_PHRASES", "ABSTAIN_PHRASES_VERSION", "normalize_phrase", "is_abstention", "split_sentences",
           "claims_of", "UNITS"]

#: the unit kinds (:attr:`ragexam.metrics.judge.metric.JudgeMetric.units`)
UNITS = ("contexts", "claims", "statements")

#: Phrases that mark an answer as declining (matched after :func:`normalize_phrase`).
ABSTAIN_PHRASES: Tuple[str, ...] = (
    # Korean
    "문서에서 찾을 수 없", "문서에서 확인할 수 없", "문서에는 없", "문서에 없", "문서에 나와 있지 않",
    "문서에 포함되어 있지 않", "제공된 문서에는", "제공된 문서에서는", "관련 내용이 없", "관련 정보가 없",
    "답변드리기 어렵", "답을 찾을 수 없", "알 수 없습니다",
    # English
    "cannot find", "can't find", "could not find", "couldn't find", "unable to find",
    "not in the provided documents", "not in the documents", "the documents do not", "the documents don't",
    "the provided documents do not", "no information about", "not mentioned in the", "i don't know",
    "i do not know",
)
ABSTAIN_PHRASES_VERSION = "v1"

_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+|\n+")
_WORDISH = re.compile(r"\w", re.UNICODE)


def normalize_phrase(text: str) -> str:
    """NFKC, lowercase, whitespace collapsed to one space, curly apostrophes straightened."""
    t = unicodedata.normalize("NFKC", text).replace("\u2019", "'").lower()
    return " ".join(t.split())


def is_abstention(answer: Optional[str], phrases: Sequence[str] = ABSTAIN_PHRASES) -> Optional[str]:
    """The first phrase of ``phrases`` found in ``answer`` (the answer abstains), else ``None``."""
    if not answer:
        return None
    a = normalize_phrase(answer)
    for p in phrases:
        if normalize_phrase(p) in a:
            return p
    return None


def split_sentences(text: Optional[str]) -> List[str]:
    """The sentences of ``text`` (see the module docstring).

    >>> split_sentences("VPN을 켜세요. 그다음 1.5초 기다립니다!\\n끝")
    ['VPN을 켜세요.', '그다음 1.5초 기다립니다!', '끝']
    """
    return [s.strip() for s in _SENTENCE_END.split(text or "") if _WORDISH.search(s)]


def claims_of(answer: Optional[str]) -> List[str]:
    """The claims of an answer: its sentences that do not decline (module docstring)."""
    return [s for s in split_sentences(answer) if is_abstention(s) is None]
