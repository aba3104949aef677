"""Production traces as an answers file (``ragexam traces import``) and as exam candidates (``ragexam traces sample``).

Import
------
:func:`import_traces` reads Langfuse, Phoenix (OpenInference) and OTLP exports (:mod:`ragexam.data.traces`),
maps each trace to one answer (:mod:`ragexam.data.traces.mapping`) and writes the answers file
(:mod:`ragexam.analysis.answers.files`: ``query_id`` is the trace id, with ``question`` and ``trace``).  The
export files are only read.  Every record and trace is accounted for: records that are not spans, and traces
skipped, each counted by reason with examples; traces imported without something (contexts, ids) say so in
``trace.problems`` and are counted.  With ``redact``, personal data (:class:`ragexam.llm.redact.PiiRedactor`) is
replaced in the question, answer, error, contexts, tags and feedback comments before anything is written; user
and session ids are always hashed (:func:`ragexam.data.traces.meta.hash_id`).  Nothing is written when no trace
could be imported (the command then exits 1).

Sample
------
:func:`sample_traces` reads an imported answers file once, keeps one entry per distinct question (counts,
negative feedback, the traces it came from), and hands them to :func:`ragexam.questions.traces_sample.sample`,
which clusters near-duplicates, picks the questions to review and locates their evidence; the traced contexts of
the chosen questions are read in a second pass.
"""

from __future__ import annotations

import functools
import json
import os
import tempfile
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

from ragexam.analysis.answers.files import AnswerRecord
from ragexam.data.traces.mapping import Explanation, MappedTrace, Mapping, Skipped, assemble, extract
from ragexam.data.traces.meta import hash_id
from ragexam.data.traces.reading import MEMORY_CHARS, ReadStats, TraceGroups, merge_ordered, read_spans
from ragexam.errors import InputError

if TYPE_CHECKING:  # pragma: no cover
    from ragexam.data.schema import Corpus
    from ragexam.data.traces.meta import TraceMeta
    from ragexam.llm.redact import PiiRedactor
    from ragexam.questions.traces_sample import Hint, SampleResult, TrafficQuestion
    from ragexam.retrieval.embedders import Embedder

__all__ = ["ImportResult", "import_traces", "answer_record", "sample_traces"]

PathLike = Union[str, Path]


@dataclass
class ImportResult:
    """What :func:`import_traces` read and wrote (module docstring)."""

    out: Optional[Path]
    files: List[Tuple[str, str]]
    records: int
    spans: int
    traces: int
    imported: int
    failed: int
    skipped: Counter
    skipped_examples: Dict[str, List[str]]
    problems: Counter
    problem_examples: Dict[str, List[str]]
    unreadable: Counter
    unreadable_examples: Dict[str, List[str]]
    redacted: Counter
    roles: Counter
    explanations: List[Explanation] = field(default_factory=list)
    spilled: bool = False
    mapping: List[str] = field(default_factory=list)

    def to_dict(self) -> Dict[str, Any]:
        return {"out": str(self.out) if self.out else None, "files": [{"path": p, "format": f} for p, f in self.files],
                "records": self.records, "spans": self.spans, "traces": self.traces, "imported": self.imported,
                "failed_requests": self.failed, "skipped": dict(self.skipped),
                "skipped_examples": self.skipped_examples, "imported_without": dict(self.problems),
                "imported_without_examples": self.problem_examples,
                "unreadable": dict(self.unreadable), "unreadable_examples": self.unreadable_examples,
                "redacted": dict(self.redacted),
                "spans_by_role": [{"role": r, "kind": k, "name": n, "count": c}
                                  for (r, k, n), c in self.roles.most_common()],
                "explanations": [e.__dict__ for e in self.explanations], "spilled_to_disk": self.spilled,
                "mapping": self.mapping}


def answer_record(m: MappedTrace, redactor: Optional["PiiRedactor"] = None) -> AnswerRecord:
    """The answers-file record of a mapped trace; with ``redactor`` (a
    :class:`~ragexam.llm.redact.PiiRedactor`), personal data replaced and counted in ``trace.redacted``."""
    question, answer, error, contexts, meta = m.question, m.answer, m.error, m.contexts, m.meta
    if redactor is not None:
        before = dict(redactor.counts)
        question, answer, error = redactor.text(question), redactor.text(answer), redactor.text(error)
        contexts = tuple(redactor.text(c) for c in contexts) if contexts is not None else None
        feedback = tuple(replace(f, comment=redactor.text(f.comment), label=redactor.text(f.label))
                         for f in meta.feedback)
        tags = tuple(redactor.text(t) for t in meta.tags)
        found = tuple((k, v - before.get(k, 0)) for k, v in redactor.counts.items() if v > before.get(k, 0))
        meta = replace(meta, feedback=feedback, tags=tags, redacted=found)
    return AnswerRecord(m.query_id, answer, None, contexts, m.context_ids, None, error, None, {}, None, question, meta)


