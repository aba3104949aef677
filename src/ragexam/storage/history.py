"""Run history: every ``ragexam run`` / ``ragexam score`` recorded in an embedded SQLite database.

Where the database lives (first that applies):

1. the ``path`` given to :class:`History` (the CLI's ``--history PATH``);
2. ``$RAGEXAM_HISTORY``;
3. ``$RAGEXAM_HOME/history.sqlite3``;
4. ``$XDG_DATA_HOME/ragexam/history.sqlite3``, else ``~/.local/share/ragexam/history.sqlite3``.

What one record holds: the whole ``summary.json`` (config, dataset with its hashes, package
version, aggregates with CIs, comparisons, missed questions), the aggregates again as rows of
``results`` (pipeline, metric, mean, CI) so they can be queried with plain SQL, and every
per-question row (a :class:`ragexam.storage.runfolder.RunRow`, as JSON) in ``questions``; it is
read back as the same typed rows.

Safety:

* **Concurrent writers** (two ``ragexam run`` at once) do not corrupt it: the database is in WAL
  mode, every connection waits for a lock (``busy_timeout``, default 60 s) instead of failing,
  and each record is written in one ``BEGIN IMMEDIATE`` ... ``COMMIT`` transaction.
* **A run killed midway** leaves no half-written record: the record is one transaction, so a
  writer killed inside it (even by SIGKILL) is rolled back by SQLite on the next open.
  :meth:`History.get` also checks that the stored row count matches the one recorded.
* Connections are opened per operation and closed afterwards; nothing is held between calls.

Record ids are the summary's ``run_id``.  Recording the same summary twice returns the
existing id; a *different* summary with an id already taken is stored as ``<run_id>.2``
(``.3``, ...), so nothing is overwritten.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

from ragexam import fmt
from ragexam.errors import InputError, one_of
from ragexam.storage.readback import parse_json
from ragexam.storage.paths import history_path
from ragexam.storage.runfolder import RunData, check_summary, coerce_rows, read_folder
from ragexam.storage.summary import read_summary
from ragexam.types import JsonValue

#: a value of an SQLite row
SqlValue = Union[None, int, float, str, bytes]

__all__ = ["History", "RunEntry", "RunPage", "default_history_path", "record", "resolve_run", "SCHEMA_VERSION"]

#: Version of the database layout, stored in ``PRAGMA user_version``.
SCHEMA_VERSION = 1

PathLike = Union[str, Path]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id              TEXT PRIMARY KEY,
    kind            TEXT NOT NULL,
    format          TEXT,
    created         TEXT,
    recorded        TEXT NOT NULL,
    ragexam_version TEXT,
    dataset         TEXT,
    corpus_sha256   TEXT,
    qa_sha256       TEXT,
    dataset_hash    TEXT,
    pipelines       TEXT NOT NULL,
    headline_metric TEXT,
    headline        TEXT NOT NULL,
    config          TEXT NOT NULL,
    summary         TEXT NOT NULL,
    summary_sha256  TEXT NOT NULL,
    n_rows          INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS results (
    run_id   TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    pipeline TEXT NOT NULL,
    metric   TEXT NOT NULL,
    mean     REAL,
    ci_low   REAL,
    ci_high  REAL,
    PRIMARY KEY (run_id, pipeline, metric)
);
CREATE TABLE IF NOT EXISTS questions (
    run_id     TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    seq        INTEGER NOT NULL,
    pipeline   TEXT NOT NULL,
    query_id   TEXT NOT NULL,
    first_rank INTEGER,
    row        TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
);
CREATE INDEX IF NOT EXISTS runs_recorded ON runs(recorded);
"""


default_history_path = history_path  # the one definition lives in ragexam.storage.paths


