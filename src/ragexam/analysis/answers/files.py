"""Generated answers (JSONL) and the retrieval run they came from (``ragexam run --out DIR``).

Answers file (JSON Lines, UTF-8, one object per line)::

    query_id     str, required: a question of the QA set
    answer       str, required; ``null`` only together with ``error`` (generation failed)
    pipeline     str, optional: the pipeline that retrieved the contexts (e.g. "bm25 | paragraphs:400")
    contexts     list of str, optional: the texts the answer was generated from, in rank order
    context_ids  list of str, optional: their chunk ids
    k            int, optional: how many top chunks the generator was given
    error        str, optional: why there is no answer
    human        object, optional: human labels for this answer (see :mod:`ragexam.analysis.judging.agreement`)
    question     str, optional: the question as it was asked (answers imported from production traces, whose
                 query_id is the trace id and not a question of a QA set)
    trace        object, optional: what the trace recorded -- source, trace id, timestamp, latency, model,
                 tokens, hashed user and session, tags, feedback, the retrieved documents' ids, ranks and
                 scores (:mod:`ragexam.data.traces.meta`; written by ``ragexam traces import``)
    note, model, ...  anything else is kept in ``metadata``

A (pipeline, query_id) pair may appear once.  ``question`` and ``trace`` were added with ``ragexam traces import``;
files without them read as before.  ``ragexam answer`` writes this format; the bundled
``it_helpdesk`` set ships hand-written answers in it (``--answers it_helpdesk``).

The run folder an answer set came from is read by :func:`ragexam.storage.runfolder.read_run_folder`;
:func:`run_contexts` gives the texts of each question's top chunks from it.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple, Union

from ragexam import fmt
from ragexam.data.traces.meta import TraceMeta
from ragexam.errors import InputError
from ragexam.storage.runfolder import RunData
from ragexam.types import CorpusLike

__all__ = ["AnswerRecord", "load_answers", "iter_answers", "write_answers", "run_contexts", "legacy_rechunked_contexts",
           "corpus_of_run", "NO_PIPELINE", "answers_for_report", "answers_for_run"]

PathLike = Union[str, Path]
#: the pipeline name shown for answers that name none
NO_PIPELINE = "(answers)"
_KNOWN = ("query_id", "answer", "pipeline", "contexts", "context_ids", "k", "error", "human", "question", "trace")


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
    question: Optional[str] = None
    trace: Optional[TraceMeta] = None

    def to_dict(self) -> Dict[str, Any]:
        out: Dict[str, Any] = {"query_id": self.query_id, "pipeline": self.pipeline, "answer": self.answer}
        if self.question is not None:
            out["question"] = self.question
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
        if self.trace is not None:
            out["trace"] = self.trace.to_dict()
        out.update(self.metadata)
        return out


def _str_list(v: object, source: str, line: int, name: str) -> Tuple[str, ...]:
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        raise InputError(f"received {json.dumps(v, ensure_ascii=False)[:60]}; expected a list of strings",
                         source=source, line=line, field=name)
    return tuple(v)


def load_answers(path: Union[PathLike, Sequence[Union[AnswerRecord, Dict[str, Any]]]]) -> List[AnswerRecord]:
    """Read an answers file (or the bundled ``it_helpdesk`` answers) strictly: the first problem
    raises :class:`~ragexam.errors.InputError` naming file, line and field.  A list of :class:`AnswerRecord`
    objects or of records (dicts with a file's fields, read as its lines are) is checked the same way."""
    if isinstance(path, (str, os.PathLike)):
        return list(iter_answers(path))
    if not isinstance(path, (list, tuple)):
        raise InputError(f"received a {type(path).__name__}; expected an answers file (a path), a bundled name, or "
                         "a list of AnswerRecord objects or records ({'query_id': ..., 'answer': ..., ...}).",
                         source="answers", field="answers")
    seen: Dict[Tuple[Optional[str], str], int] = {}
    out = []
    for i, x in enumerate(path):
        where = f"answers[{i}]"
        if isinstance(x, dict):
            try:
                x = _record(json.dumps(x, ensure_ascii=False), where, None)  # type: ignore[arg-type]
            except TypeError as err:  # a value JSON cannot hold
                raise InputError(f"{err}; expected the values of a JSON object", source=where) from None
        elif not isinstance(x, AnswerRecord):
            raise InputError(f"received {type(x).__name__}; expected an AnswerRecord or a record (a dict)",
                             source=where, field="answers")
        _unseen(x, seen, i, where, None)
        out.append(x)
    if not out:
        raise InputError("received no answers; expected at least one.", source="answers", field="answers")
    return out


def _unseen(rec: AnswerRecord, seen: Dict[Tuple[Optional[str], str], int], at: int, source: str,
            line: Optional[int]) -> None:
    """``rec``'s question and pipeline recorded in ``seen`` (at ``at``: a line, a position), or an
    :class:`InputError` when an answer before it had them."""
    key = (rec.pipeline, rec.query_id)
    if key in seen:
        what = f"query_id {rec.query_id!r}" + (f" with pipeline {rec.pipeline!r}" if rec.pipeline else "")
        where = f"on line {seen[key]}" if line is not None else f"as answers[{seen[key]}]"
        raise InputError(f"{what} already appeared {where}; expected one answer per question "
                         "and pipeline", source=source, line=line, field="query_id")
    seen[key] = at


def iter_answers(path: PathLike) -> Iterator[AnswerRecord]:
    """The records of an answers file one at a time, read as :func:`load_answers` reads them (a file of
    100,000 imported traces is not held in memory); an empty file is an error once the end is reached."""
    from ragexam.data.datasets import resolve

    p = resolve(path, "answers")
    source = str(p)
    try:
        fh = open(p, "rb")
    except OSError as err:
        raise InputError(f"cannot read the answers file: {err.strerror or err}", source=source) from None
    seen: Dict[Tuple[Optional[str], str], int] = {}
    n = 0
    with fh:
        for lineno, raw in enumerate(fh, 1):
            if lineno == 1 and raw.startswith(b"\xef\xbb\xbf"):
                from ragexam.data.reading import BOM_MESSAGE

                raise InputError(BOM_MESSAGE, source=source, line=1)
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as err:
                raise InputError(f"not valid UTF-8 (byte {err.start} of the line); save the file as UTF-8",
                                 source=source, line=lineno) from None
            if not text.strip():
                continue
            rec = _record(text, source, lineno)
            _unseen(rec, seen, lineno, source, lineno)
            n += 1
            yield rec
    if not n:
        raise InputError("the file has no answers; expected one JSON object per line", source=source)


def _record(raw: str, source: str, lineno: int) -> AnswerRecord:
    """One line of an answers file, checked field by field."""
    from ragexam.llm import safejson

    try:
        obj = safejson.loads(raw)
    except json.JSONDecodeError as err:
        raise InputError(f"invalid JSON: {safejson.describe_error(err)}; expected one JSON object per line",
                         source=source, line=lineno) from None
    except ValueError as err:  # nested too deep (never a RecursionError)
        raise InputError(f"invalid JSON: {err}", source=source, line=lineno) from None
    bad = safejson.unencodable(obj) if safejson.may_hold_surrogates(raw) else None
    if bad is not None:  # a lone surrogate: no file can hold it
        raise InputError(f"holds {bad[1]}: {safejson.SURROGATE_HELP}", source=source, line=lineno, field=bad[0])
    if not isinstance(obj, dict):
        raise InputError(f"received {fmt.json_kind(obj)}; expected an object like "
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
    if cids is not None and contexts is None:
        raise InputError("has context_ids but no contexts; ragexam grades the texts an answer was generated from, "
                         "so give them as 'contexts' (a list of strings, one per id), or drop context_ids and "
                         "pass --run DIR --pipeline NAME to take the run's retrieved chunks",
                         source=source, line=lineno, field="context_ids")
    if contexts is not None and cids is not None and len(contexts) != len(cids):
        raise InputError(f"has {len(cids)} ids for {len(contexts)} contexts; expected one id per context",
                         source=source, line=lineno, field="context_ids")
    k = obj.get("k")
    if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k < 1):
        raise InputError(f"received {k!r}; expected an integer >= 1", source=source, line=lineno, field="k")
    human = obj.get("human")
    if human is not None and not isinstance(human, dict):
        from ragexam.metrics.judge.registry import label_example

        raise InputError(f"expected an object such as {label_example()}", source=source, line=lineno,
                         field="human")
    question = obj.get("question")
    if question is not None and (not isinstance(question, str) or not question.strip()):
        raise InputError("expected the question's text (or leave the field out)", source=source, line=lineno,
                         field="question")
    trace = TraceMeta.from_dict(obj["trace"], source=source, line=lineno) if obj.get("trace") is not None else None
    meta = {k2: v for k2, v in obj.items() if k2 not in _KNOWN}
    return AnswerRecord(qid, answer, pipeline, contexts, cids, k, error, human, meta, lineno, question, trace)


def write_answers(records: Sequence[AnswerRecord], path: PathLike) -> Path:
    """Write ``records`` as JSONL (atomically: a temporary file is renamed into place; nothing is left
    behind when writing fails).  The path is checked first (:func:`ragexam.storage.paths.check_output_file`)."""
    from ragexam.storage.atomic import file_writer
    from ragexam.storage.paths import check_output_file

    p = check_output_file(path, option="--out")
    with file_writer(p) as fh:
        for r in records:
            fh.write(json.dumps(r.to_dict(), ensure_ascii=False, allow_nan=False) + "\n")
    return p


# --- contexts from the run folder ----------------------------------------------------------------
def run_contexts(run: RunData, pipeline: str, k: int, *, corpus: Optional[CorpusLike] = None,
                 notes: Optional[List[str]] = None) -> Dict[str, List[Tuple[str, str]]]:
    """``{query_id: [(chunk_id, text), ...]}``: the top ``k`` chunks of ``pipeline`` per question.

    The texts are the ones the run stored (``chunks.jsonl``, :meth:`RunData.contexts`).  A
    ``ragexam-run/1`` folder did not store them: then they are rebuilt by
    :func:`legacy_rechunked_contexts` from ``corpus`` (a Corpus, path or bundled name; default the
    run's corpus), and a note saying so is added to ``notes``.
    """
    if run.has_chunk_texts:
        return run.contexts(pipeline, k)
    if notes is not None:
        note = (f"the run {run.source} ({run.format}) does not store its chunk texts: they were rebuilt by "
                "re-chunking the corpus with each pipeline's chunker (runs written from ragexam-run/2 on "
                "store them)")
        if note not in notes:
            notes.append(note)
    return legacy_rechunked_contexts(run, pipeline, corpus_of_run(run, corpus), k)


def corpus_of_run(run: RunData, corpus: Optional[CorpusLike] = None):
    """``corpus`` as a :class:`~ragexam.data.schema.Corpus` (loaded when a path or name; default the
    run's ``config.corpus``)."""
    from ragexam.data.loaders import load_corpus
    from ragexam.data.schema import Corpus

    if isinstance(corpus, Corpus):
        return corpus
    ref = corpus if corpus is not None else run.corpus
    if ref is None:
        raise InputError("the run does not record its corpus; pass --corpus to rebuild the chunk texts",
                         source=run.source, field="corpus")
    return load_corpus(ref)


def legacy_rechunked_contexts(run: RunData, pipeline: str, corpus, k: int) -> Dict[str, List[Tuple[str, str]]]:
    """The top ``k`` chunk texts of ``pipeline`` for a ``ragexam-run/1`` folder, which did not store
    them: rebuilt by chunking ``corpus`` (a :class:`~ragexam.data.schema.Corpus`) with the
    pipeline's chunker spec.  A chunk id that the re-chunking does not produce is an
    :class:`InputError` (the corpus or the chunker differs from the run's)."""
    from ragexam.data.chunking import chunk_corpus

    rows = run.rows(pipeline)
    if not rows:
        raise InputError(f"no pipeline {pipeline!r} in the run; it has: {', '.join(run.pipelines)}",
                         source=run.source, field="pipeline")
    spec = run.chunker_of(pipeline)
    texts = {c.chunk_id: c.text for c in chunk_corpus(corpus, spec)}
    out: Dict[str, List[Tuple[str, str]]] = {}
    for r in rows:
        ids = list(r.top_ids[:k])
        bad = [c for c in ids if c not in texts]
        if bad:
            raise InputError(f"chunk {bad[0]!r} (question {r.query_id}) is not produced by chunking the corpus with "
                             f"{spec!r}; pass the corpus the run used (--corpus)", source=run.source,
                             field="top_ids")
        out[r.query_id] = [(c, texts[c]) for c in ids]
    return out


def answers_for_report(records: Sequence[AnswerRecord]) -> Dict[str, Any]:
    """Answers as :func:`ragexam.report.html.write_report` shows them: ``{query_id: entry}`` when no record
    names a pipeline, else ``{pipeline: {query_id: entry}}``; an entry is the record's JSON object (``answer``,
    and any ``reasoning``, ``verdict``, ``score``, ``stage`` or ``ground_truth`` the file carried)."""
    flat = {r.query_id: r.to_dict() for r in records if r.pipeline is None}
    grouped: Dict[str, Dict[str, Any]] = {}
    for r in records:
        if r.pipeline is not None:
            grouped.setdefault(r.pipeline, {})[r.query_id] = r.to_dict()
    if grouped and flat:
        grouped[NO_PIPELINE] = flat
    return grouped or flat


def _ids(ids: Sequence[str], n: int = 3) -> str:
    return ", ".join(ids[:n]) + (", ..." if len(ids) > n else "")


def answers_for_run(records: Sequence[AnswerRecord], run: RunData, *, source: str = "answers",
                    notes: Optional[List[str]] = None) -> Dict[str, Any]:
    """:func:`answers_for_report` of the answers shown beside ``run``'s report: an answer is shown when its question
    is one of the run's (and the pipeline it names, one of the run's; an answer naming none, in a file where others
    name one, is shown on no pipeline).  None shown is an :class:`~ragexam.errors.InputError` naming ``--answers``
    (``source``), with the counts and the fix; some not shown, a note (in ``notes``) saying how many were."""
    in_run = {(r.pipeline, r.query_id) for r in run.per_question}
    qids = {q for _, q in in_run}
    named = any(r.pipeline is not None for r in records)
    shown = {i for i, r in enumerate(records) if ((r.pipeline, r.query_id) in in_run if named else r.query_id in qids)}
    if in_run and len(shown) < len(records):
        off_q = list(dict.fromkeys(r.query_id for r in records if r.query_id not in qids))
        off_p = list(dict.fromkeys(repr(r.pipeline) if r.pipeline is not None else "(none named)"
                                   for i, r in enumerate(records) if named and r.query_id in qids and i not in shown))
        why = "; ".join(
            ([f"not in the run: {fmt.plural(len(off_q), 'question')} ({_ids(off_q)})"] if off_q else []) +
            ([f"pipelines not in the run: {_ids(off_p)} (the run's: {', '.join(run.pipelines)})"] if off_p else []))
        what = (f"{len(shown)} of the {len(records)} answers are of this run ({run.run_id or run.source}: "
                f"{fmt.plural(len(qids), 'question')} of {run.dataset.get('qa') or 'its question set'}); {why}")
        if not shown:
            raise InputError(f"no answer matches the run: {what}. Fix: pass --answers the answers to this run's "
                             "questions (those `ragexam answer RUN` writes, naming the run's pipelines), or drop "
                             "--answers", source=source, field="--answers")
        if notes is not None:
            notes.append(f"--answers {source}: only {what}; the others are not shown")
    return answers_for_report(records)