def _check_paths(files: Sequence[PathLike], out: Optional[PathLike]) -> None:
    from ragexam.storage.paths import In, Out, check_outputs

    if not files:
        raise InputError("no export file given; expected one or more files (JSONL, JSON or Parquet)", source="FILE")
    for f in files:
        p = Path(f)
        if not p.is_file():
            raise InputError("no such file" if not p.exists() else "is not a file; expected an export file",
                             source=str(p))
    if out is not None:
        check_outputs([Out(out, "--out")], [In(f, "`traces import`") for f in files])


def import_traces(files: Sequence[PathLike], out: Optional[PathLike], *, fmt: str = "auto",
                  mapping: Sequence[str] = (), redact: bool = False, hash_salt: str = "", explain: int = 0,
                  memory_chars: int = MEMORY_CHARS, spill_dir: Optional[PathLike] = None,
                  progress: Optional[Callable[[int, int], None]] = None) -> ImportResult:
    """Import the export ``files`` into the answers file ``out`` (module docstring); with ``out=None`` nothing is
    written (``--explain`` alone).  ``explain``: how many traces to explain (:class:`Explanation`)."""
    _check_paths(files, out)
    rules = Mapping.parse(mapping)
    stats = ReadStats()
    groups = TraceGroups(stats, memory_chars=memory_chars, spill_dir=spill_dir)
    roles: Counter = Counter()
    try:
        for span in read_spans(files, fmt, stats):
            extract(span, rules)
            roles[(span.role, span.kind, span.name)] += 1
            groups.add(span)
            if progress is not None and stats.spans % 5000 == 0:
                progress(stats.spans, 0)
        return _write(groups, stats, roles, rules, out, redact=redact, hash_salt=hash_salt, explain=explain)
    finally:
        groups.close()


def _write(groups: TraceGroups, stats: ReadStats, roles: Counter, rules: Mapping, out: Optional[PathLike], *,
           redact: bool, hash_salt: str, explain: int) -> ImportResult:
    from ragexam.llm.redact import PiiRedactor
    from ragexam.storage.atomic import file_writer

    redactor = PiiRedactor() if redact else None
    hasher = functools.partial(hash_id, salt=hash_salt)
    res = ImportResult(Path(out) if out is not None else None, [], 0, 0, 0, 0, 0, Counter(), {}, Counter(), {},
                       Counter(), {}, Counter(), roles, mapping=rules.items())
    used: set = set()
    parts: Dict[int, IO[str]] = {}
    with tempfile.TemporaryDirectory(prefix="ragexam-traces-out-") as tmp, \
            (file_writer(out) if out is not None else _Nowhere()) as fh:
        for bucket, seq, tid, spans in groups.groups():
            res.traces += 1
            ex = Explanation(tid) if len(res.explanations) < explain else None
            used.update(s.span_id for s in spans if s.span_id in groups.annotations)
            got = assemble(tid, spans, source=spans[0].source, mapping=rules, annotations=groups.annotations,
                           hasher=hasher, explain=ex)
            if ex is not None:
                ex.outcome = f"skipped: {got.reason}" if isinstance(got, Skipped) else "imported"
                res.explanations.append(ex)
            if isinstance(got, Skipped):
                res.skipped[got.reason] += 1
                shown = res.skipped_examples.setdefault(got.reason, [])
                if len(shown) < 5:
                    shown.append(f"{got.trace_id} ({got.where}{': ' + got.detail if got.detail else ''})")
                continue
            rec = answer_record(got, redactor)
            res.imported += 1
            res.failed += rec.answer is None
            res.problems.update(got.meta.problems)
            for p in got.meta.problems:
                shown = res.problem_examples.setdefault(p, [])
                if len(shown) < 5:
                    what = "; ".join(text for kind, text in got.notes if kind == p)
                    shown.append(f"{got.query_id} ({what})" if what else got.query_id)
            line = json.dumps(rec.to_dict(), ensure_ascii=False, allow_nan=False) + "\n"
            if groups.spilled:
                part = parts.get(bucket)
                if part is None:
                    part = parts[bucket] = open(os.path.join(tmp, f"out{bucket:02d}"), "w+", encoding="utf-8")
                part.write(f"{seq}\t{line}")
            else:
                fh.write(line)
        if parts:
            merge_ordered(list(parts.values()), fh.write)
            for part in parts.values():
                part.close()
        if not res.imported:
            fh.discard()
            res.out = None
    orphans = len(set(groups.annotations) - used)
    if orphans:
        stats.reasons["orphan_annotation"] += orphans
    res.files, res.records, res.spans, res.spilled = stats.files, stats.records, stats.spans, stats.spilled
    res.unreadable, res.unreadable_examples = stats.reasons, stats.examples
    res.redacted = Counter(redactor.counts) if redactor is not None else Counter()
    return res


