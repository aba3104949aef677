"""Text normalization for evidence matching: one definition, used everywhere.

``normalize(text)`` is, in this order:

1. **NFKC** (Unicode compatibility composition): full-width ``Ａ１`` -> ``A1``, ``①`` -> ``1``,
   ``㈜`` -> ``(주)``, decomposed Hangul jamo -> precomposed syllables.  It is applied per
   combining sequence (a starter plus the combining marks / conjoining jamo that follow it),
   which equals whole-string NFKC for all but pathological input and lets offsets be mapped
   back to the raw text.
2. with ``ignore_punctuation=True`` only: every character of Unicode general category ``P*``
   (``Pc Pd Ps Pe Pi Pf Po``) is **removed** (not replaced by a space): ``"v2.3"`` -> ``"v23"``,
   ``"재시작, 확인"`` -> ``"재시작 확인"``.  Symbols (``S*``, e.g. ``+ < $``) are kept.
3. every run of whitespace (``str.isspace``: spaces, tabs, newlines, NBSP, ideographic space, ...)
   becomes one ASCII space, and leading/trailing whitespace is stripped.

Case is **not** folded (Korean has none; for Latin text an evidence string must match the
case of the source).  ``normalize`` is idempotent (``normalize(normalize(t)) == normalize(t)``)
except in the pathological case where removing punctuation brings a base letter next to a
combining mark that NFKC would then compose.

:func:`normalize_with_offsets` returns the same string plus, for every normalized character
``j``, the raw span ``[starts[j], ends[j])`` it came from, so a match at normalized
``[a, b)`` is the raw span ``[starts[a], ends[b - 1])``.  The normalized text never contains
``"\\n"`` (whitespace collapses to ``" "``), so ``"\\n"`` is a safe document separator.

Edge cases: empty or all-whitespace input -> ``""`` (offset arrays of length 0).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, List, Tuple

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

__all__ = ["normalize", "normalize_with_offsets", "NormalizedText", "normalization_signature"]

_WORD = re.compile(r"\S+")


def normalization_signature(ignore_punctuation: bool = False) -> "Signature":
    """The settings of :func:`normalize` as a signature fragment, e.g. ``norm:nfkc+ws+nopunct``."""
    from ragexam.signature import Signature

    return Signature([("norm", "nfkc+ws" + ("+nopunct" if ignore_punctuation else ""))], version=False)


def _is_segment_start(ch: str) -> bool:
    """True when ``ch`` starts a new combining sequence (a starter that composes with nothing before it)."""
    cp = ord(ch)
    if 0x1160 <= cp <= 0x11FF or 0xD7B0 <= cp <= 0xD7FF:  # Hangul vowel/final jamo compose leftwards
        return False
    return unicodedata.combining(ch) == 0


def _segments(word: str) -> List[Tuple[int, int]]:
    """Split ``word`` into combining sequences ``[(start, end), ...]``."""
    bounds = [0]
    for i in range(1, len(word)):
        if _is_segment_start(word[i]):
            bounds.append(i)
    bounds.append(len(word))
    return [(bounds[i], bounds[i + 1]) for i in range(len(bounds) - 1)]


def _nfkc_edits(text: str) -> List[Tuple[int, int, str]]:
    """Raw spans ``(start, end, replacement)`` that NFKC changes, in order; ``[]`` if none.

    Whitespace is left alone here: every whitespace character NFKC changes (NBSP, U+2000..U+200A,
    U+202F, U+205F, U+3000) maps to a single space, and step 3 collapses it anyway.
    """
    if unicodedata.is_normalized("NFKC", text):
        return []
    edits: List[Tuple[int, int, str]] = []
    for m in _WORD.finditer(text):
        word = m.group()
        if unicodedata.is_normalized("NFKC", word):
            continue
        base = m.start()
        for s, e in _segments(word):
            seg = word[s:e]
            out = unicodedata.normalize("NFKC", seg)
            if out != seg:
                edits.append((base + s, base + e, out))
    return edits


def _apply_edits(text: str, edits: List[Tuple[int, int, str]]) -> str:
    if not edits:
        return text
    parts = []
    pos = 0
    for s, e, rep in edits:
        parts.append(text[pos:s])
        parts.append(rep)
        pos = e
    parts.append(text[pos:])
    return "".join(parts)


@lru_cache(maxsize=1)
def _punctuation_codepoints() -> Tuple[int, ...]:
    return tuple(c for c in range(0x110000) if unicodedata.category(chr(c))[0] == "P")


@lru_cache(maxsize=1)
def _punctuation_table() -> dict:
    return dict.fromkeys(_punctuation_codepoints())


@lru_cache(maxsize=1)
def _whitespace_codepoints() -> Tuple[int, ...]:
    # every str.isspace() character is in the BMP (checked against Unicode 15)
    return tuple(c for c in range(0x10000) if chr(c).isspace())


@lru_cache(maxsize=2)
def _lookup_table(which: str) -> "np.ndarray":
    """A boolean array over all code points: punctuation (``P*``) or ``str.isspace``."""
    import numpy as np

    table = np.zeros(0x110000, dtype=bool)
    cps = _punctuation_codepoints() if which == "punct" else _whitespace_codepoints()
    table[np.asarray(cps, dtype=np.int64)] = True
    return table


def normalize(text: str, *, ignore_punctuation: bool = False) -> str:
    """Normalize ``text`` for evidence matching (see the module docstring for the definition)."""
    out = _apply_edits(text, _nfkc_edits(text))
    if ignore_punctuation:
        out = out.translate(_punctuation_table())
    return " ".join(out.split())


@dataclass(frozen=True)
class NormalizedText:
    """``text`` = ``normalize(raw)``; normalized char ``j`` came from raw ``[starts[j], ends[j])``.

    ``starts`` and ``ends`` are non-decreasing ``int64`` arrays of length ``len(text)``.
    """

    text: str
    starts: "np.ndarray"
    ends: "np.ndarray"

    def raw_span(self, a: int, b: int) -> Tuple[int, int]:
        """The raw span of the non-empty normalized span ``[a, b)``."""
        return int(self.starts[a]), int(self.ends[b - 1])


def normalize_with_offsets(text: str, *, ignore_punctuation: bool = False) -> NormalizedText:
    """``normalize(text)`` plus the raw span of every normalized character.

    Vectorized with numpy; ``normalize_with_offsets(t).text == normalize(t)`` for every string.
    """
    import numpy as np

    edits = _nfkc_edits(text)
    if not edits:
        s = text
        s_starts = np.arange(len(text), dtype=np.int64)
        s_ends = s_starts + 1
    else:
        parts, st, en = [], [], []
        pos = 0
        for a, b, rep in edits:
            if a > pos:
                parts.append(text[pos:a])
                st.append(np.arange(pos, a, dtype=np.int64))
                en.append(np.arange(pos + 1, a + 1, dtype=np.int64))
            parts.append(rep)
            st.append(np.full(len(rep), a, dtype=np.int64))
            en.append(np.full(len(rep), b, dtype=np.int64))
            pos = b
        if pos < len(text):
            parts.append(text[pos:])
            st.append(np.arange(pos, len(text), dtype=np.int64))
            en.append(np.arange(pos + 1, len(text) + 1, dtype=np.int64))
        s = "".join(parts)
        s_starts = np.concatenate(st) if st else np.zeros(0, dtype=np.int64)
        s_ends = np.concatenate(en) if en else np.zeros(0, dtype=np.int64)

    cps = np.frombuffer(s.encode("utf-32-le"), dtype="<u4")
    if ignore_punctuation:
        idx = np.flatnonzero(~_lookup_table("punct")[cps])
    else:
        idx = np.arange(len(cps))
    ws = _lookup_table("space")[cps[idx]]
    prev_ws = np.empty_like(ws)
    if len(ws):
        prev_ws[0] = True  # drops leading whitespace
        prev_ws[1:] = ws[:-1]
    sel = ~(ws & prev_ws)
    idx = idx[sel]
    ws = ws[sel]
    if len(idx) and ws[-1]:  # drop one trailing space
        idx = idx[:-1]
        ws = ws[:-1]
    out = cps[idx].copy()
    out[ws] = 32
    return NormalizedText(out.tobytes().decode("utf-32-le"), s_starts[idx], s_ends[idx])
