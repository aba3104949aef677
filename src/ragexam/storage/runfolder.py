"""The run folder: the one reader and writer of what ``ragexam run --out`` and ``ragexam score --out``
write (docs/run-format.md), and the typed rows every command reads them into.

A **run folder** (format ``ragexam-run/3``; ``ragexam-run/1`` and ``/2`` folders are read too)::

    summary.json        everything printed, as data (written last: its presence means the rest is complete)
    per_question.csv    one row per question x pipeline (:class:`RunRow`)
    chunks.jsonl        the texts the run saw: every chunk (or, for a pipeline that returned texts, every
                        retrieved text) in some question's top_ids (from /2 on; retrieved texts from /3 on)
    runs/               the TREC files of each pipeline (written by ragexam.analysis.exam.run, format of data.trec)

A **score folder** (format ``ragexam-score/2``; ``/1`` is read too)::

    score.json          everything ``ragexam score`` printed, as data
    per_answer.csv      one row per answer x pipeline (verdicts, judge results, text metrics)
    judgments.jsonl     every judge reply (with a judge)

Rows are **typed** the same way whichever way they arrive (strings from a CSV, dicts a command built
in memory, JSON from the history) by :func:`coerce_rows`:

==============  ===============================================================
column          type in :class:`RunRow`
==============  ===============================================================
pipeline        str (required)
query_id        str (required)
retriever       str or None
chunker         str or None
type            str or None (empty cell -> None)
answerable      bool: ``true``/``false``, ``1``/``0``, ``yes``/``no`` (any case); empty -> True
first_rank      int >= 1, or None (empty cell: not found within ``depth``)
unit_ranks      dict ``{unit_id: int or None}`` (a JSON object in the CSV)
n_units         int or None
top_ids         list of str (a JSON list in the CSV)
stats           dict ``{metric: [numbers]}``: a segment's summable statistics for corpus-level
                metrics (score rows: ``bleu``, ``chrf``), empty for retrieval runs
unretrieved     str or None: why the pipeline returned nothing for the question (``"timeout: ..."``,
                ``"missing: ..."``); graded as a miss (from ragexam-run/3)
evidence_split  :class:`SplitCell` or None (a JSON object in the CSV): the miss was caused by the chunking (the top
                ``k`` holds part of an evidence string, no chunk holds one whole): ``unit_id``, ``k``,
                ``rank`` and ``chunk_id`` of the chunk holding a part, ``part`` (start, end, middle),
                ``chars`` of its ``length`` characters; written when some row has one
<metric>        float, or None for an empty cell (not scored, or not judged)
==============  ===============================================================

Every other column is a metric column.  A malformed cell raises
:class:`ragexam.errors.InputError` naming the file, line and column.  A folder's summary is read typed: a
:class:`~ragexam.storage.summary.RunSummary` or a :class:`~ragexam.storage.score_summary.ScoreSummary`.  This module
imports nothing of ragexam but :mod:`ragexam.errors`, the storage records and :mod:`ragexam.storage.atomic` (every
file is written whole or not at all): it stores and reads, it does not compute.
"""

from __future__ import annotations

import csv
import json
import math
import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple, Union

from ragexam.errors import InputError
from ragexam.fmt import json_kind
from ragexam.storage import safejson
from ragexam.storage.atomic import file_writer, write_file
from ragexam.storage.readback import parse_json, read_json
from ragexam.storage.score_summary import SCORE_FORMAT, ScoreSummary
from ragexam.storage.summary import DEFAULT_MISS_K, RunSummary, Summary, SummaryLike, read_summary

__all__ = ["RUN_FORMAT", "RUN_FORMATS", "SCORE_FORMAT", "SCORE_FORMATS", "FIXED_COLUMNS", "RunRow", "SplitCell",
           "ChunkRecord",
           "RunData", "coerce_rows", "metric_columns", "read_run_folder", "read_score_folder", "read_folder",
           "write_run_folder", "write_score_folder", "write_text", "check_summary", "is_score", "miss_cutoff",
           "headline_metric", "dataset_label"]

#: The format ``ragexam run --out`` writes, and the ones this module reads.
RUN_FORMAT = "ragexam-run/3"
RUN_FORMATS = ("ragexam-run/1", "ragexam-run/2", "ragexam-run/3")
#: The formats of ``ragexam score --out`` this module reads (it writes :data:`SCORE_FORMAT`).
SCORE_FORMATS = ("ragexam-score/1", "ragexam-score/2")

#: The per_question.csv columns before the metric columns, in the documented order; ``top_ids``
#: (and ``unretrieved``, ``stats`` when a row has them) come after the metrics.
FIXED_COLUMNS = ("pipeline", "retriever", "chunker", "query_id", "type", "answerable", "first_rank",
                 "unit_ranks", "n_units")
_NOT_METRICS = frozenset(FIXED_COLUMNS + ("top_ids", "unretrieved", "evidence_split", "stats"))

_TRUE = {"true", "1", "yes", "t", "y"}
_FALSE = {"false", "0", "no", "f", "n"}

PathLike = Union[str, "os.PathLike[str]"]
#: a cell as it arrives: a CSV string, a JSON value, or a value a command typed
Cell = object


