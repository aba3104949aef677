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
    lines; kiwi alone would join them), each line is split by kiwipiepy's ``Kiwi().split_into_sents``
    and at the ends of Latin-script sentences, which Kiwi does not see in English (:func:`latin_sentence_starts`:
    ``.``, ``!``, ``?``, ``…`` after a Latin letter or digit, then whitespace and a capital; not after an
    abbreviation, an initial or a list number).  Without SIZE each
    sentence is a chunk; with SIZE consecutive sentences are packed greedily while the chunk
    (from the first sentence's start to the last one's end, including the whitespace between)
    is at most SIZE characters.  **A single sentence longer than SIZE becomes its own chunk,
    uncut** (so a chunk may exceed SIZE; cutting mid-sentence would cut evidence).
``paragraphs`` / ``paragraphs:SIZE``
    paragraphs are separated by blank lines (a line holding only whitespace).  Without SIZE each
    paragraph is a chunk.  With SIZE every chunk keeps its size: a paragraph longer than SIZE is split
    into its sentences (the ``sentences`` splitter, line breaks included), and paragraphs and
    sentences are packed greedily while the chunk is at most SIZE characters.  **Only a sentence that
    alone exceeds SIZE is cut inside**: into windows of SIZE characters starting every SIZE - OVERLAP
    characters, OVERLAP = SIZE // 10 (so a fact cut at one window's end is whole at the next one's
    start), each stripped of surrounding whitespace; such sentences are counted (:attr:`Chunking.cut_sentences`, reported by the run).  No chunk
    exceeds SIZE.
``recursive:SIZE:OVERLAP``
    LangChain's ``RecursiveCharacterTextSplitter(chunk_size=SIZE, chunk_overlap=OVERLAP,
    separators=RECURSIVE_SEPARATORS, is_separator_regex=True)`` (keep_separator, strip_whitespace and
    ``len`` as length, its defaults), returning the same texts (tested against langchain-text-splitters):
    split at the first of ``\n\n``, ``\n``, a sentence end (whitespace after ``.``, ``!``, ``?``, ``。``,
    ``！``, ``？``), a space, or between characters that occurs in the text, recursing into pieces still
    longer than SIZE, then merge neighbouring pieces up to SIZE characters with up to OVERLAP characters
    repeated from the previous chunk (with SIZE 1 a lone whitespace character can be a chunk, as in
    LangChain).
``tokens:SIZE:OVERLAP``
    windows of SIZE tokens starting every SIZE - OVERLAP tokens (LangChain's ``TokenTextSplitter`` rule:
    the last window ends at the last token), counted in the embedder's tokenizer (e5's by default).  The
    tokenizer is injected from above (:meth:`TokenChunker.bind`; the run binds the embedder's, see
    :mod:`ragexam.retrieval.chunk_models`), because this layer does not know the embedders.  A window's span
    runs from its first token's first character to its last token's last character, stripped of
    whitespace; tokens are counted in the tokenization of the whole document.
