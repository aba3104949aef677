"""Reading and writing TREC run and qrels files.

* qrels: one judgment per line, ``qid iter docid rel`` — four whitespace-separated fields;
  ``iter`` is ignored (usually ``0``); ``rel`` is an integer grade (may be 0 or negative).
* run: one retrieved item per line, ``qid Q0 docid rank score tag`` — six fields; ``Q0``
  and ``tag`` are ignored, ``rank`` must be an integer but is ignored for ordering (as in
  trec_eval, items are ordered by ``score``), ``score`` is a float (``nan`` is rejected).

Blank lines are skipped.  A duplicate ``(qid, docid)`` pair, a wrong number of fields, a
field that does not parse, a byte-order mark or bytes that are not UTF-8 raise
:class:`~ragexam.errors.InputError` naming the file and the line.

Reading is columnar: the result holds integer codes into vocabularies of query and
document ids, so a 1M-line run loads in about a tenth of a second with pyarrow's
multi-threaded CSV reader; any file the fast reader rejects is re-read by a line-by-line
parser that finds and reports the exact problem.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

import numpy as np

from ragexam.errors import InputError

__all__ = ["TrecColumns", "vocab_list", "resolve_trec_path", "BUNDLED_TREC", "read_trec_run", "read_trec_qrels", "write_trec_run", "write_trec_qrels"]

PathLike = str | os.PathLike


@dataclass
class TrecColumns:
    """Columns of a run or qrels file, dictionary-encoded.

    Row ``i`` is query ``qid_vocab[qid_codes[i]]``, document ``doc_vocab[doc_codes[i]]`` and
    value ``values[i]`` (the score of a run, float64; the grade of a qrels, int64).
    ``doc_vocab`` is a list of str or, when read from a file, a pyarrow string array (a run
    may hold a million distinct ids; converting them to Python strings is the slowest step
    of reading, so it is done only on demand: see :func:`vocab_list`).
    """

    qid_codes: np.ndarray
    qid_vocab: list[str]
    doc_codes: np.ndarray
    doc_vocab: Any
    values: np.ndarray
    #: Rows where a new document dictionary starts (fast reader): ``doc_vocab`` may then
    #: repeat a string, and codes are only comparable between rows of the same segment.
    doc_segments: tuple[int, ...] = ()


def vocab_list(vocab: Any) -> list[str]:
    """A vocabulary as a list of Python strings."""
    return vocab.to_pylist() if hasattr(vocab, "to_pylist") else list(vocab)


#: Bundled TREC pairs: ``name -> description`` (files ``samples/<name>/{qrels,run}.trec``).
BUNDLED_TREC = {"lecture": "the seed lecture's 12 questions over 10 AI/LLM documents, top-5 run"}


def resolve_trec_path(value: PathLike, kind: str) -> Path:
    """A path to a TREC ``kind`` file ("qrels" or "run"): an existing path, or a bundled name."""
    p = Path(value)
    if p.exists() or str(value) not in BUNDLED_TREC:
        return p
    from importlib.resources import files

    return Path(str(files("ragexam.data") / "samples" / str(value) / f"{kind}.trec"))


_RUN_FIELDS = ("qid", "Q0", "docid", "rank", "score", "tag")
_QRELS_FIELDS = ("qid", "iter", "docid", "rel")


def read_trec_run(path: PathLike) -> TrecColumns:
    """Read a TREC run file (``qid Q0 docid rank score tag``)."""
    return _read(path, kind="run")


def read_trec_qrels(path: PathLike) -> TrecColumns:
    """Read a TREC qrels file (``qid iter docid rel``)."""
    return _read(path, kind="qrels")


def _read(path: PathLike, kind: str) -> TrecColumns:
    p = Path(path)
    if not p.is_file():
        raise InputError(f"no such file (expected a TREC {kind} file)", source=str(path))
    with open(p, "rb") as fh:
        head = fh.read(3)
    if head == b"\xef\xbb\xbf":
        raise InputError("the file starts with a UTF-8 byte-order mark (BOM); save it as UTF-8 without BOM",
                         source=str(path), line=1)
    cols = _read_fast(p, kind)
    if cols is None:
        cols = _read_slow(p, kind)
    _check_duplicates(cols, p, kind)
    return cols


def _read_fast(p: Path, kind: str) -> TrecColumns | None:
    """pyarrow's CSV reader on single-space separated files; ``None`` if it cannot be used."""
    try:
        import pyarrow as pa
        import pyarrow.csv as pcsv
    except ImportError:  # pragma: no cover - pyarrow is a dependency; keep working without it
        return None
    names = _RUN_FIELDS if kind == "run" else _QRELS_FIELDS
    dict_t = pa.dictionary(pa.int32(), pa.string())
    types = {"qid": dict_t, "docid": dict_t}
    if kind == "run":
        types.update(rank=pa.int64(), score=pa.float64())
        include = ["qid", "docid", "rank", "score"]
    else:
        types.update(rel=pa.int64())
        include = ["qid", "docid", "rel"]
    try:
        table = pcsv.read_csv(
            p,
            read_options=pcsv.ReadOptions(column_names=list(names)),
            parse_options=pcsv.ParseOptions(delimiter=" ", quote_char=False, escape_char=False,
                                            newlines_in_values=False, ignore_empty_lines=True),
            convert_options=pcsv.ConvertOptions(column_types=types, include_columns=include,
                                                strings_can_be_null=False, quoted_strings_can_be_null=False,
                                                null_values=[], check_utf8=True),
        )
    except (pa.ArrowInvalid, pa.ArrowTypeError, UnicodeDecodeError, OSError):
        return None
    if table.num_rows == 0:
        return None  # let the slow path decide (empty file -> empty columns)
    qid = table.column("qid").combine_chunks()  # few distinct query ids: unifying is cheap
    if qid.null_count or table.column("docid").null_count:
        return None
    if kind == "run":
        if table.column("score").null_count:
            return None
        values = array_numpy(table.column("score"), np.float64)
        if np.isnan(values).any():
            return None
    else:
        if table.column("rel").null_count:
            return None
        values = array_numpy(table.column("rel"), np.int64)
    # Documents: each chunk has its own dictionary; unifying them costs more than the whole
    # parse (a run may hold a million distinct ids), so the chunk dictionaries are
    # concatenated instead.  The vocabulary may then repeat a string across chunks; codes
    # are still exact within a chunk, and _check_duplicates handles queries that span chunks.
    doc_codes_parts = []
    dicts = []
    segments = []
    offset = row = 0
    for chunk in table.column("docid").chunks:
        doc_codes_parts.append(array_numpy(chunk.indices, np.int32).astype(np.int64) + offset)
        dicts.append(chunk.dictionary)
        segments.append(row)
        offset += len(chunk.dictionary)
        row += len(chunk)
    doc_vocab = pa.concat_arrays(dicts) if dicts else pa.array([], type=pa.string())
    for vocab in (qid.dictionary, doc_vocab):
        offsets = np.frombuffer(vocab.buffers()[1], dtype=np.int32)[vocab.offset:vocab.offset + len(vocab) + 1]
        if len(vocab) and bool((np.diff(offsets) == 0).any()):
            return None  # double spaces produce empty fields: let the slow parser report it
    return TrecColumns(
        qid_codes=array_numpy(qid.indices, np.int32).astype(np.int64),
        qid_vocab=qid.dictionary.to_pylist(),
        doc_codes=np.concatenate(doc_codes_parts) if doc_codes_parts else np.empty(0, dtype=np.int64),
        doc_vocab=doc_vocab,
        values=values.astype(np.float64 if kind == "run" else np.int64, copy=False),
        doc_segments=tuple(segments[1:]),
    )