# --- typed rows --------------------------------------------------------------------------------


@dataclass(frozen=True)
class SplitCell:
    """The ``evidence_split`` cell: the miss was caused by the chunking.  Evidence string ``unit_id`` is held whole
    by no chunk of the top ``k``; the chunk ``chunk_id`` at ``rank`` holds its ``part`` (``start``, ``end`` or
    ``middle``): ``chars`` of its ``length`` (normalized) characters."""

    unit_id: str
    k: int
    rank: int
    chunk_id: str
    part: str
    chars: int
    length: int

    def to_dict(self) -> Dict[str, Any]:
        return asdict(self)


def _as_split(v: Cell, source: str, line: Optional[int]) -> Optional[SplitCell]:
    if isinstance(v, SplitCell):
        return v
    raw = _as_json(v, dict, source, line, "evidence_split")
    if not raw:
        return None
    kinds = {"unit_id": str, "k": int, "rank": int, "chunk_id": str, "part": str, "chars": int, "length": int}
    for key, kind in kinds.items():
        value = raw.get(key)
        if not isinstance(value, kind) or isinstance(value, bool):
            raise _fail(f"received {key} {value!r}; expected {'an integer' if kind is int else 'a string'} (the "
                        "object holds unit_id, k, rank, chunk_id, part, chars, length).", source, line,
                        f"evidence_split.{key}")
    return SplitCell(**{key: raw[key] for key in kinds})


