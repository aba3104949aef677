"""chrF (Popović 2015) and chrF++ (Popović 2017), identical to sacrebleu 2.6, reported in [0, 1].

Definition
----------
Hypothesis and references are lowercased if ``lowercase=True``.  *Character* n-grams
(n = 1..``char_order``, default 6) are taken over code points of the string with all whitespace
removed (kept if ``whitespace=True``).  chrF++ (``word_order=2``) adds *word* n-grams
(n = 1..``word_order``) over whitespace tokens from which one leading or trailing ASCII
punctuation mark is split off (sacrebleu's rule: ``word,`` → ``word`` ``,``; a trailing mark wins
over a leading one, so ``(hi)`` → ``(hi`` ``)``).

For one hypothesis ``h``, one reference ``r`` and each order j (char orders first, then word
orders) the statistics are

* ``hyp_j``   = number of n-grams of ``h`` — but 0 when ``r`` has no n-gram of that order;
* ``ref_j``   = number of n-grams of ``r``;
* ``match_j`` = ``sum_g min(c_h(g), c_r(g))``.

With several references, the segment keeps the statistics of the reference with the highest
sentence-level chrF (the first on ties).  Corpus statistics are column sums.  With
``P_j = match_j / hyp_j``, ``R_j = match_j / ref_j`` and ``b = beta^2``:

* default (``eps_smoothing=False``, sacrebleu's default; signature ``eff:yes``): average
  ``P_j`` and ``R_j`` over the *effective* orders (``hyp_j > 0`` and ``ref_j > 0``), then
  ``chrF = (1 + b) P R / (b P + R)``; 0 if no order is effective or ``P + R = 0``;
* ``eps_smoothing=True`` (chrF++.py / Moses / NLTK style; ``eff:no``): a missing ``P_j`` or
  ``R_j`` is ``1e-16``, each order gets ``F_j = (1 + b) P_j R_j / (b P_j + R_j)`` (``1e-16`` if the
  denominator is 0) and chrF is the plain mean of the ``F_j`` over all orders.

``beta`` (default 2) weights recall ``beta`` times as much as precision.  Empty hypothesis:
every ``hyp_j`` is 0, so chrF is 0 (about 1e-16 with eps smoothing).  Scores are sacrebleu's
divided by 100.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ragexam.errors import InputError
from ragexam.metrics.text import _common, _inputs
from ragexam.metrics.text._ngrams import Sentences, encode_chars, encode_tokens, ngram_matches

__all__ = ["ChrfResult", "CHAR_ORDER", "WORD_ORDER", "BETA", "chrf_stats", "chrf_stats_columns",
           "chrf_from_stats", "chrf_scores", "corpus_chrf", "sentence_chrf"]

CHAR_ORDER = 6
WORD_ORDER = 0
BETA = 2
_EPS = 1e-16
_PUNCTS = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")


@dataclass(frozen=True)
class ChrfResult:
    """A chrF / chrF++ score.

    :ivar score: chrF in [0, 1].
    :ivar name: ``chrF2`` or ``chrF2++`` (beta, then one ``+`` per word order), as sacrebleu.
    :ivar char_order, word_order, beta: the settings.
    :ivar signature: e.g. ``nrefs:1|case:mixed|eff:yes|nc:6|nw:0|space:no|beta:2|version:ragexam-0.1.0``.
    """

    score: float
    name: str
    char_order: int
    word_order: int
    beta: int
    signature: str

    def format(self, signature: bool = True) -> str:
        """A sacrebleu-like line, e.g. ``chrF2|nrefs:1|...|version:ragexam-0.1.0 = 0.5351``."""
        name = f"{self.name}|{self.signature}" if signature else self.name
        return f"{name} = {self.score:.4f}"

    def __str__(self) -> str:
        return self.format()


def chrf_stats_columns(char_order: int = CHAR_ORDER, word_order: int = WORD_ORDER) -> tuple[str, ...]:
    """Column names of :func:`chrf_stats`: ``char{n}_hyp, char{n}_ref, char{n}_match`` for each
    char order, then ``word{n}_hyp, word{n}_ref, word{n}_match``."""
    cols = []
    for kind, order in (("char", char_order), ("word", word_order)):
        for n in range(1, order + 1):
            cols += [f"{kind}{n}_hyp", f"{kind}{n}_ref", f"{kind}{n}_match"]
    return tuple(cols)


def _split_punctuation(sent: str) -> list[str]:
    """sacrebleu's ``CHRF._remove_punctuation``: split one edge punctuation mark off each word."""
    out = []
    for w in sent.split():
        if len(w) == 1:
            out.append(w)
        elif w[-1] in _PUNCTS:
            out += [w[:-1], w[-1]]
        elif w[0] in _PUNCTS:
            out += [w[0], w[1:]]
        else:
            out.append(w)
    return out


