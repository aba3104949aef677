"""Reading export files into traces, streamed, in bounded memory.

Files
-----
A file is JSON Lines (one record per line, streamed), one JSON document (an array of records, an API page
``{"data": [...]}``, or one OTLP request; read whole), or Parquet (``.parquet``, read in batches of rows); any of
them may be gzip-compressed (``.gz``).  A file is JSON Lines when its first non-blank line is JSON by itself or
does not start with ``[`` or ``{``; else it is read whole as one document, and as JSON Lines when it is not one.
A line that is not JSON (the first one too) is counted (``unreadable_json``, ``file:LINE``) and skipped; a line
that holds several records (an array, an API page) gives them as ``file:LINE#1``, ``#2``, ...  A UTF-8
byte-order mark at the start is counted (``bom``) and read past; a UTF-16 file, and a ``.gz`` file that is not
gzip, truncated or corrupt, are an :class:`~ragexam.errors.InputError` naming the file (nothing is written).  A
line that is not valid UTF-8 is read with the bad bytes replaced and its trace is skipped as ``non_utf8_text``
(:mod:`.mapping`); so is a record holding a lone surrogate escape (``\\ud800``).

Formats
-------
``--format auto`` takes each file's format from its first record that one of the readers recognizes (OTLP, then
Phoenix, then Langfuse: :func:`detect_format`); records of another format later in that file are counted
(``other_format``).  ``--format langfuse|phoenix|otel`` reads every file as that format.

Grouping spans into traces
--------------------------
The spans of one trace may be anywhere in the files (exports are ordered by time, not by trace), so a trace is
complete only when every file has been read.  :class:`TraceGroups` holds spans by trace id (after
:func:`ragexam.data.traces.mapping.extract` dropped their payloads) until they hold ``memory_chars`` characters of
text; past that it moves them to :data:`BUCKETS` files on disk by a hash of the trace id (``spill_dir``) and
reads one bucket at a time at the end.  Traces come out in the order of their first span in the input either way
(with buckets, each bucket's traces are in that order and :func:`merge_ordered` merges the buckets).  A span seen
twice (the same span id in the same role: an export written twice) is counted (``duplicate_span``) and not used
again: :func:`read_spans` leaves it out as it reads, so what a caller counts of the spans (``--explain``'s spans by
role) is what was used; after a spill, :class:`TraceGroups` finds the rest per bucket.
"""

from __future__ import annotations

import codecs
import gzip
import heapq
import json
import os
import pickle
import tempfile
import zlib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Callable, Dict, Iterable, Iterator, List, Optional, Tuple, Union

from ragexam import fmt
from ragexam.data.traces import langfuse, otel, phoenix
from ragexam.data.traces.meta import Feedback
from ragexam.data.traces.spans import Span, Unreadable
from ragexam.errors import InputError
from ragexam.data.traces.values import TraceValue

__all__ = ["FORMATS", "LINE_REASONS", "NOT_AN_EXPORT", "NOT_AN_EXPORT_REASONS", "ReadStats", "detect_format", "read_spans", "TraceGroups", "merge_ordered",
           "BUCKETS", "MEMORY_CHARS"]

