"""Reading and writing TREC run and qrels files.

Layouts (fields are separated by whitespace: spaces or tabs):

* qrels: one judgment per line, ``qid iter docid rel`` — four fields; ``iter`` is ignored
  (usually ``0``); ``rel`` is an integer grade (may be 0 or negative).  The first line may be
  a header naming the columns, which is skipped; with a header the file may also have three
  columns, ``qid docid rel`` — BEIR's ``qrels/*.tsv`` (``query-id<TAB>corpus-id<TAB>score``)
  reads as is.  A header is recognised when every name is one of (case-insensitive):
  query ``qid query-id query_id queryid query topic``, iteration ``iter iteration q0 0``,
  document ``docid doc-id doc_id docno corpus-id corpus_id pid passage-id passage_id did doc``,
  grade ``rel relevance score label grade judgment judgement``.  Three columns without a
  header are rejected (a ``qid docid rank`` run file, as MS MARCO writes them, would
  otherwise read as judgments).
* run: one retrieved item per line, ``qid Q0 docid rank score tag`` — six fields and no
  header; ``Q0`` and ``tag`` are ignored, ``rank`` must be an integer but is ignored for
  ordering (as in trec_eval, items are ordered by ``score``), ``score`` is a float (``nan``
  is rejected).

Blank (whitespace-only) lines are skipped but counted, so line numbers match an editor's.
Windows line ends (CRLF) are accepted; files ending in ``.gz`` or ``.bz2`` are decompressed.
An empty qrels file (no judgment line: nothing, only blank lines or only a header) is an
error naming the file; an empty run file reads as a run with no rows (``evaluate`` then warns
that every query scores 0).  A duplicate ``(qid, docid)`` pair, a wrong number of fields, a
field that does not parse, a byte-order mark, UTF-16 or bytes that are not UTF-8 raise
:class:`~ragexam.errors.InputError` naming the file and the line.

Reading is columnar: the result holds integer codes into vocabularies of query and document
ids.  Three readers give the same columns, each passing a file it does not take to the next:

1. the compiled one-pass reader (``ragexam.data._trecfast``, built at install time when a C
   compiler is there) takes *plain* files: printable ASCII fields separated by single spaces or
   by single tabs, ``\n`` or ``\r\n`` line ends (nothing else imported); a run read for a qrels
   file (``docs=``) gives each judged document its qrels code, so the two files need no join by
   string (``TrecColumns.doc_base``).  ``RAGEXAM_PURE_PYTHON=1`` in the environment turns it off;
2. files of 1 MiB and more: pyarrow's multi-threaded CSV reader (single spaces or single tabs,
   any UTF-8);
3. the rest, and any file the others reject: a line-by-line parser that finds and reports the
   exact problem (below 1 MiB it is quicker than loading pyarrow; once pyarrow is loaded, the
   second reader takes small files too).

pandas is never imported (pyarrow imports it when it converts Python or numpy objects, so
arrays are handed to pyarrow through their buffers).
"""

from __future__ import annotations

import math
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, List, Sequence, Union

import numpy as np

from ragexam.errors import InputError

if TYPE_CHECKING:
    import pyarrow as pa
    from numpy.typing import DTypeLike

#: a pyarrow column (its chunks when it was read in pieces)
ArrowArray = Union["pa.Array", "pa.ChunkedArray"]
#: the strings behind integer codes: a list, the compiled reader's packed bytes, or a pyarrow string array
Vocab = Union[List[str], "PackedVocab", ArrowArray]

__all__ = ["TrecColumns", "PackedVocab", "vocab_list", "vocab_take", "vocab_index", "vocab_canonical",
           "vocab_sort_rank", "codes_index", "is_arrow", "array_numpy",
           "resolve_trec_path", "BUNDLED_TREC", "read_trec_run", "read_trec_qrels", "write_trec_run",
           "write_trec_qrels"]

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
    doc_vocab: Vocab
    values: np.ndarray
    #: Rows where a new document dictionary starts (fast reader): ``doc_vocab`` may then
    #: repeat a string, and codes are only comparable between rows of the same segment
    #: (:func:`vocab_canonical` maps them to one code per string).
    doc_segments: tuple[int, ...] = ()
    #: Where each of those segments' dictionary starts in ``doc_vocab`` (aligned with
    #: ``doc_segments``; the first segment's starts at 0).
    doc_segment_vocab: tuple[int, ...] = ()
    #: The file the columns were read from (``None`` when built in memory).
    source: str | None = None
    #: The qrels' document vocabulary this run was read against (the compiled reader, given ``docs=``):
    #: ``doc_vocab`` starts with it, a document judged for a row's query has its qrels code, and any
    #: other document may have a code of its own on each row (``doc_vocab`` then repeats strings; the
    #: reader checked that no query retrieves a document twice).  ``None``: codes are one per string.
    doc_base: Vocab | None = None