@dataclass(frozen=True, eq=False)
class RunRow(Mapping):
    """One question x pipeline of a run (or one answer x pipeline of a score), typed.

    Attributes are the columns (see the module docstring); ``metrics`` holds the metric columns
    and ``stats`` the summable statistics of corpus-level metrics.  A row is also a read-only
    mapping of column -> value (``row["hit@5"]``, ``row.get("answerable", True)``, ``dict(row)``),
    in the column order of per_question.csv.  It equals another row, or a mapping with the same
    columns and values.
    """

    pipeline: str
    query_id: str
    retriever: Optional[str] = None
    chunker: Optional[str] = None
    type: Optional[str] = None
    answerable: bool = True
    first_rank: Optional[int] = None
    unit_ranks: Dict[str, Optional[int]] = field(default_factory=dict)
    n_units: Optional[int] = None
    top_ids: List[str] = field(default_factory=list)
    metrics: Dict[str, Optional[float]] = field(default_factory=dict)
    stats: Dict[str, List[float]] = field(default_factory=dict)
    unretrieved: Optional[str] = None
    evidence_split: Optional[SplitCell] = None

    def _keys(self) -> List[str]:
        return (list(FIXED_COLUMNS) + list(self.metrics) + ["top_ids"]
                + (["unretrieved"] if self.unretrieved is not None else [])
                + (["evidence_split"] if self.evidence_split is not None else []) + (["stats"] if self.stats else []))

    def __getitem__(self, key: str) -> Any:
        if key in self.metrics:
            return self.metrics[key]
        if key in FIXED_COLUMNS or key == "top_ids" or (key == "stats" and self.stats) or \
                (key == "unretrieved" and self.unretrieved is not None) or \
                (key == "evidence_split" and self.evidence_split is not None):
            return getattr(self, key)
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys())

    def __len__(self) -> int:
        return len(self._keys())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, RunRow):
            return self.to_dict() == other.to_dict()
        if isinstance(other, Mapping):
            return self.to_dict() == dict(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def value(self, metric: str) -> Optional[float]:
        """The row's value of ``metric`` (``None`` when empty or absent)."""
        return self.metrics.get(metric)

    def to_dict(self) -> Dict[str, Any]:
        """A JSON-ready dict of the columns, in per_question.csv order."""
        out: Dict[str, Any] = {c: getattr(self, c) for c in FIXED_COLUMNS}
        out["unit_ranks"] = dict(self.unit_ranks)
        out.update(self.metrics)
        out["top_ids"] = list(self.top_ids)
        if self.unretrieved is not None:
            out["unretrieved"] = self.unretrieved
        if self.evidence_split is not None:
            out["evidence_split"] = self.evidence_split.to_dict()
        if self.stats:
            out["stats"] = {k: list(v) for k, v in self.stats.items()}
        return out


def _fail(msg: str, source: str, line: Optional[int], fld: Optional[str]) -> InputError:
    return InputError(msg, source=source, line=line, field=fld)


def _as_str(v: Cell) -> Optional[str]:
    if v is None:
        return None
    if isinstance(v, float) and math.isnan(v):
        return None
    s = str(v)
    return s if s != "" else None


def _as_bool(v: Cell, source: str, line: Optional[int], fld: str) -> bool:
    if isinstance(v, bool):
        return v
    s = _as_str(v)
    if s is None:
        return True
    if s.strip().lower() in _TRUE:
        return True
    if s.strip().lower() in _FALSE:
        return False
    raise _fail(f"received {s!r}; expected true or false.", source, line, fld)


def _parse_cell(v: Cell, parse: Callable[[str], Any], expected: str, source: str, line: Optional[int],
                fld: str) -> Any:
    """``parse`` of a text cell (stripped); ``None`` for an empty one; a cell ``parse`` rejects is an error
    naming it and what was ``expected``."""
    s = str(v).strip()
    if s == "":
        return None
    try:
        return parse(s)
    except ValueError:
        raise _fail(f"received {s!r}; expected {expected} or an empty cell.", source, line, fld) from None


def _as_int(v: Cell, source: str, line: Optional[int], fld: str, *, minimum: int = 0) -> Optional[int]:
    if isinstance(v, bool):
        raise _fail(f"received {v!r}; expected an integer.", source, line, fld)
    if v is None:
        return None
    if isinstance(v, int):
        out = v
    elif isinstance(v, float):
        if math.isnan(v):
            return None
        if not v.is_integer():
            raise _fail(f"received {v!r}; expected an integer.", source, line, fld)
        out = int(v)
    else:
        out = _parse_cell(v, lambda s: int(float(s)) if s.endswith(".0") else int(s), "an integer", source, line, fld)
        if out is None:
            return None
    if out < minimum:
        raise _fail(f"received {out}; expected an integer >= {minimum}.", source, line, fld)
    return out


def _as_float(v: Cell, source: str, line: Optional[int], fld: str) -> Optional[float]:
    if v is None:
        return None
    if isinstance(v, bool):
        raise _fail(f"received {v!r}; expected a number or an empty cell.", source, line, fld)
    if isinstance(v, (int, float)):
        x = float(v)
    else:
        x = _parse_cell(v, float, "a number", source, line, fld)
        if x is None:
            return None
    if math.isnan(x):
        return None  # pandas reads an empty cell as NaN; the CSV contract writes empty cells
    if not math.isfinite(x):
        raise _fail(f"received {x!r}; expected a finite number.", source, line, fld)
    return x


def _as_json(v: Cell, kind: type, source: str, line: Optional[int], fld: str) -> Any:
    if isinstance(v, kind):
        return v
    if kind is list and isinstance(v, tuple):
        return list(v)
    if kind is dict and isinstance(v, Mapping):
        return dict(v)
    s = _as_str(v)
    if s is None:
        return kind()
    try:
        out = safejson.loads(s)
    except safejson.TooDeep as exc:
        raise _fail(f"received a value {exc}.", source, line, fld) from None
    except json.JSONDecodeError as exc:
        raise _fail(f"received {s[:60]!r}, which is not JSON ({safejson.describe_error(exc)}); expected a JSON "
                    f"{'object' if kind is dict else 'list'}.", source, line, fld) from None
    if not isinstance(out, kind):
        raise _fail(f"received {type(out).__name__} {s[:60]!r}; expected a JSON "
                    f"{'object' if kind is dict else 'list'}.", source, line, fld)
    return out


def _as_stats(v: Cell, source: str, line: Optional[int]) -> Dict[str, List[float]]:
    raw = _as_json(v, dict, source, line, "stats")
    out: Dict[str, List[float]] = {}
    for name, values in raw.items():
        if not isinstance(values, (list, tuple)):
            raise _fail(f"received {values!r} for {name!r}; expected a list of numbers.", source, line, "stats")
        nums = [_as_float(x, source, line, f"stats[{name}]") for x in values]
        if any(x is None for x in nums):
            raise _fail(f"{name!r} holds an empty value; expected numbers only.", source, line, "stats")
        out[str(name)] = nums  # type: ignore[assignment]
    return out


def coerce_rows(rows: Iterable[Mapping[str, Any]], *, source: str = "per_question",
                first_line: int = 2) -> List[RunRow]:
    """:class:`RunRow` copies of per-question rows (see the module docstring for the types).

    ``source`` and ``first_line`` (the line of the first row; 2 for a CSV with a header) only
    name the place in error messages.  Rows that are already :class:`RunRow` pass through.
    """
    out: List[RunRow] = []
    for i, row in enumerate(rows):
        if isinstance(row, RunRow):
            out.append(row)
            continue
        line = first_line + i
        if not isinstance(row, Mapping):
            raise _fail(f"received {type(row).__name__}; expected a mapping of column -> value.",
                        source, line, None)
        ident = {}
        for col in ("pipeline", "query_id"):
            val = _as_str(row.get(col))
            if val is None:
                raise _fail("is missing or empty; expected a non-empty string.", source, line, col)
            ident[col] = val
        ranks = _as_json(row.get("unit_ranks"), dict, source, line, "unit_ranks")
        metrics = {str(col): _as_float(val, source, line, str(col)) for col, val in row.items()
                   if col not in _NOT_METRICS}
        out.append(RunRow(
            pipeline=ident["pipeline"], query_id=ident["query_id"], retriever=_as_str(row.get("retriever")),
            chunker=_as_str(row.get("chunker")), type=_as_str(row.get("type")),
            answerable=_as_bool(row.get("answerable"), source, line, "answerable"),
            first_rank=_as_int(row.get("first_rank"), source, line, "first_rank", minimum=1),
            unit_ranks={str(u): _as_int(r, source, line, f"unit_ranks[{u}]", minimum=1) for u, r in ranks.items()},
            n_units=_as_int(row.get("n_units"), source, line, "n_units"),
            top_ids=[str(x) for x in _as_json(row.get("top_ids"), list, source, line, "top_ids")],
            metrics=metrics, stats=_as_stats(row.get("stats"), source, line),
            unretrieved=_as_str(row.get("unretrieved")),
            evidence_split=_as_split(row.get("evidence_split"), source, line)))
    return out


def metric_columns(rows: Sequence[Mapping[str, Any]]) -> List[str]:
    """The metric columns of rows, in first-seen order."""
    seen: Dict[str, None] = {}
    for r in rows:
        names = r.metrics if isinstance(r, RunRow) else [c for c in r if c not in _NOT_METRICS]
        for col in names:
            seen.setdefault(col, None)
    return list(seen)


# --- chunks ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ChunkRecord:
    """One text a run saw.  Either a chunk of a ragexam chunker (``chunker`` set, ``text`` is the document's
    content ``[start:end]``) or a text a pipeline returned itself (``pipeline`` set: a pipeline that chunks
    on its own, e.g. a results file or a search service; ``chunk_id`` is the key in that pipeline's
    ``top_ids``, ``id`` the system's own id when it gave one, ``doc_id`` ``None`` when unknown, no offsets)."""

    chunker: Optional[str]
    chunk_id: str
    doc_id: Optional[str]
    start: Optional[int]
    end: Optional[int]
    text: str
    pipeline: Optional[str] = None
    id: Optional[str] = None

    def to_dict(self) -> Dict[str, Any]:
        if self.pipeline is not None:
            return {"pipeline": self.pipeline, "chunk_id": self.chunk_id, "id": self.id, "doc_id": self.doc_id,
                    "text": self.text}
        return {"chunker": self.chunker, "chunk_id": self.chunk_id, "doc_id": self.doc_id, "start": self.start,
                "end": self.end, "text": self.text}


# --- a run in memory -----------------------------------------------------------------------------


@dataclass
class RunData:
    """One run (or score): its summary, its typed rows and, from a ``ragexam-run/2`` folder on, the chunk texts it
    saw (``chunks[chunker][chunk_id]``) and, from ``/3`` on, the texts that pipelines which chunk on their own
    returned (``texts[pipeline][chunk_id]``).

    ``summary`` is a :class:`~ragexam.storage.summary.RunSummary` for a run and a
    :class:`~ragexam.storage.score_summary.ScoreSummary` for a score (a JSON object given is typed here).
    ``source`` says where it came from (a folder, or ``history:<id>``).  Unpacks as ``summary, per_question = run``.
    """

    summary: Summary
    per_question: List[RunRow] = field(default_factory=list)
    source: str = ""
    chunks: Optional[Dict[str, Dict[str, ChunkRecord]]] = None
    texts: Dict[str, Dict[str, ChunkRecord]] = field(default_factory=dict)
    _index: Optional[Dict[Tuple[str, str], RunRow]] = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.summary = read_summary(self.summary, source=self.source or "summary")
        self.per_question = coerce_rows(self.per_question, source=self.source or "per_question")
        seen: Dict[Tuple[str, str], int] = {}
        for i, r in enumerate(self.per_question):
            key = (r.pipeline, r.query_id)
            if key in seen:
                raise InputError(f"rows {seen[key] + 1} and {i + 1} are both question {r.query_id!r} of pipeline "
                                 f"{r.pipeline!r}; expected one row per question and pipeline.",
                                 source=self.source or "per_question", field="query_id")
            seen[key] = i

    def __iter__(self) -> Iterator[Any]:
        yield self.summary
        yield self.per_question

    @property
    def run(self) -> Optional[RunSummary]:
        """The :class:`~ragexam.storage.summary.RunSummary` of a run (``None`` for a score)."""
        return self.summary if isinstance(self.summary, RunSummary) else None

    @property
    def score(self) -> Optional[ScoreSummary]:
        """The :class:`~ragexam.storage.score_summary.ScoreSummary` of a score (``None`` for a run)."""
        return self.summary if isinstance(self.summary, ScoreSummary) else None

    @property
    def run_id(self) -> str:
        return self.summary.run_id or ""

    @property
    def format(self) -> str:
        return self.summary.format

    @property
    def is_score(self) -> bool:
        """True for a score (a ``ragexam score`` record or folder), False for a retrieval run."""
        return self.summary.is_score

    @property
    def config(self) -> Dict[str, Any]:
        """The settings (a run's ``config`` block, a score's ``settings``) as a JSON object."""
        return self.summary.used_settings

    @property
    def dataset(self) -> Dict[str, Any]:
        """The ``dataset`` block as a JSON object."""
        return self.summary.dataset.to_dict()

    @property
    def pipelines(self) -> List[str]:
        """Pipeline names in summary order (the first is the baseline), then any only the rows name."""
        names = list(self.summary.pipeline_names) or list(self.summary.results)
        for r in self.per_question:
            if r.pipeline not in names:
                names.append(r.pipeline)
        return names

    def rows(self, pipeline: str) -> List[RunRow]:
        """The rows of ``pipeline``, in file order."""
        return [r for r in self.per_question if r.pipeline == pipeline]

    def row(self, pipeline: str, query_id: str) -> Optional[RunRow]:
        """The row of (``pipeline``, ``query_id``), or None."""
        if self._index is None or len(self._index) != len(self.per_question):  # rows are unique (see above)
            self._index = {(r.pipeline, r.query_id): r for r in self.per_question}
        return self._index.get((pipeline, query_id))

    def has_pipeline(self, pipeline: str) -> bool:
        return any(r.pipeline == pipeline for r in self.per_question)

    @property
    def miss_k(self) -> Optional[int]:
        """The missed-question cutoff of a run (``config.miss_k``), if recorded."""
        return self.run.config.miss_k if self.run is not None else self.summary.miss_k

    @property
    def corpus(self) -> Optional[str]:
        v = self.config.get("corpus") or self.dataset.get("corpus")
        return v if isinstance(v, str) else None

    @property
    def qa(self) -> Optional[str]:
        v = self.config.get("qa") or self.dataset.get("qa")
        return v if isinstance(v, str) else None

    def chunker_of(self, pipeline: str) -> Optional[str]:
        """The chunker spec of ``pipeline`` (from ``summary.pipelines``, else its rows' ``chunker``); ``None`` for
        a pipeline that chunks on its own (``kind`` ``texts``: a results file, a service, a framework)."""
        infos = self.run.pipelines if self.run is not None else []
        for p in infos:
            if p.name == pipeline:
                if p.chunker is not None:
                    return p.chunker
                if p.kind == "texts":
                    return None
        specs = {r.chunker for r in self.rows(pipeline)}
        if specs == {None} and pipeline in self.texts:
            return None
        if len(specs) != 1 or None in specs:
            raise InputError(f"pipeline {pipeline!r} has chunker column values {sorted(map(str, specs))}; "
                             "expected one chunker spec", source=self.source, field="chunker")
        return str(specs.pop())

    @property
    def has_chunk_texts(self) -> bool:
        """True when the run stored the chunk texts it saw (``ragexam-run/2`` and later)."""
        return self.chunks is not None

    def contexts(self, pipeline: str, k: int) -> Dict[str, List[Tuple[str, str]]]:
        """``{query_id: [(chunk_id, text), ...]}``: the stored texts of the top ``k`` chunks of
        ``pipeline`` for each question (``k`` <= the 10 ids kept in ``top_ids``).

        :raises InputError: an unknown pipeline; a run without stored chunk texts (``ragexam-run/1``);
            a chunk id missing from ``chunks.jsonl``.
        """
        rows = self.rows(pipeline)
        if not rows:
            raise InputError(f"no pipeline {pipeline!r} in the run; it has: {', '.join(self.pipelines)}",
                             source=self.source, field="pipeline")
        if self.chunks is None:
            raise InputError(f"the run (format {self.format!r}) does not store its chunk texts (chunks.jsonl "
                             f"came with ragexam-run/2); re-run `ragexam run --out`, or rebuild them from the "
                             "corpus", source=self.source, field="chunks")
        spec = self.chunker_of(pipeline)
        texts = self.chunks.get(spec, {}) if spec is not None else self.texts.get(pipeline, {})
        out: Dict[str, List[Tuple[str, str]]] = {}
        for r in rows:
            pairs = []
            for cid in r.top_ids[:k]:
                c = texts.get(cid)
                if c is None:
                    what = f"chunk {cid!r} of chunker {spec!r}" if spec is not None else f"text {cid!r}"
                    raise InputError(f"{what} (question {r.query_id}, pipeline {pipeline!r}) is not in chunks.jsonl; "
                                     "the folder is incomplete",
                                     source=self.source, field="chunks")
                pairs.append((cid, c.text))
            out[r.query_id] = pairs
        return out


# --- summaries ---------------------------------------------------------------------------------


def is_score(summary: SummaryLike) -> bool:
    """True when ``summary`` is a score: a :class:`~ragexam.storage.score_summary.ScoreSummary`, or a JSON object of
    ``kind`` score or a ``ragexam-score/*`` format."""
    if isinstance(summary, (RunSummary, ScoreSummary)):
        return summary.is_score
    return summary.get("kind") == "score" or str(summary.get("format", "")).startswith("ragexam-score")


def check_summary(summary: SummaryLike, source: str) -> Dict[str, Any]:
    """``summary`` (a JSON object; a typed summary as its JSON object) after checking it is a run or score
    summary this ragexam reads (a format of :data:`RUN_FORMATS` or :data:`SCORE_FORMATS` and a ``results``
    object); else InputError."""
    if isinstance(summary, (RunSummary, ScoreSummary)):
        summary = summary.to_dict()
    if not isinstance(summary, dict):
        raise InputError(f"received {json_kind(summary)}; expected the object that "
                         f"`ragexam run --out DIR` writes (format {RUN_FORMAT}).", source=source)
    fmt = summary.get("format")
    if not isinstance(fmt, str) or not fmt.startswith("ragexam-"):
        raise InputError(f"received format {fmt!r}; expected {RUN_FORMAT!r} (or {RUN_FORMATS[0]!r}). Is this "
                         "the summary.json of `ragexam run --out DIR`?", source=source, field="format")
    major = fmt.rsplit("/", 1)[-1].split(".")[0]
    if major not in ("1", "2", "3"):
        raise InputError(f"received format {fmt!r}, a version this ragexam does not read; expected "
                         "version 1, 2 or 3. Fix: upgrade ragexam.", source=source, field="format")
    results = summary.get("results")
    if not isinstance(results, dict):
        raise InputError(f"received {type(results).__name__}; expected an object "
                         "{pipeline: {metrics, ci95, ...}}.", source=source, field="results")
    return summary


def miss_cutoff(summary: SummaryLike, default: Optional[int] = None) -> int:
    """The missed-cutoff ``k`` of a run (a summary or its JSON object): ``config.miss_k``, else the ``k`` of its
    missed entries, else ``default`` (:data:`ragexam.storage.summary.DEFAULT_MISS_K`); a score has none of its own
    (``default``)."""
    k = read_summary(summary).miss_k
    return k if k is not None else (DEFAULT_MISS_K if default is None else default)


def headline_metric(summary: SummaryLike) -> Optional[str]:
    """The metric shown as a run's (or score's) headline: ``hit@<miss cutoff>`` when present, else the first."""
    return read_summary(summary).headline_metric


def dataset_label(summary: SummaryLike) -> str:
    """``corpus`` (or ``corpus / qa`` when they differ) of a run or score, for listings."""
    return read_summary(summary).dataset_label


# --- reading -----------------------------------------------------------------------------------


def _read_json(path: Path) -> Any:
    return read_json(path)


def _read_csv(path: Path, need: Sequence[str]) -> Tuple[List[str], List[Dict[str, str]]]:
    try:
        with path.open(encoding="utf-8", newline="") as fh:
            reader = csv.DictReader(fh)
            header = list(reader.fieldnames or [])
            missing = [c for c in need if c not in header]
            if missing:
                raise InputError(f"the header lacks {', '.join(missing)}; expected the columns of "
                                 "docs/run-format.md.", source=str(path), line=1)
            return header, list(reader)
    except UnicodeDecodeError as exc:
        raise InputError(f"is not valid UTF-8 (byte {exc.start}).", source=str(path)) from None


def _read_chunks(path: Path) -> Tuple[Dict[str, Dict[str, ChunkRecord]], Dict[str, Dict[str, ChunkRecord]]]:
    """``(chunks[chunker][chunk_id], texts[pipeline][chunk_id])`` of a chunks.jsonl file."""
    out: Dict[str, Dict[str, ChunkRecord]] = {}
    texts: Dict[str, Dict[str, ChunkRecord]] = {}
    src = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"is not valid UTF-8 (byte {exc.start}).", source=src) from None
    for line, raw in enumerate(text.split("\n"), 1):
        if not raw.strip():
            continue
        obj = parse_json(raw, source=src, line=line, fix="expected one chunk object per line")
        if not isinstance(obj, dict):
            raise InputError(f"received {json_kind(obj)}; expected an object.", source=src, line=line)
        if obj.get("pipeline") is not None and obj.get("chunker") is None:
            for key in ("pipeline", "chunk_id", "text"):
                if not isinstance(obj.get(key), str):
                    raise InputError(f"received {obj.get(key)!r}; expected a string.", source=src, line=line,
                                     field=key)
            for key in ("doc_id", "id"):
                if obj.get(key) is not None and not isinstance(obj[key], str):
                    raise InputError(f"received {obj[key]!r}; expected a string or null.", source=src, line=line,
                                     field=key)
            rec = ChunkRecord(None, obj["chunk_id"], obj.get("doc_id"), None, None, obj["text"], obj["pipeline"],
                              obj.get("id"))
            by_id = texts.setdefault(obj["pipeline"], {})
            where = f"text {rec.chunk_id!r} of pipeline {rec.pipeline!r}"
        else:
            for key, kind in (("chunker", str), ("chunk_id", str), ("doc_id", str), ("text", str), ("start", int),
                              ("end", int)):
                v = obj.get(key)
                if not isinstance(v, kind) or isinstance(v, bool):
                    raise InputError(f"received {v!r}; expected a{'n integer' if kind is int else ' string'}.",
                                     source=src, line=line, field=key)
            rec = ChunkRecord(obj["chunker"], obj["chunk_id"], obj["doc_id"], obj["start"], obj["end"], obj["text"])
            by_id = out.setdefault(obj["chunker"], {})
            where = f"chunk {rec.chunk_id!r} of chunker {rec.chunker!r}"
        if rec.chunk_id in by_id:
            raise InputError(f"{where} appears twice; expected each once.", source=src, line=line, field="chunk_id")
        by_id[rec.chunk_id] = rec
    return out, texts


