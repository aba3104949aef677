"""Relevance judgments (:class:`Qrels`) and ranked lists (:class:`Run`), held as columns.

Both are built from TREC files, plain Python dicts or pandas DataFrames and hold the same
three columns: query id, document id and a value — an integer grade for qrels, a float
score for runs.  Ids are stored dictionary-encoded (integer codes into a vocabulary), which
is what makes evaluation a handful of numpy operations.

Run inputs:

* ``{qid: {docid: score}}`` — scored; ordered by score, ties broken by docid descending
  (trec_eval's rule);
* ``{qid: [docid, ...]}`` — an ordered list, best first, kept in the given order (scores
  ``n, n-1, ..., 1`` are assigned so no tie can reorder it);
* ``{qid: [(docid, score), ...]}`` — scored, like the first form.

A query may map to an empty list/dict: it was asked but nothing was retrieved.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Dict, Iterable, Mapping, Sequence, Tuple, Union

import numpy as np

from ragexam.data.trec import (TrecColumns, read_trec_qrels, read_trec_run, vocab_list, write_trec_qrels,
                               write_trec_run)
from ragexam.errors import InputError

if TYPE_CHECKING:
    import pandas as pd

#: one query's ranking as a dict: ``{docid: score}``, ``[docid, ...]`` (best first) or ``[(docid, score), ...]``
RankedList = Union[Mapping[str, float], Sequence[str], Sequence[Tuple[str, float]]]
#: judgments: a :class:`Qrels`, a TREC qrels file, ``{qid: {docid: grade}}`` or a DataFrame
QrelsLike = Union["Qrels", str, "os.PathLike[str]", Mapping[str, Mapping[str, int]], "pd.DataFrame"]
#: rankings: a :class:`Run`, a TREC run file, ``{qid: RankedList}`` or a DataFrame
RunLike = Union["Run", str, "os.PathLike[str]", Mapping[str, RankedList], "pd.DataFrame"]

__all__ = ["Qrels", "Run", "ContextSizes"]


def _encode(values: list[str]) -> tuple[np.ndarray, list[str]]:
    """Dictionary-encode a list of strings (codes in first-appearance order)."""
    mapping: dict[str, int] = {}
    codes = np.fromiter((mapping.setdefault(v, len(mapping)) for v in values), dtype=np.int64, count=len(values))
    return codes, list(mapping)


def _check_id(value: object, what: str, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise InputError(f"{what} must be a non-empty string, got {value!r} ({type(value).__name__})",
                         source=where, field=what)
    return value


@dataclass(eq=False)
class _Columns:
    cols: TrecColumns
    #: Queries present in the input even if they have no rows (``{qid: {}}`` in a run).
    extra_qids: list[str] = field(default_factory=list)

    @property
    def query_ids(self) -> list[str]:
        """Every query id, in first-appearance order (including queries with no rows)."""
        seen = dict.fromkeys(self.cols.qid_vocab)
        seen.update(dict.fromkeys(self.extra_qids))
        return list(seen)

    def __len__(self) -> int:
        return int(self.cols.qid_codes.size)

    @property
    def source(self) -> str | None:
        """The file these rows were read from (``None`` when built in memory)."""
        return self.cols.source

    def _rows(self):
        q = self.cols.qid_vocab
        d = vocab_list(self.cols.doc_vocab)
        for qc, dc, v in zip(self.cols.qid_codes.tolist(), self.cols.doc_codes.tolist(), self.cols.values.tolist()):
            yield q[qc], d[dc], v


class Qrels(_Columns):
    """Relevance judgments: ``(query id, document id, integer grade)``.

    Grades may be 0 or negative (judged not relevant).  A document is *relevant* for the
    binary metrics when its grade is at least the evaluation's ``relevance_level`` (1 by
    default); NDCG uses the grade itself as gain when it is positive.
    """

    @classmethod
    def from_file(cls, path: str | os.PathLike) -> "Qrels":
        """Read a TREC qrels file (``qid iter docid rel``; see :mod:`ragexam.data.trec`)."""
        return cls(read_trec_qrels(path))

    @classmethod
    def from_dict(cls, qrels: Mapping[str, Mapping[str, int]], *, name: str = "qrels") -> "Qrels":
        """Build from ``{qid: {docid: grade}}`` (grades are integers; bools are rejected)."""
        if isinstance(qrels, Qrels):
            return qrels
        if not isinstance(qrels, Mapping):
            raise InputError(f"expected a mapping {{qid: {{docid: grade}}}}, got {type(qrels).__name__}", source=name)
        rows: list[tuple[str, str, int]] = []
        extra: list[str] = []
        for qid, judged in qrels.items():
            _check_id(qid, "qid", name)
            if not isinstance(judged, Mapping):
                raise InputError(f"judgments of query {qid!r} must be a mapping {{docid: grade}}, "
                                 f"got {type(judged).__name__}", source=name, field=str(qid))
            if not judged:
                extra.append(qid)
            for doc, grade in judged.items():
                _check_id(doc, "docid", name)
                if isinstance(grade, bool) or not isinstance(grade, (int, np.integer)):
                    if isinstance(grade, float) and grade.is_integer():
                        grade = int(grade)
                    else:
                        raise InputError(f"grade of ({qid!r}, {doc!r}) must be an integer, got {grade!r}",
                                         source=name, field="grade")
                rows.append((qid, doc, int(grade)))
        return cls(_columns(rows, np.int64), extra_qids=extra)

    @classmethod
    def from_dataframe(cls, df: "pd.DataFrame", *, qid: str = "query_id", docid: str = "doc_id",
                       grade: str = "relevance") -> "Qrels":
        """Build from a DataFrame with columns ``qid``, ``docid``, ``grade`` (names configurable)."""
        _require_columns(df, (qid, docid, grade), "qrels DataFrame")
        out: dict[str, dict[str, int]] = {}
        for q, d, g in zip(df[qid].astype(str), df[docid].astype(str), df[grade]):
            if d in out.setdefault(q, {}):
                raise InputError(f"document {d!r} is judged twice for query {q!r}", source="qrels DataFrame")
            out[q][d] = g
        return cls.from_dict(out, name="qrels DataFrame")

    def to_dict(self) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = {q: {} for q in self.query_ids}
        for q, d, v in self._rows():
            out[q][d] = int(v)
        return out

    def to_dataframe(self):
        import pandas as pd

        rows = list(self._rows())
        return pd.DataFrame(rows, columns=["query_id", "doc_id", "relevance"])

    def to_trec(self, path: str | os.PathLike) -> None:
        write_trec_qrels(path, self._rows())


class Run(_Columns):
    """Ranked lists: ``(query id, document id, score)``; higher score = better rank."""

    @classmethod
    def from_file(cls, path: str | os.PathLike, qrels: "Qrels | None" = None) -> "Run":
        """Read a TREC run file (``qid Q0 docid rank score tag``; see :mod:`ragexam.data.trec`).  ``qrels``:
        the judgments it will be evaluated with (the run's document codes then extend theirs, when the
        compiled reader read both)."""
        return cls(read_trec_run(path, docs=qrels.cols if qrels is not None else None))

    @classmethod
    def from_dict(cls, run: Mapping[str, RankedList], *, name: str = "run") -> "Run":
        """Build from ``{qid: {docid: score}}``, ``{qid: [docid, ...]}`` or ``{qid: [(docid, score), ...]}``."""
        if isinstance(run, Run):
            return run
        if not isinstance(run, Mapping):
            raise InputError(f"expected a mapping {{qid: {{docid: score}}}} or {{qid: [docid, ...]}}, "
                             f"got {type(run).__name__}", source=name)
        rows: list[tuple[str, str, float]] = []
        extra: list[str] = []
        for qid, ranked in run.items():
            _check_id(qid, "qid", name)
            if isinstance(ranked, Mapping):
                items = list(ranked.items())
            elif isinstance(ranked, (list, tuple)):
                if ranked and all(isinstance(x, (tuple, list)) and len(x) == 2 for x in ranked):
                    items = [(d, s) for d, s in ranked]
                else:
                    n = len(ranked)
                    items = [(d, float(n - i)) for i, d in enumerate(ranked)]
            else:
                raise InputError(f"ranking of query {qid!r} must be a mapping {{docid: score}} or a list of "
                                 f"docids, got {type(ranked).__name__}", source=name, field=str(qid))
            if not items:
                extra.append(qid)
            seen: set[str] = set()
            for doc, score in items:
                _check_id(doc, "docid", name)
                if doc in seen:
                    raise InputError(f"document {doc!r} appears twice in the ranking of query {qid!r}; "
                                     "each document may be retrieved once per query", source=name, field=str(qid))
                seen.add(doc)
                if isinstance(score, bool) or not isinstance(score, (int, float, np.integer, np.floating)):
                    raise InputError(f"score of ({qid!r}, {doc!r}) must be a number, got {score!r}",
                                     source=name, field="score")
                if math.isnan(float(score)):
                    raise InputError(f"score of ({qid!r}, {doc!r}) is NaN", source=name, field="score")
                rows.append((qid, doc, float(score)))
        return cls(_columns(rows, np.float64), extra_qids=extra)

    @classmethod
    def from_dataframe(cls, df: "pd.DataFrame", *, qid: str = "query_id", docid: str = "doc_id",
                       score: str | None = "score", rank: str | None = None) -> "Run":
        """Build from a DataFrame: ``qid``, ``docid`` and either a ``score`` column (higher is
        better) or, with ``score=None, rank="rank"``, a rank column (1 is best)."""
        if score is None and rank is None:
            raise InputError("give either score= or rank= (the column that orders the ranking)",
                             source="run DataFrame")
        key = score if score is not None else rank
        _require_columns(df, (qid, docid, key), "run DataFrame")
        out: dict[str, list[tuple[str, float]]] = {}
        sign = 1.0 if score is not None else -1.0
        for q, d, v in zip(df[qid].astype(str), df[docid].astype(str), df[key]):
            out.setdefault(q, []).append((d, sign * float(v)))
        return cls.from_dict(out, name="run DataFrame")

    def ranked(self) -> dict[str, list[tuple[str, float]]]:
        """``{qid: [(docid, score), ...]}`` in evaluation order (score desc, docid desc)."""
        out: dict[str, list[tuple[str, float]]] = {q: [] for q in self.query_ids}
        for q, d, v in self._rows():
            out[q].append((d, float(v)))
        for q in out:
            out[q].sort(key=lambda x: x[0], reverse=True)
            out[q].sort(key=lambda x: x[1], reverse=True)
        return out

    def to_dict(self) -> dict[str, dict[str, float]]:
        return {q: dict(items) for q, items in self.ranked().items()}

    def to_dataframe(self):
        import pandas as pd

        rows = [(q, d, i + 1, s) for q, items in self.ranked().items() for i, (d, s) in enumerate(items)]
        return pd.DataFrame(rows, columns=["query_id", "doc_id", "rank", "score"])

    def to_trec(self, path: str | os.PathLike, tag: str = "ragexam") -> None:
        rows = ((q, d, i + 1, s) for q, items in self.ranked().items() for i, (d, s) in enumerate(items))
        write_trec_run(path, rows, tag=tag)


def _columns(rows: Sequence[Tuple[str, str, float]], dtype: type) -> TrecColumns:
    """The columns of ``(qid, docid, value)`` rows, ids encoded in first-seen order."""
    qc, qv = _encode([r[0] for r in rows])
    dc, dv = _encode([r[1] for r in rows])
    return TrecColumns(qc, qv, dc, dv, np.asarray([r[2] for r in rows], dtype=dtype))


def _require_columns(df: "pd.DataFrame", cols: Iterable[str], where: str) -> None:
    have = list(getattr(df, "columns", []))
    missing = [c for c in cols if c not in have]
    if missing:
        raise InputError(f"missing column(s) {missing}; the DataFrame has {have}", source=where)


@dataclass
class ContextSizes:
    """The size of every ranked item in one unit, for metrics cut at a context budget (``p@512t``).

    ``unit`` is ``"c"`` (characters) or ``"t"`` (tokens); ``items[query_id][item_id] = (start, size)``:
    ``start`` is the budget spent before the item is read, ``size`` its own size (both >= 0).  Build it
    from ranked lists with :meth:`from_lists` (each start is the sum of the sizes ranked above it).
    ``counter`` names what counted the sizes (e.g. ``"e5"`` for tokens); it goes into the signature.
    """

    unit: str
    items: Dict[str, Dict[str, Tuple[float, float]]]
    counter: str = ""

    def __post_init__(self) -> None:
        if self.unit not in ("c", "t"):
            raise InputError(f"received unit {self.unit!r}; expected 'c' (characters) or 't' (tokens)",
                             source="sizes", field="unit")
        for q, per in self.items.items():
            for d, (start, size) in per.items():
                if not (start >= 0 and size >= 0):  # also rejects NaN
                    raise InputError(f"item {d!r} of query {q!r} has start {start!r} and size {size!r}; "
                                     "expected numbers >= 0", source="sizes", field=f"{q}/{d}")

    @classmethod
    def from_lists(cls, unit: str, lists: Mapping[str, Iterable[Tuple[str, float]]], counter: str = ""
                   ) -> "ContextSizes":
        """From ``{query_id: [(item_id, size), ...]}`` in rank order (best first)."""
        items: Dict[str, Dict[str, Tuple[float, float]]] = {}
        for q, ranked in lists.items():
            per = items[q] = {}
            spent = 0.0
            for d, size in ranked:
                per[d] = (spent, float(size))
                spent += float(size)
        return cls(unit, items, counter)
