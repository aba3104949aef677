"""Loading corpora (JSONL or CSV) and QA sets (JSONL) into :mod:`ragexam.data.schema` records.

:func:`load_corpus` and :func:`load_qa` are strict: the first error-level problem raises
:class:`ragexam.errors.InputError` naming the file, line and field.  (Warnings -- see
:mod:`ragexam.data.problems` -- are only reported by :func:`ragexam.data.validation.validate`.)
Every path argument also accepts a bundled dataset name (:mod:`ragexam.data.datasets`).

The collecting parsers :func:`parse_corpus` and :func:`parse_qa` report every problem to a
:class:`~ragexam.data.problems.ProblemCollector` and keep going, building a best-effort record
whenever the id (and, for documents, the content) is usable, so that later checks do not
cascade from one bad field.  The file format is chosen by extension: ``.csv`` is CSV (corpus
only: a question set in a sheet -- ``.csv``, ``.tsv``, Excel -- or Parquet is one ``file_format`` error saying how
to convert it), anything else JSONL.  A directory is a BEIR folder (:mod:`ragexam.data.beir`): its
``corpus.jsonl`` as the corpus, its ``queries.jsonl`` and qrels as the question set; a corpus record
in BEIR's fields (``_id``, ``text``, ``title``) is read as ``doc_id``, ``content``, ``title``.

Ids may be any non-empty string (spaces included: real data sets have them); only the TREC writer
encodes them (:mod:`ragexam.data.trec_ids`).  A record without its id field gets a message that names
the fields it has and the two layouts ragexam reads, so a file from another tool says how to map it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Set, Tuple, TypeVar, Union

from ragexam import fmt
from ragexam.data.beir import is_beir_folder
from ragexam.data.datasets import BUNDLED, resolve
from ragexam.data.problems import KINDS, WARNING, Problem, ProblemCollector
from ragexam.data.reading import iter_csv, iter_jsonl, parse_json_cell, read_lines, read_text
from ragexam.data.schema import Corpus, Document, QASet, Question
from ragexam.errors import InputError

__all__ = ["load_corpus", "load_qa", "parse_corpus", "parse_qa", "ParsedCorpus", "ParsedQA", "corpus_object",
           "qa_object", "check_qa"]

PathLike = Union[str, Path]

T = TypeVar("T")

_CORPUS_FIELDS = ("doc_id", "content", "title", "metadata")
_LAYOUTS = {
    "doc_id": 'expected {"doc_id", "content", "title"?} (ragexam) or {"_id", "text", "title"?} (BEIR)',
    "query_id": 'expected {"query_id", "question", "relevant_doc_ids" | "relevance" | "evidence", ...}; a BEIR '
                "question set is a folder (queries.jsonl and qrels/), give the folder",
}
_QA_FIELDS = ("query_id", "question", "relevant_doc_ids", "relevance", "evidence", "ground_truth",
              "type", "answerable", "metadata")


def _show(v: object, limit: int = 40) -> str:
    r = repr(v)
    return r if len(r) <= limit else r[: limit - 3] + "..."


class _Record:
    """Field accessors for one record that report problems with file, line and field."""

    def __init__(self, obj: Dict[str, object], file: str, line: int, col: ProblemCollector) -> None:
        self.obj, self.file, self.line, self.col = obj, file, line, col
        self.bad: Set[str] = set()

    def report(self, kind: str, field_name: Optional[str], message: str) -> None:
        if field_name is not None:
            self.bad.add(field_name)
        self.col.add(kind, message, file=self.file, line=self.line, field=field_name)

    def wrong_type(self, name: str, expected: str, fix: str = "") -> None:
        v = self.obj.get(name)
        self.report("wrong_type", name, f"received {fmt.json_kind(v)} {_show(v)}; expected {expected}"
                    + (f"; {fix}" if fix else ""))

    def ident(self, name: str) -> Optional[str]:
        if name in self.obj and self.obj[name] is None:
            self.report("missing_field", name, f"received null; every record needs a unique string {name}")
            return None
        if name not in self.obj:
            keys = ", ".join(map(str, self.obj)) or "none"
            layout = _LAYOUTS.get(name)
            self.report("missing_field", name, f"the required field {name!r} is absent; every record "
                        f"needs a unique string {name}" + (f" (this record has: {keys}; {layout}; rename "
                                                          "your fields, or convert the file with `ragexam "
                                                          "convert`)" if layout else ""))
            return None
        v = self.obj[name]
        if not isinstance(v, str):
            fix = f'write it as a string: "{v}"' if isinstance(v, (int, float)) and not isinstance(v, bool) else ""
            self.wrong_type(name, "a string id", fix)
            return None
        if not v.strip():
            self.report("empty_value", name, f"received an empty {name}; expected a non-empty id")
            return None
        return v

    def text(self, name: str, *, required: bool, nonblank: bool) -> Optional[str]:
        v = self.obj.get(name)
        if v is None:
            if required:
                self.report("missing_field", name, ("received null" if name in self.obj else
                                                    f"the required field {name!r} is absent") +
                            "; expected a non-empty string")
            return None
        if not isinstance(v, str):
            self.wrong_type(name, "a string")
            return None
        if nonblank and not v.strip():
            self.report("empty_value", name, f"received an empty {name}; expected non-blank text")
            return None
        return v

    def obj_field(self, name: str) -> Dict[str, object]:
        v = self.obj.get(name)
        if v is None:
            return {}
        if not isinstance(v, dict):
            self.wrong_type(name, "an object")
            return {}
        return dict(v)

    def metadata(self, known: Tuple[str, ...]) -> Dict[str, object]:
        from ragexam.data.gradability import similar_field

        meta = self.obj_field("metadata")
        for k, v in self.obj.items():
            if k in known:
                continue
            like = similar_field(k, known)
            if like is not None:
                present = " (the record also has it)" if like in self.obj else ""
                self.col.add("unknown_field", f"unknown field {k!r} looks like {like!r}{present}; it is kept in "
                             f"metadata and not read as {like}. Did you mean {like!r}? Rename the field",
                             file=self.file, line=self.line, field=k)
            if k in meta and meta[k] != v:
                self.report("field_conflict", k, f"unknown field {k!r} (kept in metadata) clashes with "
                            f"metadata[{k!r}] = {_show(meta[k])}; rename one of them")
                continue
            meta[k] = v
        return meta


def _folder_hint(folder: Path) -> str:
    """What a folder given where a file was expected holds that may be meant: its data files, or that it is a
    run folder."""
    if (folder / "summary.json").is_file():
        return "; this is a run or score folder (it has summary.json): give the question set it was made from"
    files = sorted(f.name for f in folder.iterdir() if f.is_file() and f.suffix.lower() in (".jsonl", ".csv"))
    if not files:
        return ""
    shown = ", ".join(files[:5]) + (f" and {len(files) - 5} more" if len(files) > 5 else "")
    return f"; it holds {shown}: give one of those files"


# --- corpus ---------------------------------------------------------------------------------


@dataclass
class _Parsed:
    """What a parser read: the ``file``, every id seen (even in bad records) and whether the file could be read."""

    file: str
    ids: Set[str] = field(default_factory=set)
    readable: bool = True


@dataclass
class ParsedCorpus(_Parsed):
    """What :func:`parse_corpus` read: the usable ``documents`` (and every id seen)."""

    documents: List[Document] = field(default_factory=list)


def _beir_record(obj: Dict[str, object]) -> Dict[str, object]:
    """A BEIR corpus record (``_id``, ``text``, ``title``) with ragexam's field names; others unchanged."""
    if "doc_id" in obj or "_id" not in obj:
        return obj
    out = {"doc_id": str(obj["_id"]) if isinstance(obj["_id"], int) and not isinstance(obj["_id"], bool)
           else obj["_id"]}
    if "content" not in obj and "text" in obj:
        out["content"] = obj["text"]
    out.update({k: v for k, v in obj.items() if k not in ("_id", "text") or (k == "text" and "content" in obj)})
    if out.get("title") == "":
        out["title"] = None  # BEIR writes "" for "no title"
    return out