class PackedVocab:
    """A vocabulary as the compiled reader returns it: the strings' UTF-8 bytes one after the other
    (``data``) and ``offsets`` (int64, one more than the strings), decoded only when asked for (a
    run may hold a million distinct ids, and evaluating it needs none of them as Python strings)."""

    __slots__ = ("data", "offsets")

    def __init__(self, data: bytes, offsets: np.ndarray) -> None:
        self.data = data
        self.offsets = offsets

    def __len__(self) -> int:
        return int(self.offsets.size) - 1

    def __getitem__(self, i: int) -> str:
        if not -len(self) <= i < len(self):
            raise IndexError(i)
        i %= len(self)
        return self.data[int(self.offsets[i]):int(self.offsets[i + 1])].decode("utf-8")

    def __iter__(self):
        return iter(self.to_list())

    def take(self, idx: np.ndarray | Sequence[int]) -> list[str]:
        """The strings at ``idx``."""
        off, data = self.offsets, self.data
        return [data[off[i]:off[i + 1]].decode("utf-8") for i in np.asarray(idx, dtype=np.int64).tolist()]

    def to_list(self) -> list[str]:
        """Every string, in code order."""
        off = self.offsets.tolist()
        data = self.data
        return [data[a:b].decode("utf-8") for a, b in zip(off[:-1], off[1:])]

    def arrow(self):
        """The same strings as a pyarrow string array, sharing this one's bytes."""
        import pyarrow as pa

        n = len(self)
        if self.offsets[-1] < 2**31:
            return pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(self.offsets.astype(np.int32)),
                                                          pa.py_buffer(self.data)])
        return pa.Array.from_buffers(pa.large_string(), n, [None, pa.py_buffer(self.offsets),
                                                            pa.py_buffer(self.data)])


# --- vocabularies: lists of str or pyarrow string arrays, without pandas ---------------------


def _compute():
    """pyarrow's compute entry points (``pyarrow._compute`` skips building the ~20 ms of Python
    wrappers that ``import pyarrow.compute`` generates)."""
    try:
        import pyarrow._compute as pc

        pc.call_function, pc.SetLookupOptions  # noqa: B018 - probe the private API
    except (ImportError, AttributeError):  # pragma: no cover - older/newer pyarrow layouts
        import pyarrow.compute as pc
    return pc


def is_arrow(vocab: Vocab) -> bool:
    """Whether a vocabulary is a pyarrow array (else a list of str)."""
    return hasattr(vocab, "to_pylist")


def _arrow_indices(idx: np.ndarray):
    """A numpy integer array as a pyarrow int64 array, through its buffer (``pa.array`` on a
    numpy array imports pandas)."""
    import pyarrow as pa

    a = np.ascontiguousarray(idx, dtype=np.int64)
    return pa.Array.from_buffers(pa.int64(), a.size, [None, pa.py_buffer(a)])


def array_numpy(array: ArrowArray, dtype: DTypeLike) -> np.ndarray:
    """A null-free numeric pyarrow Array or ChunkedArray as numpy, read from its buffers
    (pyarrow's ``to_numpy`` imports pandas on first use, which costs ~0.2 s)."""
    chunks = array.chunks if hasattr(array, "chunks") else [array]
    parts = [np.frombuffer(c.buffers()[1], dtype=dtype)[c.offset:c.offset + len(c)] for c in chunks]
    return np.concatenate(parts) if parts else np.empty(0, dtype=dtype)


def _arrow_strings(strings: list[str]):
    """A list of str as a pyarrow string array, through its buffers (``pa.array`` imports pandas)."""
    import pyarrow as pa

    encoded = [x.encode("utf-8") for x in strings]
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum([len(b) for b in encoded], out=offsets[1:])
    if offsets[-1] < 2**31:
        return pa.Array.from_buffers(pa.string(), len(encoded), [None, pa.py_buffer(offsets.astype(np.int32)),
                                                                  pa.py_buffer(b"".join(encoded))])
    return pa.Array.from_buffers(pa.large_string(), len(encoded), [None, pa.py_buffer(offsets),
                                                                    pa.py_buffer(b"".join(encoded))])


def vocab_list(vocab: Vocab) -> list[str]:
    """A vocabulary as a list of Python strings."""
    if isinstance(vocab, PackedVocab):
        return vocab.to_list()
    return vocab.to_pylist() if is_arrow(vocab) else list(vocab)


def vocab_take(vocab: Vocab, idx: np.ndarray) -> Vocab:
    """``vocab[idx]`` (a pyarrow array for a pyarrow array, else a list)."""
    if isinstance(vocab, PackedVocab):
        return vocab.take(idx)
    if is_arrow(vocab):
        return _compute().call_function("take", [vocab, _arrow_indices(idx)])
    return [vocab[i] for i in np.asarray(idx).tolist()]


