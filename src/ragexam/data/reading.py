"""Reading input files: UTF-8 checks, then numbered JSONL objects or CSV rows.

File-level rules (each reported through a :class:`~ragexam.data.problems.ProblemCollector`):

- a missing path or a directory is a bad invocation and always raises ``InputError``;
- a UTF-8 byte-order mark is an error (``bom``, line 1); reading continues without it;
- bytes that are not UTF-8 are an error (``encoding``) naming the line and byte column of the
  first bad byte (with a CP949/EUC-KR or UTF-16 hint when the file decodes that way); in
  collecting mode reading continues with U+FFFD replacement characters;
- a file with no records is an error (``empty_file``).

JSON lines (:func:`iter_jsonl`): a line that is not JSON, holds ``NaN``, a key twice or arrays/objects nested
deeper than :data:`ragexam.llm.safejson.MAX_DEPTH` (100) is ``invalid_json``; a line whose text holds a lone
surrogate (an escape such as ``"\\ud800"``, half of a UTF-16 pair that no UTF-8 file can hold) is ``encoding``,
naming the field (``contexts[2].text``) -- an input error at load, not a crash when the run is saved.

Lines are numbered from 1; blank (whitespace-only) lines are not records and are skipped, but
still counted, so line numbers match an editor's.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Dict, Iterable, Iterator, Optional, Tuple, Union

from ragexam import fmt
from ragexam.data.problems import ProblemCollector
from ragexam.errors import InputError
from ragexam.llm import safejson

__all__ = ["read_text", "read_lines", "iter_jsonl", "iter_csv", "parse_json_cell", "BOM_MESSAGE"]

_BOM = b"\xef\xbb\xbf"
#: what every reader says of a file that starts with a UTF-8 byte-order mark
BOM_MESSAGE = ("the file starts with a UTF-8 byte-order mark (BOM, bytes EF BB BF); expected plain UTF-8; re-save the "
               "file as 'UTF-8' (not 'UTF-8 with BOM')")


def _open_checked(path: Path, file: str, col: ProblemCollector) -> Tuple[Optional[bytes], bool]:
    """Check ``path`` and its first bytes: ``(bom, readable)`` -- ``bom`` the byte-order mark to skip (reported),
    ``readable`` false for a UTF-16 file (reported)."""
    if not path.exists():
        raise InputError("no such file", source=file)
    if path.is_dir():
        raise InputError("is a directory; expected a file", source=file)
    with open(path, "rb") as fh:
        head = fh.read(3)
    if head.startswith(_BOM):
        col.add("bom", BOM_MESSAGE, file=file, line=1)
        return _BOM, True
    if head[:2] in (b"\xff\xfe", b"\xfe\xff"):
        col.add("encoding", "the file is UTF-16 (it starts with a UTF-16 byte-order mark); "
                "expected UTF-8; convert it, e.g. `iconv -f utf-16 -t utf-8`", file=file, line=1)
        return None, False
    return None, True


def _bad_byte(line_bytes: bytes, pos: int, line: int, file: str, col: ProblemCollector) -> None:
    """Report the first byte of the file that is not UTF-8: byte ``pos`` of line ``line`` (``line_bytes``)."""
    hint = ""
    try:
        line_bytes.decode("cp949")
        hint = " The line decodes as CP949/EUC-KR: convert the file with `iconv -f cp949 -t utf-8`."
    except UnicodeDecodeError:
        pass
    col.add("encoding", f"byte 0x{line_bytes[pos]:02X} at byte column {pos + 1} is not valid "
            f"UTF-8 (first bad byte of the file); expected UTF-8 text.{hint}", file=file, line=line)


def read_text(path: Path, file: str, col: ProblemCollector) -> Optional[str]:
    """The decoded text of ``path``; ``None`` when it cannot be read as text at all (UTF-16)."""
    bom, readable = _open_checked(path, file, col)
    if not readable:
        return None
    data = path.read_bytes()[len(bom or b""):]
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        line_start = data.rfind(b"\n", 0, err.start) + 1
        line_end = data.find(b"\n", err.start)
        _bad_byte(data[line_start:line_end if line_end != -1 else len(data)], err.start - line_start,
                  data.count(b"\n", 0, err.start) + 1, file, col)
        return data.decode("utf-8", errors="replace")


def read_lines(path: Path, file: str, col: ProblemCollector) -> Optional[Iterator[str]]:
    """The lines of ``path`` decoded as UTF-8 (without their ``\\n``), read as a stream: one line in memory at
    a time, so a corpus of millions of records is never held as one text.  The same checks as
    :func:`read_text` (the BOM and UTF-16 at once, a bad byte when its line is read); ``None`` for UTF-16."""
    bom, readable = _open_checked(path, file, col)
    if not readable:
        return None

    def lines() -> Iterator[str]:
        reported = False
        with open(path, "rb") as fh:
            if bom:
                fh.read(len(bom))
            for lineno, raw in enumerate(fh, 1):
                raw = raw[:-1] if raw.endswith(b"\n") else raw
                try:
                    yield raw.decode("utf-8")
                except UnicodeDecodeError as err:
                    if not reported:
                        reported = True
                        _bad_byte(raw, err.start, lineno, file, col)
                    yield raw.decode("utf-8", errors="replace")

    return lines()


def _reject_constant(name: str):
    raise ValueError(f"{name} is not valid JSON")


def _no_duplicate_keys(pairs):
    obj = {}
    for k, v in pairs:
        if k in obj:
            raise ValueError(f"duplicate key {k!r} in one object")
        obj[k] = v
    return obj


def _encodable(raw: str, value: object, file: str, line: int, col: ProblemCollector, where: str = "") -> bool:
    """False (reported as ``encoding``) when a string of ``value``, parsed from the JSON text ``raw``, holds a
    lone surrogate (``"\\ud800"``): text no UTF-8 file can hold, so the first write of it would fail."""
    if not safejson.may_hold_surrogates(raw):
        return True
    bad = safejson.unencodable(value, where)
    if bad is None:
        return True
    col.add("encoding", f"holds {bad[1]}: {safejson.SURROGATE_HELP}", file=file, line=line, field=bad[0])
    return False


def iter_jsonl(text: Union[str, Iterable[str]], file: str, col: ProblemCollector, *, example: str
               ) -> Iterator[Tuple[int, Dict[str, object]]]:
    """``(line, object)`` for every JSON object line of ``text`` (a whole text, or its lines from
    :func:`read_lines`); other lines are reported and skipped.  ``example`` is the shape of one line of this
    kind of file, shown when a line is not an object (e.g. ``{"doc_id": ..., "content": ...}``)."""
    records = 0
    for lineno, raw in enumerate(text.split("\n") if isinstance(text, str) else text, 1):
        if not raw.strip():
            continue
        records += 1
        try:
            obj = safejson.loads(raw, object_pairs_hook=_no_duplicate_keys, parse_constant=_reject_constant)
        except json.JSONDecodeError as err:
            col.add("invalid_json", f"invalid JSON: {safejson.describe_error(err)}; expected one complete JSON "
                    "object per line", file=file, line=lineno)
            continue
        except ValueError as err:  # NaN, a duplicate key, nested too deep
            col.add("invalid_json", f"invalid JSON: {err}", file=file, line=lineno)
            continue
        if not isinstance(obj, dict):
            col.add("not_an_object", f"received {fmt.json_kind(obj)}; expected a JSON object like "
                    f"{example}", file=file, line=lineno)
            continue
        if not _encodable(raw, obj, file, lineno, col):
            continue
        yield lineno, obj
    if records == 0:
        col.add("empty_file", "the file is empty (no records); expected one JSON object per line",
                file=file)


def iter_csv(text: str, file: str, col: ProblemCollector, *, required: Tuple[str, ...], row_is: str = "document"
             ) -> Iterator[Tuple[int, Dict[str, object]]]:
    """``(line, row)`` for every CSV data row (header on the first line, RFC 4180 quoting).

    ``line`` is the physical line where the row starts (quoted fields may span lines).
    """
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    header = None
    records = 0
    last_line = 0
    try:
        for row in reader:
            start = last_line + 1
            last_line = reader.line_num
            if not any(cell.strip() for cell in row):
                continue
            if header is None:
                header = [h.strip() for h in row]
                dup = sorted({h for h in header if header.count(h) > 1})
                missing = [r for r in required if r not in header]
                if dup or missing:
                    what = (f"duplicate column(s) {', '.join(dup)}" if dup else
                            f"missing column(s) {', '.join(missing)}")
                    col.add("csv_format", f"header has {what}; expected a header row with columns "
                            f"{', '.join(required)} (others are optional)", file=file, line=start)
                    return
                continue
            records += 1
            if len(row) != len(header):
                col.add("csv_format", f"row has {fmt.plural(len(row), 'cell')}; expected {len(header)} "
                        f"(one per header column)", file=file, line=start)
                continue
            yield start, dict(zip(header, row))
    except csv.Error as err:
        col.add("csv_format", f"malformed CSV: {err}", file=file, line=last_line + 1)
        return
    if header is None or records == 0:
        col.add("empty_file", f"the file is empty (no data rows); expected a header row and one row per {row_is}",
                file=file)


def parse_json_cell(text: str, file: str, line: int, field: str, col: ProblemCollector) -> object:
    """The JSON value of a CSV cell (``metadata``), with the rules of :func:`iter_jsonl`; ``None`` (reported)
    when it is not usable."""
    try:
        value = safejson.loads(text)
    except ValueError as err:
        col.add("wrong_type", f"received {text[:40]!r}, which is not JSON ({err}); expected a JSON object such as "
                '{"lang": "ko"} (quote the cell)', file=file, line=line, field=field)
        return None
    return value if _encodable(text, value, file, line, col, field) else None