def _document(obj: Dict[str, object], file: str, line: int, col: ProblemCollector) -> Tuple[Optional[str], Optional[Document]]:
    obj = _beir_record(obj)
    r = _Record(obj, file, line, col)
    doc_id = r.ident("doc_id")
    content = r.text("content", required=True, nonblank=True)
    title = r.text("title", required=False, nonblank=False)
    meta = r.metadata(_CORPUS_FIELDS)
    if doc_id is None or content is None:
        return doc_id, None
    return doc_id, Document(doc_id, content, title, meta, line)


def _csv_row(row: Dict[str, object], file: str, line: int, col: ProblemCollector) -> Dict[str, object]:
    out: Dict[str, object] = dict(row)
    if out.get("title") == "":
        out["title"] = None
    raw_meta = out.get("metadata")
    if isinstance(raw_meta, str):
        out["metadata"] = parse_json_cell(raw_meta, file, line, "metadata", col) if raw_meta.strip() else None
    return out


def parse_corpus(path: PathLike, col: ProblemCollector) -> ParsedCorpus:
    """Read a corpus file (or a BEIR folder's corpus.jsonl), reporting every problem to ``col`` (see the module
    docstring)."""
    p = resolve(path, "corpus")
    if p.is_dir():
        from ragexam.data.beir import BEIR_LAYOUT, beir_folder

        folder = beir_folder(p)
        if folder.corpus is None:
            from ragexam.errors import InputError

            raise InputError(f"is a directory without corpus.jsonl; expected a corpus file (JSONL or CSV: "
                             f"{{\"doc_id\", \"title\", \"content\"}} per record) or a BEIR folder ({BEIR_LAYOUT})"
                             f"{_folder_hint(p)}.", source=str(p))
        p = folder.corpus
    file = str(p)
    out = ParsedCorpus(file)
    csv_file = p.suffix.lower() == ".csv"
    text = read_text(p, file, col) if csv_file else read_lines(p, file, col)  # JSONL: a stream of lines
    if text is None:
        out.readable = False
        return out
    if csv_file:
        rows = ((ln, _csv_row(row, file, ln, col)) for ln, row in
                iter_csv(text, file, col, required=("doc_id", "content")))
    else:
        rows = iter_jsonl(text, file, col, example='{"doc_id": ..., "title": ..., "content": ...}')
    _keep_first(((line, *_document(obj, file, line, col)) for line, obj in rows), "doc_id", file, col,
                out.ids, out.documents)
    return out


