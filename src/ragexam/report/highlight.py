"""Marking evidence inside retrieved chunk text, for the report's missed-question details.

The evidence is matched on *normalized* text (:func:`ragexam.data.normalize`: NFKC, whitespace
runs collapsed, optionally punctuation removed), the same rule the run used to credit chunks, and
the match is mapped back to the *raw* chunk text with
:func:`ragexam.data.normalize_with_offsets`, so the page shows the chunk exactly as it was
retrieved with ``<mark>`` around the evidence.

Chunk texts in ``summary.json`` may be shortened (cut with "…").  When the whole evidence is not
in the text, a *partial* match is marked too: the longest start of the evidence (at least
``min_partial`` normalized characters) that ends the text, or the longest end of the evidence
that starts it.  Partial marks get the class ``partial``.
"""

from __future__ import annotations

from html import escape
from typing import List, Sequence, Tuple

__all__ = ["find_evidence_spans", "highlight_html"]

_ELLIPSIS = "…"


def _trim_bounds(norm: str) -> Tuple[int, int]:
    """Normalized [a, b) without leading/trailing ellipses and spaces (the shortening marks)."""
    a, b = 0, len(norm)
    while a < b and norm[a] in (_ELLIPSIS, " ", "."):
        a += 1
    while b > a and norm[b - 1] in (_ELLIPSIS, " ", "."):
        b -= 1
    return a, b


def find_evidence_spans(raw: str, evidence: Sequence[str], *, ignore_punctuation: bool = False,
                        min_partial: int = 12) -> List[Tuple[int, int, str]]:
    """Raw ``(start, end, kind)`` spans of ``evidence`` strings in ``raw``, sorted and merged.

    ``kind`` is ``"full"`` (the whole evidence string, every occurrence) or ``"partial"`` (see
    the module docstring).  Empty evidence strings are ignored; no match gives ``[]``.
    """
    from ragexam.data.normalization import normalize, normalize_with_offsets

    if not raw or not evidence:
        return []
    nt = normalize_with_offsets(raw, ignore_punctuation=ignore_punctuation)
    text = nt.text
    spans: List[Tuple[int, int, str]] = []
    for ev in evidence:
        needle = normalize(str(ev), ignore_punctuation=ignore_punctuation)
        if not needle:
            continue
        found = False
        start = text.find(needle)
        while start != -1:
            found = True
            s, e = nt.raw_span(start, start + len(needle))
            spans.append((s, e, "full"))
            start = text.find(needle, start + 1)
        if found or len(needle) < min_partial:
            continue
        a, b = _trim_bounds(text)
        body = text[a:b]
        best = None
        for length in range(min(len(needle) - 1, len(body)), min_partial - 1, -1):
            if body.endswith(needle[:length]):
                best = (b - length, b)
                break
            if body.startswith(needle[-length:]):
                best = (a, a + length)
                break
        if best is not None:
            s, e = nt.raw_span(*best)
            spans.append((s, e, "partial"))
    spans.sort()
    merged: List[Tuple[int, int, str]] = []
    for s, e, kind in spans:
        if merged and s <= merged[-1][1]:
            ps, pe, pk = merged[-1]
            merged[-1] = (ps, max(pe, e), "full" if "full" in (pk, kind) else "partial")
        else:
            merged.append((s, e, kind))
    return merged


def highlight_html(raw: str, evidence: Sequence[str], *, ignore_punctuation: bool = False
                   ) -> Tuple[str, int]:
    """``raw`` as escaped HTML with ``<mark>`` around the evidence, and the number of marks."""
    spans = find_evidence_spans(raw, evidence, ignore_punctuation=ignore_punctuation)
    out: List[str] = []
    pos = 0
    for s, e, kind in spans:
        out.append(escape(raw[pos:s]))
        cls = ' class="partial" title="evidence, cut where the chunk text was shortened"' \
            if kind == "partial" else ""
        out.append(f"<mark{cls}>{escape(raw[s:e])}</mark>")
        pos = e
    out.append(escape(raw[pos:]))
    return "".join(out), len(spans)