def _folder_format(summary: object, formats: Sequence[str], spath: Path) -> str:
    """The ``format`` of a folder's summary, one of ``formats`` (minor versions allowed); else InputError."""
    fmt = summary.get("format") if isinstance(summary, dict) else None
    if not isinstance(fmt, str) or fmt.split(".")[0] not in formats:
        raise InputError(f"received format {fmt!r}; expected one of {', '.join(formats)}.", source=str(spath),
                         field="format")
    return fmt


def read_run_folder(path: PathLike) -> RunData:
    """Read a ``ragexam run --out`` folder (or its summary.json): summary.json, per_question.csv and,
    from ``ragexam-run/2`` on, chunks.jsonl.

    ``per_question.csv`` may be absent (the rows are then empty and the commands that need them
    say so); ``summary.json`` may not.
    """
    folder = Path(path)
    if folder.is_file() and folder.name in ("summary.json", "per_question.csv"):
        folder = folder.parent
    spath = folder / "summary.json"
    if not spath.is_file():
        what = "a file" if folder.is_file() else ("a folder without summary.json" if folder.is_dir() else
                                                  "not an existing folder")
        raise InputError(f"is {what}; expected a folder written by `ragexam run --out DIR` (with "
                         "summary.json and per_question.csv).", source=str(folder))
    summary = _read_json(spath)
    check_summary(summary, str(spath))
    if is_score(summary):
        raise InputError("is a score summary; expected the summary.json of `ragexam run --out DIR`.",
                         source=str(spath), field="format")
    fmt = _folder_format(summary, RUN_FORMATS, spath)
    qpath = folder / "per_question.csv"
    rows: List[RunRow] = []
    if qpath.is_file():
        _, raw = _read_csv(qpath, ("pipeline", "query_id"))
        rows = coerce_rows(raw, source=str(qpath))
    chunks = None
    texts: Dict[str, Dict[str, ChunkRecord]] = {}
    cpath = folder / "chunks.jsonl"
    if cpath.is_file():
        chunks, texts = _read_chunks(cpath)
    elif fmt.split(".")[0] != RUN_FORMATS[0]:
        raise InputError(f"has no chunks.jsonl, which a {fmt} folder holds (the chunk texts the run saw); the "
                         "folder is incomplete: write it again with `ragexam run --out`.", source=str(folder))
    return RunData(summary=summary, per_question=rows, source=str(folder), chunks=chunks, texts=texts)