def _keep_first(records: Iterable[Tuple[int, Optional[str], Optional[T]]], key: str, file: str,
                col: ProblemCollector, ids: Set[str], kept: List[T]) -> None:
    """Every id of ``records`` (line, id, parsed record or None) into ``ids``, every usable record into ``kept``;
    an id seen before is reported on its line and its record left out."""
    import unicodedata

    first_line: Dict[str, int] = {}
    by_nfc: Dict[str, str] = {}
    for line, ident, item in records:
        if ident is None:
            continue
        if ident in first_line:
            col.add("duplicate_id", f"{key} {ident!r} already appeared on line {first_line[ident]}; "
                    "expected unique ids", file=file, line=line, field=key)
            continue
        twin = by_nfc.setdefault(unicodedata.normalize("NFC", ident), ident)
        if twin != ident:
            col.add("id_normalization", f"{key} {ident!r} looks like {twin!r} of line {first_line[twin]}: the same "
                    "text in another Unicode normalization (NFC vs NFD, e.g. saved on macOS), so two ids; save the "
                    "file as NFC", file=file, line=line, field=key)
        first_line[ident] = line
        ids.add(ident)
        if item is not None:
            kept.append(item)


def load_corpus(path: Union[PathLike, Corpus, Sequence[object]]) -> Corpus:
    """Load a corpus (JSONL or ``.csv``, or a bundled name) strictly; raise ``InputError`` on the first error.
    A :class:`Corpus`, or a list of :class:`Document` objects or of records (``{"doc_id", "content", ...}``), is
    checked as a file is (:func:`corpus_object`)."""
    if not _is_path(path):
        return corpus_object(path)
    parsed = parse_corpus(path, ProblemCollector(strict=True))
    return Corpus(parsed.documents, source=parsed.file)


# --- objects made in Python -------------------------------------------------------------------


def _is_path(value: object) -> bool:
    return isinstance(value, (str, os.PathLike))


def _not_loadable(value: object, param: str, kind: str, example: str) -> InputError:
    return InputError(f"received a {type(value).__name__}; expected a {kind} file (a path), a bundled name "
                      f"({', '.join(BUNDLED)}), a {example}, or a list of them (or of records, as a file's lines).",
                      source=param, field=param)