def _check_settings(char_order, word_order, beta, lowercase, whitespace, eps_smoothing, func):
    _common.check_int(char_order, "char_order", func, 1)
    _common.check_int(word_order, "word_order", func, 0)
    _common.check_int(beta, "beta", func, 1)
    for name, value in (("lowercase", lowercase), ("whitespace", whitespace), ("eps_smoothing", eps_smoothing)):
        _common.check_bool(value, name, func)


def _signature(nrefs, char_order, word_order, beta, lowercase, whitespace, eps_smoothing) -> str:
    return _common.signature([
        ("nrefs", nrefs), ("case", "lc" if lowercase else "mixed"),
        ("eff", "no" if eps_smoothing else "yes"), ("nc", char_order), ("nw", word_order),
        ("space", "yes" if whitespace else "no"), ("beta", beta)])


def _f_scores(stats: np.ndarray, beta: int, eps_smoothing: bool) -> np.ndarray:
    """sacrebleu's ``CHRF._compute_f_score`` on every row (same float operations), 0–100."""
    stats = np.asarray(stats, dtype=np.float64)
    order = stats.shape[-1] // 3
    factor = beta ** 2
    shape = stats.shape[:-1]
    score = np.zeros(shape)
    avg_prec, avg_rec = np.zeros(shape), np.zeros(shape)
    effective = np.zeros(shape)
    with np.errstate(divide="ignore", invalid="ignore"):
        for i in range(order):
            n_hyp, n_ref, n_match = stats[..., 3 * i], stats[..., 3 * i + 1], stats[..., 3 * i + 2]
            prec = np.where(n_hyp > 0, n_match / n_hyp, _EPS)
            rec = np.where(n_ref > 0, n_match / n_ref, _EPS)
            denom = factor * prec + rec
            score = score + np.where(denom > 0, (1 + factor) * prec * rec / denom, _EPS)
            both = (n_hyp > 0) & (n_ref > 0)
            avg_prec = avg_prec + np.where(both, prec, 0.0)
            avg_rec = avg_rec + np.where(both, rec, 0.0)
            effective = effective + both
        if eps_smoothing:
            return 100 * score / order
        avg_prec = np.where(effective > 0, avg_prec / effective, 0.0)
        avg_rec = np.where(effective > 0, avg_rec / effective, 0.0)
        f = (1 + factor) * avg_prec * avg_rec
        f = f / (factor * avg_prec + avg_rec)
        return np.where(avg_prec + avg_rec != 0, 100 * f, 0.0)


def _order_stats(corpus: Sentences, hyp_len, ref_len, order: int) -> np.ndarray:
    """``[n_seg, n_refs, order, 3]`` statistics of every (segment, reference) pair."""
    matches = ngram_matches(corpus, order, merge_refs=False)  # [order, n_seg, n_refs]
    n = np.arange(1, order + 1)
    hyp_tot = np.maximum(hyp_len[:, None] - n + 1, 0)                 # [n_seg, order]
    ref_tot = np.maximum(ref_len[:, :, None] - n + 1, 0)              # [n_seg, n_refs, order]
    out = np.empty(ref_tot.shape + (3,), dtype=np.int64)
    out[..., 0] = np.where(ref_tot > 0, hyp_tot[:, None, :], 0)
    out[..., 1] = ref_tot
    out[..., 2] = np.moveaxis(matches, 0, -1)
    return out