@dataclass(frozen=True)
class RunEntry:
    """One line of :meth:`History.list_runs`."""

    run_id: str
    kind: str
    created: Optional[str]
    recorded: str
    dataset: Optional[str]
    dataset_hash: Optional[str]
    ragexam_version: Optional[str]
    pipelines: List[str]
    headline_metric: Optional[str]
    headline: Dict[str, Optional[float]]
    n_rows: int
    #: the run's grading rule (``config.relevance``: ``evidence`` or ``doc``; ``None`` for a score)
    relevance: Optional[str] = None

    def to_dict(self) -> Dict[str, Any]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class RunPage:
    """One page of :meth:`History.page_runs`: its entries, how many records match, the 95% interval of each
    entry's headline metric (``{run_id: {pipeline: (low, high)}}``) and every dataset of the history with its
    number of records."""

    entries: List[RunEntry]
    total: int
    intervals: Dict[str, Dict[str, Optional[Tuple[float, float]]]]
    datasets: Dict[str, int]


#: what :meth:`History.page_runs` sorts by (``headline``: the best pipeline's headline mean, read from the record's
#: ``headline`` column with SQLite's JSON functions; without them, from the ``results`` table, 5 times slower)
_SORTS = {"recorded": "recorded", "created": "created", "dataset": "dataset", "id": "id",
          "headline": "(SELECT MAX(value) FROM json_each(runs.headline))"}
_HEADLINE_NO_JSON = ("(SELECT MAX(mean) FROM results WHERE results.run_id = runs.id "
                     "AND results.metric = runs.headline_metric)")
_ENTRY_COLUMNS = ("id, kind, created, recorded, dataset, dataset_hash, ragexam_version, pipelines, headline_metric, "
                  "headline, n_rows, config")


def _entry(r: Sequence[SqlValue]) -> RunEntry:
    config = parse_json(r[11], source=f"history (record {r[0]})", field="config") if len(r) > 11 and r[11] else {}
    relevance = config.get("relevance") if isinstance(config, dict) else None
    return RunEntry(run_id=r[0], kind=r[1], created=r[2], recorded=r[3], dataset=r[4], dataset_hash=r[5],
                    ragexam_version=r[6], pipelines=parse_json(r[7], source=f"history (record {r[0]})",
                                                               field="pipelines"),
                    headline_metric=r[8], headline=parse_json(r[9], source=f"history (record {r[0]})",
                                                              field="headline"), n_rows=r[10],
                    relevance=relevance if isinstance(relevance, str) else None)


def _dumps(obj: JsonValue, what: str) -> str:
    try:
        return json.dumps(obj, ensure_ascii=False, allow_nan=False, sort_keys=False)
    except ValueError as exc:
        raise InputError(f"contains a value JSON cannot hold ({exc}); expected finite numbers only "
                         "(no NaN or infinity).", source="history", field=what) from None
    except TypeError as exc:
        raise InputError(f"contains a value that is not JSON ({exc}).", source="history",
                         field=what) from None


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")



