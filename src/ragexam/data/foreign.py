"""Question sets other tools made, read as ragexam's corpus and questions (``ragexam convert --from``).

=============  ===========================================================================================
format         what is read (the tool's published schema)
=============  ===========================================================================================
``ragas``      a RAGAS test set (``TestsetGenerator``: ``testset.to_pandas()`` saved as CSV, JSONL or Parquet,
               or ``to_jsonl``): ``user_input`` (the question), ``reference`` (the answer key),
               ``reference_contexts`` (the passages it was written from: a list, or in a CSV the list's text),
               ``synthesizer_name`` (kept as the question's ``type``); a row nested as ``{"eval_sample": {...},
               "synthesizer_name": ...}`` and RAGAS 0.1's ``question`` / ``ground_truth`` / ``contexts`` /
               ``evolution_type`` are read too
``deepeval``   DeepEval goldens (``EvaluationDataset.save_as``: a JSON list, or a CSV whose ``context`` joins the
               passages with ``|``; JSONL too): ``input``, ``expected_output``, ``context`` (the passages the
               golden rests on), ``source_file``; ``actual_output`` and ``retrieval_context`` are a run's, not
               the exam's, and are kept in metadata only
``autorag``    AutoRAG's ``qa.parquet`` (``qid``, ``query``, ``retrieval_gt``: a 2-D list of document ids,
               ``generation_gt``: a list of answers) with its ``corpus.parquet`` (``doc_id``, ``contents``,
               ``metadata``)
=============  ===========================================================================================

The passages of RAGAS and DeepEval become relevant documents: each is *matched* to the corpus given
(``--corpus``) -- the documents holding it verbatim after normalization, else the one document holding at least
:data:`MATCH_SHARE` of its character bigrams and the most of them -- or, without a corpus, each distinct passage
becomes a document (``ctx_0001``...).  A passage matched to no document is not dropped: the question keeps it in
``metadata.source.unmatched`` and the note counts it.  AutoRAG's ``retrieval_gt`` are already document ids; its
AND/OR structure (the outer list: documents all needed; an inner list: any of them) is kept in
``metadata.source.retrieval_gt``, and every document it names becomes relevant.  The first answer is the
``ground_truth``; other answers are kept in metadata.  Evidence is then located in the relevant documents
(``ragexam locate-evidence``, :mod:`ragexam.questions.locate_set`).
"""

from __future__ import annotations

import ast
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from ragexam.data.schema import Document, Question
from ragexam.errors import InputError
from ragexam.types import JsonValue

__all__ = ["FOREIGN_FORMATS", "ForeignSet", "detect_format", "read_foreign", "MATCH_SHARE"]

FOREIGN_FORMATS = ("ragas", "deepeval", "autorag")
#: the share of a passage's character bigrams a document must hold to be its match when none holds it verbatim
MATCH_SHARE = 0.6
PathLike = Union[str, Path]
_KEYS = {  # the fields that name a format (any one of the first tuple is enough with a question field)
    "ragas": ("user_input", "reference_contexts", "reference", "eval_sample", "ground_truth", "contexts"),
    "deepeval": ("input", "expected_output", "context"),
    "autorag": ("qid", "query", "retrieval_gt", "generation_gt"),
}


@dataclass
class ForeignSet:
    """What :func:`read_foreign` read: the ``documents`` of the corpus, the ``questions``, and ``notes`` on what
    was matched, made up or left out."""

    format: str
    documents: List[Document]
    questions: List[Question]
    notes: List[str] = field(default_factory=list)
    corpus_source: Optional[str] = None


def _rows(path: Path) -> List[Dict[str, Any]]:
    """The records of a CSV, JSON (a list), JSONL or Parquet file, as dicts."""
    suffix = path.suffix.lower()
    if not path.is_file():
        raise InputError("no such file", source=str(path))
    if suffix == ".parquet":
        import pyarrow.parquet as pq

        return pq.read_table(path).to_pylist()
    text = path.read_text(encoding="utf-8-sig")
    if suffix == ".csv":
        import csv
        import io

        return [dict(r) for r in csv.DictReader(io.StringIO(text, newline=""))]
    if suffix == ".json" or text.lstrip().startswith("["):
        try:
            value = json.loads(text)
        except ValueError as err:
            raise InputError(f"is not valid JSON ({err}); expected a list of records", source=str(path)) from None
        if isinstance(value, dict):
            value = value.get("goldens") or value.get("samples") or [value]
        if not isinstance(value, list) or not all(isinstance(r, dict) for r in value):
            raise InputError("expected a JSON list of objects (one per question)", source=str(path))
        return value
    out = []
    for line, raw in enumerate(text.splitlines(), 1):
        if raw.strip():
            try:
                obj = json.loads(raw)
            except ValueError as err:
                raise InputError(f"invalid JSON ({err}); expected one JSON object per line", source=str(path),
                                 line=line) from None
            if not isinstance(obj, dict):
                raise InputError("expected a JSON object", source=str(path), line=line)
            out.append(obj)
    return out