#: the export formats and their readers, in the order ``auto`` tries them
FORMATS = {"otel": otel, "phoenix": phoenix, "langfuse": langfuse}
#: what is wrong with a record (not a trace) -> (Korean, English)
LINE_REASONS: Dict[str, Tuple[str, str]] = {
    "unreadable_json": ("JSON으로 읽을 수 없는 줄", "lines that are not JSON"),
    "bom": ("UTF-8 BOM으로 시작하는 파일 (BOM 없이 읽음)", "files that start with a UTF-8 byte-order mark (BOM, bytes EF "
            "BB BF): read without it; re-save as 'UTF-8' (not 'UTF-8 with BOM')"),
    "unrecognized_record": ("형식을 알 수 없는 레코드", "records of no known export format"),
    "other_format": ("파일의 형식과 다른 레코드", "records of another format than the file's"),
    "span_without_ids": ("trace/span id가 없는 스팬", "spans without a trace or span id"),
    "duplicate_span": ("중복 스팬 (두 번째는 무시)", "spans seen twice (the second one ignored)"),
    "orphan_annotation": ("스팬을 찾지 못한 평가", "annotations of spans that are not in the export"),
}
#: what to say when no record was of a format read here (a CSV, an OpenAI chat-completions log, a LangSmith
#: export): the formats read, and the plain answers file the later commands read without an import -> (en, ko)
NOT_AN_EXPORT = (
    "traces import reads Langfuse, Phoenix (OpenInference) and OpenTelemetry (OTLP JSON) exports: JSON, JSON Lines "
    "or Parquet, gzipped or not; this input is none of them. Other logs (a CSV, OpenAI chat-completions logs, a "
    "LangSmith export) need no import: write them as a plain answers JSONL, one line per answer with query_id, "
    "question, answer (null with an error for a failed request) and contexts (a list of texts), which `ragexam "
    "traces sample` and `ragexam score --answers` read as they are (docs/traces.md#the-three-formats).",
    "traces import는 Langfuse, Phoenix(OpenInference), OpenTelemetry(OTLP JSON) 내보내기(JSON, JSON Lines, Parquet, "
    "gzip 가능)를 읽으며, 이 입력은 그중 어느 것도 아닙니다. 다른 로그(CSV, OpenAI chat-completions 로그, LangSmith "
    "내보내기)는 가져올 필요 없이 답변 JSONL로 쓰면 됩니다: 답변마다 한 줄에 query_id, question, answer(실패한 요청은 "
    "null과 error), contexts(텍스트 목록). `ragexam traces sample`과 `ragexam score --answers`가 그대로 읽습니다 "
    "(docs/traces.md#the-three-formats).")
#: the reasons that mean the input was not an export read here (:data:`NOT_AN_EXPORT` is said when nothing was imported)
NOT_AN_EXPORT_REASONS = ("unreadable_json", "unrecognized_record")
BUCKETS = 64
#: characters of text held in memory before spans go to bucket files
MEMORY_CHARS = 16_000_000
_EXAMPLES = 5


@dataclass
class ReadStats:
    """What reading found: per file its format, records and spans, problems by reason with a few examples
    (``file:line``), and whether the spans went to disk."""

    files: List[Tuple[str, str]] = field(default_factory=list)
    records: int = 0
    spans: int = 0
    reasons: Counter = field(default_factory=Counter)
    examples: Dict[str, List[str]] = field(default_factory=dict)
    spilled: bool = False

    def count(self, reason: str, where: str) -> None:
        self.reasons[reason] += 1
        ex = self.examples.setdefault(reason, [])
        if len(ex) < _EXAMPLES:
            ex.append(where)


def detect_format(obj: TraceValue) -> Optional[str]:
    """The format whose reader recognizes ``obj`` (``otel``, ``phoenix``, ``langfuse``), else ``None``."""
    for name, reader in FORMATS.items():
        if reader.detect(obj):
            return name
    return None


def _open(path: Path) -> IO[bytes]:
    raw = open(path, "rb")
    if path.suffix == ".gz":
        return gzip.GzipFile(fileobj=raw)  # type: ignore[return-value]
    return raw