def _stats(hyps, refs, char_order, word_order, beta, lowercase, whitespace, eps_smoothing):
    n_seg = len(hyps)
    lines = hyps + [r for rs in refs for r in rs]
    if lowercase:
        lines = [line.lower() for line in lines]
    n_refs = np.fromiter(map(len, refs), dtype=np.int64, count=n_seg)
    k_max = int(n_refs.max())
    ref_segment = np.repeat(np.arange(n_seg, dtype=np.int64), n_refs)
    ref_side = np.arange(ref_segment.size, dtype=np.int64) - np.repeat(np.cumsum(n_refs) - n_refs, n_refs) + 1
    segment = np.concatenate([np.arange(n_seg, dtype=np.int64), ref_segment])
    side = np.concatenate([np.zeros(n_seg, dtype=np.int64), ref_side])

    def per_pair(ids, lengths, alphabet, order):
        corpus = Sentences(ids, lengths, segment, side, n_seg, k_max + 1, alphabet)
        ref_len = np.zeros((n_seg, k_max), dtype=np.int64)
        ref_len[ref_segment, ref_side - 1] = lengths[n_seg:]
        return _order_stats(corpus, lengths[:n_seg], ref_len, order)

    chars = lines if whitespace else ["".join(line.split()) for line in lines]
    parts = [per_pair(*encode_chars(chars), char_order)]
    if word_order > 0:
        parts.append(per_pair(*encode_tokens([_split_punctuation(line) for line in lines]), word_order))
    pair_stats = np.concatenate(parts, axis=2).reshape(n_seg, k_max, -1)  # [n_seg, n_refs, 3*order]
    if k_max == 1:
        return pair_stats[:, 0, :]
    f = _f_scores(pair_stats, beta, eps_smoothing)
    f[np.arange(k_max)[None, :] >= n_refs[:, None]] = -np.inf  # padding
    best = np.argmax(f, axis=1)  # first maximum, as sacrebleu's strict '>'
    return pair_stats[np.arange(n_seg), best, :]


def chrf_stats(hypotheses, references, *, char_order: int = CHAR_ORDER, word_order: int = WORD_ORDER,
               beta: int = BETA, lowercase: bool = False, whitespace: bool = False,
               eps_smoothing: bool = False) -> np.ndarray:
    """Per-segment chrF statistics, ``int64[n_segments, 3 * (char_order + word_order)]``.

    Columns are :func:`chrf_stats_columns` (``hyp, ref, match`` per order).  Rows are summable:
    ``chrf_from_stats(stats[idx].sum(0))`` is the chrF of any subset or resample.  ``beta``
    and ``eps_smoothing`` matter only with several references (they choose the best one).
    Parameters as in :func:`corpus_chrf`.
    """
    func = "chrf_stats"
    hyps, refs = _inputs.check_corpus(hypotheses, references, func)
    _check_settings(char_order, word_order, beta, lowercase, whitespace, eps_smoothing, func)
    return _stats(hyps, refs, char_order, word_order, beta, lowercase, whitespace, eps_smoothing)


def chrf_scores(stats, *, beta: int = BETA, eps_smoothing: bool = False) -> np.ndarray:
    """chrF in [0, 1] of every row of ``stats`` (``[..., 3 * order]``), vectorized.

    ``chrf_scores(chrf_stats(h, r))`` gives sentence-level chrF of every segment;
    ``chrf_scores(stats[idx].sum(1))`` scores bootstrap resamples in one step.
    """
    func = "chrf_scores"
    _common.check_int(beta, "beta", func, 1)
    _common.check_bool(eps_smoothing, "eps_smoothing", func)
    arr = np.asarray(stats)
    if arr.ndim < 1 or arr.shape[-1] == 0 or arr.shape[-1] % 3:
        raise InputError(f"{func}: `stats` must have a last dimension that is a positive multiple "
                         f"of 3 (hyp, ref, match per order), got shape {arr.shape}.", field="stats")
    return _f_scores(arr, beta, eps_smoothing) / 100.0