def vocab_index(keys: Vocab, vocab: Vocab) -> np.ndarray:
    """Index in ``vocab`` of each of ``keys`` (its first occurrence; -1 when absent).

    Two pyarrow arrays are matched with pyarrow's hash kernel; otherwise a dict is used
    (converting Python lists to pyarrow would import pandas).
    """
    if len(keys) == 0:
        return np.empty(0, dtype=np.int64)
    if len(vocab) == 0:
        return np.full(len(keys), -1, dtype=np.int64)
    keys, vocab = _unpacked(keys), _unpacked(vocab)
    if is_arrow(keys) != is_arrow(vocab):  # convert the list side (never the large arrow side) to arrow
        keys, vocab = (keys if is_arrow(keys) else _arrow_strings(keys)), (vocab if is_arrow(vocab)
                                                                          else _arrow_strings(vocab))
    if is_arrow(keys):
        pc = _compute()
        return _indices_numpy(pc.call_function("index_in", [keys], pc.SetLookupOptions(vocab)))
    from itertools import repeat

    vocab_l = vocab_list(vocab)
    pos = dict(zip(reversed(vocab_l), range(len(vocab_l) - 1, -1, -1)))  # the first occurrence wins
    return np.fromiter(map(pos.get, vocab_list(keys), repeat(-1)), dtype=np.int64, count=len(keys))


def _unpacked(vocab: Vocab) -> Union[List[str], ArrowArray]:
    """A :class:`PackedVocab` as pyarrow strings when it is large (pyarrow's hash kernel), else as a list."""
    if not isinstance(vocab, PackedVocab):
        return vocab
    return vocab.arrow() if len(vocab) >= 1 << 12 else vocab.to_list()


