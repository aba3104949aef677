"""The lecture handout's BLEU, kept verbatim in behaviour and labelled as **non-standard**.

This is the hand-written ``bleu_score(reference, hypothesis, max_n)`` of the course handout
(lecture 2026-04-01, section 3).  Use it to reproduce the handout's numbers, never to report
BLEU: use :func:`ragexam.metrics.text.sentence_bleu` / :func:`corpus_bleu` (sacrebleu-identical).

Definition (one reference, one hypothesis)
------------------------------------------
Tokens are ``str.split()`` (whitespace; Korean particles stay glued to their stems).
For n = 1..``max_n``: ``p_n`` = clipped matches / hypothesis n-grams (``p_n = 0`` when the
hypothesis has no n-grams of that order).  ``BP = 1`` if ``c >= r`` else ``exp(1 - r/c)``
(``0`` if ``c = 0``), with ``c``, ``r`` the hypothesis and reference token counts.  Then

    handout BLEU = BP * exp( (1/V) * sum_{n : p_n > 0} log p_n ),  V = #{n : p_n > 0}

and 0 if no order has a match.  The handout rounds to 4 decimals; this function does not.

How it differs from standard BLEU (sacrebleu)
---------------------------------------------
* **Orders with zero precision are skipped** instead of making the score 0 (``none``) or being
  smoothed (``floor``/``add-k``/``exp``).  That *inflates* scores exactly when higher orders do
  not match: for ref ``VPN 접속이 안 될 때는 OTP 시간을 확인하세요.`` and hyp
  ``VPN이 안 되면 OTP 앱 시간을 봐 주세요.`` only unigrams match (3/8, 0/7, 0/6, 0/5), and the
  handout gives 0.375 — just p_1, i.e. BLEU-1 — where sacrebleu gives 0 (none), 0.0366
  (floor), 0.0727 (exp, default) or 0.1828 (add-k).
* It is not sacrebleu's ``effective_order`` either: effective order only drops orders where
  the hypothesis has *no n-grams at all*; orders with n-grams but no matches still count.
* No tokenization (sacrebleu's default is ``13a``, which splits punctuation), one reference
  only, sentence level only (no corpus sums), and no signature of the settings.
When every order has at least one match, it equals sacrebleu's ``tokenize='none'`` sentence
BLEU (with any smoothing but ``add-k``): the lecture's example pair gives 0.3955, BP 1.0 in both.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass

from ragexam.metrics.text import _common

__all__ = ["HandoutBleuResult", "handout_bleu"]


@dataclass(frozen=True)
class HandoutBleuResult:
    """The handout's output, unrounded.

    :ivar bleu: the handout's ``bleu`` (non-standard, see the module docstring).
    :ivar bp: brevity penalty.
    :ivar precisions: ``p_1..p_max_n`` (0 where an order has no n-grams or no matches).
    :ivar signature: ``handout|max_n:4|tok:whitespace|version:ragexam-...`` — marked as handout.
    """

    bleu: float
    bp: float
    precisions: tuple[float, ...]
    signature: str


def _ngrams(tokens: list[str], n: int) -> Counter:
    return Counter(tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1))


def handout_bleu(reference: str, hypothesis: str, max_n: int = 4) -> HandoutBleuResult:
    """The lecture handout's BLEU of ``hypothesis`` against one ``reference``.

    :param reference: the reference string (one).
    :param hypothesis: the hypothesis string.
    :param max_n: largest n-gram order, an integer >= 1 (the handout uses 4).
    :return: :class:`HandoutBleuResult`; ``bleu`` is in [0, 1], not rounded.
    :raises InputError: a non-string argument or a bad ``max_n``.
    """
    from ragexam.errors import InputError

    func = "handout_bleu"
    for name, value in (("reference", reference), ("hypothesis", hypothesis)):
        if not isinstance(value, str):
            raise InputError(f"{func}: `{name}` must be a str, got {type(value).__name__}.", field=name)
    max_n = _common.check_int(max_n, "max_n", func, 1)
    ref_tokens, hyp_tokens = reference.split(), hypothesis.split()
    c, r = len(hyp_tokens), len(ref_tokens)
    bp = 1.0 if c >= r else (math.exp(1 - r / c) if c > 0 else 0.0)
    precisions = []
    for n in range(1, max_n + 1):
        ref_ngrams, hyp_ngrams = _ngrams(ref_tokens, n), _ngrams(hyp_tokens, n)
        if not hyp_ngrams:
            precisions.append(0.0)
            continue
        clipped = sum(min(cnt, ref_ngrams.get(ng, 0)) for ng, cnt in hyp_ngrams.items())
        precisions.append(clipped / sum(hyp_ngrams.values()))
    positive = [math.log(p) for p in precisions if p > 0]
    bleu = bp * math.exp(sum(positive) / len(positive)) if positive else 0.0
    return HandoutBleuResult(bleu=bleu, bp=bp, precisions=tuple(precisions),
                             signature=_common.signature([("handout", "yes"), ("max_n", max_n),
                                                          ("tok", "whitespace")]))