def _flat(row: Dict[str, Any]) -> Dict[str, Any]:
    """A RAGAS ``{"eval_sample": {...}, "synthesizer_name": ...}`` row as one flat record."""
    if isinstance(row.get("eval_sample"), dict):
        return {**row["eval_sample"], **{k: v for k, v in row.items() if k != "eval_sample"}}
    return row


def detect_format(path: PathLike) -> Optional[str]:
    """The format of a question file by its fields (:data:`FOREIGN_FORMATS`), or ``None`` (ragexam's own, or
    unknown)."""
    p = Path(path)
    if not p.is_file() or p.suffix.lower() not in (".csv", ".json", ".jsonl", ".parquet"):
        return None
    try:
        rows = _rows(p)
    except (InputError, UnicodeDecodeError, OSError, ValueError):
        return None
    if not rows:
        return None
    keys = set(_flat(rows[0]))
    if "query_id" in keys or "_id" in keys:
        return None
    if {"qid", "query", "retrieval_gt"} <= keys:
        return "autorag"
    if "user_input" in keys or ("question" in keys and ("contexts" in keys or "ground_truth" in keys)):
        return "ragas"
    if "input" in keys and ("expected_output" in keys or "context" in keys):
        return "deepeval"
    return None


def _as_list(value: object, where: str, line: int, sep: Optional[str] = None) -> List[str]:
    """A list cell: a list, a list's text (``['a', 'b']`` or JSON), ``sep``-joined text, or one string."""
    if value is None:
        return []
    if hasattr(value, "tolist"):  # numpy arrays from pandas
        value = value.tolist()
    if isinstance(value, (list, tuple)):
        return [str(v) for v in value if v is not None and str(v).strip()]
    text = str(value).strip()
    if not text:
        return []
    if text.startswith("["):
        try:
            parsed = json.loads(text)
        except ValueError:
            try:
                parsed = ast.literal_eval(text)  # pandas writes a list as its Python repr
            except (ValueError, SyntaxError):
                raise InputError(f"cannot read {text[:40]!r} as a list; expected a list of strings", source=where,
                                 line=line) from None
        return _as_list(parsed, where, line)
    return [t.strip() for t in text.split(sep)] if sep else [text]


def _text(row: Dict[str, Any], *names: str) -> Optional[str]:
    for n in names:
        v = row.get(n)
        if isinstance(v, str) and v.strip():
            return v.strip()
    return None


def _passage_rows(fmt: str, rows: List[Dict[str, Any]], src: str, csv_file: bool
                  ) -> List[Tuple[str, Optional[str], List[str], Optional[str], Dict[str, Any]]]:
    """``(question, answer, passages, type, kept fields)`` of each RAGAS or DeepEval record."""
    out = []
    for i, raw in enumerate(rows, 1):
        row = _flat(raw)
        if fmt == "ragas":
            q = _text(row, "user_input", "question")
            a = _text(row, "reference", "ground_truth", "ground_truths")
            passages = _as_list(row.get("reference_contexts", row.get("contexts")), src, i)
            kind = _text(row, "synthesizer_name", "evolution_type")
            keep = {k: row[k] for k in ("response", "retrieved_contexts", "metadata") if row.get(k) is not None}
        else:
            q = _text(row, "input")
            a = _text(row, "expected_output")
            passages = _as_list(row.get("context"), src, i, sep="|" if csv_file else None)
            kind = None
            keep = {k: row[k] for k in ("source_file", "actual_output", "retrieval_context", "additional_metadata")
                    if row.get(k) not in (None, "", [])}
        if q is None:
            field_name = "user_input" if fmt == "ragas" else "input"
            raise InputError(f"has no question (its fields: {', '.join(map(str, row))}); expected a {field_name}",
                             source=src, line=i, field=field_name)
        out.append((q, a, passages, kind, keep))
    return out


def _matcher(documents: Sequence[Document]):
    """``match(passage) -> [doc_id, ...]``: the documents holding the passage verbatim, else the best one holding
    :data:`MATCH_SHARE` of its bigrams (module docstring)."""
    from ragexam.data.evidence import CorpusText
    from ragexam.data.normalization import normalize

    ct = CorpusText(list(documents))

    def grams(t: str) -> set:
        n = "".join(normalize(t).split())
        return {n[i:i + 2] for i in range(len(n) - 1)}

    doc_grams = {d.doc_id: grams(d.content) for d in documents}

    def match(passage: str) -> List[str]:
        docs = ct.docs_containing(passage)
        if docs:
            return docs
        g = grams(passage)
        if not g:
            return []
        best = max(doc_grams, key=lambda d: len(g & doc_grams[d]), default=None)
        if best is not None and len(g & doc_grams[best]) >= MATCH_SHARE * len(g):
            return [best]
        return []

    return match


