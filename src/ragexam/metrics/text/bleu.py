"""BLEU (Papineni et al., 2002), identical to sacrebleu 2.6 and reported in [0, 1].

Definition
----------
Each segment ``i`` has a hypothesis ``h_i`` and references ``R_i = {r_i1, ..., r_iK}``; all are
lowercased (``lowercase=True``), right-stripped and tokenized by the same tokenizer
(see :mod:`ragexam.metrics.text.tokenizers`).  For n = 1..N (N = 4):

* ``total_n``   = number of n-grams of ``h_i`` = ``max(|h_i| - n + 1, 0)``;
* ``correct_n`` = clipped matches ``sum_g min(c_h(g), max_k c_rk(g))`` over the hypothesis's
  distinct n-grams ``g`` (``c_x(g)`` = occurrences of ``g`` in ``x``);
* ``hyp_len``   = ``|h_i|``; ``ref_len`` = the reference length closest to ``|h_i|``
  (ties go to the shorter reference).

These ten integers are the segment's *sufficient statistics* (:data:`BLEU_STATS_COLUMNS`).
A corpus's statistics are their column sums ``c`` (correct), ``t`` (total), ``sys_len``,
``ref_len``, and

    BLEU = BP * exp( (1/N') * sum_{n=1..N'} log p_n ),   BP = 1 if sys_len >= ref_len else
                                                         exp(1 - ref_len / sys_len) (0 if sys_len = 0)

with ``p_n = c_n / t_n``, where orders with ``c_n = 0`` are *smoothed*:

* ``none``  — ``p_n = 0``, so BLEU = 0 whenever some included order has no match;
* ``floor`` — ``p_n = smooth_value / t_n`` (default 0.1; Chen & Cherry 2014, method 1);
* ``add-k`` — for n >= 2 always ``p_n = (c_n + k) / (t_n + k)`` (default k = 1; method 2);
  unigrams are not smoothed;
* ``exp``   — the j-th order with ``c_n = 0`` gets ``p_n = 1 / (2^j t_n)`` (NIST / mteval-v13a,
  method 3; the default).

Orders are scanned from n = 1 and the scan **stops at the first order with** ``t_n = 0`` (the
hypotheses have no n-grams that long).  ``N'`` is 4 unless ``effective_order=True``, in which
case it is the last order scanned with ``t_n > 0``.  Note that, despite sacrebleu's docstring,
effective order only drops orders with *no hypothesis n-grams*, never orders whose matches are
zero — those are handled by smoothing.  Without effective order, a missing order has ``p_n = 0``
and BLEU is 0 (the usual reason sentence-level BLEU needs ``effective_order=True``).

Edge cases: if no n-gram of any order matches (``sum c_n = 0``) BLEU is exactly 0, whatever
the smoothing (sacrebleu #141); an empty hypothesis therefore scores 0 with BP = 0; an empty
reference gives ``ref_len`` 0 and BP = 1.

Scores, precisions and BP are reported in [0, 1] (sacrebleu's values divided by 100); every
result carries a signature such as
``nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:ragexam-0.1.0``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ragexam.errors import InputError
from ragexam.metrics.text import _common, _inputs
from ragexam.metrics.text._ngrams import Sentences, encode_chars, encode_tokens, ngram_matches
from ragexam.metrics.text.tokenizers import BLEU_TOKENIZERS, tokenize_lines, tokenizer_signature

__all__ = [
    "BleuResult", "BLEU_STATS_COLUMNS", "MAX_ORDER", "SMOOTH_DEFAULTS", "TOKENIZERS",
    "bleu_stats", "bleu_from_stats", "bleu_scores", "corpus_bleu", "sentence_bleu",
]

#: Largest n-gram order.
MAX_ORDER = 4
#: Smoothing methods and their default ``smooth_value`` (``None``: takes no value).
SMOOTH_DEFAULTS: dict[str, float | None] = {"none": None, "floor": 0.1, "add-k": 1, "exp": None}
#: Tokenizer names accepted by BLEU.
TOKENIZERS = BLEU_TOKENIZERS
#: Column names of the per-segment statistics returned by :func:`bleu_stats`.
BLEU_STATS_COLUMNS = (("hyp_len", "ref_len")
                      + tuple(f"correct_{n}" for n in range(1, MAX_ORDER + 1))
                      + tuple(f"total_{n}" for n in range(1, MAX_ORDER + 1)))

_CORRECT = slice(2, 2 + MAX_ORDER)
_TOTAL = slice(2 + MAX_ORDER, 2 + 2 * MAX_ORDER)
_LOG_ZERO = -9999999999  # sacrebleu's my_log(0)


@dataclass(frozen=True)
class BleuResult:
    """A BLEU score and what it was computed from.

    :ivar score: BLEU in [0, 1].
    :ivar precisions: the n-gram precisions ``p_1..p_4`` in [0, 1] *as used in the score*
        (after smoothing; 0 for orders past the first with no hypothesis n-grams).
    :ivar bp: brevity penalty in [0, 1].
    :ivar sys_len: total hypothesis length in tokens.
    :ivar ref_len: total closest-reference length in tokens.
    :ivar counts: clipped matches ``correct_1..4`` (raw counts, before any add-k smoothing;
        sacrebleu's ``counts`` include the added k).
    :ivar totals: hypothesis n-gram counts ``total_1..4`` (raw).
    :ivar signature: the settings that produced the score.
    """

    score: float
    precisions: tuple[float, ...]
    bp: float
    sys_len: int
    ref_len: int
    counts: tuple[int, ...]
    totals: tuple[int, ...]
    signature: str

    @property
    def ratio(self) -> float:
        """``sys_len / ref_len`` (0 when ``ref_len`` is 0)."""
        return self.sys_len / self.ref_len if self.ref_len else 0.0

    def format(self, signature: bool = True) -> str:
        """A sacrebleu-like line, with values in [0, 1]::

            BLEU|nrefs:1|...|version:ragexam-0.1.0 = 0.4163 0.571/0.462/0.417/0.364 (BP = 0.931 ratio = 0.933 hyp_len = 14 ref_len = 15)
        """
        name = f"BLEU|{self.signature}" if signature else "BLEU"
        prec = "/".join(f"{p:.3f}" for p in self.precisions)
        return (f"{name} = {self.score:.4f} {prec} (BP = {self.bp:.3f} ratio = {self.ratio:.3f} "
                f"hyp_len = {self.sys_len:d} ref_len = {self.ref_len:d})")

    def __str__(self) -> str:
        return self.format()


# --- settings -------------------------------------------------------------------------------
def _check_smoothing(smooth, smooth_value, func: str):
    _inputs.check_choice(smooth, tuple(SMOOTH_DEFAULTS), "smooth", func)
    default = SMOOTH_DEFAULTS[smooth]
    if default is None:
        if smooth_value is not None:
            raise InputError(
                f"{func}: smoothing {smooth!r} takes no smooth_value (got {smooth_value!r}); "
                "only 'floor' and 'add-k' do.", field="smooth_value")
        return None
    if smooth_value is None:
        return default
    return _common.check_positive(smooth_value, "smooth_value", func)


def _signature(nrefs, lowercase, effective_order, tokenize, smooth, smooth_value) -> str:
    smooth_str = smooth if smooth_value is None else f"{smooth}[{smooth_value:.2f}]"
    return _common.signature([
        ("nrefs", nrefs), ("case", "lc" if lowercase else "mixed"),
        ("eff", "yes" if effective_order else "no"), ("tok", tokenizer_signature(tokenize)),
        ("smooth", smooth_str)])


# --- statistics -----------------------------------------------------------------------------
def _stats(hyps: list[str], refs: list[list[str]], tokenize: str, lowercase: bool) -> np.ndarray:
    n_seg = len(hyps)
    lines = hyps + [r for rs in refs for r in rs]
    if lowercase:
        lines = [line.lower() for line in lines]
    if tokenize == "char":
        ids, lengths, alphabet = encode_chars(["".join(line.split()) for line in lines])
    else:
        ids, lengths, alphabet = encode_tokens(tokenize_lines([line.rstrip() for line in lines], tokenize))
    n_refs = np.fromiter((len(rs) for rs in refs), dtype=np.int64, count=n_seg)
    k_max = int(n_refs.max())
    ref_segment = np.repeat(np.arange(n_seg, dtype=np.int64), n_refs)
    ref_side = np.arange(ref_segment.size, dtype=np.int64) - np.repeat(np.cumsum(n_refs) - n_refs, n_refs) + 1
    corpus = Sentences(ids, lengths,
                       np.concatenate([np.arange(n_seg, dtype=np.int64), ref_segment]),
                       np.concatenate([np.zeros(n_seg, dtype=np.int64), ref_side]),
                       n_seg, k_max + 1, alphabet)

    stats = np.zeros((n_seg, len(BLEU_STATS_COLUMNS)), dtype=np.int64)
    hyp_len = lengths[:n_seg]
    stats[:, 0] = hyp_len
    # closest reference length, ties to the shorter one
    ref_lens = np.zeros((n_seg, k_max), dtype=np.int64)
    ref_lens[ref_segment, ref_side - 1] = lengths[n_seg:]
    closeness = np.abs(ref_lens - hyp_len[:, None]) * (int(lengths.max(initial=0)) + 1) + ref_lens
    closeness[np.arange(k_max)[None, :] >= n_refs[:, None]] = np.iinfo(np.int64).max  # padding
    stats[:, 1] = ref_lens[np.arange(n_seg), np.argmin(closeness, axis=1)]
    stats[:, _CORRECT] = ngram_matches(corpus, MAX_ORDER, merge_refs=True).T
    stats[:, _TOTAL] = np.maximum(hyp_len[:, None] - np.arange(MAX_ORDER)[None, :], 0)
    return stats


def bleu_stats(hypotheses, references, *, tokenize: str = "13a", lowercase: bool = False) -> np.ndarray:
    """Per-segment BLEU sufficient statistics.

    :param hypotheses: sequence of hypothesis strings (a bare ``str`` is an error).
    :param references: one entry per hypothesis: a reference string or a non-empty sequence of
        reference strings (per-segment layout; the transpose of sacrebleu's streams).
    :param tokenize: one of :data:`TOKENIZERS` (default ``13a``).
    :param lowercase: lowercase hypotheses and references before tokenizing.
    :return: ``int64[n_segments, 10]`` with columns :data:`BLEU_STATS_COLUMNS`
        (``hyp_len, ref_len, correct_1..4, total_1..4``).  Rows are summable: the corpus BLEU of
        any subset or bootstrap resample is ``bleu_from_stats(stats[idx].sum(0))``, and
        ``bleu_scores(stats[idx_matrix].sum(1))`` scores many resamples in one step.
    :raises InputError: on malformed input or an unknown tokenizer.
    """
    func = "bleu_stats"
    hyps, refs = _inputs.check_corpus(hypotheses, references, func)
    _inputs.check_choice(tokenize, TOKENIZERS, "tokenize", func)
    _common.check_bool(lowercase, "lowercase", func)
    return _stats(hyps, refs, tokenize, lowercase)


def _as_row(stats, func: str) -> list[int]:
    arr = np.asarray(stats)
    if arr.ndim == 2:
        arr = arr.sum(axis=0)
    if arr.shape != (len(BLEU_STATS_COLUMNS),) or not np.issubdtype(arr.dtype, np.number):
        raise InputError(
            f"{func}: `stats` must have {len(BLEU_STATS_COLUMNS)} columns {BLEU_STATS_COLUMNS}, "
            f"got an array of shape {np.shape(stats)}.", field="stats")
    if (arr < 0).any():
        raise InputError(f"{func}: `stats` holds negative counts: {arr.tolist()}.", field="stats")
    return [int(x) for x in arr]


# --- scoring --------------------------------------------------------------------------------
def _compute(row: list[int], smooth: str, smooth_value, effective_order: bool):
    """sacrebleu's ``BLEU.compute_bleu`` step by step (same float operations, 0–100 scale)."""
    sys_len, ref_len = row[0], row[1]
    correct, total = row[_CORRECT], row[_TOTAL]
    bp = 1.0
    if sys_len < ref_len:
        bp = math.exp(1 - ref_len / sys_len) if sys_len > 0 else 0.0
    precisions = [0.0] * MAX_ORDER
    if not any(correct):
        return 0.0, precisions, bp
    correct, total = list(correct), list(total)
    smooth_mteval = 1.0
    eff_order = MAX_ORDER
    for n in range(1, MAX_ORDER + 1):
        if smooth == "add-k" and n > 1:
            correct[n - 1] += smooth_value
            total[n - 1] += smooth_value
        if total[n - 1] == 0:
            break
        if effective_order:
            eff_order = n
        if correct[n - 1] == 0:
            if smooth == "exp":
                smooth_mteval *= 2
                precisions[n - 1] = 100.0 / (smooth_mteval * total[n - 1])
            elif smooth == "floor":
                precisions[n - 1] = 100.0 * smooth_value / total[n - 1]
        else:
            precisions[n - 1] = 100.0 * correct[n - 1] / total[n - 1]
    logs = [math.log(p) if p != 0.0 else _LOG_ZERO for p in precisions[:eff_order]]
    return bp * math.exp(sum(logs) / eff_order), precisions, bp


def bleu_from_stats(stats, *, smooth: str = "exp", smooth_value: float | None = None,
                    effective_order: bool = False, tokenize: str = "13a",
                    lowercase: bool = False, nrefs: int | str = 1) -> BleuResult:
    """BLEU from (summed) sufficient statistics.

    The score is sacrebleu's divided by 100 and capped at 1: sacrebleu works in percent and returns
    100.00000000000004 for a perfect match (``exp`` of a sum of ``log(100)``), which would put the score
    above its own range by 4e-16.

    :param stats: one statistics row (10 numbers, :data:`BLEU_STATS_COLUMNS`) or a 2-D array
        of rows, which are summed first (so ``bleu_from_stats(bleu_stats(h, r))`` is corpus BLEU).
    :param smooth: ``none``, ``floor``, ``add-k`` or ``exp`` (see the module docstring).
    :param smooth_value: for ``floor`` (default 0.1) and ``add-k`` (default 1) only.
    :param effective_order: average only over the orders before the first with no hypothesis
        n-grams.
    :param tokenize, lowercase, nrefs: the settings that produced ``stats``; they do not change
        the number, only the signature.
    :return: :class:`BleuResult`.
    """
    func = "bleu_from_stats"
    smooth_value = _check_smoothing(smooth, smooth_value, func)
    _common.check_bool(effective_order, "effective_order", func)
    _inputs.check_choice(tokenize, TOKENIZERS, "tokenize", func)
    _common.check_bool(lowercase, "lowercase", func)
    row = _as_row(stats, func)
    score, precisions, bp = _compute(row, smooth, smooth_value, effective_order)
    return BleuResult(
        score=min(score / 100.0, 1.0), precisions=tuple(p / 100.0 for p in precisions), bp=bp,
        sys_len=row[0], ref_len=row[1], counts=tuple(row[_CORRECT]), totals=tuple(row[_TOTAL]),
        signature=_signature(nrefs, lowercase, effective_order, tokenize, smooth, smooth_value))


def bleu_scores(stats, *, smooth: str = "exp", smooth_value: float | None = None,
                effective_order: bool = False) -> np.ndarray:
    """BLEU in [0, 1] of every row of ``stats``, vectorized.

    Each row is a statistics vector (one segment, or a sum such as a bootstrap resample);
    the result equals ``bleu_from_stats(row).score`` for each row up to floating-point rounding
    of ``log``/``exp`` (< 1e-12).  Sentence-level BLEU of a whole corpus:
    ``bleu_scores(bleu_stats(h, r), effective_order=True)``.

    :param stats: array ``[..., 10]``.
    :return: float64 array of shape ``stats.shape[:-1]``.
    """
    func = "bleu_scores"
    smooth_value = _check_smoothing(smooth, smooth_value, func)
    _common.check_bool(effective_order, "effective_order", func)
    arr = np.asarray(stats)
    if arr.ndim < 1 or arr.shape[-1] != len(BLEU_STATS_COLUMNS):
        raise InputError(f"{func}: `stats` must have last dimension {len(BLEU_STATS_COLUMNS)}, "
                         f"got shape {arr.shape}.", field="stats")
    arr = arr.astype(np.float64)
    sys_len, ref_len = arr[..., 0], arr[..., 1]
    correct, total = arr[..., _CORRECT].copy(), arr[..., _TOTAL].copy()
    any_match = (correct > 0).any(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        bp = np.where(sys_len < ref_len, np.where(sys_len > 0, np.exp(1 - ref_len / sys_len), 0.0), 1.0)
        if smooth == "add-k":
            correct[..., 1:] += smooth_value
            total[..., 1:] += smooth_value
        alive = np.logical_and.accumulate(total > 0, axis=-1)  # orders before the first t_n = 0
        zero = alive & (correct == 0)
        prec = 100.0 * correct / total
        if smooth == "exp":
            prec = np.where(zero, 100.0 / (2.0 ** np.cumsum(zero, axis=-1) * total), prec)
        elif smooth == "floor":
            prec = np.where(zero, 100.0 * smooth_value / total, prec)
        else:
            prec = np.where(zero, 0.0, prec)
        prec = np.where(alive, prec, 0.0)
        logs = np.where(prec > 0, np.log(np.where(prec > 0, prec, 1.0)), float(_LOG_ZERO))
    if effective_order:
        eff = alive.sum(axis=-1)
        eff = np.where(eff == 0, MAX_ORDER, eff)
    else:
        eff = np.full(sys_len.shape, MAX_ORDER)
    included = np.arange(MAX_ORDER) < eff[..., None]
    score = bp * np.exp(np.where(included, logs, 0.0).sum(axis=-1) / eff)
    return np.minimum(np.where(any_match, score, 0.0) / 100.0, 1.0)


# --- corpus and sentence --------------------------------------------------------------------
def _checked_bleu(func: str, hyps, refs, tokenize: str, smooth: str, smooth_value: float | None,
                  lowercase: bool, effective_order: bool) -> BleuResult:
    """The BLEU of checked ``hyps``/``refs`` after checking the options (errors name ``func``)."""
    _inputs.check_choice(tokenize, TOKENIZERS, "tokenize", func)
    _common.check_bool(lowercase, "lowercase", func)
    smooth_value = _check_smoothing(smooth, smooth_value, func)
    stats = _stats(hyps, refs, tokenize, lowercase)
    return bleu_from_stats(stats, smooth=smooth, smooth_value=smooth_value,
                           effective_order=effective_order, tokenize=tokenize,
                           lowercase=lowercase, nrefs=_inputs.nrefs_label(refs))


def corpus_bleu(hypotheses, references, *, tokenize: str = "13a", smooth: str = "exp",
                smooth_value: float | None = None, lowercase: bool = False,
                effective_order: bool = False) -> BleuResult:
    """Corpus-level BLEU, identical to sacrebleu's ``BLEU(...).corpus_score`` / 100.

    :param hypotheses: sequence of hypothesis strings.
    :param references: per hypothesis, a reference string or a non-empty sequence of them
        (``references[i]`` belongs to ``hypotheses[i]``; the transpose of sacrebleu's layout).
    :param tokenize: one of :data:`TOKENIZERS`; default ``13a`` (sacrebleu's default).  For
        Korean, ``ko-mecab`` (sacrebleu-comparable) or ``ko-kiwi``; whitespace BLEU
        (``none``) under-credits Korean because particles stick to stems.
    :param smooth: ``none``, ``floor``, ``add-k`` or ``exp`` (default, as sacrebleu).
    :param smooth_value: ``floor`` (default 0.1) and ``add-k`` (default 1) only.
    :param lowercase: case-insensitive BLEU.
    :param effective_order: see the module docstring; off by default at corpus level.
    :return: :class:`BleuResult` with score in [0, 1].
    :raises InputError: malformed input, unknown tokenizer or smoothing.
    """
    func = "corpus_bleu"
    hyps, refs = _inputs.check_corpus(hypotheses, references, func)
    return _checked_bleu(func, hyps, refs, tokenize, smooth, smooth_value, lowercase, effective_order)


def sentence_bleu(hypothesis: str, references, *, tokenize: str = "13a", smooth: str = "exp",
                  smooth_value: float | None = None, lowercase: bool = False,
                  effective_order: bool = True) -> BleuResult:
    """BLEU of one hypothesis against one or more references.

    Identical to sacrebleu's ``BLEU(effective_order=...).sentence_score(hyp, refs)`` / 100.
    ``effective_order`` defaults to ``True``, as in sacrebleu's ``sentence_bleu``: a short
    hypothesis with no 4-grams is then scored on orders 1–3 instead of getting 0.

    :param hypothesis: the hypothesis string.
    :param references: a reference string or a non-empty sequence of reference strings.
    :return: :class:`BleuResult`; other parameters as in :func:`corpus_bleu`.
    """
    func = "sentence_bleu"
    hyps, refs = _inputs.check_sentence(hypothesis, references, func)
    return _checked_bleu(func, hyps, refs, tokenize, smooth, smooth_value, lowercase, effective_order)