def _skip_bom(path: Path, fh: IO[bytes], stats: ReadStats) -> None:
    """Read past a UTF-8 byte-order mark at the start of ``fh``, counted (``bom``, ``file:1``) as the corpus and
    question readers report it (:mod:`ragexam.data.reading`: the BOM is a problem, and reading goes on without it);
    a UTF-16 file is an :class:`~ragexam.errors.InputError` with its fix.  The checks are
    :func:`ragexam.data.reading.read_lines`'s; a ``.gz`` file's text is checked for the BOM as its first line is
    read (:func:`_iter_file`)."""
    from ragexam.data.problems import ProblemCollector
    from ragexam.data.reading import read_lines

    name = str(path)
    col = ProblemCollector(strict=False)
    read_lines(path, name, col)  # only the file-level checks: its lines are read here, as bytes
    for problem in col.problems:
        if problem.kind != "bom":
            raise InputError(problem.message, source=name, line=problem.line)
        fh.read(len(codecs.BOM_UTF8))
        stats.count("bom", f"{name}:1")


def _guarded(fh: IO[bytes], path: Path) -> Iterator[bytes]:
    """The lines of ``fh``; a ``.gz`` file that is not gzip, truncated or corrupt is an
    :class:`~ragexam.errors.InputError` naming the file and how far it was read (nothing is written then)."""
    n = 0
    try:
        for raw in fh:
            n += 1
            yield raw
    except (EOFError, OSError, zlib.error) as err:
        if path.suffix != ".gz":
            raise
        read = f"after {fmt.plural(n, 'line')} read" if n else "before its first line"
        if isinstance(err, EOFError):
            msg = (f"truncated gzip stream: the file ends {read} (a download or copy cut short); expected a "
                   "complete .gz file: export or compress it again (`gzip -t FILE` checks one)")
        elif isinstance(err, gzip.BadGzipFile) and not n:
            msg = ("not a gzip file (its name ends in .gz but its bytes are not gzip); rename it without '.gz' "
                   "when it is plain JSON Lines or JSON, or compress it with `gzip`")
        else:
            msg = (f"corrupt gzip data {read} ({err}); expected a complete .gz file: export or compress it again "
                   "(`gzip -t FILE` checks one)")
        raise InputError(msg, source=str(path)) from None


def _parse(raw: bytes, where: str, stats: ReadStats) -> Optional[Tuple[TraceValue, bool]]:
    """``(value, bad_text)`` of the JSON text ``raw``; ``None`` (counted as ``unreadable_json`` at ``where``) when it
    is not JSON."""
    got = _decoded(raw)
    if got is None:
        stats.count("unreadable_json", where)
    return got


def _decoded(raw: bytes) -> Optional[Tuple[TraceValue, bool]]:
    from ragexam.llm import safejson

    bad = False
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text, bad = raw.decode("utf-8", errors="replace"), True
    try:  # the readers walk a record to a fixed depth only, so a deep one needs no depth check (safejson)
        obj = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if not bad and safejson.may_hold_surrogates(text) and safejson.unencodable(obj) is not None:
        bad = True
    return obj, bad


def _records(value: TraceValue) -> List[TraceValue]:
    """The records of a JSON document or line: the items of an array or of an API page's ``data``; the value itself
    otherwise (an empty array or page is one record, of no known format: it is counted, not passed over)."""
    if isinstance(value, list) and value:
        return value
    if isinstance(value, dict) and isinstance(value.get("data"), list) and value["data"] and not otel.detect(value):
        return value["data"]
    return [value]


def _iter_file(path: Path, stats: ReadStats) -> Iterator[Tuple[str, TraceValue, bool]]:
    """``(where, record, bad_text)`` of every record of one file (module docstring, "Files")."""
    if path.name.endswith((".parquet", ".parquet.gz")):
        yield from _iter_parquet(path)
        return
    with _open(path) as fh:
        if path.suffix != ".gz":
            _skip_bom(path, fh, stats)
        lines = _guarded(fh, path)
        head: List[bytes] = []
        for raw in lines:
            if not head and path.suffix == ".gz" and raw.startswith(codecs.BOM_UTF8):
                raw = raw[len(codecs.BOM_UTF8):]
                stats.count("bom", f"{path}:1")
            head.append(raw)
            if raw.strip():
                break
        if not head or not head[-1].strip():
            return
        first = head[-1].lstrip()
        if _is_json(first) or first[:1] not in (b"[", b"{"):  # JSON Lines (a first line that is not JSON counted)
            yield from _iter_lines(str(path), _chain(head, lines), stats)
            return
        text = b"".join(_chain(head, lines))  # one JSON document over many lines
        got = _decoded(text)
        if got is None:  # not one document either: JSON Lines, each line read or counted
            yield from _iter_lines(str(path), text.split(b"\n"), stats)
            return
        for i, rec in enumerate(_records(got[0]), 1):
            yield f"{path}#{i}", rec, got[1]