def _passage_set(fmt: str, qa: Path, documents: Optional[List[Document]], prefix: str) -> ForeignSet:
    rows = _rows(qa)
    items = _passage_rows(fmt, rows, str(qa), qa.suffix.lower() == ".csv")
    notes: List[str] = []
    if documents is None:  # each distinct passage is a document
        texts = list(dict.fromkeys(p for _, _, ps, _, _ in items for p in ps))
        documents = [Document(f"ctx_{i:04d}", t) for i, t in enumerate(texts, 1)]
        notes.append(f"no corpus given: the {len(documents)} distinct passages became the corpus (ctx_0001...); give "
                     "--corpus to grade against your documents")
    match = _matcher(documents)
    questions, unmatched_total = [], 0
    for i, (q, a, passages, kind, keep) in enumerate(items, 1):
        relevant: List[str] = []
        unmatched = []
        for p in passages:
            docs = match(p)
            relevant.extend(docs)
            if not docs:
                unmatched.append(p)
        unmatched_total += len(unmatched)
        source: Dict[str, Any] = {"format": fmt, "row": i, **keep}
        if unmatched:
            source["unmatched"] = unmatched
        questions.append(Question(f"{prefix}_{i:04d}", q, tuple(dict.fromkeys(relevant)), {}, (), a, kind, True,
                                  {"source": _jsonable(source)}))
    if unmatched_total:
        notes.append(f"{unmatched_total} passage(s) were found in no document of the corpus (kept in "
                     "metadata.source.unmatched); their questions are searched in the whole corpus")
    return ForeignSet(fmt, documents, questions, notes)


def _jsonable(value: object) -> JsonValue:
    """``value`` with what JSON cannot hold (datetimes, numpy values, bytes) as text."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if hasattr(value, "tolist"):
        return _jsonable(value.tolist())
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


def _autorag(qa: Path, corpus: Optional[Path]) -> ForeignSet:
    if corpus is None:
        raise InputError("AutoRAG's qa.parquet names documents of its corpus.parquet: give it with --corpus",
                         source=str(qa), field="corpus")
    documents = []
    for i, row in enumerate(_rows(corpus), 1):
        doc_id, content = row.get("doc_id"), row.get("contents")
        if not isinstance(doc_id, str) or not isinstance(content, str) or not content.strip():
            raise InputError(f"expected a doc_id (string) and contents (text); received {sorted(row)}",
                             source=str(corpus), line=i, field="doc_id")
        meta = _jsonable(row.get("metadata") or {})
        documents.append(Document(doc_id, content, None, meta if isinstance(meta, dict) else {"metadata": meta}))
    known = {d.doc_id for d in documents}
    questions, missing = [], 0
    for i, row in enumerate(_rows(qa), 1):
        qid, query = row.get("qid"), row.get("query")
        if not isinstance(qid, str) or not isinstance(query, str) or not query.strip():
            raise InputError(f"expected qid and query strings; received {sorted(row)}", source=str(qa), line=i,
                             field="qid")
        gt = _jsonable(row.get("retrieval_gt"))
        groups = gt if isinstance(gt, list) else [gt]
        ids = [x for g in groups for x in (g if isinstance(g, list) else [g]) if isinstance(x, str)]
        missing += sum(1 for x in ids if x not in known)
        answers = _as_list(row.get("generation_gt"), str(qa), i)
        meta = {"source": {"format": "autorag", "row": i, "retrieval_gt": gt,
                           **({"generation_gt": answers[1:]} if len(answers) > 1 else {})}}
        questions.append(Question(qid, query.strip(), tuple(dict.fromkeys(x for x in ids if x in known)), {}, (),
                                  answers[0] if answers else None, None, True, meta))
    notes = [f"{missing} retrieval_gt id(s) name no document of {corpus.name}; left out of relevant_doc_ids (kept in "
             "metadata.source.retrieval_gt)"] if missing else []
    return ForeignSet("autorag", documents, questions, notes, str(corpus))


def read_foreign(fmt: Optional[str], qa: PathLike, corpus: Optional[PathLike] = None) -> ForeignSet:
    """Read the question set ``qa`` of the format ``fmt`` (``None``: :func:`detect_format`) with its ``corpus`` (a
    path or a bundled name; AutoRAG: its corpus.parquet) -- see the module docstring."""
    p = Path(qa)
    fmt = fmt or detect_format(p)
    if fmt not in FOREIGN_FORMATS:
        raise InputError(f"cannot tell the format of {p.name}; expected --from {', '.join(FOREIGN_FORMATS)} (RAGAS: "
                         "user_input, reference, reference_contexts; DeepEval: input, expected_output, context; "
                         "AutoRAG: qid, query, retrieval_gt, generation_gt)", source=str(p), field="from")
    if fmt == "autorag":
        return _autorag(p, Path(corpus) if corpus is not None else None)
    documents, source = None, None
    if corpus is not None:
        from ragexam.data.loaders import load_corpus

        c = load_corpus(corpus)
        documents, source = list(c.documents), c.source
    out = _passage_set(fmt, p, documents, "ragas" if fmt == "ragas" else "golden")
    out.corpus_source = source
    return out
