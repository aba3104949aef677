"""Clipped n-gram match counting for a whole corpus at once, with numpy.

The corpus is one flat array of integer symbol ids (word ids or character ids).  Every
*sentence* in it belongs to a *segment* (a hypothesis with its references) and has a *side*:
``0`` for the hypothesis, ``k`` (1-based) for the segment's k-th reference.

For each order n an n-gram is encoded exactly as an integer ``g`` (base-``A`` digits of its
symbol ids, ``A`` = alphabet size); when the next order would not fit in 63 bits together with
the segment and side, ``g`` is replaced by its dense rank among the n-grams present (exact,
one ``np.unique``).  Sorting the keys ``(segment, g, side)`` puts equal n-grams of a segment
next to each other, so counts are run lengths and the clipped match count of a group is
``min(hyp count, ref count)``.  No Python loop runs over n-grams and no hashing is involved,
so results are exact.
"""

from __future__ import annotations

from itertools import chain

import numpy as np

from ragexam.errors import RagexamError

__all__ = ["encode_tokens", "encode_chars", "Sentences", "ngram_matches"]


def encode_tokens(token_lists: list[list[str]]) -> tuple[np.ndarray, np.ndarray, int]:
    """Map tokens to dense ids: ``(ids, lengths, alphabet size)``."""
    flat = list(chain.from_iterable(token_lists))
    vocab = {tok: i for i, tok in enumerate(dict.fromkeys(flat))}
    ids = np.fromiter(map(vocab.__getitem__, flat), dtype=np.int64, count=len(flat))
    lengths = np.fromiter(map(len, token_lists), dtype=np.int64, count=len(token_lists))
    return ids, lengths, max(len(vocab), 1)