def codes_index(keys: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Index in ``values`` (distinct int64) of each of ``keys``; -1 when absent.  A hash lookup
    (the compiled reader's, else pyarrow's), several times faster than a binary search on a million keys."""
    if keys.size == 0 or values.size == 0:
        return np.full(keys.size, -1, dtype=np.int64)
    fast = _compiled()
    if fast is not None:
        return np.frombuffer(fast.index_in(np.ascontiguousarray(keys, dtype=np.int64),
                                           np.ascontiguousarray(values, dtype=np.int64)), dtype=np.int64)
    if keys.size < 1 << 17:  # small: a binary search, without loading pyarrow for it
        order = np.argsort(values, kind="stable")
        pos = np.minimum(np.searchsorted(values[order], keys), values.size - 1)
        return np.where(values[order][pos] == keys, order[pos], -1)
    pc = _compute()
    idx = pc.call_function("index_in", [_arrow_indices(keys)], pc.SetLookupOptions(_arrow_indices(values)))
    return _indices_numpy(idx)


def _indices_numpy(idx: "pa.Array") -> np.ndarray:
    """An int32 pyarrow index array (nulls = not found) as int64 numpy with -1 for nulls
    (``fill_null`` would import pandas)."""
    values = array_numpy(idx, np.int32).astype(np.int64)
    if idx.null_count:
        bits = np.unpackbits(np.frombuffer(idx.buffers()[0], dtype=np.uint8), bitorder="little")
        values[~bits[idx.offset:idx.offset + len(idx)].astype(bool)] = -1
    return values


def vocab_canonical(vocab: Vocab, codes: np.ndarray) -> np.ndarray:
    """For codes into a vocabulary that may repeat strings: the code of each string's first
    occurrence among ``codes`` (equal strings get equal codes).  Only the strings the codes
    use are looked at."""
    if codes.size == 0:
        return codes
    s = np.sort(codes)
    used = s[np.concatenate(([True], s[1:] != s[:-1]))]
    first = vocab_index(vocab_take(vocab, used), vocab_take(vocab, used))
    return used[first][np.searchsorted(used, codes)]


def vocab_sort_rank(vocab: Vocab, used: np.ndarray) -> np.ndarray:
    """For distinct codes ``used``: each one's position when their strings are sorted ascending
    by code point (= UTF-8 byte order, trec_eval's ``strcmp``)."""
    strs = vocab_take(vocab, used)
    if is_arrow(strs):
        pc = _compute()
        order = array_numpy(pc.call_function("array_sort_indices", [strs], pc.ArraySortOptions("ascending")),
                            np.uint64).astype(np.int64)
    else:
        order = np.array(sorted(range(len(strs)), key=strs.__getitem__), dtype=np.int64)
    rank = np.empty(used.size, dtype=np.int64)
    rank[order] = np.arange(used.size)
    return rank


# --- bundled pairs -------------------------------------------------------------------------

#: Bundled TREC pairs: ``name -> description`` (files ``samples/<name>/{qrels,run}.trec``).
BUNDLED_TREC = {"lecture": "the seed lecture's 12 questions over 10 AI/LLM documents, top-5 run"}


def resolve_trec_path(value: PathLike, kind: str) -> Path:
    """A path to a TREC ``kind`` file ("qrels" or "run"): an existing path, or a bundled name."""
    p = Path(value)
    if p.exists() or str(value) not in BUNDLED_TREC:
        return p
    from importlib.resources import files

    return Path(str(files("ragexam.data") / "samples" / str(value) / f"{kind}.trec"))


# --- reading -------------------------------------------------------------------------------

_RUN_FIELDS = ("qid", "Q0", "docid", "rank", "score", "tag")
_QRELS_FIELDS = ("qid", "iter", "docid", "rel")
_HEADER_NAMES = {
    "qid": {"qid", "query-id", "query_id", "queryid", "query", "topic"},
    "iter": {"iter", "iteration", "q0", "0"},
    "docid": {"docid", "doc-id", "doc_id", "docno", "corpus-id", "corpus_id", "pid", "passage-id",
              "passage_id", "did", "doc"},
    "rel": {"rel", "relevance", "score", "label", "grade", "judgment", "judgement"},
}
_HEADER_LAYOUTS = (("qid", "docid", "rel"), ("qid", "iter", "docid", "rel"))
_BOM = b"\xef\xbb\xbf"
#: Files smaller than this are parsed line by line in Python (unless pyarrow's CSV reader is
#: already loaded): below about 1 MiB that is quicker than loading pyarrow (~0.07 s), which
#: most small evaluations then never import.
_PYARROW_MIN_BYTES = 1 << 20


@dataclass(frozen=True)
class _Layout:
    """How a file's lines are laid out: field names, where data lines start (after a header)."""

    fields: tuple[str, ...]
    start: int = 0  # byte offset of the first line after the header
    first_line: int = 1  # its line number
    header: str | None = None

    def describe(self) -> str:
        return " ".join(self.fields)


def read_trec_run(path: PathLike, docs: TrecColumns | None = None) -> TrecColumns:
    """Read a TREC run file (``qid Q0 docid rank score tag``).  ``docs``: the columns of the qrels the run
    will be evaluated with; when both are read by the compiled reader, the run's document codes extend
    theirs (``TrecColumns.doc_base``)."""
    return _read(path, kind="run", docs=docs)


def read_trec_qrels(path: PathLike) -> TrecColumns:
    """Read a TREC qrels file (``qid iter docid rel``, or a header and ``qid docid rel``)."""
    return _read(path, kind="qrels")


def _read(path: PathLike, kind: str, docs: TrecColumns | None = None) -> TrecColumns:
    p = Path(path)
    source = str(path)
    data = _load_bytes(p, kind, source)
    layout = _sniff(data, kind)
    cols = None
    checked = False  # the compiled reader checked each query's documents for repeats as it read them
    if layout is not None:
        cols, checked = _read_plain(data, layout, kind, docs)
        if cols is None and _use_pyarrow(len(data) - layout.start):
            cols = _read_fast(data, layout, kind)
        if cols is None:
            cols = _read_slow(p, data, layout, kind, source)
    if cols is None or cols.qid_codes.size == 0:
        if kind == "qrels":
            what = ("only a header line" if layout is not None and layout.header is not None
                    else "0 bytes" if not data else "only blank lines")
            raise InputError(f"the qrels file is empty ({what}); expected judgment lines "
                             f"'{' '.join(_QRELS_FIELDS)}' (e.g. 'q1 0 doc7 1')", source=source)
        cols = TrecColumns(np.empty(0, dtype=np.int64), [], np.empty(0, dtype=np.int64), [],
                           np.empty(0, dtype=np.float64))
    cols.source = source
    if not checked:
        _check_duplicates(cols, data, layout, kind, source)
    return cols


def _use_pyarrow(nbytes: int) -> bool:
    """pyarrow's reader for files of ``_PYARROW_MIN_BYTES`` and more, or once it is loaded."""
    return nbytes >= _PYARROW_MIN_BYTES or "pyarrow.csv" in sys.modules


def _load_bytes(p: Path, kind: str, source: str) -> Any:
    """The file's bytes: a read-only memory map (no copy; it supports ``find``, slicing and the
    buffer protocol), or bytes decompressed from ``.gz``/``.bz2``.  Encoding problems raise."""
    if p.is_dir():
        raise InputError(f"is a directory; expected a TREC {kind} file ({_layout_hint(kind)})", source=source)
    if not p.is_file():
        raise InputError(f"no such file (expected a TREC {kind} file)", source=source)
    suffix = p.suffix.lower()
    if suffix in (".gz", ".bz2"):
        import bz2
        import gzip
        import zlib

        try:
            raw = gzip.decompress(p.read_bytes()) if suffix == ".gz" else bz2.decompress(p.read_bytes())
        except (OSError, EOFError, ValueError, zlib.error) as err:
            raise InputError(f"cannot decompress the {suffix} file ({err}); expected a {suffix} compressed "
                             f"TREC {kind} file", source=source) from None
        if raw[:3] == _BOM or raw[:2] in (b"\xff\xfe", b"\xfe\xff"):
            raise InputError("the decompressed file starts with a byte-order mark (UTF-8 with BOM or UTF-16); "
                             "expected plain UTF-8", source=source, line=1)
        return raw
    with open(p, "rb") as fh:
        head = fh.read(3)
        if not head:
            return b""
        import mmap

        data = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    if head == _BOM or head[:2] in (b"\xff\xfe", b"\xfe\xff"):
        _raise_encoding(p, source)
    return data


def _raise_encoding(p: Path, source: str) -> None:
    """Raise the encoding problem of ``p`` (BOM, UTF-16, not UTF-8 with a CP949 hint), as every
    ragexam reader words it."""
    from ragexam.data.problems import ProblemCollector
    from ragexam.data.reading import read_text

    read_text(p, source, ProblemCollector(strict=True))


def _layout_hint(kind: str) -> str:
    return "'qid Q0 docid rank score tag' lines" if kind == "run" else "'qid iter docid rel' lines"


def _sniff(data: bytes, kind: str) -> _Layout | None:
    """The layout from the first non-blank line (a qrels header is recognised and skipped);
    ``None`` when the file has no data line."""
    pos, line = 0, 1
    while pos < len(data):
        end = data.find(b"\n", pos)
        end = len(data) if end < 0 else end
        tokens = data[pos:end].split()
        if tokens:
            break
        pos, line = end + 1, line + 1
    else:
        return None
    if kind == "run":
        return _Layout(_RUN_FIELDS)
    fields = qrels_header([t.decode("utf-8", "replace") for t in tokens])
    if fields is not None:
        header = data[pos:end].decode("utf-8", "replace").strip()
        return _Layout(fields, start=end + 1, first_line=line + 1, header=header)
    return _Layout(_QRELS_FIELDS)


def qrels_header(names: Sequence[str]) -> tuple[str, ...] | None:
    """The columns a qrels header line names (``qid docid rel`` or ``qid iter docid rel``), recognised by its
    content -- every field a column name (``query-id``, ``corpus-id``, ``score``, ``qid``, ``docid``, ``rel``,
    ...) -- or ``None`` when the line is data (``q1 d1 1.0`` is data, never a header)."""
    low = [n.strip().lower() for n in names]
    for fields in _HEADER_LAYOUTS:
        if len(low) == len(fields) and all(n in _HEADER_NAMES[f] for n, f in zip(low, fields)) \
                and not _is_int(low[-1]):
            return fields
    return None


def _is_int(text: str) -> bool:
    try:
        int(text)
    except ValueError:
        return False
    return True


def _compiled():
    """The compiled reader module, or ``None`` (not built at install time, or ``RAGEXAM_PURE_PYTHON`` set)."""
    if os.environ.get("RAGEXAM_PURE_PYTHON"):
        return None
    try:
        from ragexam.data import _trecfast
    except ImportError:
        return None
    return _trecfast


def _read_plain(data: bytes, layout: _Layout, kind: str,
                docs: TrecColumns | None) -> tuple[TrecColumns | None, bool]:
    """The compiled one-pass reader on a plain file (see the module docstring), and whether it checked that no
    query has a document twice; ``(None, False)`` when it is not built or the file is not plain (the other
    readers then read it, and report any problem)."""
    fast = _compiled()
    if fast is None:
        return None, False
    f = layout.fields
    run = kind == "run"
    judged: tuple = ()
    if docs is not None and isinstance(docs.doc_vocab, PackedVocab):  # a qrels the compiled reader read
        base = docs.doc_vocab
        judged = ((base.data, base.offsets, docs.qid_vocab, np.ascontiguousarray(docs.qid_codes, dtype=np.int64),
                   np.ascontiguousarray(docs.doc_codes, dtype=np.int64)),)
    got = fast.read(data, layout.start, len(f), f.index("qid"), f.index("docid"), f.index("score" if run else "rel"),
                    f.index("rank") if run else -1, run, *judged)
    if got is None:
        return None, False
    qid_codes, (q_data, q_off), doc_codes, (d_data, d_off), values, n_base, checked = got
    return TrecColumns(qid_codes=np.frombuffer(qid_codes, dtype=np.int64),
                       qid_vocab=PackedVocab(q_data, np.frombuffer(q_off, dtype=np.int64)).to_list(),
                       doc_codes=np.frombuffer(doc_codes, dtype=np.int64),
                       doc_vocab=PackedVocab(d_data, np.frombuffer(d_off, dtype=np.int64)),
                       values=np.frombuffer(values, dtype=np.float64 if run else np.int64),
                       doc_base=docs.doc_vocab if n_base else None), checked  # type: ignore[union-attr]


def _read_fast(data: bytes, layout: _Layout, kind: str) -> TrecColumns | None:
    """pyarrow's CSV reader on files separated by single spaces or single tabs; ``None`` if it
    cannot be used (the slow parser then reads the file and reports any problem)."""
    try:
        import pyarrow as pa
        import pyarrow.csv as pcsv
    except ImportError:  # pragma: no cover - pyarrow is a dependency; keep working without it
        return None
    start = layout.start
    if start >= len(data):
        return None
    has_tab = data.find(b"\t", start) >= 0
    if has_tab and data.find(b" ", start) >= 0:
        return None  # mixed separators: any whitespace separates fields, as in the slow parser
    delimiter = "\t" if has_tab else " "
    names = layout.fields
    dict_t = pa.dictionary(pa.int32(), pa.string())
    types = {"qid": dict_t, "docid": dict_t}
    if kind == "run":
        types.update(rank=pa.int64(), score=pa.float64())
        include = ["qid", "docid", "rank", "score"]
    else:
        types.update(rel=pa.int64())
        include = ["qid", "docid", "rel"]
    body = pa.py_buffer(data).slice(start)
    read_options = pcsv.ReadOptions(column_names=list(names), use_threads=_threads_help())
    if kind == "qrels" and body.size < (1 << 30):
        # One block: one document dictionary, so qrels codes are global (qrels are small next
        # to runs; a run is read in parallel blocks and its dictionaries kept per block).
        read_options = pcsv.ReadOptions(column_names=list(names), block_size=body.size + 1, use_threads=False)
    try:
        table = pcsv.read_csv(
            pa.BufferReader(body),
            read_options=read_options,
            parse_options=pcsv.ParseOptions(delimiter=delimiter, quote_char=False, escape_char=False,
                                            newlines_in_values=False, ignore_empty_lines=True),
            convert_options=pcsv.ConvertOptions(column_types=types, include_columns=include,
                                                strings_can_be_null=False, quoted_strings_can_be_null=False,
                                                null_values=[], check_utf8=True),
        )
    except (pa.ArrowInvalid, pa.ArrowTypeError, UnicodeDecodeError, OSError):
        return None
    if table.num_rows == 0:
        return None  # let the slow path decide (e.g. whitespace-only lines)
    return _table_columns(table, kind)


def _table_columns(table: "pa.Table", kind: str) -> TrecColumns | None:
    """The :class:`TrecColumns` of the table :func:`_read_fast` read; ``None`` when a value is missing or a
    field empty (the slow parser then reads the file and reports it)."""
    import pyarrow as pa

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
    # Documents: each block has its own dictionary; unifying them costs more than the whole
    # parse (a run may hold a million distinct ids), so the block dictionaries are
    # concatenated instead.  The vocabulary may then repeat a string across blocks; codes
    # are exact within a block (see TrecColumns.doc_segments).
    doc_codes_parts = []
    dicts = []
    segments = []
    vocab_starts = []
    offset = row = 0
    for chunk in table.column("docid").chunks:
        doc_codes_parts.append(array_numpy(chunk.indices, np.int32).astype(np.int64) + offset)
        dicts.append(chunk.dictionary)
        segments.append(row)
        vocab_starts.append(offset)
        offset += len(chunk.dictionary)
        row += len(chunk)
    doc_vocab = pa.concat_arrays(dicts) if len(dicts) > 1 else dicts[0]
    for vocab in (qid.dictionary, doc_vocab):
        offsets = np.frombuffer(vocab.buffers()[1], dtype=np.int32)[vocab.offset:vocab.offset + len(vocab) + 1]
        if len(vocab) and bool((np.diff(offsets) == 0).any()):
            return None  # double separators produce empty fields: let the slow parser read them
    return TrecColumns(
        qid_codes=array_numpy(qid.indices, np.int32).astype(np.int64),
        qid_vocab=qid.dictionary.to_pylist(),
        doc_codes=np.concatenate(doc_codes_parts),
        doc_vocab=doc_vocab,
        values=values.astype(np.float64 if kind == "run" else np.int64, copy=False),
        doc_segments=tuple(segments[1:]),
        doc_segment_vocab=tuple(vocab_starts[1:]),
    )


def _threads_help() -> bool:
    """Whether to parse with pyarrow's thread pool: yes, unless the machine is already busy
    (1-minute load average at or above the number of cores), where the threads only add their
    overhead (a 1M-line run on 2 busy cores: 0.43 s with threads, 0.32 s without).  The result
    is the same either way."""
    try:
        return os.getloadavg()[0] < (os.cpu_count() or 1)
    except (OSError, AttributeError):  # pragma: no cover - no load average on this platform
        return True


def _iter_lines(data: bytes, layout: _Layout):
    """``(line number, raw line)`` of the lines after the header."""
    pos, lineno = layout.start, layout.first_line
    n = len(data)
    while pos < n:
        end = data.find(b"\n", pos)
        end = n if end < 0 else end
        yield lineno, data[pos:end]
        pos, lineno = end + 1, lineno + 1


def _read_slow(p: Path, data: bytes, layout: _Layout, kind: str, source: str) -> TrecColumns:
    """Line-by-line parser with exact error messages (any whitespace separates fields)."""
    fields = layout.fields
    n_fields = len(fields)
    qmap: dict[str, int] = {}
    dmap: dict[str, int] = {}
    qcodes: list[int] = []
    dcodes: list[int] = []
    values: list[float] | list[int] = []
    i_q, i_d = fields.index("qid"), fields.index("docid")
    first = True
    for lineno, raw in _iter_lines(data, layout):
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as err:
            if p.suffix.lower() not in (".gz", ".bz2"):
                _raise_encoding(p, source)
            raise InputError(f"the line is not valid UTF-8 (byte {err.start + 1} of the line: "
                             f"{raw[err.start:err.start + 1]!r}); save the file as UTF-8",
                             source=source, line=lineno) from None
        parts = line.split()
        if not parts:
            continue
        if len(parts) != n_fields:
            raise InputError(f"expected {n_fields} fields '{layout.describe()}', found {len(parts)}: "
                             f"{line.strip()!r}{_field_count_hint(kind, len(parts), layout)}",
                             source=source, line=lineno)
        if kind == "run":
            _qid, _q0, _doc, rank, score_txt, _tag = parts
            try:
                int(rank)
            except ValueError:
                raise InputError(f"rank {rank!r} is not an integer{_header_hint(kind, first)}", source=source,
                                 line=lineno, field="rank") from None
            try:
                value: float | int = float(score_txt)
            except ValueError:
                raise InputError(f"score {score_txt!r} is not a number{_header_hint(kind, first)}",
                                 source=source, line=lineno, field="score") from None
            if math.isnan(value):
                raise InputError("score is NaN; every retrieved item needs a real score",
                                 source=source, line=lineno, field="score")
        else:
            rel_txt = parts[-1]
            try:
                value = int(rel_txt)
            except ValueError:
                raise InputError(f"relevance {rel_txt!r} is not an integer grade{_header_hint(kind, first)}",
                                 source=source, line=lineno, field="rel") from None
        first = False
        qcodes.append(qmap.setdefault(parts[i_q], len(qmap)))
        dcodes.append(dmap.setdefault(parts[i_d], len(dmap)))
        values.append(value)  # type: ignore[arg-type]
    return TrecColumns(
        qid_codes=np.asarray(qcodes, dtype=np.int64),
        qid_vocab=list(qmap),
        doc_codes=np.asarray(dcodes, dtype=np.int64),
        doc_vocab=list(dmap),
        values=np.asarray(values, dtype=np.float64 if kind == "run" else np.int64),
    )


def _field_count_hint(kind: str, found: int, layout: _Layout) -> str:
    if kind == "run" and found == 4:
        return " (this looks like a qrels line: were --qrels and --run swapped?)"
    if kind == "qrels" and found == 6:
        return " (this looks like a run line: were --qrels and --run swapped?)"
    if kind == "qrels" and found == 3 and layout.header is None:
        return (" (a 3-column file 'qid docid rel' needs a header line naming its columns, e.g. "
                "'query-id corpus-id score' as BEIR writes it)")
    if kind == "run" and found == 3:
        return " (a 3-column 'qid docid rank' run, as MS MARCO writes them, has no scores: convert it to TREC)"
    return ""


def _header_hint(kind: str, first: bool) -> str:
    if not first:
        return ""
    if kind == "run":
        return " (is this a header line? TREC run files have none: delete it)"
    return (" (is this a header line? recognised headers name the columns, e.g. 'qid iter docid rel' or "
            "'query-id corpus-id score')")


def _check_duplicates(cols: TrecColumns, data: bytes, layout: _Layout | None, kind: str, source: str) -> None:
    """Raise if a (qid, docid) pair occurs twice (naming the earliest repeated line).

    Codes are compared with one sort; when the vocabulary may repeat strings (block
    dictionaries), the rows of queries whose rows lie in several blocks are compared again
    with codes made canonical by string.
    """
    n = cols.qid_codes.size
    if n < 2:
        return
    width = max(len(cols.doc_vocab), 1)
    rows = None
    skey = cols.qid_codes * width + cols.doc_codes
    skey.sort()  # in place: a copy of a large temporary costs as much as the sort
    if not bool((skey[1:] == skey[:-1]).any()):
        if not cols.doc_segments:
            return
        rows = _rows_in_several_segments(cols)
        if rows.size < 2:
            return
        skey = cols.qid_codes[rows] * width + vocab_canonical(cols.doc_vocab, cols.doc_codes[rows])
        skey.sort()
    dup = np.flatnonzero(skey[1:] == skey[:-1])
    if dup.size == 0:
        return
    if rows is None:
        key = cols.qid_codes * width + cols.doc_codes
    else:
        key = cols.qid_codes[rows] * width + vocab_canonical(cols.doc_vocab, cols.doc_codes[rows])
    seen: dict[int, int] = {}
    cand = np.flatnonzero(np.isin(key, skey[dup]))
    for i in cand.tolist():
        k = int(key[i])
        if k in seen:
            first, second = seen[k], i
            break
        seen[k] = i
    if rows is not None:
        first, second = int(rows[first]), int(rows[second])
    q = cols.qid_vocab[int(cols.qid_codes[first])]
    d = vocab_list(vocab_take(cols.doc_vocab, cols.doc_codes[first:first + 1]))[0]
    what = "retrieved twice for the same query" if kind == "run" else "judged twice for the same query"
    line_of = _line_numbers(data, layout, [first, second])
    raise InputError(f"document {d!r} is {what} {q!r} (first at line {line_of[0]}); "
                     f"each (qid, docid) pair may appear once", source=source, line=line_of[1])


def _rows_in_several_segments(cols: TrecColumns) -> np.ndarray:
    """The rows of queries that have rows in more than one dictionary segment (usually the
    few queries cut by a block boundary; every query when the file is not grouped by query)."""
    q = cols.qid_codes
    bounds = np.asarray(cols.doc_segments, dtype=np.int64)
    change = np.flatnonzero(q[1:] != q[:-1]) + 1
    if change.size + 1 == np.count_nonzero(np.bincount(q)):  # grouped: each query's rows are contiguous
        cut = q[bounds[q[bounds - 1] == q[bounds]]]  # repeats are harmless below (np.unique loads numpy.ma)
    else:
        seg = np.zeros(q.size, dtype=np.int64)
        seg[bounds] = 1
        seg = np.cumsum(seg)
        lo = np.full(len(cols.qid_vocab), seg[-1] + 1)
        hi = np.full(len(cols.qid_vocab), -1)
        np.minimum.at(lo, q, seg)
        np.maximum.at(hi, q, seg)
        cut = np.flatnonzero(lo != hi)
    if cut.size == 0:
        return cut
    mask = np.zeros(len(cols.qid_vocab), dtype=bool)
    mask[cut] = True
    return np.flatnonzero(mask[q])


def _line_numbers(data: bytes, layout: _Layout | None, rows: list[int]) -> list[int]:
    """1-based line numbers of the given data rows (non-blank lines after the header); for
    error messages only."""
    want = {r: None for r in rows}
    if layout is None:
        return [1 for _ in rows]
    seen = -1
    last = layout.first_line
    for lineno, raw in _iter_lines(data, layout):
        last = lineno
        if raw.strip():
            seen += 1
            if seen in want:
                want[seen] = lineno
                if all(v is not None for v in want.values()):
                    break
    return [want[r] or last for r in rows]


# --- writing -------------------------------------------------------------------------------


_WHITESPACE = re.compile(r"\s")  # for str patterns: exactly the characters str.isspace() accepts


def _check_token(value: str, what: str, where: str) -> None:
    if not value or _WHITESPACE.search(value) is not None:
        raise InputError(f"{what} {value!r} is empty or contains whitespace, which TREC files cannot hold",
                         source=where, field=what)


def write_trec_run(path: PathLike, rows: Iterable[tuple[str, str, int, float]], tag: str = "ragexam") -> None:
    """Write ``(qid, docid, rank, score)`` rows as a TREC run (``qid Q0 docid rank score tag``).

    Scores are written with ``repr`` so they read back bit-identical.
    """
    from ragexam.storage.atomic import file_writer

    _check_token(tag, "tag", str(path))
    with file_writer(path) as fh:
        for qid, doc, rank, score in rows:
            _check_token(qid, "qid", str(path))
            _check_token(doc, "docid", str(path))
            fh.write(f"{qid} Q0 {doc} {int(rank)} {float(score)!r} {tag}\n")


def write_trec_qrels(path: PathLike, rows: Iterable[tuple[str, str, int]]) -> None:
    """Write ``(qid, docid, rel)`` rows as TREC qrels (``qid 0 docid rel``)."""
    from ragexam.storage.atomic import file_writer

    with file_writer(path) as fh:
        for qid, doc, rel in rows:
            _check_token(qid, "qid", str(path))
            _check_token(doc, "docid", str(path))
            fh.write(f"{qid} 0 {doc} {int(rel)}\n")