def _is_json(raw: bytes) -> bool:
    try:
        json.loads(raw.decode("utf-8", errors="replace"))
    except (ValueError, RecursionError):
        return False
    return True


def _iter_lines(name: str, lines: Iterable[bytes], stats: ReadStats) -> Iterator[Tuple[str, TraceValue, bool]]:
    """The records of JSON Lines: ``file:LINE``, and ``file:LINE#I`` for the I-th of a line that holds several (an
    array, an API page)."""
    for lineno, raw in enumerate(lines, 1):
        if raw.strip():
            got = _parse(raw, f"{name}:{lineno}", stats)
            if got is not None:
                recs = _records(got[0])
                for i, rec in enumerate(recs, 1):
                    yield (f"{name}:{lineno}#{i}" if len(recs) > 1 else f"{name}:{lineno}"), rec, got[1]


def _chain(first: Iterable[bytes], rest: Iterable[bytes]) -> Iterator[bytes]:
    yield from first
    yield from rest


def _iter_parquet(path: Path) -> Iterator[Tuple[str, TraceValue, bool]]:
    import pyarrow.parquet as pq

    try:
        pf = pq.ParquetFile(_open(path) if path.suffix == ".gz" else str(path))
    except Exception as err:  # pyarrow raises its own types for a file that is not Parquet
        raise InputError(f"cannot read it as Parquet: {err}", source=str(path)) from None
    row = 0
    for batch in pf.iter_batches(batch_size=2048):
        for rec in batch.to_pylist():
            row += 1
            yield f"{path}#row{row}", rec, False


def read_spans(paths: Iterable[Union[str, Path]], fmt: str, stats: ReadStats) -> Iterator[Span]:
    """Every span of the files, in file order (module docstring); problems are counted in ``stats``."""
    if fmt != "auto" and fmt not in FORMATS:
        raise InputError(f"received {fmt!r}; expected auto, {', '.join(FORMATS)}", source="--format", field="format")
    seq = 0
    # a span seen twice is counted (duplicate_span) and not given to the caller, so what it counts of the spans (the
    # roles of --explain) is what is used; once the spans go to disk, the rest are found per bucket (TraceGroups)
    # and this set, which would grow with the export, is let go
    seen: set = set()
    for p in paths:
        path = Path(p)
        file_fmt = None if fmt == "auto" else fmt
        for where, rec, bad in _iter_file(path, stats):
            stats.records += 1
            found = detect_format(rec) if file_fmt is None else (file_fmt if FORMATS[file_fmt].detect(rec) else None)
            if found is None:
                other = detect_format(rec) if file_fmt is not None else None
                stats.count("other_format" if other else "unrecognized_record", where)
                continue
            file_fmt = found
            for span in FORMATS[found].read(rec, where):
                if isinstance(span, Unreadable):
                    stats.count(span.reason, span.where)
                    continue
                stats.spans += 1
                if stats.spilled and seen:
                    seen = set()
                elif span.role != "annotation" and not stats.spilled:
                    key = (span.trace_id, span.span_id, span.role, span.kind, span.name)
                    if key in seen:
                        stats.count("duplicate_span", span.where)
                        continue
                    seen.add(key)
                seq += 1
                span.seq, span.bad_text, span.source = seq, bad, found
                yield span
        stats.files.append((str(path), file_fmt or "unrecognized"))


