"""Generated answers (JSONL) and the retrieval run they came from (``ragexam run --out DIR``).

Answers file (JSON Lines, UTF-8, one object per line)::

    query_id     str, required: a question of the QA set
    answer       str, required; ``null`` only together with ``error`` (generation failed)
    pipeline     str, optional: the pipeline that retrieved the contexts (e.g. "bm25 | paragraphs:400")
    contexts     list of str, optional: the texts the answer was generated from, in rank order
    context_ids  list of str, optional: their chunk ids
    k            int, optional: how many top chunks the generator was given
    error        str, optional: why there is no answer
    human        object, optional: human labels for this answer (see :mod:`ragexam.analysis.judge_agreement`)
    note, model, ...  anything else is kept in ``metadata``

A (pipeline, query_id) pair may appear once.  ``ragexam answer`` writes this format; the bundled
``it_helpdesk`` set ships hand-written answers in it (``--answers it_helpdesk``).

Run folder: ``summary.json`` and ``per_question.csv`` as documented in ``docs/run-format.md``;
:func:`load_run` reads the columns answer evaluation needs (pipeline, chunker, query_id,
answerable, first_rank, top_ids).
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from ragexam.errors import InputError

__all__ = ["AnswerRecord", "load_answers", "write_answers", "RunRow", "RunInfo", "load_run", "run_contexts",
           "NO_PIPELINE"]

PathLike = Union[str, Path]
#: the pipeline name shown for answers that name none
NO_PIPELINE = "(answers)"
_KNOWN = ("query_id", "answer", "pipeline", "contexts", "context_ids", "k", "error", "human")


@dataclass(frozen=True)
class AnswerRecord:
    """One generated answer; ``line`` is its line in the file (not compared)."""

    query_id: str
    answer: Optional[str]
    pipeline: Optional[str] = None
    contexts: Optional[Tuple[str, ...]] = None
    context_ids: Optional[Tuple[str, ...]] = None
    k: Optional[int] = None
    error: Optional[str] = None
    human: Optional[Dict[str, Any]] = None
    metadata: Dict[str, Any] = field(default_factory=dict, compare=False)
    line: Optional[int] = field(default=None, compare=False)

    def to_dict(self) -> Dict[str, Any]:
        out: Dict[str, Any] = {"query_id": self.query_id, "pipeline": self.pipeline, "answer": self.answer}
        if self.contexts is not None:
            out["contexts"] = list(self.contexts)
        if self.context_ids is not None:
            out["context_ids"] = list(self.context_ids)
        if self.k is not None:
            out["k"] = self.k
        if self.error is not None:
            out["error"] = self.error
        if self.human is not None:
            out["human"] = self.human
        out.update(self.metadata)
        return out


def _str_list(v: Any, source: str, line: int, name: str) -> Tuple[str, ...]:
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        raise InputError(f"received {json.dumps(v, ensure_ascii=False)[:60]}; expected a list of strings",
                         source=source, line=line, field=name)
    return tuple(v)


def load_answers(path: PathLike) -> List[AnswerRecord]:
    """Read an answers file (or the bundled ``it_helpdesk`` answers) strictly: the first problem
    raises :class:`~ragexam.errors.InputError` naming file, line and field."""
    from ragexam.data.datasets import resolve

    p = resolve(path, "answers")
    source = str(p)
    try:
        text = p.read_bytes().decode("utf-8")
    except OSError as err:
        raise InputError(f"cannot read the answers file: {err.strerror or err}", source=source) from None
    except UnicodeDecodeError as err:
        raise InputError(f"not valid UTF-8 (byte {err.start}); save the file as UTF-8", source=source) from None
    out: List[AnswerRecord] = []
    seen: Dict[Tuple[Optional[str], str], int] = {}
    for lineno, raw in enumerate(text.split("\n"), 1):
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw)
        except json.JSONDecodeError as err:
            raise InputError(f"invalid JSON at column {err.colno}: {err.msg}; expected one JSON object per "
                             "line", source=source, line=lineno) from None
        if not isinstance(obj, dict):
            raise InputError(f"received a JSON {type(obj).__name__}; expected an object like "
                             '{"query_id": ..., "answer": ...}', source=source, line=lineno)
        qid = obj.get("query_id")
        if not isinstance(qid, str) or not qid.strip():
            raise InputError(f"received {json.dumps(qid, ensure_ascii=False)}; expected a non-empty string",
                             source=source, line=lineno, field="query_id")
        error = obj.get("error")
        if error is not None and not isinstance(error, str):
            raise InputError("expected a string", source=source, line=lineno, field="error")
        answer = obj.get("answer")
        if answer is None and error is None:
            raise InputError("is missing; expected the answer text (or null together with an 'error' "
                             "field saying why there is none)", source=source, line=lineno, field="answer")
        if answer is not None and not isinstance(answer, str):
            raise InputError(f"received a {type(answer).__name__}; expected a string", source=source,
                             line=lineno, field="answer")
        pipeline = obj.get("pipeline")
        if pipeline is not None and (not isinstance(pipeline, str) or not pipeline.strip()):
            raise InputError("expected a non-empty string (or leave the field out)", source=source,
                             line=lineno, field="pipeline")
        contexts = _str_list(obj["contexts"], source, lineno, "contexts") if obj.get("contexts") is not None else None
        cids = (_str_list(obj["context_ids"], source, lineno, "context_ids")
                if obj.get("context_ids") is not None else None)
        if contexts is not None and cids is not None and len(contexts) != len(cids):
            raise InputError(f"has {len(cids)} ids for {len(contexts)} contexts; expected one id per context",
                             source=source, line=lineno, field="context_ids")
        k = obj.get("k")
        if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k < 1):
            raise InputError(f"received {k!r}; expected an integer >= 1", source=source, line=lineno, field="k")
        human = obj.get("human")
        if human is not None and not isinstance(human, dict):
            raise InputError('expected an object such as {"answer_correctness": 4}', source=source, line=lineno,
                             field="human")
        key = (pipeline, qid)
        if key in seen:
            what = f"query_id {qid!r}" + (f" with pipeline {pipeline!r}" if pipeline else "")
            raise InputError(f"{what} already appeared on line {seen[key]}; expected one answer per question "
                             "and pipeline", source=source, line=lineno, field="query_id")
        seen[key] = lineno
        meta = {k2: v for k2, v in obj.items() if k2 not in _KNOWN}
        out.append(AnswerRecord(qid, answer, pipeline, contexts, cids, k, error, human, meta, lineno))
    if not out:
        raise InputError("the file has no answers; expected one JSON object per line", source=source)
    return out


def write_answers(records: Sequence[AnswerRecord], path: PathLike) -> Path:
    """Write ``records`` as JSONL (atomically: a temporary file is renamed into place)."""
    import os

    p = Path(path)
    if p.parent and not p.parent.exists():
        p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(p.name + ".tmp")
    with open(tmp, "w", encoding="utf-8", newline="\n") as fh:
        for r in records:
            fh.write(json.dumps(r.to_dict(), ensure_ascii=False, allow_nan=False) + "\n")
    os.replace(tmp, p)
    return p


# --- the run folder -----------------------------------------------------------------------------
@dataclass(frozen=True)
class RunRow:
    """The columns of one ``per_question.csv`` row that answer evaluation uses."""

    pipeline: str
    chunker: Optional[str]
    query_id: str
    type: Optional[str]
    answerable: bool
    first_rank: Optional[int]
    top_ids: Tuple[str, ...]


@dataclass
class RunInfo:
    """A ``ragexam run --out DIR`` folder: the summary dict and rows by pipeline and query."""

    source: str
    summary: Dict[str, Any]
    rows: Dict[str, Dict[str, RunRow]]

    @property
    def pipelines(self) -> List[str]:
        """Pipelines in the summary's order (the first is the baseline)."""
        names = [p.get("name") for p in self.summary.get("pipelines", []) if isinstance(p, dict)]
        return [n for n in names if n in self.rows] + [n for n in self.rows if n not in names]

    @property
    def miss_k(self) -> Optional[int]:
        """``config.miss_k`` of the run (the missed-question cutoff), if recorded."""
        v = (self.summary.get("config") or {}).get("miss_k")
        return v if isinstance(v, int) and not isinstance(v, bool) else None

    @property
    def corpus(self) -> Optional[str]:
        v = (self.summary.get("config") or {}).get("corpus")
        return v if isinstance(v, str) else None

    def row(self, pipeline: str, query_id: str) -> Optional[RunRow]:
        return self.rows.get(pipeline, {}).get(query_id)