def array_numpy(array: Any, dtype: Any) -> np.ndarray:
    """A null-free numeric pyarrow Array or ChunkedArray as numpy, read from its buffers
    (pyarrow's ``to_numpy`` imports pandas on first use, which costs ~0.2 s)."""
    chunks = array.chunks if hasattr(array, "chunks") else [array]
    parts = [np.frombuffer(c.buffers()[1], dtype=dtype)[c.offset:c.offset + len(c)] for c in chunks]
    return np.concatenate(parts) if parts else np.empty(0, dtype=dtype)


def _read_slow(p: Path, kind: str) -> TrecColumns:
    """Line-by-line parser with exact error messages (any whitespace separates fields)."""
    n_fields = 6 if kind == "run" else 4
    layout = " ".join(_RUN_FIELDS if kind == "run" else _QRELS_FIELDS)
    qmap: dict[str, int] = {}
    dmap: dict[str, int] = {}
    qcodes: list[int] = []
    dcodes: list[int] = []
    values: list[float] | list[int] = []
    with open(p, "rb") as fh:
        for lineno, raw in enumerate(fh, 1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as err:
                raise InputError(f"the line is not valid UTF-8 (byte {err.start + 1} of the line: "
                                 f"{raw[err.start:err.start + 1]!r}); save the file as UTF-8",
                                 source=str(p), line=lineno) from None
            parts = line.split()
            if not parts:
                continue
            if len(parts) != n_fields:
                raise InputError(f"expected {n_fields} fields '{layout}', found {len(parts)}: {line.strip()!r}",
                                 source=str(p), line=lineno)
            if kind == "run":
                qid, _q0, doc, rank, score_txt, _tag = parts
                try:
                    int(rank)
                except ValueError:
                    raise InputError(f"rank {rank!r} is not an integer", source=str(p), line=lineno,
                                     field="rank") from None
                try:
                    value: float | int = float(score_txt)
                except ValueError:
                    raise InputError(f"score {score_txt!r} is not a number", source=str(p), line=lineno,
                                     field="score") from None
                if math.isnan(value):
                    raise InputError("score is NaN; every retrieved item needs a real score",
                                     source=str(p), line=lineno, field="score")
            else:
                qid, _iter, doc, rel_txt = parts
                try:
                    value = int(rel_txt)
                except ValueError:
                    raise InputError(f"relevance {rel_txt!r} is not an integer grade", source=str(p),
                                     line=lineno, field="rel") from None
            qcodes.append(qmap.setdefault(qid, len(qmap)))
            dcodes.append(dmap.setdefault(doc, len(dmap)))
            values.append(value)  # type: ignore[arg-type]
    return TrecColumns(
        qid_codes=np.asarray(qcodes, dtype=np.int64),
        qid_vocab=list(qmap),
        doc_codes=np.asarray(dcodes, dtype=np.int64),
        doc_vocab=list(dmap),
        values=np.asarray(values, dtype=np.float64 if kind == "run" else np.int64),
    )


def _check_duplicates(cols: TrecColumns, p: Path, kind: str) -> None:
    """Raise if a (qid, docid) pair occurs twice.

    Codes are compared with one sort; when the vocabulary may repeat strings (chunked fast
    reader), the rows of queries whose codes come from several chunks are compared by string.
    """
    n = cols.qid_codes.size
    if n < 2:
        return
    width = max(len(cols.doc_vocab), 1)
    key = cols.qid_codes * width + cols.doc_codes
    skey = np.sort(key)
    dup = np.flatnonzero(skey[1:] == skey[:-1])
    pair: tuple[int, int] | None = None
    if dup.size:
        rows = np.flatnonzero(key == skey[dup[0]])
        pair = (int(rows[0]), int(rows[1]))
    elif cols.doc_segments:
        pair = _duplicate_by_string(cols)
    if pair is None:
        return
    first, second = pair
    q = cols.qid_vocab[int(cols.qid_codes[first])]
    d = vocab_list(cols.doc_vocab[int(cols.doc_codes[first]):int(cols.doc_codes[first]) + 1])[0]
    what = "retrieved twice for the same query" if kind == "run" else "judged twice for the same query"
    raise InputError(f"document {d!r} is {what} {q!r} (first at line {_line_of_row(p, first)}); "
                     f"each (qid, docid) pair may appear once", source=str(p), line=_line_of_row(p, second))


def _duplicate_by_string(cols: TrecColumns) -> tuple[int, int] | None:
    """Rows (first, second) of a repeated (qid, docid), comparing strings, among the queries
    whose rows are not confined to one dictionary segment (see ``TrecColumns.doc_segments``)."""
    q = cols.qid_codes
    change = np.flatnonzero(q[1:] != q[:-1]) + 1
    starts = np.concatenate(([0], change))
    ends = np.concatenate((change, [q.size]))
    suspects = set(np.flatnonzero(np.bincount(q[starts]) > 1).tolist())  # queries in several blocks
    for boundary in cols.doc_segments:
        blk = int(np.searchsorted(starts, boundary, side="right")) - 1
        if starts[blk] < boundary < ends[blk]:
            suspects.add(int(q[boundary]))
    if not suspects:
        return None
    rows = np.flatnonzero(np.isin(q, np.fromiter(suspects, dtype=np.int64)))
    docs = vocab_list(cols.doc_vocab.take(cols.doc_codes[rows]))
    seen: dict[tuple[int, str], int] = {}
    for row, doc in zip(rows.tolist(), docs):
        k = (int(q[row]), doc)
        if k in seen:
            return seen[k], row
        seen[k] = row
    return None


def _line_of_row(p: Path, row: int) -> int:
    """1-based line number of the ``row``-th non-blank line (for error messages only)."""
    seen = -1
    with open(p, "rb") as fh:
        for lineno, raw in enumerate(fh, 1):
            if raw.strip():
                seen += 1
                if seen == row:
                    return lineno
    return seen + 1


def _check_token(value: str, what: str, where: str) -> None:
    if not value or any(ch.isspace() for ch in value):
        raise InputError(f"{what} {value!r} is empty or contains whitespace, which TREC files cannot hold",
                         source=where, field=what)


def write_trec_run(path: PathLike, rows: Iterable[tuple[str, str, int, float]], tag: str = "ragexam") -> None:
    """Write ``(qid, docid, rank, score)`` rows as a TREC run (``qid Q0 docid rank score tag``).

    Scores are written with ``repr`` so they read back bit-identical.
    """
    _check_token(tag, "tag", str(path))
    tmp = Path(str(path) + ".tmp")
    with open(tmp, "w", encoding="utf-8", newline="\n") as fh:
        for qid, doc, rank, score in rows:
            _check_token(qid, "qid", str(path))
            _check_token(doc, "docid", str(path))
            fh.write(f"{qid} Q0 {doc} {int(rank)} {float(score)!r} {tag}\n")
    os.replace(tmp, path)


def write_trec_qrels(path: PathLike, rows: Iterable[tuple[str, str, int]]) -> None:
    """Write ``(qid, docid, rel)`` rows as TREC qrels (``qid 0 docid rel``)."""
    tmp = Path(str(path) + ".tmp")
    with open(tmp, "w", encoding="utf-8", newline="\n") as fh:
        for qid, doc, rel in rows:
            _check_token(qid, "qid", str(path))
            _check_token(doc, "docid", str(path))
            fh.write(f"{qid} 0 {doc} {int(rel)}\n")
    os.replace(tmp, path)


