"""Tokenizers for lexical retrieval: Korean morphemes (kiwipiepy) and whitespace.

A tokenizer has a ``name`` (used in specs), an ``identity`` (everything that changes its
output, used as the cache key prefix and in signatures), ``cacheable`` and
``tokenize(texts, progress) -> list[list[str]]``.  :func:`tokenize_cached` puts the on-disk
cache in front of any tokenizer.

``kiwi`` (the default for Korean)
    kiwipiepy morphological analysis; each token becomes its **lemma** (``Token.lemma``:
    verb and adjective stems are restored and get ``다``, e.g. ``될`` → ``되다``,
    ``걸어`` → ``걷다``), lowercased.  Tokens are dropped when their POS tag is

    * ``J*``   particles (``이``, ``는``, ``를``, ``의`` ...),
    * ``E*``   endings (``세요``, ``ᆯ``, ``었`` ...),
    * ``XS*``  derivational suffixes (``하`` in ``확인하다``, ``화``, ``간`` ...),
    * ``S*``   punctuation and symbols, **except** ``SL`` (Latin letters), ``SN`` (numbers)
      and ``SH`` (Hanja), which are kept,
    * ``Z_*``  sound-change residue (``Z_CODA``: the stray coda of ``했어욥``; ``Z_SIOT``).

    Everything else is kept, including one-syllable words (``앱``, ``안``, ``때``) and
    kiwi's web tokens (``W_URL``, ``W_EMAIL``, ``W_HASHTAG``, ``W_SERIAL`` ...).
    Example: ``VPN 접속이 안 될 때는 먼저 OTP 인증 앱의 시간을 확인하세요.`` →
    ``vpn 접속 안 되다 때 먼저 otp 인증 앱 시간 확인``.

    One ``kiwipiepy.Kiwi`` is created per process on first use and reused (construction
    takes 1–2 s and the model holds about 500 MB); texts are analysed in batches through
    ``Kiwi.tokenize(list)`` on ``num_threads`` worker threads (``-1``: all cores).  The tag
    filter is decided once per distinct tag (a dictionary lookup per token).

``whitespace``
    ``text.lower().split()``: Python's whitespace split, lowercased, nothing dropped.
    It is cheaper than a cache lookup, so it is never cached.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Protocol, Sequence

from ragexam.data.kiwi import KIWI_MODEL_TYPE, kiwi, kiwi_model_version, kiwi_version
from ragexam.data.kiwi import tokenize as kiwi_tokenize
from ragexam.retrieval.progress import progress_bar
from ragexam.signature import Signature

if TYPE_CHECKING:  # pragma: no cover
    from ragexam.exec.base import Executor
    from ragexam.retrieval.cache import Cache

__all__ = ["Tokenizer", "KiwiTokenizer", "WhitespaceTokenizer", "tokenize_cached", "iter_tokens",
           "keep_kiwi_tag", "TOKENIZERS", "TokenizeWorker"]

_BATCH = 256
#: Texts per batch handed to an executor worker (and per cache transaction).
SHARD = 1024

class Tokenizer(Protocol):
    """What BM25 needs from a tokenizer."""

    name: str
    cacheable: bool

    @property
    def identity(self) -> str: ...

    def tokenize(self, texts: Sequence[str], progress: bool = False) -> list[list[str]]: ...


def keep_kiwi_tag(tag: str) -> bool:
    """True if a kiwi token with POS ``tag`` is kept for BM25 (see the module docstring)."""
    if tag.startswith(("J", "E", "XS", "Z")):
        return False
    if tag.startswith("S"):
        return tag in ("SL", "SN", "SH")
    return True


class KiwiTokenizer:
    """Korean morpheme lemmas from kiwipiepy, filtered for BM25 (see the module docstring)."""

    name = "kiwi"
    cacheable = True
    #: Version of the tag filter and token form; bump when either changes.
    FILTER = "lemma:drop=J,E,XS,S-SL/SN/SH,Z:lower"

    def __init__(self, num_threads: int | None = None) -> None:
        self.num_threads = num_threads if num_threads else -1
        self._identity: str | None = None

    @property
    def identity(self) -> str:
        """``kiwi:<kiwipiepy>:model=<kiwipiepy_model>:<model type>:<filter>``.

        Computed from package metadata, without creating the Kiwi instance (a warm-cache
        run never loads the analyser).
        """
        if self._identity is None:
            self._identity = (f"kiwi:{kiwi_version()}:model={kiwi_model_version()}"
                              f":{KIWI_MODEL_TYPE}:{self.FILTER}")
        return self._identity

    @property
    def version(self) -> str:
        """The installed kiwipiepy version."""
        return kiwi_version()

    @property
    def signature_fields(self) -> Signature:
        """``kiwi:<kiwipiepy>|kiwi-model:<model type>-<kiwipiepy_model>`` for signatures."""
        return Signature([("kiwi", self.version), ("kiwi-model", f"{KIWI_MODEL_TYPE}-{kiwi_model_version()}")],
                         version=False)

    def with_threads(self, threads: int) -> "KiwiTokenizer":
        """The same tokenizer asking for ``threads`` kiwi worker threads (results are the same)."""
        return KiwiTokenizer(threads)

    def tokenize(self, texts: Sequence[str], progress: bool = False) -> list[list[str]]:
        """Filtered, lowercased lemmas of each text (an empty or blank text gives ``[]``)."""
        kiwi(self.num_threads)  # created with this worker count if it is the first user
        out: list[list[str]] = []
        keep = _KEEP
        with progress_bar("tokenizing (kiwi)", len(texts), progress) as bar:
            for start in range(0, len(texts), _BATCH):
                batch = list(texts[start:start + _BATCH])
                analysed = kiwi_tokenize(batch)
                for tokens in analysed:
                    row = []
                    for t in tokens:
                        tag = t.tag
                        k = keep.get(tag)
                        if k is None:
                            k = keep[tag] = keep_kiwi_tag(tag)
                        if k:
                            row.append(t.lemma.lower())
                    out.append(row)
                bar.advance(len(batch))
        return out


#: ``keep_kiwi_tag`` decided once per distinct tag (kiwi has a few dozen).
_KEEP: dict[str, bool] = {}


class WhitespaceTokenizer:
    """``text.lower().split()`` for every text; never cached (cheaper than a lookup)."""

    name = "whitespace"
    cacheable = False
    identity = "whitespace:lower-split"

    def tokenize(self, texts: Sequence[str], progress: bool = False) -> list[list[str]]:
        return [t.lower().split() for t in texts]


TOKENIZERS = {"kiwi": KiwiTokenizer, "whitespace": WhitespaceTokenizer}


@dataclass(frozen=True)
class TokenizeWorker:
    """Executor worker factory (:mod:`ragexam.exec.base`): ``factory()(texts)`` tokenizes a batch.

    The tokenizer travels to the worker (a process or a Ray actor) and its model is loaded there once.
    ``mode`` is how the local executor runs it: ``inline`` for kiwi, which already analyses a batch on
    every core with its own threads.
    """

    tokenizer: "Tokenizer"
    mode: str = "inline"
    name: str = "tokenize"

    def with_threads(self, threads: int) -> "TokenizeWorker":
        set_threads = getattr(self.tokenizer, "with_threads", None)
        return replace(self, tokenizer=set_threads(threads)) if callable(set_threads) else self

    def __call__(self):
        return self.tokenizer.tokenize


def tokenize_cached(tokenizer: Tokenizer, texts: Sequence[str], cache: "Cache | None",
                    progress: bool = False, executor: "Executor | None" = None) -> list[list[str]]:
    """Tokenize ``texts``, reading and writing the on-disk cache when ``cache`` is given.

    Only texts missing from the cache (keyed by ``tokenizer.identity`` and the text) reach
    the tokenizer, through ``executor`` (default: the local one) in batches of :data:`SHARD`;
    repeated texts are tokenized once.  Each finished batch is written in one transaction.
    """
    out: list[list[str]] = []
    for _, part in iter_tokens(tokenizer, texts, cache, progress=progress, executor=executor,
                               window=max(1, len(texts))):
        out.extend(part)
    return out


def iter_tokens(tokenizer: Tokenizer, texts: Sequence[str], cache: "Cache | None", *, progress: bool = False,
                executor: "Executor | None" = None, window: int = 65536):
    """Yield ``(start, token lists)`` for consecutive windows of ``window`` texts (see :func:`tokenize_cached`),
    so a caller can turn each window into ids and drop the strings: memory follows the window, not the corpus."""
    from ragexam.exec.timing import stage

    texts = texts if isinstance(texts, list) else list(texts)
    cacheable = cache is not None and tokenizer.cacheable
    identity = tokenizer.identity
    with progress_bar(f"tokenizing ({tokenizer.name})", len(texts), progress) as bar:
        for w0 in range(0, len(texts), window):
            part = texts[w0:w0 + window]
            if not cacheable:
                with stage("tokenize"):
                    yield w0, _run(tokenizer, part, executor)
                bar.advance(len(part))
                continue
            from ragexam.retrieval.cache import content_key, missing

            with stage("tokenize"):
                keys = [content_key(identity, "doc", t) for t in part]
                found = cache.get_tokens(keys)
                todo = missing(keys, part, found)
                bar.skip(len(part) - len(todo))
                if todo:
                    miss_keys = list(todo)
                    for s, toks in _map(tokenizer, [todo[k] for k in miss_keys], executor):
                        got = miss_keys[s:s + len(toks)]
                        cache.put_tokens(identity, zip(got, toks))
                        found.update(zip(got, toks))
                        bar.advance(len(got))
                out = [found[k] for k in keys]
            yield w0, out


def _map(tokenizer: Tokenizer, texts: list, executor: "Executor | None"):
    if executor is None:
        from ragexam.exec.local import LocalExecutor

        executor = LocalExecutor()
    worker = TokenizeWorker(tokenizer, mode=getattr(tokenizer, "mode", "inline"))
    return executor.map_batches(worker, texts, batch_size=SHARD, mode=worker.mode)


def _run(tokenizer: Tokenizer, texts: list, executor: "Executor | None") -> list[list[str]]:
    if executor is None or not getattr(tokenizer, "cacheable", True):
        return tokenizer.tokenize(texts)
    out: list[list[str]] = []
    for _, toks in _map(tokenizer, texts, executor):
        out.extend(toks)
    return out
