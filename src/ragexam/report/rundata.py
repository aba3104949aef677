"""Reading the output of ``ragexam run`` (format ``ragexam-run/1``, see ``docs/run-format.md``).

A run is two things: ``summary.json`` (a dict, everything printed) and ``per_question.csv``
(one row per question x pipeline).  :class:`RunData` holds both; it unpacks as
``summary, per_question = run``.

Per-question rows are *typed* by :func:`coerce_rows`, whichever way they arrive (strings read
from the CSV, or the dicts ``ragexam run`` builds in memory):

==============  ===============================================================
column          type after coercion
==============  ===============================================================
pipeline        str (required)
query_id        str (required)
retriever       str or None
chunker         str or None
type            str or None (empty cell -> None)
answerable      bool (``true``/``false``/``1``/``0``; empty -> True)
first_rank      int >= 1, or None (empty cell: not found within ``depth``)
unit_ranks      dict ``{unit_id: int or None}`` (a JSON object in the CSV)
n_units         int or None
top_ids         list of str (a JSON list in the CSV)
<metric>        float, or None for an empty cell (out-of-corpus questions)
==============  ===============================================================

Every other column is a metric column.  A malformed cell raises
:class:`ragexam.errors.InputError` naming the file, line and column.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Union

from ragexam.errors import InputError

__all__ = ["RunData", "FIXED_COLUMNS", "coerce_rows", "load_run_dir", "resolve_run",
           "metric_columns", "miss_cutoff", "headline_metric", "dataset_label"]

#: The per_question.csv columns that are not metrics, in the documented order.
FIXED_COLUMNS = ("pipeline", "retriever", "chunker", "query_id", "type", "answerable", "first_rank",
                 "unit_ranks", "n_units", "top_ids")

_TRUE = {"true", "1", "yes", "t", "y"}
_FALSE = {"false", "0", "no", "f", "n"}

PathLike = Union[str, Path]


@dataclass
class RunData:
    """One run: its ``summary`` dict and its typed ``per_question`` rows.

    ``source`` says where it came from (a folder, or ``history:<id>``).  Unpacks as
    ``summary, per_question = run``.
    """

    summary: Dict[str, Any]
    per_question: List[Dict[str, Any]] = field(default_factory=list)
    source: str = ""

    def __iter__(self) -> Iterator[Any]:
        yield self.summary
        yield self.per_question

    @property
    def run_id(self) -> str:
        return str(self.summary.get("run_id") or "")

    @property
    def pipelines(self) -> List[str]:
        """Pipeline names in summary order (the first is the baseline)."""
        names = [p.get("name") for p in self.summary.get("pipelines") or [] if isinstance(p, Mapping)]
        names = [n for n in names if isinstance(n, str)]
        if not names:
            names = list((self.summary.get("results") or {}).keys())
        return names

    def rows(self, pipeline: str) -> List[Dict[str, Any]]:
        """The per-question rows of ``pipeline``, in file order."""
        return [r for r in self.per_question if r.get("pipeline") == pipeline]


def _fail(msg: str, source: str, line: Optional[int], fld: Optional[str]) -> InputError:
    return InputError(msg, source=source, line=line, field=fld)


def _as_str(v: Any) -> Optional[str]:
    if v is None:
        return None
    if isinstance(v, float) and math.isnan(v):
        return None
    s = str(v)
    return s if s != "" else None


def _as_bool(v: Any, source: str, line: Optional[int], fld: str) -> bool:
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


def _as_int(v: Any, source: str, line: Optional[int], fld: str, *, minimum: int = 0) -> Optional[int]:
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
        s = str(v).strip()
        if s == "":
            return None
        try:
            out = int(float(s)) if s.endswith(".0") else int(s)
        except ValueError:
            raise _fail(f"received {s!r}; expected an integer or an empty cell.", source, line, fld) from None
    if out < minimum:
        raise _fail(f"received {out}; expected an integer >= {minimum}.", source, line, fld)
    return out


def _as_float(v: Any, source: str, line: Optional[int], fld: str) -> Optional[float]:
    if v is None:
        return None
    if isinstance(v, bool):
        raise _fail(f"received {v!r}; expected a number or an empty cell.", source, line, fld)
    if isinstance(v, (int, float)):
        x = float(v)
    else:
        s = str(v).strip()
        if s == "":
            return None
        try:
            x = float(s)
        except ValueError:
            raise _fail(f"received {s!r}; expected a number or an empty cell.", source, line, fld) from None
    if math.isnan(x):
        return None  # pandas reads an empty cell as NaN; the CSV contract writes empty cells
    if not math.isfinite(x):
        raise _fail(f"received {x!r}; expected a finite number.", source, line, fld)
    return x


def _as_json(v: Any, kind: type, source: str, line: Optional[int], fld: str) -> Any:
    if isinstance(v, kind):
        return v
    if kind is list and isinstance(v, tuple):
        return list(v)
    s = _as_str(v)
    if s is None:
        return kind()
    try:
        out = json.loads(s)
    except json.JSONDecodeError as exc:
        raise _fail(f"received {s[:60]!r}, which is not JSON ({exc.msg}); expected a JSON "
                    f"{'object' if kind is dict else 'list'}.", source, line, fld) from None
    if not isinstance(out, kind):
        raise _fail(f"received {type(out).__name__} {s[:60]!r}; expected a JSON "
                    f"{'object' if kind is dict else 'list'}.", source, line, fld)
    return out


def coerce_rows(rows: Iterable[Mapping[str, Any]], *, source: str = "per_question",
                first_line: int = 2) -> List[Dict[str, Any]]:
    """Typed copies of per-question rows (see the module docstring for the types).

    ``source`` and ``first_line`` (the line of the first row; 2 for a CSV with a header) only
    name the place in error messages.  Rows that are already typed pass through unchanged.
    """
    out: List[Dict[str, Any]] = []
    for i, row in enumerate(rows):
        line = first_line + i
        if not isinstance(row, Mapping):
            raise _fail(f"received {type(row).__name__}; expected a mapping of column -> value.",
                        source, line, None)
        typed: Dict[str, Any] = {}
        for col in ("pipeline", "query_id"):
            val = _as_str(row.get(col))
            if val is None:
                raise _fail("is missing or empty; expected a non-empty string.", source, line, col)
            typed[col] = val
        for col in ("retriever", "chunker", "type"):
            typed[col] = _as_str(row.get(col))
        typed["answerable"] = _as_bool(row.get("answerable"), source, line, "answerable")
        typed["first_rank"] = _as_int(row.get("first_rank"), source, line, "first_rank", minimum=1)
        ranks = _as_json(row.get("unit_ranks"), dict, source, line, "unit_ranks")
        typed["unit_ranks"] = {str(u): _as_int(r, source, line, f"unit_ranks[{u}]", minimum=1)
                               for u, r in ranks.items()}
        typed["n_units"] = _as_int(row.get("n_units"), source, line, "n_units")
        typed["top_ids"] = [str(x) for x in _as_json(row.get("top_ids"), list, source, line, "top_ids")]
        for col, val in row.items():
            if col in typed or col in FIXED_COLUMNS:
                continue
            typed[str(col)] = _as_float(val, source, line, str(col))
        out.append(typed)
    return out


def metric_columns(rows: Sequence[Mapping[str, Any]]) -> List[str]:
    """The metric columns of typed rows, in first-seen order."""
    seen: Dict[str, None] = {}
    for r in rows:
        for col in r:
            if col not in FIXED_COLUMNS:
                seen.setdefault(col, None)
    return list(seen)


def _check_summary(summary: Any, source: str) -> Dict[str, Any]:
    if not isinstance(summary, dict):
        raise InputError(f"received a JSON {type(summary).__name__}; expected the object that "
                         "`ragexam run --out DIR` writes (format ragexam-run/1).", source=source)
    fmt = summary.get("format")
    if not isinstance(fmt, str) or not fmt.startswith("ragexam-"):
        raise InputError(f"received format {fmt!r}; expected 'ragexam-run/1'. Is this the "
                         "summary.json of `ragexam run --out DIR`?", source=source, field="format")
    major = fmt.rsplit("/", 1)[-1].split(".")[0]
    if major != "1":
        raise InputError(f"received format {fmt!r}, a version this ragexam does not read; expected "
                         "version 1. Fix: upgrade ragexam.", source=source, field="format")
    results = summary.get("results")
    if not isinstance(results, dict):
        raise InputError(f"received {type(results).__name__}; expected an object "
                         "{pipeline: {metrics, ci95, ...}}.", source=source, field="results")
    return summary


def load_run_dir(path: PathLike) -> RunData:
    """Read ``summary.json`` and ``per_question.csv`` from a ``ragexam run --out`` folder.

    ``per_question.csv`` may be absent (the rows are then empty and the report says so);
    ``summary.json`` may not.
    """
    import csv

    folder = Path(path)
    if folder.is_file() and folder.name == "summary.json":
        folder = folder.parent
    spath = folder / "summary.json"
    if not spath.is_file():
        raise InputError("has no summary.json; expected a folder written by `ragexam run --out DIR`.",
                         source=str(folder))
    try:
        summary = json.loads(spath.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InputError(f"is not valid JSON ({exc.msg}).", source=str(spath), line=exc.lineno) from None
    _check_summary(summary, str(spath))
    qpath = folder / "per_question.csv"
    rows: List[Dict[str, Any]] = []
    if qpath.is_file():
        with qpath.open(encoding="utf-8", newline="") as fh:
            reader = csv.DictReader(fh)
            missing = [c for c in ("pipeline", "query_id") if c not in (reader.fieldnames or [])]
            if missing:
                raise InputError(f"the header lacks {', '.join(missing)}; expected the columns of "
                                 "docs/run-format.md.", source=str(qpath), line=1)
            rows = coerce_rows(reader, source=str(qpath))
    return RunData(summary=summary, per_question=rows, source=str(folder))


def resolve_run(ref: PathLike, history_path: Optional[PathLike] = None) -> RunData:
    """A run folder (or its summary.json), or else the id (or unique id prefix) of a recorded run."""
    p = Path(ref)
    if p.is_dir() or (p.is_file() and p.name == "summary.json"):
        return load_run_dir(p)
    if p.is_file():
        raise InputError("is a file; expected a run folder (with summary.json) or a recorded run id.",
                         source=str(ref))
    from ragexam.report.history import History

    hist = History(history_path)
    return hist.get(str(ref))


def miss_cutoff(summary: Mapping[str, Any], default: int = 5) -> int:
    """The missed-cutoff ``k`` of a run: ``config.miss_k``, else the ``k`` of its missed entries."""
    cfg = summary.get("config") or {}
    for key in ("miss_k", "missed_k", "miss_cutoff"):
        if isinstance(cfg.get(key), int) and not isinstance(cfg.get(key), bool):
            return int(cfg[key])
    for entries in (summary.get("missed") or {}).values():
        for e in entries or []:
            if isinstance(e, Mapping) and isinstance(e.get("k"), int):
                return int(e["k"])
    return default


def headline_metric(summary: Mapping[str, Any]) -> Optional[str]:
    """The metric shown as a run's headline: ``hit@<miss cutoff>`` when present, else the first."""
    results = summary.get("results") or {}
    first = next(iter(results.values()), None)
    if not isinstance(first, Mapping):
        return None
    metrics = list((first.get("metrics") or {}).keys())
    if not metrics:
        return None
    want = f"hit@{miss_cutoff(summary)}"
    return want if want in metrics else metrics[0]


def dataset_label(summary: Mapping[str, Any]) -> str:
    """``corpus`` (or ``corpus / qa`` when they differ) of a run, for listings."""
    ds = summary.get("dataset") or {}
    cfg = summary.get("config") or {}
    corpus = ds.get("corpus") or cfg.get("corpus") or "?"
    qa = ds.get("qa") or cfg.get("qa") or corpus
    return str(corpus) if str(qa) == str(corpus) else f"{corpus} / {qa}"