def _records_of(value: object, param: str, kind: str, example: str, item: type) -> Optional[List[object]]:
    """A list or tuple of ``item`` objects or of dicts (records), as a list; ``None`` for any other value."""
    if not isinstance(value, (list, tuple)):
        return None
    for i, x in enumerate(value, 1):
        if not isinstance(x, (item, dict)):
            raise InputError(f"item {i}: received {type(x).__name__} {_show(x)}; expected {example} objects or "
                             "records (dicts with a file's fields).", source=param, field=param)
    return list(value)


def _raise_first(col: ProblemCollector, label: str, items: Sequence[Optional[Union[Document, Question]]],
                 key: str) -> None:
    """The first error ``col`` holds, at the item it is about (its ``line`` is the item's 1-based position): the
    file and line the item was read from when it has them, else ``label`` and the item's id (or, for a record
    that made no item, its index: ``qa[3]``)."""
    first = next((p for p in col.problems if p.level == "error"), None)
    if first is None:
        return
    item = items[first.line - 1] if first.line else None
    if item is None:
        raise InputError(first.message, source=f"{label}[{first.line - 1}]" if first.line else label,
                         field=first.field)
    if item.line is not None and label not in _MADE_IN_PYTHON:
        raise InputError(first.message, source=label, line=item.line, field=first.field)
    raise InputError(first.message, source=f"{label}, {key} {getattr(item, key)!r}", field=first.field)


#: the labels of objects made in Python (no file): an item is named by its id
_MADE_IN_PYTHON = ("Corpus", "QASet", "corpus", "qa")


def _from_records(items: Sequence[object], param: str, item: type, read) -> List[object]:
    """``items`` (objects of class ``item`` or records) as objects, each record read by ``read`` as a file's line
    is; a bad record raises an :class:`InputError` at ``param[i]``."""
    col = ProblemCollector(strict=False)
    out = [x if isinstance(x, item) else read(x, param, i, col)[1] for i, x in enumerate(items, 1)]
    _raise_first(col, param, [x if isinstance(x, item) else None for x in items], "")
    return out


def corpus_object(value: object, param: str = "corpus") -> Corpus:
    """A corpus given as an object, checked as a corpus file is (a blank id or content, a repeated id): a
    :class:`Corpus`, or a list of :class:`Document` objects or records (``{"doc_id", "content", ...}``); any
    other value is an :class:`InputError` naming ``param``."""
    example = "Corpus([Document('d1', 'text'), ...])"
    if isinstance(value, Corpus):
        docs, label = list(value), str(value.source) if value.source else "Corpus"
    else:
        items = _records_of(value, param, "corpus", "Document", Document)
        if items is None:
            raise _not_loadable(value, param, "corpus", example)
        label = param
        value = Corpus(_from_records(items, param, Document, _document), source=None)  # type: ignore[arg-type]
        docs = list(value)
    col = ProblemCollector(strict=False)
    for i, d in enumerate(docs, 1):
        _document({"doc_id": d.doc_id, "content": d.content, "title": d.title, "metadata": dict(d.metadata)},
                  label, i, col)
    _raise_first(col, label, docs, "doc_id")
    return value


# --- QA -------------------------------------------------------------------------------------


@dataclass
class ParsedQA(_Parsed):
    """What :func:`parse_qa` read: the usable ``questions`` (and every id seen)."""

    questions: List[Question] = field(default_factory=list)


def _question(obj: Dict[str, object], file: str, line: int, col: ProblemCollector) -> Tuple[Optional[str], Optional[Question]]:
    r = _Record(obj, file, line, col)
    qid = r.ident("query_id")
    text = r.text("question", required=True, nonblank=True)
    rel_ids = _relevant_ids(r, obj.get("relevant_doc_ids"))
    relevance = _relevance(r, obj.get("relevance"))
    evidence = _evidence(r, obj.get("evidence"))
    ground_truth = r.text("ground_truth", required=False, nonblank=False)
    qtype = r.text("type", required=False, nonblank=False)
    qtype = (qtype.strip() or None) if qtype is not None else None  # a blank label is no type, "(none)" in tables
    answerable: Optional[bool] = None
    v = obj.get("answerable")
    if v is not None:
        if isinstance(v, bool):
            answerable = v
        else:
            r.wrong_type("answerable", "true or false")
    meta = r.metadata(_QA_FIELDS)

    grades = relevance if relevance else {d: 1 for d in rel_ids}
    positive = [d for d, g in grades.items() if g > 0]
    if not (r.bad & {"relevant_doc_ids", "relevance", "evidence", "answerable"}):
        _check_judged(r, positive, evidence, answerable, obj.get("evidence_status"), grades)
    if relevance and rel_ids and set(rel_ids) != set(positive):
        r.report("relevance_mismatch", "relevance", f"relevant_doc_ids {list(rel_ids)} differ from the "
                 f"documents with grade > 0 in relevance {sorted(positive)}; relevance is used")
    if qid is None:
        return None, None
    if answerable is None:
        answerable = bool(positive or evidence)
    q = Question(qid, text if text is not None else "", rel_ids, relevance, evidence, ground_truth, qtype,
                 answerable, meta, line)
    return qid, q


