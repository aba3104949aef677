"""BEIR folders: the layout BEIR, MTEB and ranx users have, read wherever a corpus or a question set is
accepted.

A BEIR folder::

    corpus.jsonl        {"_id": "d1", "title": "...", "text": "...", "metadata": {...}}   one per document
    queries.jsonl       {"_id": "q1", "text": "...", "metadata": {...}}                    one per query
    qrels/test.tsv      query-id<TAB>corpus-id<TAB>score      (a header line; one file per split)

* As a **corpus** (``--corpus folder`` or ``load_corpus(folder)``): ``corpus.jsonl``, with ``_id`` read
  as ``doc_id``, ``text`` as ``content`` and ``title`` as the title (the text is what chunkers see).
  A BEIR ``corpus.jsonl`` given as a file is read the same way.
* As a **question set** (``--qa folder`` or ``load_qa(folder)``): the queries that have judgments in the
  chosen split's qrels (``split``: ``test`` when there is one, else the only split; several others are an
  error naming them), each with its graded judgments kept (``relevance = {corpus-id: score}``, doc-mode
  relevance; a score <= 0 is judged non-relevant).  A query whose every score is <= 0 has nothing relevant
  to find: it is ``answerable: false`` (left out of the metrics, as trec_eval leaves it out).  Queries
  without judgments in the split are not part of it, except those whose ``metadata.answerable`` is
  ``false`` (out-of-corpus questions).  ragexam's own fields travel in a query's ``metadata``:
  ``evidence`` (a string or a list), ``ground_truth``, ``type`` and ``answerable`` are read from there
  (``ragexam convert --to beir`` writes them), so a question set survives the round trip.
* **qrels files**: ``qrels/<split>.tsv`` -- tab-separated, so ids may contain spaces (MTEB's
  AutoRAGRetrieval: ``finance - 지방은행 시중은행 전환 가이드.pdf - 4``); 3 columns
  ``query-id corpus-id score`` or 4 TREC columns ``qid iter docid rel``; a first line is a header when its
  fields are column names (``query-id``, ``corpus-id``, ``score``, ``qid``, ``docid``, ``rel``, ...:
  :func:`ragexam.data.trec.qrels_header`), so a file without a header whose first score is ``1.0`` keeps its
  first judgment.  A file without tabs is a TREC qrels file, read by
  :func:`ragexam.data.trec.read_trec_qrels` (whitespace-separated).  ``qrels/<split>.jsonl`` with
  ``query-id``/``corpus-id``/``score`` objects (the MTEB layout) is read too.  Scores must be integers
  (``1.0`` is read as 1; ``0.5`` is an error).

Any non-empty id is accepted (spaces included); only the TREC writer encodes them
(:mod:`ragexam.data.trec_ids`).  Problems go to a :class:`~ragexam.data.problems.ProblemCollector`
naming the file, line and field, like every loader.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Tuple, Union

from ragexam.data.problems import ProblemCollector
from ragexam.errors import InputError

__all__ = ["BeirFolder", "beir_folder", "is_beir_folder", "read_qrels", "pick_split", "BEIR_LAYOUT"]

PathLike = Union[str, Path]

BEIR_LAYOUT = ("a BEIR folder holds corpus.jsonl ({\"_id\", \"title\", \"text\"}), queries.jsonl "
               "({\"_id\", \"text\"}) and qrels/<split>.tsv (query-id<TAB>corpus-id<TAB>score)")


@dataclass
class BeirFolder:
    """The files of a BEIR folder (``None`` / empty when absent); ``qrels`` maps split -> file."""

    root: Path
    corpus: Optional[Path]
    queries: Optional[Path]
    qrels: Dict[str, Path] = field(default_factory=dict)


def beir_folder(path: PathLike) -> BeirFolder:
    """The BEIR files under the directory ``path`` (a missing one is ``None``; qrels from ``qrels/*.tsv``,
    ``*.jsonl``, ``*.trec``, ``*.txt``, else ``qrels.tsv`` beside the others)."""
    root = Path(path)
    corpus = root / "corpus.jsonl"
    queries = root / "queries.jsonl"
    qrels: Dict[str, Path] = {}
    qdir = root / "qrels"
    if qdir.is_dir():
        for f in sorted(qdir.iterdir()):
            if f.is_file() and f.suffix.lower() in (".tsv", ".jsonl", ".trec", ".txt", ".qrels"):
                if f.stem in qrels:
                    raise InputError(f"holds two qrels files for split {f.stem!r} ({qrels[f.stem].name}, {f.name}); "
                                     "keep one.", source=str(qdir))
                qrels[f.stem] = f
    elif (root / "qrels.tsv").is_file():
        qrels["qrels"] = root / "qrels.tsv"
    return BeirFolder(root, corpus if corpus.is_file() else None, queries if queries.is_file() else None, qrels)


def is_beir_folder(path: PathLike) -> bool:
    """True for a directory holding ``corpus.jsonl`` or ``queries.jsonl``."""
    p = Path(path)
    return p.is_dir() and ((p / "corpus.jsonl").is_file() or (p / "queries.jsonl").is_file())


def pick_split(folder: BeirFolder, split: Optional[str] = None) -> Tuple[str, Path]:
    """``(split, qrels file)``: ``split`` if given, else ``test`` when there is one, else the only one."""
    src = str(folder.root)
    if not folder.qrels:
        raise InputError(f"has no qrels (expected qrels/<split>.tsv); {BEIR_LAYOUT}.", source=src, field="qrels")
    if split is not None:
        if split not in folder.qrels:
            raise InputError(f"has no split {split!r}; its qrels are {', '.join(sorted(folder.qrels))}.",
                             source=src, field="split")
        return split, folder.qrels[split]
    if "test" in folder.qrels:
        return "test", folder.qrels["test"]
    if len(folder.qrels) == 1:
        return next(iter(folder.qrels.items()))
    raise InputError(f"has the splits {', '.join(sorted(folder.qrels))} and none is 'test'; choose one "
                     "(--split NAME).", source=src, field="split")


def _grade(text: str) -> Optional[int]:
    """An integer grade from a score field (``1``, ``-1``, ``1.0``); ``None`` for anything else (``0.5``)."""
    t = text.strip()
    if t.lstrip("+-").isdigit() and t.lstrip("+-"):
        return int(t)
    try:
        value = float(t)
    except ValueError:
        return None
    return int(value) if value.is_integer() else None


def read_qrels(path: PathLike, col: ProblemCollector) -> Dict[str, Dict[str, Tuple[int, int]]]:
    """``{query_id: {doc_id: (grade, line)}}`` from a qrels file (module docstring), problems to ``col``."""
    from ragexam.data.reading import read_text

    p = Path(path)
    src = str(p)
    if p.suffix.lower() == ".jsonl":
        return _read_qrels_jsonl(p, col)
    text = read_text(p, src, col)
    if text is None:
        return {}
    if "\t" not in text:
        return _read_trec(p)
    from ragexam.data.trec import qrels_header

    out: Dict[str, Dict[str, Tuple[int, int]]] = {}
    first = True
    for line, raw in enumerate(text.split("\n"), 1):
        raw = raw.rstrip("\r")
        if not raw.strip():
            continue
        parts = raw.split("\t")
        was_first, first = first, False
        if was_first and qrels_header(parts) is not None:
            continue  # a header, known by its names (query-id corpus-id score); "q1 d1 1.0" is data
        if len(parts) == 4:
            qid, _, doc, grade = parts
        elif len(parts) == 3:
            qid, doc, grade = parts
        else:
            col.add("csv_format", f"has {len(parts)} tab-separated fields; expected 3 (query-id, corpus-id, score) "
                    "or 4 (qid, iter, docid, rel).", file=src, line=line)
            continue
        if not qid.strip() or not doc.strip():
            col.add("empty_value", "has an empty query or document id; expected non-empty ids.", file=src, line=line)
            continue
        value = _grade(grade)
        if value is None:
            hint = " (a header line names its columns: query-id<TAB>corpus-id<TAB>score)" if was_first else ""
            col.add("wrong_type", f"score {grade!r} is not an integer grade; expected e.g. 1 or 1.0{hint}.",
                    file=src, line=line, field="score")
            continue
        _add(out, qid, doc, value, line, src, col)
    if not out and not col.has_errors:
        col.add("empty_file", "has no judgments; expected query-id<TAB>corpus-id<TAB>score lines.", file=src)
    return out


def _add(out, qid: str, doc: str, grade: int, line: int, src: str, col: ProblemCollector) -> None:
    judged = out.setdefault(qid, {})
    if doc in judged:
        col.add("duplicate_id", f"document {doc!r} is judged twice for query {qid!r} (first on line {judged[doc][1]}); "
                "expected one judgment per pair.", file=src, line=line, field="corpus-id")
        return
    judged[doc] = (grade, line)


def _read_qrels_jsonl(p: Path, col: ProblemCollector) -> Dict[str, Dict[str, Tuple[int, int]]]:
    from ragexam.data.reading import iter_jsonl, read_lines

    src = str(p)
    text = read_lines(p, src, col)
    out: Dict[str, Dict[str, Tuple[int, int]]] = {}
    if text is None:
        return out
    names = (("query-id", "query_id", "qid"), ("corpus-id", "corpus_id", "doc_id", "docid"),
             ("score", "relevance", "rel"))
    for line, obj in iter_jsonl(text, src, col, example='{"query-id": ..., "corpus-id": ..., "score": 1}'):
        vals = []
        for options in names:
            key = next((k for k in options if k in obj), None)
            if key is None:
                col.add("missing_field", f"has none of {', '.join(options)} (keys: {', '.join(obj)}); expected "
                        '{"query-id", "corpus-id", "score"}.', file=src, line=line, field=options[0])
                break
            vals.append(obj[key])
        else:
            qid, doc, grade = vals
            if isinstance(grade, bool) or not isinstance(grade, int):
                if isinstance(grade, float) and grade.is_integer():
                    grade = int(grade)
                else:
                    col.add("wrong_type", f"score {grade!r} is not an integer grade.", file=src, line=line,
                            field="score")
                    continue
            _add(out, str(qid), str(doc), grade, line, src, col)
    return out


def _read_trec(p: Path) -> Dict[str, Dict[str, Tuple[int, int]]]:
    from ragexam.data.trec import read_trec_qrels, vocab_list
    from ragexam.data.trec_ids import decode_trec_id

    cols = read_trec_qrels(p)
    docs = vocab_list(cols.doc_vocab)
    out: Dict[str, Dict[str, Tuple[int, int]]] = {}
    for i, (q, d, g) in enumerate(zip(cols.qid_codes.tolist(), cols.doc_codes.tolist(), cols.values.tolist())):
        out.setdefault(decode_trec_id(cols.qid_vocab[q]), {})[decode_trec_id(docs[d])] = (int(g), i + 1)
    return out


def parse_beir_queries(folder: BeirFolder, col: ProblemCollector, split: Optional[str] = None):
    """The questions of ``folder``'s ``split`` (module docstring) as ``(file, [(line, Question)], ids)``."""
    from ragexam.data.reading import iter_jsonl, read_lines
    from ragexam.data.schema import Question

    if folder.queries is None:
        raise InputError(f"has no queries.jsonl; {BEIR_LAYOUT}.", source=str(folder.root), field="queries")
    split_name, qrels_path = pick_split(folder, split)
    qrels = read_qrels(qrels_path, col)
    src = str(folder.queries)
    text = read_lines(folder.queries, src, col)
    found: List[Tuple[int, Question]] = []
    seen: Dict[str, int] = {}
    if text is None:
        return src, found, set(seen), split_name, str(qrels_path)
    for line, obj in iter_jsonl(text, src, col, example='{"_id": ..., "text": ...}'):
        qid = obj.get("_id", obj.get("query_id"))
        question = obj.get("text", obj.get("question"))
        if not isinstance(qid, (str, int)) or isinstance(qid, bool) or not str(qid).strip():
            col.add("missing_field", f"has no usable '_id' (keys: {', '.join(obj)}); {BEIR_LAYOUT}.", file=src,
                    line=line, field="_id")
            continue
        qid = str(qid)
        if qid in seen:
            col.add("duplicate_id", f"query {qid!r} already appeared on line {seen[qid]}; expected unique ids.",
                    file=src, line=line, field="_id")
            continue
        seen[qid] = line
        meta = dict(obj["metadata"]) if isinstance(obj.get("metadata"), dict) else {}
        out_of_corpus = meta.get("answerable") is False
        if qid not in qrels and not out_of_corpus:
            continue  # not part of this split
        if not isinstance(question, str) or not question.strip():
            col.add("empty_value", f"query {qid!r} has no text; expected the question as 'text'.", file=src,
                    line=line, field="text")
            continue
        grades = {d: g for d, (g, _) in qrels.get(qid, {}).items()}
        evidence = meta.pop("evidence", None)
        evidence = tuple([evidence] if isinstance(evidence, str) else evidence) \
            if isinstance(evidence, (str, list)) and all(isinstance(e, str) for e in
                                                          ([evidence] if isinstance(evidence, str) else evidence)) \
            else ()
        truth = meta.pop("ground_truth", None)
        qtype = meta.pop("type", None)
        meta.pop("answerable", None)
        answerable = any(g > 0 for g in grades.values()) or bool(evidence)
        found.append((line, Question(qid, question, (), grades, evidence, truth if isinstance(truth, str) else None,
                                     qtype if isinstance(qtype, str) else None, answerable, meta, line)))
    lost = [q for q in qrels if q not in seen]
    if lost:
        col.add("unknown_query_id", f"qrels judge {len(lost)} query id(s) that queries.jsonl does not have (e.g. "
                f"{lost[0]!r}, line {next(iter(qrels[lost[0]].values()))[1]}); expected every judged query in "
                "queries.jsonl.", file=str(qrels_path), line=next(iter(qrels[lost[0]].values()))[1],
                field="query-id")
    return src, found, set(seen), split_name, str(qrels_path)