#: per_answer.csv columns read into a score row's metrics, besides ``ok``, ``<judge metric>_score`` and ``_pass``.
_SCORE_VALUES = ("bleu", "chrf", "rouge_l")


def read_score_folder(path: PathLike) -> RunData:
    """Read a ``ragexam score --out`` folder (or its score.json): score.json and per_answer.csv.

    The rows carry ``bleu``, ``chrf`` and ``rouge_l`` (sentence values), ``ok_share`` (the ``ok``
    column: 1 when the answer's stage is ok, 0 when another label was decided, empty when it is unjudged; from
    ``ragexam-score/2``), each judge
    metric's score (the ``<metric>_score`` column, under the metric's name; empty when it was not
    judged), its pass (the ``<metric>_pass`` column, 1 or 0, for a metric with a pass rule) and the summable ``stats`` of the corpus metrics (from ``ragexam-score/2``).
    """
    folder = Path(path)
    if folder.is_file() and folder.name in ("score.json", "per_answer.csv"):
        folder = folder.parent
    spath = folder / "score.json"
    if not spath.is_file():
        raise InputError("has no score.json; expected a folder written by `ragexam score --out DIR`.",
                         source=str(folder))
    summary = _read_json(spath)
    _folder_format(summary, SCORE_FORMATS, spath)
    qpath = folder / "per_answer.csv"
    rows: List[RunRow] = []
    if qpath.is_file():
        header, raw = _read_csv(qpath, ("pipeline", "query_id"))
        judged = [c[: -len("_score")] for c in header if c.endswith("_score") and
                  c[: -len("_score")] + "_status" in header]
        keep = [c for c in _SCORE_VALUES if c in header]
        typed = []
        for line, r in enumerate(raw, 2):
            row: Dict[str, Any] = {c: r.get(c) for c in ("pipeline", "query_id", "type", "answerable", "first_rank")}
            row.update({c: r.get(c) for c in keep})
            if "ok" in header:
                ok = _as_str(r.get("ok"))
                row["ok_share"] = None if ok is None else float(_as_bool(ok, str(qpath), line, "ok"))
            row.update({m: r.get(f"{m}_score") for m in judged})
            row.update({f"{m}_pass": r.get(f"{m}_pass") for m in judged if f"{m}_pass" in header})
            if r.get("stats"):
                row["stats"] = r["stats"]
            typed.append(row)
        rows = coerce_rows(typed, source=str(qpath))
    return RunData(summary=summary, per_question=rows, source=str(folder))