def _relevant_ids(r: _Record, v: object) -> Tuple[str, ...]:
    """A question's ``relevant_doc_ids`` (each once; a repeated one reported)."""
    if v is None:
        return ()
    if isinstance(v, list) and all(isinstance(x, str) and x.strip() for x in v):
        dup = sorted({x for x in v if v.count(x) > 1})
        if dup:
            r.report("duplicate_id", "relevant_doc_ids", f"lists {', '.join(map(repr, dup))} more "
                     "than once; expected each document once")
        return tuple(dict.fromkeys(v))
    r.wrong_type("relevant_doc_ids", "a list of non-empty document id strings",
                 'e.g. ["hd_01", "hd_07"]' if isinstance(v, str) else "")
    return ()


def _relevance(r: _Record, v: object) -> Dict[str, int]:
    """A question's graded ``relevance`` (document id -> integer grade)."""
    if v is None:
        return {}
    if isinstance(v, dict) and all(isinstance(g, int) and not isinstance(g, bool) for g in v.values()) \
            and all(k.strip() for k in v):
        return dict(v)
    r.wrong_type("relevance", "an object mapping document ids to integer grades", 'e.g. {"hd_01": 2, "hd_07": 1}')
    return {}


def _evidence(r: _Record, v: object) -> Tuple[str, ...]:
    """A question's ``evidence`` strings (a blank one, or two the same after normalization, reported)."""
    from ragexam.data.normalization import normalize

    if v is None:
        return ()
    items = [v] if isinstance(v, str) else v
    if not (isinstance(items, list) and all(isinstance(x, str) for x in items)):
        r.wrong_type("evidence", "a string or a list of strings")
        return ()
    norm = [normalize(x) for x in items]
    blank = [i for i, n in enumerate(norm, 1) if not n]
    if blank:
        r.report("empty_value", "evidence", f"evidence string(s) {blank} are blank; expected text "
                 "that occurs in the source document")
    seen: Dict[str, int] = {}
    for i, n in enumerate(norm, 1):
        if n and n in seen:
            r.report("duplicate_evidence", "evidence", f"evidence strings {seen[n]} and {i} are "
                     f"the same after normalization ({_show(n)}); remove one")
        seen.setdefault(n, i)
    return () if blank else tuple(items)


def _check_judged(r: _Record, positive: List[str], evidence: Tuple[str, ...], answerable: Optional[bool],
                  status: object, grades: Mapping[str, int]) -> None:
    """An out-of-corpus question with judgments, or a question with none that is not marked out-of-corpus (one
    whose ``relevance`` grades every document 0 or below judges none relevant, and is told so)."""
    has_judgments = bool(positive or evidence)
    if answerable is False and has_judgments:
        what = []
        if positive:
            what.append(f"relevant documents {positive}")
        if evidence:
            what.append(fmt.plural(len(evidence), "evidence string"))
        r.report("answerable_conflict", "answerable", f"answerable is false (out-of-corpus) but the "
                 f"question has {' and '.join(what)}; remove them or set answerable: true")
    elif not has_judgments and answerable is not False:
        located = (f"; its evidence_status is {status}: `ragexam locate-evidence` found no span with confidence, "
                   "review it (`ragexam review apply`)" if isinstance(status, str) else "")
        if grades:  # relevance given, and it wins over relevant_doc_ids: no grade above 0 judges nothing relevant
            r.report("no_judgments", "relevance", f"relevance {dict(grades)} grades no document above 0, so it "
                     "judges none relevant (relevance wins over relevant_doc_ids); give a relevant document a grade "
                     "of 1 or more, or mark answerable: false if out-of-corpus")
            return
        r.report("no_judgments", "answerable", "no relevance or evidence; mark answerable: false "
                 "if out-of-corpus (otherwise add relevant_doc_ids, relevance or evidence, or find the evidence "
                 f"with `ragexam locate-evidence`){located}")


