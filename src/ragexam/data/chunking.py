"""Chunkers: split each document into :class:`~ragexam.data.schema.Chunk` spans.

A chunker is named by a spec string (:func:`parse_chunker`), which round-trips
(``parse_chunker(s).spec == s``) and goes into score signatures as ``chunker:<spec>``:

``whole``
    one chunk per document: ``[0, len(content))``.
``chars:SIZE:OVERLAP``
    fixed windows of SIZE characters (code points) starting every SIZE - OVERLAP characters
    (``1 <= SIZE``, ``0 <= OVERLAP < SIZE``); the last window ends at the end of the document,
    and no window starts after a window that already reached the end.  Windows are raw slices
    (they may begin or end with whitespace or inside a word).
``sentences`` / ``sentences:SIZE``
    Korean-aware sentence splitting: every line break is a boundary (list items and headings are
    lines; kiwi alone would join them), and each line is split by kiwipiepy's
    ``Kiwi().split_into_sents``.  Without SIZE each
    sentence is a chunk; with SIZE consecutive sentences are packed greedily while the chunk
    (from the first sentence's start to the last one's end, including the whitespace between)
    is at most SIZE characters.  **A single sentence longer than SIZE becomes its own chunk,
    uncut** (so a chunk may exceed SIZE; cutting mid-sentence would cut evidence).
``paragraphs`` / ``paragraphs:SIZE``
    paragraphs are separated by blank lines (a line holding only whitespace); packed into chunks
    of at most SIZE characters exactly like sentences (an over-long paragraph stays whole).

Invariants (all chunkers): ``content[chunk.start:chunk.end] == chunk.text``; chunks of a document
are in document order with non-decreasing ``start`` and ``end``; every non-whitespace character
of the document is in at least one chunk (``whole`` and ``chars`` cover every character); sentence
and paragraph chunks start and end on non-whitespace.  A document whose content is empty (or, for
sentences/paragraphs, all whitespace) has no chunks.

Chunk ids are ``f"{doc_id}#{i}"`` with ``i`` the 0-based index of the chunk in its document,
e.g. ``hd_01#3``: readable, and stable for a given document text and spec.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Optional, Tuple, Union

from ragexam.data.kiwi import kiwi, kiwi_lock, pieces
from ragexam.data.schema import Chunk, Document, chunk_id
from ragexam.errors import InputError

__all__ = ["Chunker", "WholeChunker", "CharChunker", "SentenceChunker", "ParagraphChunker",
           "parse_chunker", "Chunking", "chunk_corpus", "sentence_spans", "paragraph_spans",
           "CHUNKER_FORMS"]

CHUNKER_FORMS = ("whole", "chars:SIZE:OVERLAP", "sentences", "sentences:SIZE", "paragraphs",
                 "paragraphs:SIZE")

Span = Tuple[int, int]


class Chunker:
    """Base class: subclasses implement :meth:`spans` and :attr:`spec`."""

    spec: str

    def spans(self, content: str) -> List[Span]:  # pragma: no cover - abstract
        raise NotImplementedError

    def chunk(self, doc: Document) -> List[Chunk]:
        """The chunks of one document, in order."""
        return self.chunk_text(doc.doc_id, doc.content)

    def chunk_text(self, doc_id: str, content: str) -> List[Chunk]:
        return [Chunk(chunk_id(doc_id, i), doc_id, s, e, content[s:e])
                for i, (s, e) in enumerate(self.spans(content))]

    def __repr__(self) -> str:
        return f"parse_chunker({self.spec!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Chunker) and other.spec == self.spec

    def __hash__(self) -> int:
        return hash(self.spec)


class WholeChunker(Chunker):
    """One chunk per document."""

    spec = "whole"

    def spans(self, content: str) -> List[Span]:
        return [(0, len(content))] if content else []


class CharChunker(Chunker):
    """Windows of ``size`` characters every ``size - overlap`` characters."""

    def __init__(self, size: int, overlap: int = 0) -> None:
        if size < 1 or not 0 <= overlap < size:
            raise InputError(f"chars:{size}:{overlap}: expected SIZE >= 1 and 0 <= OVERLAP < SIZE",
                             source="chunker")
        self.size, self.overlap = size, overlap
        self.spec = f"chars:{size}:{overlap}"

    def spans(self, content: str) -> List[Span]:
        n, step = len(content), self.size - self.overlap
        out = []
        for start in range(0, n, step):
            end = min(start + self.size, n)
            out.append((start, end))
            if end == n:
                break
        return out


def _strip_span(content: str, s: int, e: int) -> Optional[Span]:
    while s < e and content[s].isspace():
        s += 1
    while e > s and content[e - 1].isspace():
        e -= 1
    return (s, e) if s < e else None


def _spans_from_starts(content: str, starts: Iterable[int]) -> List[Span]:
    bounds = sorted({0, *(s for s in starts if 0 < s < len(content))})
    bounds.append(len(content))
    out = []
    for a, b in zip(bounds, bounds[1:]):
        sp = _strip_span(content, a, b)
        if sp is not None:
            out.append(sp)
    return out


_LINE = re.compile(r"[^\n]+")
_BLANK_LINES = re.compile(r"\n(?:[^\S\n]*\n)+")


def sentence_spans(content: str) -> List[Span]:
    """Sentence spans of ``content``, stripped: each line is split by kiwipiepy (one batch call).

    Kiwi analyses morphology to find sentence ends (roughly 100k characters per second).
    """
    if not content.strip():
        return []
    lines = [(m.start(), m.end()) for m in _LINE.finditer(content) if not m.group().isspace()]
    starts = [a for a, _ in lines]
    parts = [(a + off, piece) for a, b in lines for off, piece in pieces(content[a:b])]
    with kiwi_lock:
        split = list(kiwi().split_into_sents([piece for _, piece in parts]))
    for (a, _), sents in zip(parts, split):
        starts.extend(a + int(s.start) for s in sents)
    return _spans_from_starts(content, starts)


def paragraph_spans(content: str) -> List[Span]:
    """Paragraph spans (separated by blank lines), stripped of surrounding whitespace."""
    out = []
    pos = 0
    for m in _BLANK_LINES.finditer(content):
        sp = _strip_span(content, pos, m.start())
        if sp is not None:
            out.append(sp)
        pos = m.end()
    sp = _strip_span(content, pos, len(content))
    if sp is not None:
        out.append(sp)
    return out


def _pack(units: List[Span], size: Optional[int]) -> List[Span]:
    """Greedily join consecutive units while the joined span is at most ``size`` characters."""
    if size is None or not units:
        return list(units)
    out = []
    cur_s, cur_e = units[0]
    for s, e in units[1:]:
        if e - cur_s <= size:
            cur_e = e
        else:
            out.append((cur_s, cur_e))
            cur_s, cur_e = s, e
    out.append((cur_s, cur_e))
    return out


class SentenceChunker(Chunker):
    """Sentences, one per chunk or packed up to ``size`` characters."""

    def __init__(self, size: Optional[int] = None) -> None:
        if size is not None and size < 1:
            raise InputError(f"sentences:{size}: expected SIZE >= 1", source="chunker")
        self.size = size
        self.spec = "sentences" if size is None else f"sentences:{size}"

    def spans(self, content: str) -> List[Span]:
        return _pack(sentence_spans(content), self.size)


class ParagraphChunker(Chunker):
    """Paragraphs, one per chunk or packed up to ``size`` characters."""

    def __init__(self, size: Optional[int] = None) -> None:
        if size is not None and size < 1:
            raise InputError(f"paragraphs:{size}: expected SIZE >= 1", source="chunker")
        self.size = size
        self.spec = "paragraphs" if size is None else f"paragraphs:{size}"

    def spans(self, content: str) -> List[Span]:
        return _pack(paragraph_spans(content), self.size)


_SPEC = re.compile(r"^(?:(whole)|(chars):([1-9][0-9]*):(0|[1-9][0-9]*)|(sentences|paragraphs)(?::([1-9][0-9]*))?)$")


def parse_chunker(spec: Union[str, Chunker]) -> Chunker:
    """The chunker named by ``spec`` (a :class:`Chunker` passes through).

    Valid forms: ``whole``, ``chars:SIZE:OVERLAP``, ``sentences``, ``sentences:SIZE``,
    ``paragraphs``, ``paragraphs:SIZE``; SIZE a positive integer without leading zeros,
    ``0 <= OVERLAP < SIZE``.  Anything else raises ``InputError`` listing these forms.
    """
    if isinstance(spec, Chunker):
        return spec
    forms = ", ".join(CHUNKER_FORMS)
    if not isinstance(spec, str):
        raise InputError(f"received {type(spec).__name__} {spec!r}; expected a chunker spec string, "
                         f"one of: {forms}", source="chunker")
    m = _SPEC.match(spec)
    if m is None:
        raise InputError(f"invalid chunker spec {spec!r}; valid forms: {forms} (SIZE a positive "
                         "integer, 0 <= OVERLAP < SIZE), e.g. 'chars:400:80' or 'sentences:300'",
                         source="chunker")
    if m.group(1):
        return WholeChunker()
    if m.group(2):
        size, overlap = int(m.group(3)), int(m.group(4))
        if overlap >= size:
            raise InputError(f"invalid chunker spec {spec!r}: OVERLAP ({overlap}) must be smaller than "
                             f"SIZE ({size}); valid forms: {forms}", source="chunker")
        return CharChunker(size, overlap)
    size = int(m.group(6)) if m.group(6) else None
    return SentenceChunker(size) if m.group(5) == "sentences" else ParagraphChunker(size)


@dataclass
class Chunking:
    """All chunks of a corpus under one chunker: ``chunks`` in corpus then document order."""

    spec: str
    chunks: List[Chunk]
    by_id: Dict[str, Chunk] = field(init=False, repr=False)
    by_doc: Dict[str, List[Chunk]] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.by_id = {}
        self.by_doc = {}
        for c in self.chunks:
            if c.chunk_id in self.by_id:
                raise InputError(f"duplicate chunk id {c.chunk_id!r}", source="chunks", field="chunk_id")
            self.by_id[c.chunk_id] = c
            self.by_doc.setdefault(c.doc_id, []).append(c)

    def __len__(self) -> int:
        return len(self.chunks)

    def __iter__(self):
        return iter(self.chunks)

    def __getitem__(self, chunk_id: str) -> Chunk:
        return self.by_id[chunk_id]


def chunk_corpus(documents: Iterable[Document], chunker: Union[str, Chunker]) -> Chunking:
    """Chunk every document (a :class:`~ragexam.data.schema.Corpus` or any iterable of documents)."""
    ch = parse_chunker(chunker)
    chunks: List[Chunk] = []
    for doc in documents:
        chunks.extend(ch.chunk(doc))
    return Chunking(ch.spec, chunks)