def encode_chars(strings: list[str]) -> tuple[np.ndarray, np.ndarray, int]:
    """Map the characters (code points) of each string to dense ids: ``(ids, lengths, A)``."""
    lengths = np.fromiter((len(s) for s in strings), dtype=np.int64, count=len(strings))
    cps = np.frombuffer("".join(strings).encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    if cps.size == 0:
        return np.zeros(0, dtype=np.int64), lengths, 1
    present = np.zeros(int(cps.max()) + 1, dtype=bool)
    present[cps] = True
    lut = np.cumsum(present, dtype=np.int64) - 1
    return lut[cps], lengths, int(lut[-1]) + 1


class Sentences:
    """A flat corpus: ``ids`` plus per-sentence ``lengths``, ``segment`` and ``side``."""

    __slots__ = ("ids", "lengths", "segment", "side", "n_segments", "n_sides", "alphabet")

    def __init__(self, ids, lengths, segment, side, n_segments: int, n_sides: int, alphabet: int):
        self.ids = ids
        self.lengths = lengths
        self.segment = np.asarray(segment, dtype=np.int64)
        self.side = np.asarray(side, dtype=np.int64)
        self.n_segments = int(n_segments)
        self.n_sides = int(n_sides)  # 1 + the largest number of references of a segment
        self.alphabet = int(alphabet)


def _starts(sorted_values: np.ndarray) -> np.ndarray:
    flag = np.empty(sorted_values.size, dtype=bool)
    flag[:1] = True
    np.not_equal(sorted_values[1:], sorted_values[:-1], out=flag[1:])
    return flag


def ngram_matches(corpus: Sentences, max_order: int, merge_refs: bool) -> np.ndarray:
    """Clipped n-gram matches per order and segment.

    :param merge_refs: ``True`` (BLEU): a hypothesis n-gram is credited up to its *largest*
        count in any one reference; returns ``int64[max_order, n_segments]`` with
        ``sum_g min(c_hyp(g), max_k c_ref_k(g))``.  ``False`` (chrF): each reference separately;
        returns ``int64[max_order, n_segments, n_refs]`` with ``sum_g min(c_hyp(g), c_ref_k(g))``.
    """
    n_seg, n_refs = corpus.n_segments, corpus.n_sides - 1
    shape = (max_order, n_seg) if merge_refs else (max_order, n_seg, n_refs)
    out = np.zeros(shape, dtype=np.int64)
    ids, lengths = corpus.ids, corpus.lengths
    total = ids.size
    if total == 0:
        return out
    # key layout (int64, non-negative): segment in the top bits, n-gram code in the middle,
    # side in the low bits; invalid positions (n-gram would cross a sentence end) get -1
    side_bits = n_refs.bit_length()
    seg_bits = max(n_seg - 1, 0).bit_length()
    seg_shift = 63 - seg_bits
    budget = seg_shift - side_bits  # bits left for the n-gram code
    base = np.repeat(corpus.side | (corpus.segment << seg_shift) if seg_bits else corpus.side, lengths)
    remaining = np.repeat(np.cumsum(lengths), lengths) - np.arange(total, dtype=np.int64)

    alpha = corpus.alphabet
    g = ids.astype(np.int64, copy=True)
    bound = alpha  # every code is < bound
    for n in range(1, max_order + 1):
        if n > 1:
            if (bound * alpha - 1).bit_length() > budget:
                # re-rank the (n-1)-gram codes densely; invalid positions never come back
                valid = remaining[:g.size] >= n - 1
                ranks = np.unique(g[valid], return_inverse=True)
                g = np.zeros(g.size, dtype=np.int64)
                g[valid] = ranks[1]
                bound = max(ranks[0].size, 1)
                if (bound * alpha - 1).bit_length() > budget:  # pragma: no cover - > 2**40 symbols
                    raise RagexamError(
                        f"the corpus is too large to count {n}-grams exactly in 63-bit keys "
                        f"({n_seg} segments, {total} symbols, alphabet {alpha}); score it in parts "
                        "and add the statistics.")
            m = total - n + 1
            if m <= 0:
                break
            g = g[:m] * alpha + ids[n - 1:]
            bound *= alpha
        key = g << side_bits
        key |= base[:g.size]
        n_invalid = 0
        if n > 1:
            invalid = remaining[:g.size] < n
            n_invalid = int(np.count_nonzero(invalid))
            key[invalid] = -1
        if n_invalid == key.size:
            break
        key.sort()
        key = key[n_invalid:]
        side_mask = (1 << side_bits) - 1
        run = np.flatnonzero(_starts(key))
        count = np.diff(np.append(run, key.size))
        rkey = key[run]
        rside = rkey & side_mask
        rgroup_key = rkey >> side_bits  # (segment, n-gram)
        gid = np.cumsum(_starts(rgroup_key)) - 1
        is_hyp = rside == 0
        hyp_count = np.zeros(int(gid[-1]) + 1, dtype=np.int64)
        hyp_count[gid[is_hyp]] = count[is_hyp]
        is_ref = ~is_hyp
        r_gid = gid[is_ref]
        r_count = count[is_ref]
        r_seg = rkey[is_ref] >> seg_shift
        if merge_refs:
            if n_refs > 1:
                ref_max = np.zeros_like(hyp_count)
                np.maximum.at(ref_max, r_gid, r_count)
                clipped = np.minimum(hyp_count, ref_max)
                group_seg = rkey[_starts(rgroup_key)] >> seg_shift
                out[n - 1] = np.bincount(group_seg, weights=clipped, minlength=n_seg)
            else:
                clipped = np.minimum(r_count, hyp_count[r_gid])
                out[n - 1] = np.bincount(r_seg, weights=clipped, minlength=n_seg)
        else:
            clipped = np.minimum(r_count, hyp_count[r_gid])
            idx = r_seg * n_refs + (rside[is_ref] - 1)
            out[n - 1] = np.bincount(idx, weights=clipped, minlength=n_seg * n_refs).reshape(n_seg, n_refs)
    return out
