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
    ``Kiwi.tokenize(list)`` on ``num_threads`` worker threads (``-1``: all cores).

``whitespace``
    ``text.lower().split()``: Python's whitespace split, lowercased, nothing dropped.
    It is cheaper than a cache lookup, so it is never cached.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, Sequence

from ragexam.data.kiwi import KIWI_MODEL_TYPE, kiwi, kiwi_model_version, kiwi_version
from ragexam.data.kiwi import tokenize as kiwi_tokenize
from ragexam.retrieval.progress import progress_bar

if TYPE_CHECKING:  # pragma: no cover
    from ragexam.retrieval.cache import Cache

__all__ = ["Tokenizer", "KiwiTokenizer", "WhitespaceTokenizer", "tokenize_cached",
           "keep_kiwi_tag", "TOKENIZERS"]

_BATCH = 256

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
    def signature_fields(self) -> str:
        """``kiwi:<kiwipiepy>|kiwi-model:<model type>-<kiwipiepy_model>`` for signatures."""
        return f"kiwi:{self.version}|kiwi-model:{KIWI_MODEL_TYPE}-{kiwi_model_version()}"

    def tokenize(self, texts: Sequence[str], progress: bool = False) -> list[list[str]]:
        """Filtered, lowercased lemmas of each text (an empty or blank text gives ``[]``)."""
        kiwi(self.num_threads)  # created with this worker count if it is the first user
        out: list[list[str]] = []
        with progress_bar("tokenizing (kiwi)", len(texts), progress) as bar:
            for start in range(0, len(texts), _BATCH):
                batch = list(texts[start:start + _BATCH])
                analysed = kiwi_tokenize(batch)
                for tokens in analysed:
                    out.append([t.lemma.lower() for t in tokens if keep_kiwi_tag(t.tag)])
                bar.advance(len(batch))
        return out


class WhitespaceTokenizer:
    """``text.lower().split()`` for every text; never cached (cheaper than a lookup)."""

    name = "whitespace"
    cacheable = False
    identity = "whitespace:lower-split"

    def tokenize(self, texts: Sequence[str], progress: bool = False) -> list[list[str]]:
        return [t.lower().split() for t in texts]


TOKENIZERS = {"kiwi": KiwiTokenizer, "whitespace": WhitespaceTokenizer}


def tokenize_cached(tokenizer: Tokenizer, texts: Sequence[str], cache: "Cache | None",
                    progress: bool = False) -> list[list[str]]:
    """Tokenize ``texts``, reading and writing the on-disk cache when ``cache`` is given.

    Only texts missing from the cache (keyed by ``tokenizer.identity`` and the text) reach
    the tokenizer; repeated texts are tokenized once.  New token lists are written in
    batches, each in one transaction.
    """
    if cache is None or not tokenizer.cacheable or not texts:
        return tokenizer.tokenize(texts, progress=progress)
    from ragexam.retrieval.cache import content_key

    identity = tokenizer.identity
    keys = [content_key(identity, "doc", t) for t in texts]
    found = cache.get_tokens(keys)
    missing: dict[bytes, str] = {}
    for k, t in zip(keys, texts):
        if k not in found and k not in missing:
            missing[k] = t
    if missing:
        miss_keys = list(missing)
        step = 1024
        with progress_bar(f"tokenizing ({tokenizer.name})", len(miss_keys), progress) as bar:
            for start in range(0, len(miss_keys), step):
                part = miss_keys[start:start + step]
                toks = tokenizer.tokenize([missing[k] for k in part], progress=False)
                cache.put_tokens(identity, zip(part, toks))
                found.update(zip(part, toks))
                bar.advance(len(part))
    return [found[k] for k in keys]