def read_folder(path: PathLike) -> RunData:
    """A run folder (:func:`read_run_folder`) or a score folder (:func:`read_score_folder`), by the
    files it holds."""
    p = Path(path)
    folder = p.parent if p.is_file() else p
    if (folder / "score.json").is_file() and not (folder / "summary.json").is_file():
        return read_score_folder(folder)
    return read_run_folder(p)


# --- writing -----------------------------------------------------------------------------------


def write_text(path: Path, text: str) -> None:
    """Write ``text`` (UTF-8, ``\\n`` line ends) to a temporary file beside ``path`` and rename it into place
    (:func:`ragexam.storage.atomic.write_file`)."""
    write_file(path, text)


def _cell(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, SplitCell):
        value = value.to_dict()
    if isinstance(value, (dict, list, tuple)):
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return str(value)


def _write_csv(path: Path, columns: Sequence[str], rows: Iterable[Mapping[str, Any]],
               clean: Callable[[Any], Any] = lambda value: value) -> None:
    with file_writer(path) as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(columns)
        for row in rows:
            w.writerow([_cell(clean(row.get(c))) for c in columns])


def _make_dir(folder: Path, *subdirs: str) -> None:
    try:
        for sub in subdirs or ("",):
            (folder / sub).mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise InputError(f"cannot create the output directory: {err.strerror or err}.", source=str(folder),
                         field="out") from None