def parse_qa(path: PathLike, col: ProblemCollector, *, split: Optional[str] = None) -> ParsedQA:
    """Read a QA file (JSONL) or a BEIR folder (its queries with the judgments of ``split``, see
    :mod:`ragexam.data.beir`), reporting every problem to ``col`` (no corpus checks here)."""
    p = resolve(path, "qa")
    if p.is_dir() and not is_beir_folder(p):
        from ragexam.data.beir import BEIR_LAYOUT
        from ragexam.errors import InputError

        raise InputError(f"is a directory without a question set; expected a QA file (JSONL: one "
                         '{"query_id", "question", "relevant_doc_ids" | "relevance" | "evidence", ...} per line) '
                         f"or a BEIR folder ({BEIR_LAYOUT}){_folder_hint(p)}.", source=str(p))
    if p.is_dir():
        from ragexam.data.beir import beir_folder, parse_beir_queries

        file, found, ids, _, _ = parse_beir_queries(beir_folder(p), col, split)
        out = ParsedQA(str(p), ids, questions=[q for _, q in found])
        if not out.questions and not col.has_errors:
            col.add("empty_file", "has no query with judgments in the chosen split; expected queries.jsonl ids in "
                    "the qrels.", file=str(p))
        return out
    file = str(p)
    out = ParsedQA(file)
    if p.suffix.lower() in _NOT_JSONL and p.is_file():
        col.add("file_format", _not_jsonl(p), file=file)
        out.readable = False
        return out
    text = read_lines(p, file, col)
    if text is None:
        out.readable = False
        return out
    _keep_first(_questions(text, file, col), "query_id", file, col, out.ids, out.questions)
    return out


_NOT_JSONL = {".csv": "a CSV", ".tsv": "a TSV", ".xlsx": "an Excel", ".xls": "an Excel", ".parquet": "a Parquet"}


def _not_jsonl(p: Path) -> str:
    """The one error for a question set that is a sheet (CSV, TSV, Excel) or Parquet: what is read, and the fix."""
    return (f"is {_NOT_JSONL[p.suffix.lower()]} file; expected a question set in JSON Lines (one "
            '{"query_id", "question", "relevant_doc_ids" | "relevance" | "evidence", ...} object per line, lists '
            "as JSON arrays; only a corpus may be CSV). Save the rows as JSONL (docs/data-format.md, \"A question "
            "set kept in a sheet\", has the few lines of Python that do it); a RAGAS, DeepEval or AutoRAG test set "
            f"converts with `ragexam convert --from ragas|deepeval|autorag --to ragexam --out DIR --qa {p.name} "
            "--corpus CORPUS`.")


def _questions(text: Iterable[str], file: str, col: ProblemCollector
               ) -> Iterator[Tuple[int, Optional[str], Optional[Question]]]:
    example = '{"query_id": ..., "question": ..., "relevant_doc_ids": [...], "evidence": [...], ...}'
    for line, obj in iter_jsonl(text, file, col, example=example):
        if "query_id" not in obj and "_id" in obj and "question" not in obj:
            col.add("missing_field", "this is a BEIR queries.jsonl record (_id, text), which has no relevance; give "
                    "the BEIR folder (with qrels/<split>.tsv) as the question set instead of the file.", file=file,
                    line=line, field="query_id")
            continue
        yield (line, *_question(obj, file, line, col))


def warning_lines(problems: Sequence[Problem]) -> List[str]:
    """The warnings among ``problems``, one line per kind: how many questions, what it means, the first two
    (file and line) and where to read them all."""
    by_kind: Dict[str, List[Problem]] = {}
    for p in problems:
        if p.level == WARNING:
            by_kind.setdefault(p.kind, []).append(p)
    out = []
    for kind, ps in by_kind.items():
        where = "; ".join(f"{p.file}:{p.line}" if p.line is not None else str(p.file) for p in ps[:2])
        out.append(f"{fmt.plural(len(ps), 'question')} of the set: {KINDS[kind][1]} ({kind}; e.g. {where}"
                   f"{' ...' if len(ps) > 2 else ''}); `ragexam validate` lists each")
    return out