class History:
    """The run-history database at ``path`` (default: :func:`default_history_path`).

    >>> h = History("/tmp/h.sqlite3")                                 # doctest: +SKIP
    >>> run_id = h.record_run(summary, per_question)                  # doctest: +SKIP
    >>> summary, per_question = h.get(run_id)                         # doctest: +SKIP
    >>> h.get(run_id).per_question[0].first_rank                      # doctest: +SKIP
    """

    def __init__(self, path: Optional[PathLike] = None, *, busy_timeout: float = 60.0) -> None:
        self.path = Path(path).expanduser() if path is not None else default_history_path()
        self.busy_timeout = float(busy_timeout)
        self._ready = False

    def __repr__(self) -> str:
        return f"History({str(self.path)!r})"

    # -- connections -------------------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        if self.path.exists() and self.path.is_dir():
            raise InputError("is a folder; expected the path of a history database file "
                             "(e.g. history.sqlite3).", source=str(self.path))
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            con = sqlite3.connect(str(self.path), timeout=self.busy_timeout, isolation_level=None)
        except (OSError, sqlite3.Error) as exc:
            raise InputError(f"cannot be opened ({exc}). Fix: pass --history PATH or set "
                             "RAGEXAM_HISTORY to a writable file.", source=str(self.path)) from None
        import time

        deadline = time.monotonic() + self.busy_timeout
        while True:
            try:
                con.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout * 1000)}")
                con.execute("PRAGMA foreign_keys = ON")
                if not self._ready:
                    self._init(con)
                return con
            except sqlite3.OperationalError as exc:  # another writer holds the lock: wait, as busy_timeout does
                if "locked" in str(exc) and time.monotonic() < deadline:
                    time.sleep(0.05)
                    continue
                con.close()
                raise self._unreadable(exc) from None
            except sqlite3.DatabaseError as exc:
                con.close()
                raise self._unreadable(exc) from None

    def _unreadable(self, exc: sqlite3.DatabaseError) -> InputError:
        return InputError(f"is not a ragexam history database, or cannot be read ({exc}). Fix: pass --history with "
                          "another file, or move this one away (a new history is then started).",
                          source=str(self.path))

    @contextmanager
    def _session(self) -> Iterator[sqlite3.Connection]:
        """A connection, closed afterwards; SQLite's errors (a file replaced by something else, a damaged page)
        become an :class:`InputError` naming the file."""
        con = self._connect()
        try:
            yield con
        except sqlite3.DatabaseError as exc:
            raise self._unreadable(exc) from None
        finally:
            con.close()

    def _init(self, con: sqlite3.Connection) -> None:
        mode = con.execute("PRAGMA journal_mode").fetchone()[0]
        if str(mode).lower() != "wal":
            con.execute("PRAGMA journal_mode = WAL")
        con.execute("PRAGMA synchronous = FULL")
        version = con.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise InputError(f"was written by a newer ragexam (schema {version}, this one reads "
                             f"{SCHEMA_VERSION}). Fix: upgrade ragexam.", source=str(self.path))
        if version < SCHEMA_VERSION:
            con.execute("BEGIN IMMEDIATE")
            try:
                for stmt in _SCHEMA.split(";"):
                    if stmt.strip():
                        con.execute(stmt)
                con.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
                con.execute("COMMIT")
            except BaseException:
                con.execute("ROLLBACK")
                raise
        self._ready = True

    # -- writing -----------------------------------------------------------------------------

    def record_run(self, summary: Mapping[str, Any], per_question: Iterable[Mapping[str, Any]], *,
                   kind: Optional[str] = None) -> str:
        """Store one run (or score) in a single transaction and return its id.

        ``summary`` is the ``summary.json`` object, ``per_question`` its rows (strings from the
        CSV, dicts or :class:`~ragexam.storage.runfolder.RunRow`; typed and iterated inside the
        transaction).  ``kind`` is ``"run"`` or
        ``"score"`` (default: ``summary["kind"]``, else ``"score"`` for a ``ragexam-score/*``
        format, else ``"run"``).
        """
        summary = check_summary(dict(summary) if isinstance(summary, dict) else summary, "summary")
        run_id = summary.get("run_id")
        if not isinstance(run_id, str) or not run_id.strip():
            raise InputError(f"received {run_id!r}; expected the run's id string.", source="summary",
                             field="run_id")
        form = str(summary.get("format"))
        kind = kind or summary.get("kind") or ("score" if form.startswith("ragexam-score") else "run")
        summary_json = _dumps(summary, "summary")
        sha = hashlib.sha256(summary_json.encode("utf-8")).hexdigest()
        ds = summary.get("dataset") or {}
        corpus_sha, qa_sha = ds.get("corpus_sha256"), ds.get("qa_sha256")
        dataset_hash = None
        if corpus_sha or qa_sha:
            dataset_hash = hashlib.sha256(f"{corpus_sha}:{qa_sha}".encode()).hexdigest()[:16]
        results = summary.get("results") or {}
        pipelines = [p.get("name") for p in summary.get("pipelines") or [] if isinstance(p, Mapping)]
        pipelines = [p for p in pipelines if isinstance(p, str)] or list(results)
        head, label = _listing(summary)
        headline = {p: fmt.finite(((results.get(p) or {}).get("metrics") or {}).get(head))
                    for p in results} if head else {}
        result_rows = []
        for pipe, res in results.items():
            ci = (res or {}).get("ci95") or {}
            for metric, value in ((res or {}).get("metrics") or {}).items():
                lo_hi = ci.get(metric) if isinstance(ci.get(metric), (list, tuple)) else (None, None)
                lo, hi = (list(lo_hi) + [None, None])[:2]
                result_rows.append((pipe, metric, fmt.finite(value), fmt.finite(lo),
                                    fmt.finite(hi)))
        with self._session() as con:
            con.execute("BEGIN IMMEDIATE")
            try:
                stored = run_id
                n = 1
                while True:
                    row = con.execute("SELECT summary_sha256 FROM runs WHERE id = ?", (stored,)).fetchone()
                    if row is None:
                        break
                    if row[0] == sha:
                        con.execute("ROLLBACK")
                        return stored
                    n += 1
                    stored = f"{run_id}.{n}"
                con.execute(
                    "INSERT INTO runs (id, kind, format, created, recorded, ragexam_version, dataset, "
                    "corpus_sha256, qa_sha256, dataset_hash, pipelines, headline_metric, headline, "
                    "config, summary, summary_sha256, n_rows) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,0)",
                    (stored, kind, form, summary.get("created"), _now(), summary.get("ragexam_version"),
                     label, corpus_sha, qa_sha, dataset_hash,
                     _dumps(pipelines, "pipelines"), head, _dumps(headline, "headline"),
                     _dumps(summary.get("config") or {}, "config"), summary_json, sha))
                con.executemany("INSERT INTO results (run_id, pipeline, metric, mean, ci_low, ci_high) "
                                "VALUES (?,?,?,?,?,?)", [(stored, *r) for r in result_rows])
                n_rows = 0
                for seq, row in enumerate(per_question):
                    typed = coerce_rows([row], source="per_question", first_line=seq + 2)[0]
                    con.execute("INSERT INTO questions (run_id, seq, pipeline, query_id, first_rank, row) "
                                "VALUES (?,?,?,?,?,?)",
                                (stored, seq, typed["pipeline"], typed["query_id"], typed["first_rank"],
                                 _dumps(typed.to_dict(), f"per_question row {seq + 1}")))
                    n_rows += 1
                con.execute("UPDATE runs SET n_rows = ? WHERE id = ?", (n_rows, stored))
                con.execute("COMMIT")
                return stored
            except BaseException:
                if con.in_transaction:
                    con.execute("ROLLBACK")
                raise

    def delete(self, run_id: str) -> bool:
        """Remove a record (exact id or unique prefix); True when one was removed."""
        with self._session() as con:
            full = self._resolve(con, run_id, missing_ok=True)
            if full is None:
                return False
            con.execute("BEGIN IMMEDIATE")
            try:
                con.execute("DELETE FROM runs WHERE id = ?", (full,))
                con.execute("COMMIT")
            except BaseException:
                con.execute("ROLLBACK")
                raise
            return True

    # -- reading -----------------------------------------------------------------------------

    def _resolve(self, con: sqlite3.Connection, run_id: str, *, missing_ok: bool = False) -> Optional[str]:
        if not isinstance(run_id, str) or not run_id:
            raise InputError(f"received {run_id!r}; expected a run id.", source=str(self.path), field="run_id")
        if run_id == "latest":
            row = con.execute("SELECT id FROM runs ORDER BY recorded DESC, rowid DESC LIMIT 1").fetchone()
            if row is None and not missing_ok:
                raise InputError("holds no runs yet; record one with `ragexam run`.", source=str(self.path))
            return row[0] if row else None
        row = con.execute("SELECT id FROM runs WHERE id = ?", (run_id,)).fetchone()
        if row:
            return row[0]
        rows = con.execute("SELECT id FROM runs WHERE instr(lower(id), lower(?)) = 1 ORDER BY id LIMIT 6",
                           (run_id,)).fetchall()  # a prefix, ASCII case ignored (no LIKE: no pattern to outgrow)
        if len(rows) == 1:
            return rows[0][0]
        if missing_ok and not rows:
            return None
        if rows:
            shown = ", ".join(r[0] for r in rows[:5])
            raise InputError(f"run id prefix {run_id!r} is ambiguous: it matches {shown}"
                             f"{', ...' if len(rows) > 5 else ''}; give more of the id.",
                             source=str(self.path), field="run_id")
        raise InputError(f"has no run {run_id!r} (and {run_id!r} is not a run folder); "
                         "`ragexam runs` lists the recorded ones.", source=str(self.path), field="run_id")

    def resolve_id(self, run_id: str) -> str:
        """The full id for an exact id, a unique prefix, or ``latest``."""
        with self._session() as con:
            return str(self._resolve(con, run_id))

    def has(self, run_id: str) -> bool:
        """Whether a record has exactly the id ``run_id`` (no prefix, no ``latest``); ``False`` when there is no
        history yet, an :class:`InputError` when the file is not a history database."""
        if not self.path.exists():
            return False
        with self._session() as con:
            return con.execute("SELECT 1 FROM runs WHERE id = ?", (run_id,)).fetchone() is not None

    def list_runs(self, limit: Optional[int] = None) -> List[RunEntry]:
        """The recorded runs, newest first (at most ``limit``)."""
        if not self.path.exists():
            return []
        with self._session() as con:
            sql = f"SELECT {_ENTRY_COLUMNS} FROM runs ORDER BY recorded DESC, rowid DESC"
            params: tuple = ()
            if limit is not None:
                sql += " LIMIT ?"
                params = (int(limit),)
            rows = con.execute(sql, params).fetchall()
        return [_entry(r) for r in rows]

    def page_runs(self, *, text: Optional[str] = None, kind: Optional[str] = None, dataset: Optional[str] = None,
                  scored_run: Optional[str] = None, sort: str = "recorded", descending: bool = True,
                  offset: int = 0, limit: int = 50) -> RunPage:
        """One page of the records (``ragexam serve``'s runs list), in SQL, without reading any summary: those
        whose id, dataset or pipeline names contain ``text`` (case-insensitive for ASCII), of ``kind`` (run or
        score), of ``dataset`` (its label exactly), scoring the run ``scored_run``; sorted by ``sort`` (recorded,
        created, dataset, id, or headline: the best pipeline's headline mean, records without one last)."""
        one_of(sort, _SORTS, source="history", field="sort")
        if not self.path.exists():
            return RunPage([], 0, {}, {})
        where, params = ["1"], []
        if text:
            # instr, not LIKE: the text is matched literally, and a long one is no pattern "too complex" for SQLite
            where.append("(instr(lower(id), lower(?)) OR instr(lower(dataset), lower(?)) "
                         "OR instr(lower(pipelines), lower(?)))")
            params += [text] * 3
        for column, value in (("kind", kind), ("dataset", dataset)):
            if value:
                where.append(f"{column} = ?")
                params.append(value)
        if scored_run:  # a score names its run in its summary: narrow by kind and dataset first
            where.append("kind = 'score' AND dataset_hash IS (SELECT dataset_hash FROM runs WHERE id = ?) "
                         "AND instr(summary, ?) > 0")
            params += [scored_run, json.dumps({"scored_run": scored_run}, ensure_ascii=False)[1:-1]]
        cond = " AND ".join(where)
        way = "DESC" if descending else "ASC"
        with self._session() as con:
            total = con.execute(f"SELECT COUNT(*) FROM runs WHERE {cond}", params).fetchone()[0]
            # the page's ids first, then their columns: sorting reads no column past the summary for every row
            for key in (_SORTS[sort], _HEADLINE_NO_JSON):
                try:
                    ids = [r[0] for r in con.execute(
                        f"SELECT id FROM runs WHERE {cond} ORDER BY {key} IS NULL, {key} {way}, rowid {way} "
                        "LIMIT ? OFFSET ?", [*params, max(0, int(limit)), max(0, int(offset))])]
                    break
                except sqlite3.OperationalError as err:  # an SQLite built without its JSON functions
                    if "json_each" not in str(err):
                        raise
            marks = ",".join("?" * len(ids))
            by_id = {r[0]: _entry(r) for r in con.execute(
                f"SELECT {_ENTRY_COLUMNS} FROM runs WHERE id IN ({marks})", ids)} if ids else {}
            entries = [by_id[i] for i in ids]
            intervals: Dict[str, Dict[str, Optional[Tuple[float, float]]]] = {e.run_id: {} for e in entries}
            if entries:
                for rid, pipe, lo, hi in con.execute(
                        f"SELECT r.run_id, r.pipeline, r.ci_low, r.ci_high FROM results r JOIN runs ON runs.id = "
                        f"r.run_id WHERE r.run_id IN ({marks}) AND r.metric = runs.headline_metric",
                        [e.run_id for e in entries]):
                    intervals[rid][pipe] = (lo, hi) if lo is not None and hi is not None else None
            datasets = {d or "": n for d, n in con.execute(
                "SELECT dataset, COUNT(*) FROM runs GROUP BY dataset ORDER BY dataset")}
        return RunPage(entries, total, intervals, datasets)

    def get(self, run_id: str) -> RunData:
        """The stored run as :class:`ragexam.storage.runfolder.RunData` with typed rows (unpacks as
        ``summary, per_question``); ``run_id`` may be a unique prefix or ``latest``."""
        with self._session() as con:
            full = self._resolve(con, run_id)
            con.execute("BEGIN")
            try:
                summary_json, n_rows = con.execute("SELECT summary, n_rows FROM runs WHERE id = ?",
                                                   (full,)).fetchone()
                where = f"{self.path} (run {full})"
                rows = [parse_json(r[0], source=where, line=n) for n, r in enumerate(con.execute(
                    "SELECT row FROM questions WHERE run_id = ? ORDER BY seq", (full,)), 1)]
            finally:
                con.execute("COMMIT")
        if len(rows) != n_rows:
            raise InputError(f"record {full!r} has {len(rows)} per-question rows but {n_rows} were "
                             "recorded; the database is damaged. Fix: `ragexam runs --delete ID`.",
                             source=str(self.path))
        summary = parse_json(summary_json, source=f"{self.path} (run {full})", field="summary")
        typed = coerce_rows(rows, source=f"{self.path} (run {full})", first_line=1)
        return RunData(summary=summary, per_question=typed, source=f"history:{full}")

    def integrity_check(self) -> str:
        """SQLite's ``PRAGMA integrity_check`` (``"ok"`` when the file is sound)."""
        with self._session() as con:
            return "\n".join(r[0] for r in con.execute("PRAGMA integrity_check"))


def _listing(summary: Mapping[str, Any]) -> Tuple[Optional[str], str]:
    """``(headline metric, dataset label)`` of a run or score summary, as listings show it."""
    typed = read_summary(summary)
    return typed.headline_metric, typed.dataset_label


def record(summary: Mapping[str, Any], per_question: Iterable[Mapping[str, Any]],
           path: Optional[PathLike] = None, *, kind: Optional[str] = None) -> str:
    """Record a run in the history at ``path`` (default :func:`default_history_path`); its id."""
    return History(path).record_run(summary, per_question, kind=kind)


def resolve_run(ref: PathLike, history: Optional[PathLike] = None) -> RunData:
    """A run or score folder (or its summary.json / score.json), else the id (a unique prefix, or
    ``latest``) of a run recorded in the history at ``history`` (default :func:`default_history_path`)."""
    p = Path(ref)
    if p.is_dir() or (p.is_file() and p.name in ("summary.json", "score.json")):
        return read_folder(p)
    if p.is_file():
        raise InputError("is a file; expected a run folder (with summary.json), a score folder (with "
                         "score.json) or a recorded run id.", source=str(ref))
    return History(history).get(str(ref))