def _json_text(obj: object, what: str) -> str:
    try:
        text = json.dumps(obj, ensure_ascii=False, indent=2, allow_nan=False) + "\n"
    except ValueError as exc:
        raise InputError(f"contains a value JSON cannot hold ({exc}); expected finite numbers only.",
                         source=what) from None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        bad = text[exc.start:exc.end]
        context = text[max(0, exc.start - 40):exc.start].splitlines()[-1:] or [""]
        raise InputError(f"contains {bad!r}, a text UTF-8 cannot hold (an unpaired surrogate), after "
                         f"{context[0][-40:]!r}; fix the input that carried it.", source=what) from None
    return text


def _plain(summary: SummaryLike) -> Dict[str, Any]:
    """A summary as its JSON object (a typed record's :meth:`to_dict`, or the mapping itself)."""
    to_dict = getattr(summary, "to_dict", None)
    return to_dict() if callable(to_dict) else dict(summary)


def write_run_folder(directory: PathLike, summary: SummaryLike, rows: Sequence[Mapping[str, Any]],
                     chunks: Iterable[ChunkRecord], extra: Optional[Callable[[Path], None]] = None,
                     redact: Optional[Callable[[Any], Any]] = None) -> Path:
    """Write a run folder as a unit (:func:`ragexam.storage.atomic.folder_writer`): ``per_question.csv``,
    ``chunks.jsonl``, whatever ``extra(folder)`` writes (the TREC files under ``runs/``) and then
    ``summary.json`` go into a temporary sibling that then replaces ``directory``; returns ``directory``.

    ``summary`` (a :class:`~ragexam.storage.summary.RunSummary` or its JSON object) must have format
    :data:`RUN_FORMAT`.  The per_question.csv columns are :data:`FIXED_COLUMNS`, the rows' metric columns
    (first-seen order), then ``top_ids``.  A text that cannot be written (an unpaired surrogate) or a
    number JSON cannot hold fails before ``directory`` is touched.  ``redact`` (replaces the configured keys and
    header values: :func:`ragexam.llm.redact.redact_written`) is applied to every value before it is written."""
    from ragexam.storage.atomic import folder_writer

    data = _plain(summary)
    if data.get("format") != RUN_FORMAT:
        raise InputError(f"received format {data.get('format')!r}; this ragexam writes {RUN_FORMAT!r}.",
                         source="summary", field="format")
    typed = coerce_rows(rows, source="per_question")
    clean = redact or (lambda value: value)
    summary_text = _json_text(clean(data), "summary")
    with folder_writer(directory, "run") as out:
        _make_dir(out, "runs")
        columns = list(FIXED_COLUMNS) + metric_columns(typed) + ["top_ids"]
        if any(r.unretrieved is not None for r in typed):
            columns.append("unretrieved")
        if any(r.evidence_split is not None for r in typed):
            columns.append("evidence_split")
        _write_csv(out / "per_question.csv", columns, typed, clean)
        write_text(out / "chunks.jsonl", "".join(json.dumps(clean(c.to_dict()), ensure_ascii=False) + "\n"
                                                 for c in chunks))
        if extra is not None:
            extra(out)
        write_text(out / "summary.json", summary_text)
    return Path(directory)


def write_score_folder(directory: PathLike, score: Mapping[str, Any], answer_rows: Sequence[Mapping[str, Any]],
                       judgments: Optional[Iterable[Mapping[str, Any]]] = None,
                       redact: Optional[Callable[[Any], Any]] = None) -> Path:
    """Write a score folder as a unit (:func:`ragexam.storage.atomic.folder_writer`): ``per_answer.csv`` (the
    columns of the first row, in order; lists and dicts as JSON), ``judgments.jsonl`` (when ``judgments`` is
    given) and then ``score.json``.  ``redact`` is applied to every value before it is written, as in
    :func:`write_run_folder`."""
    from ragexam.storage.atomic import folder_writer

    clean = redact or (lambda value: value)
    score_text = _json_text(clean(_plain(score)), "score")
    with folder_writer(directory, "score") as out:
        columns = list(answer_rows[0]) if answer_rows else []
        _write_csv(out / "per_answer.csv", columns, answer_rows, clean)
        if judgments is not None:
            write_text(out / "judgments.jsonl", "".join(json.dumps(clean(j), ensure_ascii=False, allow_nan=False)
                                                        + "\n" for j in judgments))
        write_text(out / "score.json", score_text)
    return Path(directory)
