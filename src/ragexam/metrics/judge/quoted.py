"""Claims a context states in the same words: supported without the judge's say (the quotation rule).

``faithfulness`` asks whether each claim of an answer is supported by the contexts, ``context_recall`` whether
each statement of the reference answer is.  A unit that a context *states in the same words* is supported by
definition, and a small judge still calls some of them unsupported: the local 1.5B model of docs/judge.md
wrote ``false`` for "DAON-Guest는 방문객용 인터넷 전용 망이라 사내 시스템에 접속할 수 없습니다." beside the
context sentence "DAON-Guest는 방문객을 위한 인터넷 전용 망으로, 여기서는 사내 시스템에 접속할 수 없습니다."
(its verdict followed the claim's position in the reply, not the claim).  So ragexam decides these units
itself, and the judge decides the rest.

The rule (``quoted:v2`` in the metric's signature).  A unit is **quoted** by a context sentence when

1. the unit has at least :data:`MIN_CONTENT` content morphemes (:data:`CONTENT_TAGS`: nouns, numbers, Latin
   words and codes, verb and adjective stems, adverbs, determiners, roots; not particles, endings, suffixes or
   bound nouns), Kiwi's analysis (:mod:`ragexam.data.kiwi`), lowercased;
2. those morphemes occur **in the same order** in one sentence of one context (other words may come between:
   "방문객용" and "방문객을 위한" share ``방문객``); a number, a code or a name changed is not there
   (``50MB`` for ``25MB``), nor a predicate changed (``체크하`` for ``시도하``);
3. the sentence and the unit have the **same negations** (:data:`NEGATIONS`: ``않``, ``못``, ``안``, ``없``,
   ``아니``, ``말``, ``금지``, ``불가``; English ``not``, ``no``, ``never``, ``cannot``, ``without``), counted:
   "접속할 수 있습니다" is not quoted by "접속할 수 없습니다", nor "신청해도 됩니다" by "신청하지 않아도
   됩니다".

Citation markers (``[1]``, ``[2, 3]``, ``[^1]``, ``【1】``: what ``ragexam answer``'s template numbers contexts with,
and answers echo) are not words of the claim: they are taken out of units and sentences before the rule (``v2``;
``v1`` read "[1] 예비군 훈련…" as a claim starting with the number 1, so a sentence copied from the context was not
quoted).

The rule only ever *adds* support, and only where the words are the context's own: a paraphrase, a unit
built from two sentences, or one that leaves out a negation goes to the judge as before.  Every quoted unit
says so in the judgment's details (``quoted``: the context's number and the sentence), beside what the judge
wrote for it (``judge_supported``) when it was asked; a judgment all of whose units are quoted makes no call.
The judge is still sent every unit of an item it is asked about (its verdicts depend on their company), so
switching the rule off (``--judge-quoted``, ``LLMSettings(quoted=False)``) re-reads the cached replies
without calling again.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

from ragexam.metrics.judge.units import split_sentences

__all__ = ["Quote", "quotes", "quotes_many", "QUOTE_RULE_VERSION", "CONTENT_TAGS", "NEGATIONS", "MIN_CONTENT"]

#: bump when the rule changes what it quotes (it is in the signature of every metric it applies to)
QUOTE_RULE_VERSION = "v2"
#: Kiwi tags of the morphemes a unit must share, in order, with a context sentence
CONTENT_TAGS = frozenset({"NNG", "NNP", "NR", "NP", "SN", "SL", "SH", "XR", "XPN", "MAG", "MM", "VV", "VA", "VX",
                          "VCN", "VV-I", "VA-I", "VV-R", "VA-R", "VX-I", "VX-R", "W_SERIAL", "W_URL", "W_EMAIL",
                          "W_HASHTAG", "W_MENTION"})
#: morphemes (lowercased) that negate; a unit and its sentence must hold the same number of each
NEGATIONS = frozenset({"않", "못", "못하", "안", "없", "아니", "말", "금지", "불가",
                       "not", "no", "never", "cannot", "without", "nor"})
#: the fewest content morphemes a unit must have to be quoted ("네." or "2대입니다." is never quoted)
MIN_CONTENT = 3

_NT = re.compile(r"n't\b", re.I)
#: a citation marker: ``[1]``, ``[1, 2]``, ``[1-3]``, ``[^1]``, ``【1】``, ``[출처 1]`` is not one (words inside)
_CITATION = re.compile(r"\[\^?\d{1,3}(?:\s*[,\-\u2013]\s*\d{1,3})*\]|\u3010\d{1,3}(?:\s*[,\-\u2013]\s*\d{1,3})*\u3011")


def _analysed(text: str) -> str:
    """What Kiwi analyses of a unit or sentence: citation markers out, ``n't`` as ``not``."""
    return _NT.sub(" not", _CITATION.sub(" ", text))


@dataclass(frozen=True)
class Quote:
    """Where a unit is quoted: ``context`` (1-based, in the item's order) and its ``sentence``."""

    context: int
    sentence: str

    def to_dict(self) -> dict:
        return {"context": self.context, "sentence": self.sentence}


def _content(tokens: Sequence) -> List[str]:
    return [t.form.lower() for t in tokens if t.tag in CONTENT_TAGS]


def _negations(content: Sequence[str]) -> List[str]:
    return sorted(m for m in content if m in NEGATIONS)


def _in_order(needle: Sequence[str], hay: Sequence[str]) -> bool:
    it = iter(hay)
    return all(m in it for m in needle)


def quotes(units: Sequence[str], contexts: Sequence[str]) -> List[Optional[Quote]]:
    """For each unit, the first context sentence that quotes it (module docstring), or ``None``.

    >>> [q and q.context for q in quotes(["DAON-Guest에서는 사내 시스템에 접속할 수 없습니다.",
    ...                                    "DAON-Guest에서도 사내 시스템에 접속할 수 있습니다."],
    ...                                   ["사옥 무선망 안내. DAON-Guest는 방문객용 망으로, 사내 시스템에 접속할 수 없습니다."])]
    [1, None]
    """
    return quotes_many([(units, contexts)])[0]


def quotes_many(items: Sequence[Tuple[Sequence[str], Sequence[str]]]) -> List[List[Optional[Quote]]]:
    """:func:`quotes` of many ``(units, contexts)`` pairs, with every distinct text analysed once, in one batch
    (Kiwi spreads a batch over its workers; the contexts of a score run repeat across items and metrics)."""
    sentences = [[(k, s) for k, c in enumerate(contexts, 1) for s in split_sentences(c)] for _, contexts in items]
    texts = list(dict.fromkeys([u for units, _ in items for u in units] + [s for ss in sentences for _, s in ss]))
    content = {}
    if texts:
        from ragexam.data.kiwi import tokenize

        content = {t: _content(toks) for t, toks in zip(texts, tokenize([_analysed(t) for t in texts]))}
    out: List[List[Optional[Quote]]] = []
    for (units, _), ss in zip(items, sentences):
        found_all: List[Optional[Quote]] = []
        for u in units:
            c = content[u]
            found = None
            if len(c) >= MIN_CONTENT:
                neg = _negations(c)
                found = next((Quote(k, s) for k, s in ss
                              if _negations(content[s]) == neg and _in_order(c, content[s])), None)
            found_all.append(found)
        out.append(found_all)
    return out