class _Nowhere:
    """The output of an import that writes nothing (``--explain`` without ``--out``)."""

    def __enter__(self) -> "_Nowhere":
        return self

    def __exit__(self, *exc: Any) -> None:
        return None

    def write(self, text: str) -> None:
        return None

    def discard(self) -> None:
        return None


# -- sample --------------------------------------------------------------------------------------------------------
def _distinct(answers: PathLike, first: Sequence[Callable[[Optional["TraceMeta"]], bool]]
              ) -> Tuple[List["TrafficQuestion"], int, int]:
    """Pass 1 over the answers file: the distinct questions (:class:`ragexam.questions.traces_sample.TrafficQuestion`),
    the number of records and of records without a question."""
    from ragexam.analysis.answers.files import iter_answers
    from ragexam.questions.traces_sample import TrafficQuestion, question_key

    by_key: Dict[str, TrafficQuestion] = {}
    records = without = 0
    for rec in iter_answers(answers):
        records += 1
        if rec.question is None:
            without += 1
            continue
        key = question_key(rec.question)
        q = by_key.get(key)
        if q is None:
            q = by_key[key] = TrafficQuestion(key)
        q.count += 1
        q.variants[rec.question.strip()] += 1
        negative = rec.trace is not None and rec.trace.negative
        q.negative += negative
        q.flagged += any(test(rec.trace) for test in first)
        if len(q.trace_ids) < 10:
            q.trace_ids.append(rec.query_id)
        rank = (int(rec.answer is not None), int(not negative), int(bool(rec.contexts)))
        if rank > q.hint_rank:
            q.hint, q.hint_rank = rec.line, rank
    return list(by_key.values()), records, without


def _hints(answers: PathLike) -> Callable[[List[int]], Dict[int, "Hint"]]:
    """Pass 2: the hint traces at the given lines of the answers file."""
    from ragexam.analysis.answers.files import iter_answers
    from ragexam.questions.traces_sample import Hint

    def load(lines: List[int]) -> Dict[int, "Hint"]:
        want = set(lines)
        out: Dict[int, "Hint"] = {}
        if not want:
            return out
        for rec in iter_answers(answers):
            if rec.line in want:
                out[rec.line] = Hint(rec.query_id, rec.answer, tuple(rec.contexts or ()), tuple(rec.context_ids or ()),
                                     rec.trace is not None and rec.trace.negative)
                if len(out) == len(want):
                    break
        return out

    return load


def sample_traces(answers: PathLike, n: int, corpus: Union[PathLike, "Corpus"], out: Optional[PathLike], *,
                  threshold: Optional[float] = None, strategy: str = "weighted", seed: int = 12345,
                  first: Sequence[str] = (), id_prefix: str = "trace", redact: bool = False,
                  embedder: Optional["Embedder"] = None) -> "SampleResult":
    """``ragexam traces sample`` (module docstring): the candidates of
    :func:`ragexam.questions.traces_sample.sample`, written to ``out`` with their rejects, card and review sheet
    (every path checked before any work; none may be a file the command reads).  Returns the
    :class:`~ragexam.questions.traces_sample.SampleResult`."""
    from ragexam.data.loaders import load_corpus
    from ragexam.questions import traces_sample as TS

    if out is not None:
        from ragexam.questions.output import check_outputs
        from ragexam.storage.paths import In

        check_outputs(out, [In(answers, "`traces sample`"), In(corpus, "--corpus")])
    tests = TS.parse_first(first)
    config = TS.SampleConfig(n, TS.DEFAULT_THRESHOLD if threshold is None else threshold, strategy, seed,
                             tuple(first), id_prefix, redact)
    corp = load_corpus(corpus)
    distinct, records, without = _distinct(answers, tests)
    if not distinct:
        raise InputError(f"none of its {records} answers has a 'question' field; expected an answers file written by "
                         "`ragexam traces import` (the traced questions are what is sampled)", source=str(answers),
                         field="question")
    res = TS.sample(distinct, _hints(answers), corp, config, traces=records, source=str(answers), embedder=embedder)
    res.card["traffic"]["without_question"] = without
    res.card["notes"] += TS.first_notes(tests)
    if out is not None:
        TS.write_sample(res, out)
    return res
