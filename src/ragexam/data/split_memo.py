"""Each document's chunk spans kept as they are made, so a long chunking resumes and a changed corpus re-splits only
what changed.

:func:`ragexam.data.chunking.chunk_corpus` keeps the chunking of a whole corpus under one key (the fast path of a
warm run).  That key misses as soon as one document changes, and it is written only when every document is split:
on a corpus whose Kiwi sentence split takes minutes, an interrupted run started over, and one added document
re-split them all.  With a store that keeps splits (``get_splits(keys)`` / ``put_splits(identity, items)``, as the
retrieval cache does: :class:`ragexam.retrieval.cache.Cache`), :func:`split_documents`

* keys each document by ``sha256`` of ``CHUNKING_VERSION`` (:mod:`ragexam.data.chunking`), the chunker's spec, its
  :meth:`~ragexam.data.chunking.Chunker.memo_salt` (the Kiwi packages and the source of the splitting code) and
  the document's text;
* splits the documents not kept in batches of about :data:`BATCH_CHARS` characters (a few seconds of Kiwi each)
  and saves each batch's spans when it is done, so an interruption loses at most one batch;
* counts its work in documents on the progress lines (``chunking paragraphs:400: documents 1,200/5,000``), the
  kept ones apart: the rate and the time left are of the documents split in this run.

A kept entry that does not fit its text (spans outside it, empty, out of order) is split again.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Dict, List, NamedTuple, Optional, Sequence, Tuple

__all__ = ["split_documents", "BATCH_CHARS", "Kept"]

#: characters of the documents split between two saves (about 10 s of Kiwi on one core)
BATCH_CHARS = 500_000


class Kept(NamedTuple):
    """A document's split read back: what :class:`ragexam.data.chunking.Split` holds."""

    spans: List[Tuple[int, int]]
    cut_sentences: int


def _identity(version: str, spec: str, salt: str) -> str:
    return f"chunking {version}\x1f{spec}\x1f{salt}"


def _key(identity: str, text: str) -> bytes:
    return hashlib.sha256(f"{identity}\x1fdocument\x1f{text}".encode("utf-8", "surrogatepass")).digest()


def _encode(split: Any) -> bytes:
    flat: List[int] = [int(split.cut_sentences)]
    for start, end in split.spans:
        flat.extend((int(start), int(end)))
    return json.dumps(flat, separators=(",", ":")).encode("ascii")


def _decode(value: bytes, text: str) -> Optional[Kept]:
    """The split kept for ``text``, or ``None`` when it does not fit it (each span inside the text and not empty,
    in order, none twice; ``(0, 0)`` is an empty document's whole text)."""
    try:
        flat = json.loads(value)
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(flat, list) or len(flat) % 2 != 1 or not all(type(x) is int for x in flat) or flat[0] < 0:
        return None
    spans: List[Tuple[int, int]] = list(zip(flat[1::2], flat[2::2]))
    prev = (-1, -1)
    for s, e in spans:
        empty_whole = (s, e) == (0, 0) and not text
        if (not empty_whole and not 0 <= s < e <= len(text)) or (s, e) <= prev:
            return None
        prev = (s, e)
    return Kept(spans, flat[0])


def _batches(todo: Sequence[Tuple[bytes, str]]) -> List[List[Tuple[bytes, str]]]:
    out: List[List[Tuple[bytes, str]]] = []
    size = 0
    for item in todo:
        if not out or size >= BATCH_CHARS:
            out.append([])
            size = 0
        out[-1].append(item)
        size += len(item[1])
    return out


def split_documents(chunker: Any, contents: Sequence[str], store: Any, salt: str, version: str) -> List[Any]:
    """``chunker.split_many(contents)``, each document's split read from ``store`` when kept there (a
    :class:`Kept`) and saved there batch by batch when made (module docstring); ``version`` is
    :data:`ragexam.data.chunking.CHUNKING_VERSION`."""
    from ragexam.exec.progress import task

    identity = _identity(version, chunker.spec, salt)
    keys = [_key(identity, c) for c in contents]
    kept_raw: Dict[bytes, bytes] = store.get_splits(keys)
    kept: Dict[bytes, Any] = {}
    todo: Dict[bytes, str] = {}
    for k, text in zip(keys, contents):
        if k in kept or k in todo:
            continue
        split = _decode(kept_raw[k], text) if k in kept_raw else None
        if split is None:
            todo[k] = text
        else:
            kept[k] = split
    n_docs = len(dict.fromkeys(keys))
    with task(f"chunking {chunker.spec}: documents", n_docs) as counted:
        counted.skip(len(kept))
        for batch in _batches(list(todo.items())):
            splits = chunker.split_many([text for _, text in batch])
            store.put_splits(identity, [(k, _encode(s)) for (k, _), s in zip(batch, splits)])
            kept.update((k, s) for (k, _), s in zip(batch, splits))
            counted.advance(len(batch))
    return [kept[k] for k in keys]