``semantic`` / ``semantic:PERCENTILE``
    LangChain's ``SemanticChunker`` percentile rule (breakpoint_threshold_type="percentile", buffer_size=1) with
    each sentence embedded once: the vector of sentence i's neighbourhood is the sum of the vectors of sentences
    i-1, i and i+1 (LangChain embeds their ``" ".join`` instead, so every sentence three times: the same chunks for
    an embedder whose vector of a joined text is the sum of its parts', tested, and a third of the work); where
    the cosine distance between consecutive neighbourhoods is above the PERCENTILE-th percentile (default 95) of
    the document's distances, a new chunk starts.  Sentences come from the ``sentences`` splitter, a chunk runs
    from its first sentence's start to its last sentence's end, and a document of one sentence is one chunk.
    The embedding function is injected from above (:meth:`SemanticChunker.bind`; the run binds the offline
    e5 by default, through the embedding cache, with progress lines); identical sentences are embedded once.

Invariants (all chunkers): ``content[chunk.start:chunk.end] == chunk.text``; chunks of a document
are in document order with non-decreasing ``start`` and ``end``; every non-whitespace character
of the document is in at least one chunk (``whole`` and ``chars`` cover every character); sentence,
paragraph, recursive, token and semantic chunks start and end on non-whitespace.

Sizes: :meth:`Chunking.stats` gives the number, mean and largest size of the chunks (the run compares
chunkers of different mean size at equal context budget), and :func:`window_report` counts the chunks
longer than an embedder's window, given the embedder's token counter (the run warns).  A document whose content is empty (or, for
sentences/paragraphs, all whitespace) has no chunks.

Chunk ids are ``f"{doc_id}#{i}"`` with ``i`` the 0-based index of the chunk in its document,
e.g. ``hd_01#3``: readable, and stable for a given document text and spec.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple, Union

from ragexam.data.kiwi import KIWI_MODEL_TYPE, kiwi, kiwi_lock, kiwi_model_version, kiwi_version, pieces
from ragexam.data.schema import Chunk, Document, chunk_id
from ragexam.errors import InputError, did_you_mean

__all__ = ["Chunker", "WholeChunker", "CharChunker", "SentenceChunker", "ParagraphChunker", "RecursiveChunker",
           "TokenChunker", "SemanticChunker", "TokenSpans", "parse_chunker", "Chunking", "ChunkingStats",
           "chunk_corpus", "sentence_spans", "sentence_spans_many", "latin_sentence_starts", "LATIN_ABBREVIATIONS",
           "paragraph_spans", "window_report", "WindowReport",
           "CHUNKER_FORMS", "DEFAULT_CHUNKER", "RECURSIVE_SEPARATORS", "chunker_help", "size_mismatch", "equal_budget",
           "SIZE_RATIO_WARNING"]

#: the chunker of ``ragexam run`` when none is given, and of every command that predicts what the run does
#: (``evidence-coverage``): paragraphs packed up to 400 characters, cut only inside an over-long sentence
DEFAULT_CHUNKER = "paragraphs:400"

CHUNKER_FORMS = ("whole", "chars:SIZE:OVERLAP", "sentences", "sentences:SIZE", "paragraphs",
                 "paragraphs:SIZE", "recursive:SIZE:OVERLAP", "tokens:SIZE:OVERLAP", "semantic",
                 "semantic:PERCENTILE")

def chunker_help() -> str:
    """The ``--chunker`` help text of the CLI: every spec form (the chunkers own it; the CLI asks)."""
    return ("Chunker spec, repeatable (or comma-separated): " + ", ".join(CHUNKER_FORMS) + " (recursive, tokens and "
            "semantic as LangChain's splitters; tokens counted in the embedder's tokenizer, e5's by default). "
            f"Default: {DEFAULT_CHUNKER} (whole sentences, at most 400 characters).")


#: the separator hierarchy of ``recursive`` (regular expressions): paragraph, line, sentence end, space, character
RECURSIVE_SEPARATORS = ("\n\n", "\n", "(?<=[.!?\u3002\uff01\uff1f])\\s+", " ", "")

Span = Tuple[int, int]


@dataclass(frozen=True)
class Split:
    """One document's chunk spans and how many sentences had to be cut inside (``paragraphs:SIZE``)."""

    spans: List[Span]
    cut_sentences: int = 0


class Chunker:
    """Base class: subclasses implement :meth:`spans` and :attr:`spec`."""

    spec: str

    def memo_salt(self) -> Optional[str]:
        """What the spans depend on besides the spec and the text (e.g. the Kiwi version), or ``None`` when
        this chunker's chunkings are not worth keeping (:func:`chunk_corpus` with a store)."""
        return None

    def spans(self, content: str) -> List[Span]:  # pragma: no cover - abstract
        raise NotImplementedError

    def split(self, content: str) -> Split:
        """The spans of one document and what had to be cut (see :class:`Split`)."""
        return Split(self.spans(content))

    def split_many(self, contents: Sequence[str]) -> List[Split]:
        """:meth:`split` of several documents (a chunker that embeds overrides it to batch)."""
        return [self.split(c) for c in contents]

    def chunk(self, doc: Document) -> List[Chunk]:
        """The chunks of one document, in order."""
        return self.chunk_text(doc.doc_id, doc.content)

    def chunk_text(self, doc_id: str, content: str) -> List[Chunk]:
        return _chunks(doc_id, content, self.spans(content))

    def __repr__(self) -> str:
        return f"parse_chunker({self.spec!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Chunker) and other.spec == self.spec

    def __hash__(self) -> int:
        return hash(self.spec)


def _chunks(doc_id: str, content: str, spans: Iterable[Span]) -> List[Chunk]:
    return [Chunk(chunk_id(doc_id, i), doc_id, s, e, content[s:e]) for i, (s, e) in enumerate(spans)]


class WholeChunker(Chunker):
    """One chunk per document."""

    spec = "whole"

    def spans(self, content: str) -> List[Span]:
        return [(0, len(content))] if content else []


def _window_spec(kind: str, size: int, overlap: int) -> str:
    """``KIND:SIZE:OVERLAP``, the spec of a windowed chunker, once SIZE >= 1 and 0 <= OVERLAP < SIZE."""
    if size < 1 or not 0 <= overlap < size:
        raise InputError(f"{kind}:{size}:{overlap}: expected SIZE >= 1 and 0 <= OVERLAP < SIZE", source="chunker")
    return f"{kind}:{size}:{overlap}"


def _packed_spec(kind: str, size: Optional[int]) -> str:
    """``KIND`` (one unit per chunk) or ``KIND:SIZE`` (units packed up to SIZE characters), once SIZE >= 1."""
    if size is not None and size < 1:
        raise InputError(f"{kind}:{size}: expected SIZE >= 1", source="chunker")
    return kind if size is None else f"{kind}:{size}"


class CharChunker(Chunker):
    """Windows of ``size`` characters every ``size - overlap`` characters."""

    def __init__(self, size: int, overlap: int = 0) -> None:
        self.spec = _window_spec("chars", size, overlap)
        self.size, self.overlap = size, overlap

    def spans(self, content: str) -> List[Span]:
        return _windows(0, len(content), self.size, self.overlap)


def _windows(start: int, end: int, size: int, overlap: int) -> List[Span]:
    """Windows of ``size`` over ``[start, end)`` every ``size - overlap``; the last ends at ``end`` and none
    starts after a window that reached it (LangChain's token-window rule, on any positions)."""
    out = []
    for a in range(start, end, size - overlap):
        b = min(a + size, end)
        out.append((a, b))
        if b == end:
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
    """Sentence spans of ``content``, stripped: each line is split by kiwipiepy (one batch call) and at the
    Latin-script sentence ends Kiwi leaves joined (:func:`latin_sentence_starts`).

    Kiwi analyses morphology to find sentence ends (roughly 100k characters per second); in English it ends a
    sentence at ``!`` and ``?`` but not at ``. `` (kiwipiepy 0.24).
    """
    return sentence_spans_many([content])[0]


#: abbreviations (lower case, without their last period) after which ``.`` does not end a sentence, even before a
#: capital: titles before a name, Latin and reference abbreviations, company suffixes, months.  A word spelt with
#: inner periods (``e.g.``, ``U.S.``, ``a.m.``) and a single letter (an initial) are abbreviations too.  Words that
#: are also ordinary words ("no", "art") are not listed: they abbreviate only before a number, and no sentence is
#: taken to start with a digit.  A missed sentence end only makes a longer sentence (evidence stays whole).
LATIN_ABBREVIATIONS = frozenset("""
    mr mrs ms mx messrs dr prof sr jr st mt rev hon gov gen col lt capt sgt sen rep pres supt
    etc vs cf al approx ca viz resp esp incl ph.d
    fig figs vol vols ch chap sec sect eq eqs ext tel ref refs pp ver
    inc ltd co corp bros dept univ assn
    jan feb mar apr jun jul aug sep sept oct nov dec""".split())

_LATIN_END = re.compile(r"([.!?\u2026]+)([\"'\u201d\u2019)\]\u00bb]*)\s+(?=[\"'\u201c\u2018(\[\u00ab]*([^\W\d_]))")
_CLOSERS = "\"'\u201d\u2019)]\u00bb"
_OPENERS = "\"'\u201c\u2018([\u00ab"
_DOTTED_OR_INITIAL = re.compile(r"(?:[^\W\d_]\.)+[^\W\d_]|[^\W\d_]")
_LIST_NUMBER = re.compile(r"\(?(?:[0-9]{1,3}|[ivxlcdm]{1,4}|[IVXLCDM]{1,4})\)?")


def _latin(ch: str) -> bool:
    """A letter or digit of the Latin, Greek or Cyrillic script (not Hangul, Han or kana)."""
    return ch.isalnum() and (ord(ch) < 0x0530 or 0x1E00 <= ord(ch) <= 0x1FFF)


def latin_sentence_starts(text: str) -> List[int]:
    """Where a new sentence starts in ``text`` (a line, or a piece of one) at a Latin-script sentence end:
    ``.``, ``!``, ``?`` or ``…`` (repeated, e.g. ``...``, ``?!``; closing quotes or brackets may follow) right
    after a Latin letter or digit, then whitespace, then a capital letter (after opening quotes or brackets).
    A single ``.`` ends no sentence after an abbreviation (:data:`LATIN_ABBREVIATIONS`), an initial (``J. R.
    Smith``), a word with inner periods (``e.g.``, ``U.S.``) or a list number opening the text or following a
    sentence end (``1.``, ``iv.``).  Periods inside a word (``3.5``, ``v1.2``, ``a@b.com``, ``example.com/x``)
    are never followed by whitespace, so never end one; Korean text (Hangul before the mark or after the space) is
    Kiwi's alone."""
    out = []
    for m in _LATIN_END.finditer(text):
        if not m.group(3).isupper():
            continue
        j = m.start() - 1
        while j >= 0 and text[j] in _CLOSERS:
            j -= 1
        if j < 0 or not _latin(text[j]):
            continue
        if m.group(1) == ".":
            before = text[:m.start()]
            word = before.rsplit(None, 1)[-1]  # the mark follows a letter or digit: a word ends here
            previous = before[:-len(word)].rstrip()
            if _abbreviation(word) or (_LIST_NUMBER.fullmatch(word) and _ends_sentence(previous)):
                continue
        out.append(m.end())
    return out


def _abbreviation(word: str) -> bool:
    """Whether ``word`` (before a period) is an abbreviation: listed, an initial, or spelt with inner periods."""
    bare = word.lstrip(_OPENERS).rstrip(_CLOSERS)
    return bare.lower() in LATIN_ABBREVIATIONS or _DOTTED_OR_INITIAL.fullmatch(bare) is not None


def _ends_sentence(before: str) -> bool:
    """Whether ``before`` is empty or ends with a sentence end (so a list number may follow)."""
    if not before or before[-1] in "!?:;\u2026":
        return True
    return before[-1] == "." and not _abbreviation(before.rsplit(None, 1)[-1][:-1])


def _refined_starts(text: str, kiwi_starts: Sequence[int]) -> Tuple[int, ...]:
    """Kiwi's sentence starts in ``text`` and the Latin-script ones (:func:`latin_sentence_starts`)."""
    return tuple(sorted({*kiwi_starts, *latin_sentence_starts(text)}))


#: sentence starts of the pieces split in this process (Kiwi's, refined by :func:`_refined_starts`), by piece
#: (bounded: :data:`_SPLIT_MEMO_CHARS`), so the chunkers of a study (``paragraphs:400``, ``paragraphs:800``,
#: ``sentences``, ``semantic``) and repeated paragraphs split each text once
_SPLIT_MEMO: Dict[str, Tuple[int, ...]] = {}
_SPLIT_MEMO_CHARS = 20_000_000
_split_memo_size = [0]


def _kiwi_sentence_starts(texts: List[str]) -> List[Tuple[int, ...]]:
    """The start of every sentence in each text: Kiwi's, and the Latin-script ones (one Kiwi batch for
    the texts not split before)."""
    from ragexam.exec.progress import task

    with kiwi_lock:  # the memo is shared by every thread, as the analyser is
        todo = list(dict.fromkeys(t for t in texts if t not in _SPLIT_MEMO))
        split = []
        with task("splitting sentences (kiwi)", len(todo)) as counted:  # a long corpus shows in the progress lines
            for sents in (kiwi().split_into_sents(todo) if todo else ()):
                split.append(sents)
                counted.advance(1)
        found = {t: _SPLIT_MEMO[t] for t in texts if t in _SPLIT_MEMO}
        found.update((t, _refined_starts(t, [int(x.start) for x in sents])) for t, sents in zip(todo, split))
        if _split_memo_size[0] > _SPLIT_MEMO_CHARS:
            _SPLIT_MEMO.clear()
            _split_memo_size[0] = 0
        for t in todo:
            _SPLIT_MEMO[t] = found[t]
            _split_memo_size[0] += len(t)
    return [found[t] for t in texts]


def sentence_spans_many(contents: Sequence[str]) -> List[List[Span]]:
    """:func:`sentence_spans` of several texts in one Kiwi batch (its workers share the lines of all texts; a piece
    already split in this process is not split again)."""
    lines = [[(m.start(), m.end()) for m in _LINE.finditer(c) if not m.group().isspace()] if c.strip() else []
             for c in contents]
    parts = [(t, a + off, piece) for t, (c, ls) in enumerate(zip(contents, lines)) for a, b in ls
             for off, piece in pieces(c[a:b])]
    split = _kiwi_sentence_starts([piece for _, _, piece in parts]) if parts else []
    starts = [[a for a, _ in ls] for ls in lines]
    for (t, a, _), sents in zip(parts, split):
        starts[t].extend(a + x for x in sents)
    return [_spans_from_starts(c, st) if c.strip() else [] for c, st in zip(contents, starts)]


@functools.lru_cache(maxsize=None)
def _kiwi_salt() -> str:
    """What Kiwi-split spans depend on besides spec and text: the Kiwi packages and model type, Python's Unicode
    tables (whitespace and line rules) and the source of this module and of :mod:`ragexam.data.kiwi` (how lines
    are cut into pieces, :data:`~ragexam.data.kiwi.PIECE_CHARS`), so changed code never reuses a kept chunking.
    Read once per process."""
    import hashlib
    import unicodedata
    from pathlib import Path

    from ragexam.data import kiwi as kiwi_module

    h = hashlib.sha256(f"unicode {unicodedata.unidata_version}".encode("ascii"))
    for path in (__file__, kiwi_module.__file__):
        try:
            h.update(Path(path).read_bytes())
        except (OSError, TypeError):  # no source file (a frozen build): CHUNKING_VERSION alone keys the code
            h.update(b"-")
    return f"kiwipiepy {kiwi_version()} model {kiwi_model_version()} {KIWI_MODEL_TYPE} {h.hexdigest()[:16]}"


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
        self.spec = _packed_spec("sentences", size)
        self.size = size

    def memo_salt(self) -> Optional[str]:
        return _kiwi_salt() if type(self) is SentenceChunker else None  # a subclass may split otherwise

    def spans(self, content: str) -> List[Span]:
        return _pack(sentence_spans(content), self.size)


class ParagraphChunker(Chunker):
    """Paragraphs, one per chunk, or packed up to ``size`` characters with long paragraphs split at
    sentence ends and only single over-long sentences cut inside (module docstring)."""

    def __init__(self, size: Optional[int] = None) -> None:
        self.spec = _packed_spec("paragraphs", size)
        self.size = size

    def memo_salt(self) -> Optional[str]:
        return _kiwi_salt() if self.size is not None and type(self) is ParagraphChunker else None

    @property
    def overlap(self) -> int:
        """Characters shared by consecutive windows of a sentence cut inside: SIZE // 10."""
        return (self.size or 0) // 10

    def spans(self, content: str) -> List[Span]:
        return self.split(content).spans

    def split(self, content: str) -> Split:
        return self.split_many([content])[0]

    def split_many(self, contents: Sequence[str]) -> List[Split]:
        """Every document's paragraphs; the sentences of all long paragraphs in one Kiwi batch."""
        paragraphs = [paragraph_spans(c) for c in contents]
        if self.size is None:
            return [Split(ps) for ps in paragraphs]
        long = [(d, ps, pe) for d, spans in enumerate(paragraphs) for ps, pe in spans if pe - ps > self.size]
        sentences = dict(zip(((d, ps) for d, ps, _ in long),
                             sentence_spans_many([contents[d][ps:pe] for d, ps, pe in long])))
        return [self._pack_document(c, ps, sentences, d) for d, (c, ps) in enumerate(zip(contents, paragraphs))]

    def _pack_document(self, content: str, paragraphs: List[Span], sentences: Dict[Tuple[int, int], List[Span]],
                       d: int) -> Split:
        size = self.size or 0
        units: List[Span] = []   # whole paragraphs and sentences, packed below
        out: List[Span] = []
        cut = 0
        for ps, pe in paragraphs:
            if pe - ps <= size:
                units.append((ps, pe))
                continue
            for ss, se in sentences[(d, ps)]:
                a, b = ps + ss, ps + se
                if b - a <= size:
                    units.append((a, b))
                    continue
                cut += 1  # one sentence alone exceeds SIZE: windows with an overlap, never packed
                out.extend(_pack(units, size))
                units = []
                out.extend(sp for x, y in _windows(a, b, size, self.overlap)
                           if (sp := _strip_span(content, x, y)) is not None)
        out.extend(_pack(units, size))
        return Split(out, cut)


class RecursiveChunker(Chunker):
    """LangChain's ``RecursiveCharacterTextSplitter`` on :data:`RECURSIVE_SEPARATORS`, as spans (module
    docstring).  ``separators`` may be replaced (regular expressions, tried in order)."""

    def __init__(self, size: int, overlap: int = 0, separators: Sequence[str] = RECURSIVE_SEPARATORS) -> None:
        self.spec = _window_spec("recursive", size, overlap)
        self.size, self.overlap, self.separators = size, overlap, tuple(separators)

    def spans(self, content: str) -> List[Span]:
        return self._split(content, 0, len(content), list(self.separators))

    def _split(self, content: str, start: int, end: int, separators: List[str]) -> List[Span]:
        text = content[start:end]
        separator, rest = separators[-1], []
        for i, sep in enumerate(separators):
            if not sep:
                separator = sep
                break
            if re.search(sep, text):
                separator, rest = sep, separators[i + 1:]
                break
        if not separator:  # single characters: merged, they are windows of SIZE every SIZE - OVERLAP
            return _char_pieces_merged(content, start, end, self.size, self.overlap)
        cuts = [m.start() for m in re.finditer(separator, text)]  # keep_separator="start": each piece begins
        bounds = [0, *cuts, len(text)]                             # with the separator that preceded it
        pieces = [(start + a, start + b) for a, b in zip(bounds, bounds[1:]) if b > a]
        out: List[Span] = []
        good: List[Span] = []
        for a, b in pieces:
            if b - a < self.size:
                good.append((a, b))
                continue
            if good:
                out.extend(self._merge(content, good))
                good = []
            out.extend(self._split(content, a, b, rest) if rest else [(a, b)])
        if good:
            out.extend(self._merge(content, good))
        return out

    def _merge(self, content: str, pieces: List[Span]) -> List[Span]:
        """LangChain's ``_merge_splits`` with an empty separator: contiguous pieces joined up to SIZE
        characters, the tail of each chunk (at most OVERLAP characters) starting the next one."""
        out: List[Span] = []
        current: List[Span] = []  # the pieces of the chunk being built are current[head:]
        head = 0
        total = 0
        for a, b in pieces:
            n = b - a
            if total + n > self.size and head < len(current):
                span = _strip_span(content, current[head][0], current[-1][1])
                if span is not None:
                    out.append(span)
                while total > self.overlap or (total + n > self.size and total > 0):
                    total -= current[head][1] - current[head][0]
                    head += 1  # LangChain drops the list's head (a copy each time: quadratic); an index is linear
                if head == len(current):
                    current, head = [], 0
            current.append((a, b))
            total += n
        if head < len(current):
            span = _strip_span(content, current[head][0], current[-1][1])
            if span is not None:
                out.append(span)
        return out


def _char_pieces_merged(content: str, start: int, end: int, size: int, overlap: int) -> List[Span]:
    """LangChain's merge of the one-character pieces of ``content[start:end]`` without building them: with SIZE 1
    every character is a chunk, unstripped (no piece is shorter than SIZE, so none is merged); else the merge
    emits a chunk when SIZE pieces are held and keeps the last OVERLAP, so the chunks are the windows of SIZE
    characters every SIZE - OVERLAP, the last one ending at ``end`` (:func:`_windows`), each stripped."""
    if size == 1:
        return [(i, i + 1) for i in range(start, end)]
    return [sp for a, b in _windows(start, end, size, overlap) if (sp := _strip_span(content, a, b)) is not None]


class TokenSpans:
    """What :class:`TokenChunker` needs from a tokenizer: ``name`` and ``spans(text)``, the character span
    ``[start, end)`` of every token of ``text`` in order (a Protocol; :mod:`ragexam.retrieval.chunk_models`
    implements it for the embedders' tokenizers)."""

    name: str

    def spans(self, text: str) -> List[Span]:  # pragma: no cover - protocol
        raise NotImplementedError


class TokenChunker(Chunker):
    """Windows of ``size`` tokens every ``size - overlap`` tokens of a bound tokenizer (module docstring)."""

    def __init__(self, size: int, overlap: int = 0, tokenizer: Optional[TokenSpans] = None) -> None:
        self.spec = _window_spec("tokens", size, overlap)
        self.size, self.overlap, self.tokenizer = size, overlap, tokenizer

    def bind(self, tokenizer: TokenSpans) -> "TokenChunker":
        """This chunker counting in ``tokenizer``."""
        return TokenChunker(self.size, self.overlap, tokenizer)

    def spans(self, content: str) -> List[Span]:
        if self.tokenizer is None:
            raise InputError(f"{self.spec} counts tokens in an embedder's tokenizer, and none is bound; bind one "
                             "with ragexam.retrieval.chunk_models.bind_chunker(chunker, embedder) (ragexam run "
                             "binds the embedder's, e5's by default)", source="chunker")
        tokens = self.tokenizer.spans(content)
        out = []
        for a, b in _windows(0, len(tokens), self.size, self.overlap):
            span = _strip_span(content, tokens[a][0], tokens[b - 1][1])
            if span is not None:
                out.append(span)
        return out


Embed = Callable[[Sequence[str]], Any]


class SemanticChunker(Chunker):
    """LangChain's ``SemanticChunker`` percentile rule on injected sentence embeddings (module docstring).

    ``embed(texts)`` returns one vector per text (an ``(n, d)`` array); ``sentences(content)`` the sentence
    spans (default :func:`sentence_spans`)."""

    def __init__(self, percentile: float = 95.0, embed: Optional[Embed] = None,
                 sentences: Callable[[str], List[Span]] = None) -> None:  # type: ignore[assignment]
        if not 0 <= percentile <= 100:
            raise InputError(f"semantic:{percentile:g}: expected a PERCENTILE between 0 and 100", source="chunker")
        self.percentile, self.embed = float(percentile), embed
        self.sentences = sentences or sentence_spans
        self.spec = "semantic" if percentile == 95 else f"semantic:{percentile:g}"

    def bind(self, embed: Embed) -> "SemanticChunker":
        """This chunker embedding sentences with ``embed``."""
        return SemanticChunker(self.percentile, embed, self.sentences)

    def spans(self, content: str) -> List[Span]:
        return self.split(content).spans

    def split(self, content: str) -> Split:
        return self.split_many([content])[0]

    def split_many(self, contents: Sequence[str]) -> List[Split]:
        """Every document's sentences embedded in one call, each distinct sentence once."""
        import numpy as np

        sents = sentence_spans_many(contents) if self.sentences is sentence_spans else \
            [self.sentences(c) for c in contents]
        texts = [[c[a:b] for a, b in ss] if len(ss) > 1 else [] for c, ss in zip(contents, sents)]
        distinct = list(dict.fromkeys(t for ts in texts for t in ts))
        if distinct and self.embed is None:
            raise InputError(f"{self.spec} embeds sentences, and no embedding function is bound; bind one with "
                             "ragexam.retrieval.chunk_models.bind_chunker(chunker, embedder) (ragexam run binds "
                             "the offline e5 by default)", source="chunker")
        vectors = np.asarray(self.embed(distinct), dtype=np.float64) if distinct else np.zeros((0, 1))
        row = {t: i for i, t in enumerate(distinct)}
        out = []
        for ss, ts in zip(sents, texts):
            if len(ss) <= 1:
                out.append(Split(list(ss)))
                continue
            out.append(Split(_semantic_groups(ss, _neighbourhoods(vectors[[row[t] for t in ts]]), self.percentile)))
        return out


def _neighbourhoods(v: Any) -> Any:
    """Row i: the sum of rows i-1, i, i+1 of the sentence vectors ``v`` (LangChain's ``combine_sentences`` with
    buffer 1, combined after embedding)."""
    out = v.copy()
    out[1:] += v[:-1]
    out[:-1] += v[1:]
    return out


def _semantic_groups(sents: List[Span], v: Any, percentile: float) -> List[Span]:
    import numpy as np

    norms = np.linalg.norm(v, axis=1)
    unit = v / np.where(norms > 0, norms, 1.0)[:, None]
    distance = 1.0 - np.sum(unit[:-1] * unit[1:], axis=1)
    threshold = np.percentile(distance, percentile)
    out, first = [], 0
    for i in np.flatnonzero(distance > threshold).tolist():
        out.append((sents[first][0], sents[i][1]))
        first = i + 1
    if first < len(sents):
        out.append((sents[first][0], sents[-1][1]))
    return out


_SPEC = re.compile(r"^(?:(whole)|(chars|recursive|tokens):([1-9][0-9]*):(0|[1-9][0-9]*)"
                   r"|(sentences|paragraphs)(?::([1-9][0-9]*))?|(semantic)(?::((?:100|[1-9]?[0-9])(?:\.[0-9]+)?))?)$")
_WINDOWED = {"chars": CharChunker, "recursive": RecursiveChunker, "tokens": TokenChunker}


def parse_chunker(spec: Union[str, Chunker]) -> Chunker:
    """The chunker named by ``spec`` (a :class:`Chunker` passes through).

    Valid forms: :data:`CHUNKER_FORMS`; SIZE a positive integer without leading zeros,
    ``0 <= OVERLAP < SIZE``, PERCENTILE a number from 0 to 100.  Anything else raises ``InputError``
    listing these forms.  ``tokens`` and ``semantic`` need a tokenizer or an embedding function bound
    before they chunk (:meth:`TokenChunker.bind`, :meth:`SemanticChunker.bind`).
    """
    if isinstance(spec, Chunker):
        return spec
    forms = ", ".join(CHUNKER_FORMS)
    if not isinstance(spec, str):
        raise InputError(f"received {type(spec).__name__} {spec!r}; expected a chunker spec string, "
                         f"one of: {forms}", source="chunker")
    m = _SPEC.match(spec)
    if m is None:
        name, colon, rest = spec.partition(":")
        names = dict.fromkeys(f.partition(":")[0] for f in CHUNKER_FORMS)
        hint = did_you_mean(name.strip(), names, spell="{}" + colon + rest.replace("{", "{{").replace("}", "}}"))
        raise InputError(f"invalid chunker spec {spec!r}; valid forms: {forms} (SIZE a positive "
                         "integer, 0 <= OVERLAP < SIZE, PERCENTILE from 0 to 100), e.g. 'paragraphs:400', "
                         f"'recursive:500:50' or 'tokens:256:32'.{hint}", source="chunker")
    if m.group(1):
        return WholeChunker()
    if m.group(2):
        size, overlap = int(m.group(3)), int(m.group(4))
        if overlap >= size:
            raise InputError(f"invalid chunker spec {spec!r}: OVERLAP ({overlap}) must be smaller than "
                             f"SIZE ({size}); valid forms: {forms}", source="chunker")
        return _WINDOWED[m.group(2)](size, overlap)
    if m.group(7):
        return SemanticChunker(float(m.group(8)) if m.group(8) else 95.0)
    size = int(m.group(6)) if m.group(6) else None
    return SentenceChunker(size) if m.group(5) == "sentences" else ParagraphChunker(size)


@dataclass(frozen=True)
class ChunkingStats:
    """Sizes of a chunking's chunks in characters: ``n``, ``mean``, ``max``, and ``cut_sentences`` (sentences
    longer than SIZE cut inside by ``paragraphs:SIZE``)."""

    spec: str
    n: int
    mean: float
    max: int
    cut_sentences: int

    def to_dict(self) -> Dict[str, Any]:
        return {"spec": self.spec, "n_chunks": self.n, "mean_chars": self.mean, "max_chars": self.max,
                "cut_sentences": self.cut_sentences}


@dataclass
class Chunking:
    """All chunks of a corpus under one chunker: ``chunks`` in corpus then document order."""

    spec: str
    chunks: List[Chunk]
    cut_sentences: int = 0
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

    def stats(self) -> ChunkingStats:
        """Number, mean and largest size (characters) of the chunks, and the sentences cut inside."""
        sizes = [c.end - c.start for c in self.chunks]
        return ChunkingStats(self.spec, len(sizes), sum(sizes) / len(sizes) if sizes else 0.0, max(sizes, default=0),
                             self.cut_sentences)


#: bumped whenever a chunker's spans change for the same spec and text: kept chunkings are keyed by it
CHUNKING_VERSION = "2"


def chunk_corpus(documents: Iterable[Document], chunker: Union[str, Chunker], *, store: Any = None) -> Chunking:
    """Chunk every document (a :class:`~ragexam.data.schema.Corpus` or any iterable of documents).

    ``store`` (e.g. the retrieval cache, :class:`ragexam.retrieval.cache.Cache`: anything with
    ``load_index(kind, key)`` / ``save_index(kind, key, arrays)``) keeps the spans of chunkers whose
    :meth:`Chunker.memo_salt` is not ``None`` -- those that run Kiwi, whose sentence splitting is most of a
    warm run on a large corpus -- under a key of :data:`CHUNKING_VERSION`, the spec, the salt and every
    document's text, so the same corpus is split once; a kept entry that does not fit the texts is ignored.  A
    store that also keeps splits (``get_splits``/``put_splits``) keeps each document's as it is made
    (:mod:`ragexam.data.split_memo`): an interrupted chunking resumes, and a changed corpus re-splits only the
    documents that changed."""
    ch = parse_chunker(chunker)
    docs = list(documents)
    contents = [d.content for d in docs]
    salt = ch.memo_salt() if store is not None else None
    key = _memo_key(ch.spec, salt, contents) if salt is not None else None
    if key is not None:
        kept = _kept_chunking(store.load_index("chunks", key), docs, ch.spec)
        if kept is not None:
            return kept
    chunks: List[Chunk] = []
    cut = 0
    owners: List[int] = []
    ours = type(ch).__module__ == __name__ and type(ch) is not Chunker  # a user's chunker's spans are checked
    if key is not None and hasattr(store, "get_splits"):  # each document's split kept as made: resumable
        from ragexam.data.split_memo import split_documents

        splits = split_documents(ch, contents, store, salt, CHUNKING_VERSION)  # type: ignore[arg-type]
    else:
        splits = ch.split_many(contents)
    for i, (doc, split) in enumerate(zip(docs, splits)):
        spans = split.spans if ours else _checked_spans(split.spans, doc, ch.spec)
        chunks.extend(_chunks(doc.doc_id, doc.content, spans))
        owners.extend([i] * len(spans))
        cut += split.cut_sentences
    if key is not None:
        import numpy as np

        store.save_index("chunks", key, {"doc": np.asarray(owners, dtype=np.int64),
                                         "start": np.asarray([c.start for c in chunks], dtype=np.int64),
                                         "end": np.asarray([c.end for c in chunks], dtype=np.int64),
                                         "cut": np.asarray([cut], dtype=np.int64)})
    return Chunking(ch.spec, chunks, cut)


def _span_problem(start: int, end: int, length: int) -> Optional[str]:
    """Why ``(start, end)`` cannot be a chunk of a text of ``length`` characters, or ``None``: a span lies inside
    the text and is not empty."""
    if not 0 <= start < end <= length:
        return f"({start}, {end}) is not inside the text: expected 0 <= start < end <= {length}"
    return None


def _checked_spans(spans: object, doc: Document, spec: str) -> List[Span]:
    """A chunker's spans of one document as ``[(start, end), ...]``, checked: each a pair of integers inside the
    text (:func:`_span_problem`), none twice (nested or overlapping spans are a chunker's choice); a chunker of the
    user's that returns anything else is an :class:`InputError` naming the document and the span."""
    import numbers

    where = f"chunker {spec}, document {doc.doc_id!r}"
    if isinstance(spans, (str, bytes, dict)) or not isinstance(spans, Iterable):
        raise InputError(f"spans() returned {type(spans).__name__ if spans is not None else 'None'}; expected a "
                         "list of (start, end) character offsets ([] for no chunk).", source=where)
    out: List[Span] = []
    seen: Dict[Span, int] = {}
    for i, span in enumerate(spans):
        pair = tuple(span) if isinstance(span, (list, tuple)) else ()
        if len(pair) != 2 or not all(isinstance(x, numbers.Integral) and not isinstance(x, bool) for x in pair):
            raise InputError(f"span {i} is {span!r}; expected a pair of integer character offsets (start, end).",
                             source=where)
        start, end = int(pair[0]), int(pair[1])
        whole_of_empty = (start, end) == (0, 0) and not doc.content  # an empty document's whole text, as before
        problem = None if whole_of_empty else _span_problem(start, end, len(doc.content))
        if problem is None and (start, end) in seen:
            problem = f"({start}, {end}) is span {seen[(start, end)]} again: expected each span once"
        if problem is not None:
            raise InputError(f"span {i} {problem}.", source=where)
        seen[(start, end)] = i
        out.append((start, end))
    return out


def _memo_key(spec: str, salt: str, contents: Sequence[str]) -> str:
    import hashlib

    h = hashlib.sha256(f"chunking {CHUNKING_VERSION}\0{spec}\0{salt}\0{len(contents)}".encode("utf-8"))
    for c in contents:
        data = c.encode("utf-8", "surrogatepass")
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()[:32]


def _kept_chunking(arrays: Optional[Dict[str, Any]], docs: Sequence[Document], spec: str) -> Optional[Chunking]:
    """The chunking kept by :func:`chunk_corpus`, or ``None`` when ``arrays`` is missing or does not fit ``docs``
    (1-d integer arrays; documents in order; spans inside their text, non-empty, never going backwards)."""
    names = ("doc", "start", "end", "cut")
    if not arrays or any(k not in arrays or getattr(arrays[k], "ndim", 0) != 1
                         or getattr(arrays[k].dtype, "kind", "") not in "iu" for k in names):
        return None
    doc, start, end, cut = (arrays[k].tolist() for k in names)
    if not len(doc) == len(start) == len(end) or len(cut) != 1 or cut[0] < 0:
        return None
    chunks: List[Chunk] = []
    prev, index, prev_span = -1, 0, (-1, -1)
    for d, s, e in zip(doc, start, end):
        if d < prev or d >= len(docs) or _span_problem(s, e, len(docs[d].content)) is not None \
                or (d == prev and (s, e) <= prev_span):  # starts never decrease; a span never repeats
            return None
        index = index + 1 if d == prev else 0
        prev, prev_span = d, (s, e)
        chunks.append(Chunk(chunk_id(docs[d].doc_id, index), docs[d].doc_id, s, e, docs[d].content[s:e]))
    return Chunking(spec, chunks, int(cut[0]))


#: chunkers whose mean chunk sizes differ by more than this factor are not comparable by chunk-count k
SIZE_RATIO_WARNING = 1.25


def size_mismatch(stats: Sequence[ChunkingStats], budget: Optional[str] = None) -> str:
    """The warning when chunkers of different mean size are compared by chunk-count k (their mean sizes
    differ by more than :data:`SIZE_RATIO_WARNING`), or ``""``: it names each chunker's mean size and points to
    the budget columns (``budget``, e.g. ``"2000c"``; default :func:`equal_budget` of 5 chunks)."""
    sized = [s for s in stats if s.n]
    if len(sized) < 2:
        return ""
    small = min(sized, key=lambda s: s.mean)
    big = max(sized, key=lambda s: s.mean)
    if big.mean <= SIZE_RATIO_WARNING * small.mean:
        return ""
    means = ", ".join(f"{s.spec} {s.mean:.0f}" for s in sized)
    budget = budget or equal_budget(sized, 5)
    return (f"chunkers of different size are compared by chunk count k (mean characters per chunk: {means}): k "
            f"chunks of {big.spec} hold {big.mean / small.mean:.1f}x the context of k chunks of {small.spec}, so the "
            f"bigger chunks win by construction; compare them at an equal context budget (the @{budget} columns, "
            f"-k {budget}).")


def equal_budget(stats: Sequence[ChunkingStats], k: int) -> str:
    """A context budget in characters for comparing chunkers: ``k`` chunks of the median mean size, rounded to
    100 characters (at least 100), e.g. ``"2000c"``."""
    means = sorted(s.mean for s in stats if s.n) or [0.0]
    mid = means[len(means) // 2] if len(means) % 2 else (means[len(means) // 2 - 1] + means[len(means) // 2]) / 2
    return f"{max(100, int(round(k * mid / 100.0)) * 100)}c"


@dataclass(frozen=True)
class WindowReport:
    """Chunks longer than an embedder's window: ``n_over`` of ``n_chunks`` have more than ``window`` tokens
    (``max_tokens``: the most tokens of a chunk counted — every chunk, or with a bound the chunks the bound could
    not clear; ``None`` when none was counted: not 0, which would read as a count); ``action`` is what the embedder does with the rest (``"truncated"``:
    it is not embedded; ``"windowed"``: embedded in several windows whose vectors are averaged)."""

    spec: str
    embedder: str
    window: int
    action: str
    n_chunks: int
    n_over: int
    max_tokens: Optional[int]

    def message(self) -> str:
        """The run's warning, or ``""`` when every chunk fits."""
        if not self.n_over:
            return ""
        return (f"chunker {self.spec}: {self.n_over} of {self.n_chunks} chunks exceed {self.embedder}'s window of "
                f"{self.window} tokens (the longest has {self.max_tokens}); they are {self.action}. Use a smaller "
                "SIZE, or tokens:SIZE:OVERLAP to cut in the embedder's tokens")

    def to_dict(self) -> Dict[str, Any]:
        return {"spec": self.spec, "embedder": self.embedder, "window": self.window, "action": self.action,
                "n_chunks": self.n_chunks, "n_over": self.n_over, "max_tokens": self.max_tokens}


def window_report(chunking: Chunking, count: Callable[[str], int], window: int, *, action: str,
                  embedder: str, bound: Optional[Callable[[str], int]] = None) -> WindowReport:
    """How many chunks of ``chunking`` exceed ``window`` tokens as counted by ``count(text)`` (the embedder's
    own count, prefixes and special tokens included).  ``bound(text)``, a cheap upper bound of ``count(text)``
    (e5: the characters it segments, each token covering at least one), spares counting the chunks it shows to
    fit.  ``action``/``embedder``: see :class:`WindowReport`."""
    texts = [c.text for c in chunking.chunks if bound is None or bound(c.text) > window]
    counts = [count(t) for t in texts]
    return WindowReport(chunking.spec, embedder, window, action, len(chunking.chunks),
                        sum(1 for n in counts if n > window), max(counts, default=None))