def load_qa(path: Union[PathLike, QASet, Sequence[object]], corpus: Union[Corpus, PathLike, None] = None, *,
            ignore_punctuation: bool = False, split: Optional[str] = None) -> QASet:
    """Load a QA set (JSONL, or a bundled name) strictly; raise ``InputError`` on the first error.

    With ``corpus`` (a :class:`Corpus`, a path or a bundled name) every judged document id must be
    in the corpus and every evidence string must occur in some document (matched after
    :func:`ragexam.data.normalization.normalize` with ``ignore_punctuation``).  A :class:`QASet`, or a list of
    :class:`Question` objects or records, is checked the same way (:func:`qa_object`, :func:`check_qa`).
    """
    from ragexam.data.crosscheck import check_qa_against_corpus

    if not _is_path(path):
        qa = qa_object(path)
        check_qa(qa)  # the questions first, as a file's lines are read before its corpus
        if corpus is not None:
            check_qa(qa, corpus if isinstance(corpus, Corpus) else load_corpus(corpus),
                     ignore_punctuation=ignore_punctuation)
        return qa
    col = ProblemCollector(strict=True)
    parsed = parse_qa(path, col, split=split)
    qa = QASet(parsed.questions, source=parsed.file)
    if corpus is not None:
        if not isinstance(corpus, Corpus):
            corpus = load_corpus(corpus)
        check_qa_against_corpus(qa.questions, parsed.file, corpus.documents, set(corpus.doc_ids), col,
                                ignore_punctuation=ignore_punctuation)
    qa.warnings = warning_lines(col.problems)
    return qa


def qa_object(value: object, param: str = "qa") -> QASet:
    """A question set given as an object: a :class:`QASet` as it is, or a list of :class:`Question` objects or
    records (``{"query_id", "question", ...}``, read as a file's lines are); any other value is an
    :class:`InputError` naming ``param``.  :func:`check_qa` checks it as a file is checked."""
    if isinstance(value, QASet):
        return value
    items = _records_of(value, param, "question set", "Question", Question)
    if items is None:
        raise _not_loadable(value, param, "question set", "QASet([Question('q1', 'text', evidence=...), ...])")
    return QASet(_from_records(items, param, Question, _question), source=None)  # type: ignore[arg-type]


def _qa_record(q: Question) -> Dict[str, object]:
    """The line of a question file that holds ``q``."""
    rec: Dict[str, object] = {"query_id": q.query_id, "question": q.question,
                              "relevant_doc_ids": list(q.relevant_doc_ids), "relevance": dict(q.relevance),
                              "evidence": list(q.evidence),
                              "ground_truth": q.ground_truth, "type": q.type, "answerable": q.answerable,
                              "metadata": dict(q.metadata)}
    if "evidence_status" in q.metadata:
        rec["evidence_status"] = q.metadata["evidence_status"]
    return rec


def check_qa(qa: QASet, corpus: Optional[Corpus] = None, *, ignore_punctuation: bool = False) -> QASet:
    """``qa`` (a :class:`QASet` made in Python, or read and changed) checked as :func:`load_qa` checks a question
    file: each question's judgments (relevance or evidence, or ``answerable=False``; no blank or repeated evidence
    string), and with ``corpus`` every judged document id in it and every evidence string found in it.  The first
    problem raises an :class:`InputError` naming the question; returns ``qa``."""
    from ragexam.data.crosscheck import check_qa_against_corpus

    label = str(qa.source) if qa.source else "QASet"
    questions = list(qa)
    col = ProblemCollector(strict=False)
    for i, q in enumerate(questions, 1):
        _question(_qa_record(q), label, i, col)
    _raise_first(col, label, questions, "query_id")
    if corpus is not None:
        check_qa_against_corpus([replace(q, line=i) for i, q in enumerate(questions, 1)], label, corpus.documents,
                                set(corpus.doc_ids), col, ignore_punctuation=ignore_punctuation)
        _raise_first(col, label, questions, "query_id")
        qa.warnings = warning_lines(col.problems)
    return qa