class TraceGroups:
    """Spans grouped by trace id in bounded memory (module docstring, "Grouping")."""

    def __init__(self, stats: ReadStats, *, memory_chars: int = MEMORY_CHARS,
                 spill_dir: Optional[Union[str, Path]] = None) -> None:
        self.stats = stats
        self.memory_chars = memory_chars
        self.spill_dir = spill_dir
        self.annotations: Dict[str, List[Feedback]] = {}
        self._groups: Dict[str, List[Span]] = {}
        self._seen: set = set()
        self._chars = 0
        self._tmp: Optional[tempfile.TemporaryDirectory] = None
        self._buckets: List[IO[bytes]] = []

    @property
    def spilled(self) -> bool:
        return bool(self._buckets)

    def add(self, span: Span) -> None:
        if span.role == "annotation":
            self.annotations.setdefault(span.span_id, []).extend(span.feedback)
            return
        key = (span.trace_id, span.span_id, span.role)
        if not self.spilled:  # with buckets, duplicates are found per bucket
            if key in self._seen:
                self.stats.count("duplicate_span", span.where)
                return
            self._seen.add(key)
            self._groups.setdefault(span.trace_id, []).append(span)
            self._chars += span.size
            if self._chars > self.memory_chars:
                self._spill()
            return
        pickle.dump(span, self._buckets[_bucket(span.trace_id)], protocol=pickle.HIGHEST_PROTOCOL)

    def _spill(self) -> None:
        self._tmp = tempfile.TemporaryDirectory(prefix="ragexam-traces-", dir=self.spill_dir)
        self._buckets = [open(os.path.join(self._tmp.name, f"b{i:02d}"), "w+b") for i in range(BUCKETS)]
        self.stats.spilled = True
        for tid, spans in self._groups.items():
            fh = self._buckets[_bucket(tid)]
            for s in spans:
                pickle.dump(s, fh, protocol=pickle.HIGHEST_PROTOCOL)
        self._groups, self._seen, self._chars = {}, set(), 0

    def groups(self) -> Iterator[Tuple[int, int, str, List[Span]]]:
        """``(bucket, first_seq, trace_id, spans)`` of every trace: in first-appearance order without buckets;
        bucket by bucket (each in that order) with them."""
        if not self.spilled:
            for tid, spans in self._groups.items():
                yield 0, spans[0].seq, tid, spans
            return
        try:
            for i, fh in enumerate(self._buckets):
                fh.flush()
                fh.seek(0)
                groups: Dict[str, List[Span]] = {}
                seen: set = set()
                while True:
                    try:
                        s = pickle.load(fh)
                    except EOFError:
                        break
                    key = (s.span_id, s.role)
                    if (s.trace_id, *key) in seen:
                        self.stats.count("duplicate_span", s.where)
                        continue
                    seen.add((s.trace_id, *key))
                    groups.setdefault(s.trace_id, []).append(s)
                fh.close()
                for tid, spans in groups.items():
                    yield i, spans[0].seq, tid, spans
        finally:
            self.close()

    def close(self) -> None:
        for fh in self._buckets:
            if not fh.closed:
                fh.close()
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None


def _bucket(trace_id: str) -> int:
    return zlib.crc32(trace_id.encode("utf-8", "surrogatepass")) % BUCKETS


def merge_ordered(parts: List[IO[str]], write: Callable[[str], object]) -> None:
    """Write the lines of ``parts`` (text files of ``SEQ<TAB>line`` lines, each sorted by ``SEQ``) in ``SEQ`` order,
    without the ``SEQ``."""
    def lines(fh: IO[str]) -> Iterator[Tuple[int, str]]:
        fh.seek(0)
        for line in fh:
            seq, _, rest = line.partition("\t")
            yield int(seq), rest

    for _, rest in heapq.merge(*(lines(fh) for fh in parts), key=lambda x: x[0]):
        write(rest)