def chrf_from_stats(stats, *, char_order: int = CHAR_ORDER, word_order: int = WORD_ORDER,
                    beta: int = BETA, lowercase: bool = False, whitespace: bool = False,
                    eps_smoothing: bool = False, nrefs: int | str = 1) -> ChrfResult:
    """chrF from one statistics row, or from a 2-D array of rows (summed first).

    ``char_order`` and ``word_order`` must match the number of columns; ``lowercase``,
    ``whitespace`` and ``nrefs`` only go into the signature.
    """
    func = "chrf_from_stats"
    _check_settings(char_order, word_order, beta, lowercase, whitespace, eps_smoothing, func)
    arr = np.asarray(stats)
    if arr.ndim == 2:
        arr = arr.sum(axis=0)
    width = 3 * (char_order + word_order)
    if arr.shape != (width,):
        raise InputError(f"{func}: with char_order={char_order} and word_order={word_order}, "
                         f"`stats` needs {width} columns; got shape {np.shape(stats)}.", field="stats")
    score = float(_f_scores(arr[None, :], beta, eps_smoothing)[0]) / 100.0
    return ChrfResult(score=score, name=f"chrF{beta}" + "+" * word_order, char_order=char_order,
                      word_order=word_order, beta=beta,
                      signature=_signature(nrefs, char_order, word_order, beta, lowercase,
                                           whitespace, eps_smoothing))


def corpus_chrf(hypotheses, references, *, char_order: int = CHAR_ORDER, word_order: int = WORD_ORDER,
                beta: int = BETA, lowercase: bool = False, whitespace: bool = False,
                eps_smoothing: bool = False) -> ChrfResult:
    """Corpus chrF (``word_order=0``) or chrF++ (``word_order=2``), identical to sacrebleu's
    ``CHRF(...).corpus_score`` / 100.

    :param hypotheses: sequence of hypothesis strings.
    :param references: per hypothesis, a reference string or a non-empty sequence of them.
    :param char_order: largest character n-gram order (default 6).
    :param word_order: largest word n-gram order: 0 for chrF, 2 for chrF++.
    :param beta: recall weight (default 2).
    :param lowercase: case-insensitive.
    :param whitespace: keep whitespace inside character n-grams.
    :param eps_smoothing: chrF++.py-style smoothing instead of effective-order averaging.
    :return: :class:`ChrfResult`.
    """
    hyps, refs = _inputs.check_corpus(hypotheses, references, "corpus_chrf")
    return _chrf(hyps, refs, "corpus_chrf", char_order, word_order, beta, lowercase, whitespace, eps_smoothing)


def sentence_chrf(hypothesis: str, references, *, char_order: int = CHAR_ORDER,
                  word_order: int = WORD_ORDER, beta: int = BETA, lowercase: bool = False,
                  whitespace: bool = False, eps_smoothing: bool = False) -> ChrfResult:
    """chrF of one hypothesis against one or more references (sacrebleu's ``sentence_score``)."""
    hyps, refs = _inputs.check_sentence(hypothesis, references, "sentence_chrf")
    return _chrf(hyps, refs, "sentence_chrf", char_order, word_order, beta, lowercase, whitespace, eps_smoothing)


def _chrf(hyps: list[str], refs: list[list[str]], func: str, char_order: int, word_order: int, beta: int,
          lowercase: bool, whitespace: bool, eps_smoothing: bool) -> ChrfResult:
    """chrF of checked segments (:func:`corpus_chrf`, :func:`sentence_chrf`), its settings checked for ``func``."""
    _check_settings(char_order, word_order, beta, lowercase, whitespace, eps_smoothing, func)
    stats = _stats(hyps, refs, char_order, word_order, beta, lowercase, whitespace, eps_smoothing)
    return chrf_from_stats(stats, char_order=char_order, word_order=word_order, beta=beta,
                           lowercase=lowercase, whitespace=whitespace, eps_smoothing=eps_smoothing,
                           nrefs=_inputs.nrefs_label(refs))
