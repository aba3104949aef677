"""The records of a question set: documents, questions and chunks (plain dataclasses).

Corpus record (JSONL object or CSV row)::

    doc_id    str, required, unique, no whitespace (ids are written to TREC files)
    content   str, required, not blank
    title     str, optional
    metadata  object, optional; every unknown field is added to it

QA record (JSONL object)::

    query_id          str, required, unique, no whitespace
    question          str, required, not blank
    relevant_doc_ids  list of str, optional (each grade 1)
    relevance         {doc_id: int grade}, optional (graded judgments; grade > 0 is relevant,
                      0 or less is judged non-relevant; takes precedence over relevant_doc_ids)
    evidence          str or list of str, optional: strings that must occur in the source text
                      (matched after :func:`ragexam.data.normalization.normalize`)
    ground_truth      str, optional: the reference answer
    type              str, optional: a free label such as ``meaning`` or ``lexical``
    answerable        bool, optional; default ``true`` when the question has a relevant document
                      (grade > 0) or evidence.  ``false`` marks an out-of-corpus question, which
                      must then have no relevant document and no evidence.  A question with
                      neither judgments nor ``answerable: false`` is an error
                      ("no relevance or evidence; mark answerable: false if out-of-corpus").
    metadata          object, optional; every unknown field is added to it

``null`` for an optional field means "absent".

A :class:`Document` or :class:`Question` made in Python is checked as it is made: a field of the wrong type is an
:class:`~ragexam.errors.InputError` naming the field, what was received and what was expected (a list where a
tuple is expected is taken as the tuple; ``evidence`` given as one string is one evidence string, as in a file;
``relevant_doc_ids`` given as one string is refused, as in a file).  What needs the whole set or the corpus
(judgments present, evidence in the corpus) is checked when the set is read
(:func:`ragexam.data.loaders.load_qa`, ``ragexam.run``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar, Dict, Generic, Iterator, List, Mapping, Optional, Tuple, TypeVar, Union

from ragexam.errors import InputError

__all__ = ["Document", "Corpus", "Question", "QASet", "Chunk", "chunk_id"]

T = TypeVar("T", bound=Union["Document", "Question"])


@dataclass(frozen=True)
class Document:
    """One corpus document.  ``line`` is its 1-based line in the source file (not compared)."""

    doc_id: str
    content: str
    title: Optional[str] = None
    metadata: Dict[str, object] = field(default_factory=dict, compare=False)
    line: Optional[int] = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if type(self.doc_id) is str and type(self.content) is str and (self.title is None or type(self.title) is str) \
                and type(self.metadata) is dict and self.doc_id.strip():
            return  # the usual record (a corpus of millions is made of them): nothing more to look at
        where = _Where("Document", self.doc_id)
        where.ident("doc_id", self.doc_id)
        where.text("content", self.content)
        where.text("title", self.title, optional=True)
        where.mapping("metadata", self.metadata)


def _kind(value: object) -> str:
    """``a str 'VPN'``: what was received, for a message."""
    shown = repr(value)
    return f"{type(value).__name__} {shown if len(shown) <= 40 else shown[:37] + '...'}"


@dataclass(frozen=True)
class _Where:
    """The checks of one record made in Python: each raises an :class:`InputError` at ``Document 'd1'`` /
    ``Question 'q1'`` naming the field."""

    what: str
    ident_value: object

    def fail(self, name: str, value: object, expected: str, fix: str = "") -> None:
        who = f"{self.what} {self.ident_value!r}" if isinstance(self.ident_value, str) else self.what
        raise InputError(f"received {_kind(value)}; expected {expected}{'; ' + fix if fix else ''}.", source=who,
                         field=name)

    def ident(self, name: str, value: object) -> None:
        if not isinstance(value, str) or not value.strip():
            self.fail(name, value, "a non-empty string id")

    def text(self, name: str, value: object, *, optional: bool = False) -> None:
        if not (isinstance(value, str) or (optional and value is None)):
            self.fail(name, value, "a string" + (" or None" if optional else ""))

    def mapping(self, name: str, value: object) -> None:
        if not isinstance(value, Mapping):
            self.fail(name, value, "a dict")

    def strings(self, name: str, value: object, example: str) -> Tuple[str, ...]:
        """``value`` (a tuple or list of strings) as a tuple."""
        if isinstance(value, (tuple, list)) and all(isinstance(x, str) for x in value):
            return tuple(value)
        fix = f"write {name}=({value!r},) for one" if isinstance(value, str) else f"e.g. {name}={example}"
        self.fail(name, value, "a tuple of strings", fix)
        return ()


class _Keyed(Generic[T]):
    """What :class:`Corpus` and :class:`QASet` share: their items in order, looked up by a unique id (the field
    ``_key`` of an item); a repeated id is an :class:`~ragexam.errors.InputError` naming its line."""

    _key: ClassVar[str] = ""
    source: Optional[str]

    def _items(self) -> List[T]:
        raise NotImplementedError

    def __post_init__(self) -> None:
        self._by_id: Dict[str, T] = {}
        for item in self._items():
            ident = getattr(item, self._key)
            if ident in self._by_id:
                from ragexam.errors import InputError

                raise InputError(f"duplicate {self._key} {ident!r}", source=self.source, line=item.line,
                                 field=self._key)
            self._by_id[ident] = item

    def __len__(self) -> int:
        return len(self._items())

    def __iter__(self) -> Iterator[T]:
        return iter(self._items())

    def __contains__(self, ident: object) -> bool:
        return ident in self._by_id

    def __getitem__(self, ident: str) -> T:
        return self._by_id[ident]

    def get(self, ident: str) -> Optional[T]:
        return self._by_id.get(ident)


@dataclass
class Corpus(_Keyed[Document]):
    """An ordered collection of documents with unique ids; ``source`` is the file it came from."""

    documents: List[Document]
    source: Optional[str] = None
    _key: ClassVar[str] = "doc_id"

    def _items(self) -> List[Document]:
        return self.documents

    @property
    def doc_ids(self) -> List[str]:
        return [d.doc_id for d in self.documents]


@dataclass(frozen=True)
class Question:
    """One exam question with its judgments (see the module docstring for the fields)."""

    query_id: str
    question: str
    relevant_doc_ids: Tuple[str, ...] = ()
    relevance: Mapping[str, int] = field(default_factory=dict)
    evidence: Tuple[str, ...] = ()
    ground_truth: Optional[str] = None
    type: Optional[str] = None
    answerable: bool = True
    metadata: Dict[str, object] = field(default_factory=dict, compare=False)
    line: Optional[int] = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        where = _Where("Question", self.query_id)
        where.ident("query_id", self.query_id)
        where.text("question", self.question)
        object.__setattr__(self, "relevant_doc_ids",
                           where.strings("relevant_doc_ids", self.relevant_doc_ids, "('hd_01', 'hd_07')"))
        # one string is one evidence string, as in a question file
        evidence = (self.evidence,) if isinstance(self.evidence, str) else self.evidence
        object.__setattr__(self, "evidence", where.strings("evidence", evidence, "('a quote of the source text',)"))
        if not (isinstance(self.relevance, Mapping) and all(
                isinstance(d, str) and isinstance(g, int) and not isinstance(g, bool)
                for d, g in self.relevance.items())):
            where.fail("relevance", self.relevance, "a dict of document ids to integer grades",
                       "e.g. relevance={'hd_01': 2, 'hd_07': 1}")
        where.text("ground_truth", self.ground_truth, optional=True)
        where.text("type", self.type, optional=True)
        if not isinstance(self.answerable, bool):
            where.fail("answerable", self.answerable, "True or False")
        where.mapping("metadata", self.metadata)

    @property
    def grades(self) -> Dict[str, int]:
        """Document grades: ``relevance`` if given, else 1 for each of ``relevant_doc_ids``."""
        if self.relevance:
            return dict(self.relevance)
        return {d: 1 for d in self.relevant_doc_ids}

    @property
    def relevant_docs(self) -> Tuple[str, ...]:
        """Documents with grade > 0, in the order given."""
        return tuple(d for d, g in self.grades.items() if g > 0)

    @property
    def evidence_units(self) -> Dict[str, str]:
        """``{"ev1": evidence[0], "ev2": evidence[1], ...}`` (the evidence-mode relevance units)."""
        return {f"ev{i}": e for i, e in enumerate(self.evidence, 1)}


@dataclass
class QASet(_Keyed[Question]):
    """An ordered list of questions with unique ids; ``source`` is the file it came from."""

    questions: List[Question]
    source: Optional[str] = None
    #: what the checks against the corpus warned of, one line per kind (``ragexam validate`` lists each question)
    warnings: List[str] = field(default_factory=list, compare=False)
    _key: ClassVar[str] = "query_id"

    def _items(self) -> List[Question]:
        return self.questions

    def type_counts(self) -> Dict[str, int]:
        """Questions per ``type`` label (``"(none)"`` for questions without one), sorted by label."""
        counts: Dict[str, int] = {}
        for q in self.questions:
            key = q.type if q.type is not None else "(none)"
            counts[key] = counts.get(key, 0) + 1
        return dict(sorted(counts.items()))


@dataclass(frozen=True)
class Chunk:
    """A span of one document: ``content[start:end] == text`` (character offsets, end exclusive).

    ``chunk_id`` is ``f"{doc_id}#{index}"`` with ``index`` the 0-based position of the chunk in
    its document under one chunker; it is stable for a given document and chunker spec.
    """

    chunk_id: str
    doc_id: str
    start: int
    end: int
    text: str


def chunk_id(doc_id: str, index: int) -> str:
    """The readable, stable id of the ``index``-th (0-based) chunk of ``doc_id``: ``hd_01#3``."""
    return f"{doc_id}#{index}"

