"""ROUGE-L (Lin, 2004): longest-common-subsequence F-measure, reported in [0, 1].

Definition
----------
Hypothesis ``h`` and reference ``r`` are token sequences (``tokenize``: ``whitespace`` =
``str.split()``, ``char`` = every non-whitespace character, ``ko-kiwi`` / ``ko-mecab`` = Korean
morphemes, see :mod:`ragexam.metrics.text.tokenizers`), lowercased first if ``lowercase=True``.
With ``L = LCS(h, r)`` the length of their longest common subsequence (tokens in the same
order, not necessarily contiguous):

    P = L / |h|,   R = L / |r|,   F = (1 + beta^2) P R / (R + beta^2 P)

``beta`` (default 1) weights recall ``beta`` times as much as precision; ``beta = 1`` is the
harmonic mean ``2PR / (P + R)``, Google's ``rouge-score`` ``rougeL`` F-measure.
Edge cases (as ``rouge-score``): if ``h`` or ``r`` is empty, or ``L = 0``, then P = R = F = 0.

With several references the segment takes the reference with the highest F (the first on
ties) and reports that reference's P and R.  Corpus ROUGE-L is the **mean** of the segment
values (``rouge_l_stats`` returns them; their column means are the corpus score), not an
LCS over the concatenated corpus.

The LCS is computed bit-parallel (Hyyrö 2004): ``O(|h| * ceil(|r| / w))`` word operations.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ragexam.signature import Signature
from ragexam.metrics.text import _common, _inputs
from ragexam.metrics.text.tokenizers import ROUGE_TOKENIZERS, tokenize_lines, tokenizer_signature

__all__ = ["RougeLResult", "ROUGE_L_STATS_COLUMNS", "lcs_length", "rouge_l_stats", "rouge_l_signature",
           "corpus_rouge_l", "sentence_rouge_l"]

#: Columns of :func:`rouge_l_stats`.
ROUGE_L_STATS_COLUMNS = ("precision", "recall", "f")
TOKENIZERS = ROUGE_TOKENIZERS


@dataclass(frozen=True)
class RougeLResult:
    """ROUGE-L of a corpus (or one segment).

    :ivar score: mean F in [0, 1].
    :ivar precision: mean P.
    :ivar recall: mean R.
    :ivar n_segments: number of segments averaged.
    :ivar signature: e.g. ``nrefs:1|case:mixed|tok:whitespace|beta:1|version:ragexam-0.1.0``.
    """

    score: float
    precision: float
    recall: float
    n_segments: int
    signature: str

    def format(self, signature: bool = True) -> str:
        name = f"ROUGE-L|{self.signature}" if signature else "ROUGE-L"
        return f"{name} = {self.score:.4f} (P = {self.precision:.4f} R = {self.recall:.4f} n = {self.n_segments})"

    def __str__(self) -> str:
        return self.format()


def lcs_length(a, b) -> int:
    """Length of the longest common subsequence of token sequences ``a`` and ``b``.

    Bit-parallel over ``a``: bit ``i`` of ``masks[x]`` says ``a[i] == x``; for each token of
    ``b``, ``V <- ((V + U) | (V - U))`` with ``U = V & masks[y]``; the LCS length is the number of
    zero bits of ``V`` (Hyyrö 2004).  Tokens are compared with ``==``/hash.
    """
    if not a or not b:
        return 0
    masks: dict = {}
    for i, x in enumerate(a):
        masks[x] = masks.get(x, 0) | (1 << i)
    full = (1 << len(a)) - 1
    v = full
    for y in b:
        m = masks.get(y)
        if m is not None:
            u = v & m
            v = ((v + u) | (v - u)) & full
    return len(a) - v.bit_count()


def _f(p: float, r: float, beta2: float) -> float:
    return (1 + beta2) * p * r / (r + beta2 * p) if p + r > 0 else 0.0


def _check(tokenize, lowercase, beta, func):
    _inputs.check_choice(tokenize, TOKENIZERS, "tokenize", func)
    _common.check_bool(lowercase, "lowercase", func)
    return _common.check_positive(beta, "beta", func)


def _stats(hyps, refs, tokenize, lowercase, beta) -> np.ndarray:
    lines = hyps + [r for rs in refs for r in rs]
    if lowercase:
        lines = [line.lower() for line in lines]
    toks = tokenize_lines(lines, tokenize)
    beta2 = beta * beta
    out = np.zeros((len(hyps), 3), dtype=np.float64)
    j = len(hyps)
    for i, rs in enumerate(refs):
        h = toks[i]
        best = None
        for r in toks[j:j + len(rs)]:
            lcs = lcs_length(r, h)
            p = lcs / len(h) if lcs else 0.0
            rec = lcs / len(r) if lcs else 0.0
            f = _f(p, rec, beta2)
            if best is None or f > best[2]:
                best = (p, rec, f)
        j += len(rs)
        out[i] = best
    return out


def rouge_l_stats(hypotheses, references, *, tokenize: str = "whitespace", lowercase: bool = False,
                  beta: float = 1.0) -> np.ndarray:
    """Per-segment ROUGE-L, ``float64[n_segments, 3]`` with columns ``precision, recall, f``.

    Column means are the corpus values; a bootstrap is ``stats[idx].mean(axis=-2)``.
    Parameters as in :func:`corpus_rouge_l`.
    """
    func = "rouge_l_stats"
    hyps, refs = _inputs.check_corpus(hypotheses, references, func)
    beta = _check(tokenize, lowercase, beta, func)
    return _stats(hyps, refs, tokenize, lowercase, beta)


def rouge_l_signature(tokenize: str = "whitespace", *, nrefs: str = "1", lowercase: bool = False,
                      beta: float = 1.0) -> Signature:
    """The signature of ROUGE-L with these settings (``nrefs``: the references per segment, or ``var``)."""
    return _common.signature([("nrefs", nrefs), ("case", "lc" if lowercase else "mixed"),
                              ("tok", tokenizer_signature(tokenize)), ("beta", f"{beta:g}")])


def _result(stats, refs, tokenize, lowercase, beta) -> RougeLResult:
    mean = stats.mean(axis=0)
    sig = rouge_l_signature(tokenize, nrefs=_inputs.nrefs_label(refs), lowercase=lowercase, beta=beta)
    return RougeLResult(score=float(mean[2]), precision=float(mean[0]), recall=float(mean[1]),
                        n_segments=int(stats.shape[0]), signature=sig)


def corpus_rouge_l(hypotheses, references, *, tokenize: str = "whitespace", lowercase: bool = False,
                   beta: float = 1.0) -> RougeLResult:
    """Corpus ROUGE-L: the mean over segments of the LCS F-measure (see the module docstring).

    :param hypotheses: sequence of hypothesis strings.
    :param references: per hypothesis, a reference string or a non-empty sequence of them
        (the best reference by F counts).
    :param tokenize: ``whitespace`` (default), ``char``, ``ko-kiwi`` or ``ko-mecab``.
    :param lowercase: lowercase before tokenizing.
    :param beta: recall weight, a finite number > 0 (default 1).
    :return: :class:`RougeLResult`.
    """
    func = "corpus_rouge_l"
    hyps, refs = _inputs.check_corpus(hypotheses, references, func)
    beta = _check(tokenize, lowercase, beta, func)
    return _result(_stats(hyps, refs, tokenize, lowercase, beta), refs, tokenize, lowercase, beta)


def sentence_rouge_l(hypothesis: str, references, *, tokenize: str = "whitespace",
                     lowercase: bool = False, beta: float = 1.0) -> RougeLResult:
    """ROUGE-L of one hypothesis against one or more references."""
    func = "sentence_rouge_l"
    hyps, refs = _inputs.check_sentence(hypothesis, references, func)
    beta = _check(tokenize, lowercase, beta, func)
    return _result(_stats(hyps, refs, tokenize, lowercase, beta), refs, tokenize, lowercase, beta)