def _bool(v: str, source: str, line: int) -> bool:
    s = v.strip().lower()
    if s in ("true", "1", ""):
        return True
    if s in ("false", "0"):
        return False
    raise InputError(f"received {v!r}; expected true or false", source=source, line=line, field="answerable")


def load_run(path: PathLike) -> RunInfo:
    """Read ``summary.json`` and ``per_question.csv`` of a run folder (``docs/run-format.md``)."""
    folder = Path(path)
    if folder.is_file() and folder.name in ("summary.json", "per_question.csv"):
        folder = folder.parent
    spath, qpath = folder / "summary.json", folder / "per_question.csv"
    if not spath.is_file() or not qpath.is_file():
        raise InputError("expected a folder written by `ragexam run --out DIR` (with summary.json and "
                         "per_question.csv)", source=str(folder), field="run")
    try:
        summary = json.loads(spath.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise InputError(f"is not valid JSON: {err}", source=str(spath)) from None
    if not isinstance(summary, dict) or not str(summary.get("format", "")).startswith("ragexam-run/1"):
        raise InputError(f"format {summary.get('format') if isinstance(summary, dict) else None!r}; expected "
                         "'ragexam-run/1'", source=str(spath), field="format")
    rows: Dict[str, Dict[str, RunRow]] = {}
    src = str(qpath)
    with qpath.open(encoding="utf-8", newline="") as fh:
        reader = csv.DictReader(fh)
        need = ("pipeline", "query_id", "first_rank", "top_ids")
        missing = [c for c in need if c not in (reader.fieldnames or [])]
        if missing:
            raise InputError(f"the header lacks {', '.join(missing)}; expected the columns of docs/run-format.md",
                             source=src, line=1)
        for line, r in enumerate(reader, 2):
            fr = (r.get("first_rank") or "").strip()
            try:
                first_rank = int(fr) if fr else None
            except ValueError:
                raise InputError(f"received {fr!r}; expected a rank >= 1 or an empty cell", source=src, line=line,
                                 field="first_rank") from None
            if first_rank is not None and first_rank < 1:
                raise InputError(f"received {first_rank}; expected a rank >= 1", source=src, line=line,
                                 field="first_rank")
            try:
                top = json.loads(r.get("top_ids") or "[]")
            except json.JSONDecodeError:
                top = None
            if not isinstance(top, list) or not all(isinstance(x, str) for x in top):
                raise InputError(f"received {(r.get('top_ids') or '')[:60]!r}; expected a JSON list of chunk ids",
                                 source=src, line=line, field="top_ids")
            p, q = r["pipeline"], r["query_id"]
            if not p or not q:
                raise InputError("pipeline and query_id must not be empty", source=src, line=line)
            rows.setdefault(p, {})[q] = RunRow(p, r.get("chunker") or None, q, r.get("type") or None,
                                               _bool(r.get("answerable") or "", src, line), first_rank, tuple(top))
    return RunInfo(str(folder), summary, rows)


def run_contexts(run: RunInfo, pipeline: str, corpus, k: int) -> Dict[str, List[Tuple[str, str]]]:
    """``{query_id: [(chunk_id, text), ...]}``: the top ``k`` chunks of ``pipeline`` per question.

    The chunk texts are rebuilt by chunking ``corpus`` (a :class:`~ragexam.data.schema.Corpus`)
    with the pipeline's chunker spec (the ``chunker`` column); a chunk id that the re-chunking
    does not produce is an :class:`InputError` (the corpus or the chunker differs from the run's).
    """
    from ragexam.data.chunking import chunk_corpus

    rows = run.rows.get(pipeline)
    if rows is None:
        raise InputError(f"no pipeline {pipeline!r} in the run; it has: {', '.join(run.pipelines)}",
                         source=run.source, field="pipeline")
    specs = {r.chunker for r in rows.values()}
    if len(specs) != 1 or None in specs:
        raise InputError(f"pipeline {pipeline!r} has chunker column values {sorted(map(str, specs))}; expected "
                         "one chunker spec", source=run.source, field="chunker")
    spec = specs.pop()
    chunks = chunk_corpus(corpus, spec)
    texts = {c.chunk_id: c.text for c in chunks}
    out: Dict[str, List[Tuple[str, str]]] = {}
    for qid, r in rows.items():
        ids = list(r.top_ids[:k])
        bad = [c for c in ids if c not in texts]
        if bad:
            raise InputError(f"chunk {bad[0]!r} (question {qid}) is not produced by chunking the corpus with "
                             f"{spec!r}; pass the corpus the run used (--corpus)", source=run.source,
                             field="top_ids")
        out[qid] = [(c, texts[c]) for c in ids]
    return out
