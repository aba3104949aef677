"""The kinds of argument ragexam's public functions take, named once.

Every public function that takes a corpus, a question set, retrievers, chunkers or an executor says so with these
names (``ragexam.run``, ``ragexam.score``, ``ragexam.generate``, :mod:`ragexam.api`)::

    CorpusLike     a corpus file (JSONL, CSV, a BEIR folder), a bundled name ("it_helpdesk") or a loaded Corpus
    QALike         a question-set file, a bundled name or a loaded QASet
    RetrieverLike  a spec ("bm25", "hybrid:bm25+dense", "bm25>rerank:...") or a retriever object
    ChunkerLike    a spec ("paragraphs:400", "sentences", "tokens:256") or a chunker object
    ExecutorLike   None (this process), "local", "ray", "ray://HOST:PORT" or an executor object
    RetrievedLike  a results file of one's own pipeline (JSONL; "FILE>rerank:..." reranks it), a loaded one, or a list

The objects are described by what ragexam calls on them (protocols), so this module sits at the bottom layer and
imports nothing of ragexam: :class:`ragexam.data.schema.Corpus` and :class:`~ragexam.data.schema.QASet`,
:class:`ragexam.retrieval.base.Retriever` and :class:`~ragexam.retrieval.texts.TextRetriever`,
:class:`ragexam.data.chunking.Chunker`, :class:`ragexam.exec.base.Executor` and
:class:`ragexam.data.retrieved.RetrievedFile` are what they describe.
"""

from __future__ import annotations

import os
from dataclasses import fields
from typing import Any, Callable, Collection, Dict, Iterator, List, Mapping, Optional, Protocol, Sequence, Type, TypeVar, Union

__all__ = ["PathLike", "CorpusLike", "QALike", "RetrieverLike", "Retrievers", "ChunkerLike", "Chunkers",
           "ExecutorLike", "CorpusData", "QAData", "RetrieverObject", "TextRetrieverObject", "ChunkerObject",
           "ExecutorObject", "RetrievedFileObject", "RetrievedRef", "RetrievedLike", "JsonValue", "JsonObject",
           "check_keywords", "options_from"]

#: a file or folder
PathLike = Union[str, "os.PathLike[str]"]

#: parsed JSON (``json.loads``): an object, a list, a string, a number, true/false or null -- what a reader
#: receives before it has checked it (a typed record is what it makes of it)
JsonValue = Union[None, bool, int, float, str, List["JsonValue"], Dict[str, "JsonValue"]]
#: a parsed JSON object
JsonObject = Dict[str, JsonValue]


class CorpusData(Protocol):
    """A loaded corpus: its documents (``doc_id``, ``content``) by id (:class:`ragexam.data.schema.Corpus`)."""

    source: Optional[str]

    def __len__(self) -> int: ...

    def __iter__(self) -> Iterator[Any]: ...

    def __contains__(self, doc_id: object) -> bool: ...


class QAData(Protocol):
    """A loaded question set: its questions by ``query_id`` (:class:`ragexam.data.schema.QASet`)."""

    source: Optional[str]

    def __len__(self) -> int: ...

    def __iter__(self) -> Iterator[Any]: ...

    def __contains__(self, query_id: object) -> bool: ...

    def __getitem__(self, query_id: str) -> Any: ...


class RetrieverObject(Protocol):
    """A retriever over ragexam's chunks (:class:`ragexam.retrieval.base.Retriever`)."""

    def index(self, ids: List[str], texts: List[str]) -> Any: ...

    def search(self, queries: List[str], top_n: int) -> Any: ...


class TextRetrieverObject(Protocol):
    """A pipeline that returns its own texts (:class:`ragexam.retrieval.texts.TextRetriever`)."""

    def retrieve(self, queries: List[str], top_n: int, query_ids: Optional[List[str]] = None) -> Any: ...


class ChunkerObject(Protocol):
    """A chunker (:class:`ragexam.data.chunking.Chunker`): ``spec`` names it, ``spans`` cuts one document."""

    @property
    def spec(self) -> str: ...

    def spans(self, content: str) -> Any: ...


class ExecutorObject(Protocol):
    """Where batch work and LLM calls run (:class:`ragexam.exec.base.Executor`)."""

    @property
    def workers(self) -> int: ...

    def map_batches(self, factory: Callable[[], Any], items: Sequence[str], *, batch_size: int,
                    mode: str = "inline") -> Any: ...

    def call_pool(self, fn: Callable[[Any], Any], *, concurrency: int, limit: Optional[object] = None) -> Any: ...


class RetrievedFileObject(Protocol):
    """A loaded results file (:class:`ragexam.data.retrieved.RetrievedFile`): its ``path`` and its pipelines'
    ranked texts (``sets``)."""

    path: str

    @property
    def sets(self) -> Sequence[Any]: ...


#: a corpus file or folder, a bundled name, or a loaded corpus
CorpusLike = Union[PathLike, CorpusData]
#: a question-set file, a bundled name, or a loaded question set
QALike = Union[PathLike, QAData]
#: a retriever spec or object
RetrieverLike = Union[str, RetrieverObject, TextRetrieverObject]
#: one retriever or several (the first is the baseline)
Retrievers = Union[RetrieverLike, Sequence[RetrieverLike]]
#: a chunker spec or object
ChunkerLike = Union[str, ChunkerObject]
#: one chunker or several
Chunkers = Union[ChunkerLike, Sequence[ChunkerLike]]
#: where work runs: this process (``None``), ``"local"``, ``"ray"``, ``"ray://HOST:PORT"`` or an executor object
ExecutorLike = Union[None, str, ExecutorObject]
#: one results file: a path (``FILE>rerank:...`` reranks it) or a loaded file
RetrievedRef = Union[PathLike, RetrievedFileObject]
#: one results file or several
RetrievedLike = Union[RetrievedRef, Sequence[RetrievedRef]]


O = TypeVar("O")


def check_keywords(keywords: Collection[str], takes: Sequence[str], who: str) -> None:
    """A keyword a function does not take is a ``TypeError``, as Python says of a misspelt keyword, with the one it
    looks like and the ones ``who`` takes (for a function that passes its keywords on to a typed option object)."""
    unknown = [k for k in keywords if k not in takes]
    if unknown:
        from difflib import get_close_matches

        like = get_close_matches(unknown[0], list(takes), n=1)
        hint = f" (did you mean {like[0]!r}?)" if like else ""
        raise TypeError(f"{who}() got an unexpected keyword argument {unknown[0]!r}{hint}; it takes "
                        f"{', '.join(takes)}")


def options_from(cls: Type[O], keywords: Mapping[str, object], who: str) -> O:
    """The option object ``cls`` (a dataclass) of the keywords ``who`` received (:func:`check_keywords`)."""
    check_keywords(keywords, [f.name for f in fields(cls)], who)  # type: ignore[arg-type]
    return cls(**keywords)
