"""``ragexam convert``: between ragexam JSONL, BEIR folders and TREC qrels.

=================  ===========================================================================================
``to``             writes
=================  ===========================================================================================
``ragexam``        ``OUT/corpus.jsonl`` (``doc_id``, ``title``, ``content``, ``metadata``) and ``OUT/qa.jsonl``
                   (``query_id``, ``question``, ``relevance`` (graded) or ``relevant_doc_ids``, ``evidence``,
                   ``ground_truth``, ``type``, ``answerable``, ``metadata``)
``beir``           ``OUT/corpus.jsonl`` (``_id``, ``title``, ``text``, ``metadata``), ``OUT/queries.jsonl``
                   (``_id``, ``text``, ``metadata``: ragexam's ``evidence``, ``ground_truth``, ``type`` and, for an
                   out-of-corpus question, ``answerable: false``) and ``OUT/qrels/<split>.tsv`` (header
                   ``query-id corpus-id score``, tab-separated; ``split`` default ``test``)
``trec``           the qrels as one TREC file ``OUT`` (``qid 0 docid rel``), ids encoded by
                   :func:`ragexam.data.trec_ids.encode_trec_id` (spaces as ``%20``, reversible)
=================  ===========================================================================================

Question sets other tools made (RAGAS test sets, DeepEval goldens, AutoRAG's parquet files) are read by
:mod:`ragexam.data.foreign` and converted by :func:`ragexam.api.convert` (their evidence located in the corpus).

Inputs: ``corpus`` -- anything :func:`~ragexam.data.loaders.load_corpus` reads (JSONL, CSV, a BEIR folder,
a bundled name); ``qa`` -- anything :func:`~ragexam.data.loaders.load_qa` reads (JSONL, a BEIR folder with
``split``, a bundled name), or a qrels file (BEIR TSV, TREC, MTEB JSONL: :func:`ragexam.data.beir.read_qrels`,
TREC ids decoded) together with ``queries`` (a BEIR ``queries.jsonl`` or a TSV ``id<TAB>text``).  Either may
be left out (only the other is converted; ``trec`` needs ``qa``).

What a format cannot hold is said, never dropped silently (:attr:`Converted.notes`): BEIR and TREC judge
documents, so a question with evidence but no relevant document is an error for them (add
``relevant_doc_ids``), and TREC qrels have no question texts, evidence or out-of-corpus questions.  The
round trip ragexam -> BEIR -> ragexam gives back the same question set.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple, Union

from ragexam.errors import InputError, one_of

if TYPE_CHECKING:
    from ragexam.data.schema import Question, QASet

__all__ = ["convert", "Converted", "FORMATS", "ragexam_record", "corpus_records"]

PathLike = Union[str, Path]
FORMATS = ("ragexam", "beir", "trec")


@dataclass
class Converted:
    """What :func:`convert` wrote: the files, the counts, and what the target format could not hold."""

    to: str
    files: List[str] = field(default_factory=list)
    n_documents: int = 0
    n_questions: int = 0
    n_judgments: int = 0
    notes: List[str] = field(default_factory=list)

    def lines(self) -> List[str]:
        """What was written and the notes, one line each (for the console)."""
        counts = (f"{self.n_documents} documents, {self.n_questions} questions, {self.n_judgments} judgments "
                  f"converted to {self.to}")
        return [counts] + [f"wrote {f}" for f in self.files] + [f"note: {n}" for n in self.notes]

    def to_dict(self) -> Dict[str, Any]:
        return {"to": self.to, "files": self.files, "n_documents": self.n_documents, "n_questions": self.n_questions,
                "n_judgments": self.n_judgments, "notes": self.notes}


def _jsonl(records) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)


def _load_queries(path: PathLike) -> Dict[str, str]:
    """``{id: text}`` from a BEIR queries.jsonl (``_id``/``text``) or a TSV ``id<TAB>text`` file."""
    from ragexam.data.problems import ProblemCollector
    from ragexam.data.reading import iter_jsonl, read_text

    p = Path(path)
    src = str(p)
    col = ProblemCollector(strict=True)
    text = read_text(p, src, col) or ""
    out: Dict[str, str] = {}
    if p.suffix.lower() in (".jsonl", ".json"):
        for line, obj in iter_jsonl(text, src, col, example='{"_id": ..., "text": ...}'):
            qid, q = obj.get("_id", obj.get("query_id")), obj.get("text", obj.get("question"))
            if not isinstance(qid, (str, int)) or isinstance(qid, bool) or not isinstance(q, str) or not q.strip():
                raise InputError(f"has no usable _id and text (keys: {', '.join(obj)}); expected "
                                 '{"_id": ..., "text": ...}.', source=src, line=line)
            out[str(qid)] = q
        return out
    for line, raw in enumerate(text.split("\n"), 1):
        if not raw.strip():
            continue
        qid, tab, q = raw.rstrip("\r").partition("\t")
        if not tab or not qid.strip() or not q.strip():
            raise InputError("expected 'id<TAB>question text'.", source=src, line=line)
        out[qid] = q
    return out


def _qa_from_qrels(qrels_path: PathLike, queries: PathLike):
    from ragexam.data.beir import read_qrels
    from ragexam.data.problems import ProblemCollector
    from ragexam.data.schema import QASet, Question

    qrels = read_qrels(qrels_path, ProblemCollector(strict=True))
    texts = _load_queries(queries)
    lacking = [q for q in qrels if q not in texts]
    if lacking:
        raise InputError(f"judges {len(lacking)} query id(s) that {queries} does not have (e.g. {lacking[0]!r}); "
                         "expected a text for every judged query.", source=str(qrels_path), field="query-id")
    qs = [Question(qid, texts[qid], (), {d: g for d, (g, _) in docs.items()}, (), None, None,
                   any(g > 0 for g, _ in docs.values())) for qid, docs in qrels.items()]
    return QASet(qs, source=str(qrels_path))


def _qrels_line(path: Path) -> Optional[str]:
    """The first line of ``path`` when the file is a qrels file (TREC ``qid iter docid rel``, a BEIR TSV
    ``query-id<TAB>corpus-id<TAB>score`` or their header), not a JSONL question set; else ``None``."""
    from ragexam.data.trec import qrels_header

    try:
        with open(path, "rb") as fh:
            head = fh.read(4096).decode("utf-8", "replace").lstrip("\ufeff")
    except OSError:
        return None
    line = next((x.strip() for x in head.splitlines() if x.strip()), "")
    if not line or line.startswith(("{", "[")):
        return None
    fields = line.split("\t") if "\t" in line else line.split()
    if qrels_header(fields) is not None:
        return line
    if len(fields) in (3, 4):
        try:
            float(fields[-1])
        except ValueError:
            return None
        return line
    return None


def corpus_records(documents) -> List[Dict[str, Any]]:
    """Documents as lines of ragexam's corpus.jsonl."""
    return [{"doc_id": d.doc_id, "title": d.title, "content": d.content, **({"metadata": d.metadata} if d.metadata
                                                                           else {})} for d in documents]


def ragexam_record(q) -> Dict[str, Any]:
    """A question as a line of ragexam's qa.jsonl."""
    r: Dict[str, Any] = {"query_id": q.query_id, "question": q.question}
    if q.relevance:
        r["relevance"] = dict(q.relevance)
    elif q.relevant_doc_ids:
        r["relevant_doc_ids"] = list(q.relevant_doc_ids)
    if q.evidence:
        r["evidence"] = list(q.evidence)
    r.update(_present(q, ("ground_truth", "type")))
    r["answerable"] = q.answerable
    if q.metadata:
        r["metadata"] = dict(q.metadata)
    return r


def _present(q: "Question", names: Tuple[str, ...]) -> Dict[str, Optional[str]]:
    """The fields ``names`` of ``q`` that are set."""
    return {k: getattr(q, k) for k in names if getattr(q, k) is not None}


def _doc_judged(qa: "QASet", to: str) -> None:
    lacking = [q.query_id for q in qa if q.answerable and not q.grades]
    if lacking:
        raise InputError(f"{len(lacking)} question(s) have evidence but no judged document (e.g. {lacking[0]!r}); "
                         f"{to} judges documents: add relevant_doc_ids (or relevance) to them.",
                         source=str(qa.source or "QASet"), field="relevant_doc_ids")


def _check_arguments(to: str, out: PathLike, corpus: Optional[PathLike], qa: Optional[PathLike],
                     queries: Optional[PathLike]) -> Path:
    """The output path of :func:`convert`, once the arguments are checked (before any file is read)."""
    one_of(to, FORMATS, source="convert", field="to")
    if corpus is None and qa is None:
        raise InputError("nothing to convert: give a corpus, a question set, or both.", source="convert")
    if queries is not None and qa is None:
        raise InputError("queries are read with a qrels file: give the qrels as the question set (--qa).",
                         source="convert", field="queries")
    if to == "trec" and qa is None:
        raise InputError("TREC qrels hold judgments only: give the question set (--qa).", source="convert",
                         field="qa")
    if qa is not None and queries is None and Path(qa).is_file():
        first = _qrels_line(Path(qa))
        if first is not None:
            raise InputError(f"is a qrels file (its first line is {first[:60]!r}): judgments only, without the "
                             "question texts; give the texts with --queries (a BEIR queries.jsonl or a TSV "
                             "'id<TAB>question'), or give a question set (JSONL, a BEIR folder) as --qa.",
                             source=str(qa), field="queries")
    target = Path(out)
    if to == "trec":
        if target.is_dir():
            raise InputError("is a directory; --to trec writes one qrels file: give a file path.", source=str(target),
                             field="out")
        if not target.parent.is_dir():
            raise InputError("its folder does not exist; create it first.", source=str(target), field="out")
    elif target.exists() and not target.is_dir():
        raise InputError(f"is a file; --to {to} writes a folder: give a folder path.", source=str(target), field="out")
    return target


def convert(to: str, out: PathLike, *, corpus: Optional[PathLike] = None, qa: Optional[PathLike] = None,
            queries: Optional[PathLike] = None, split: Optional[str] = None) -> Converted:
    """Convert ``corpus`` and/or ``qa`` to the format ``to`` under ``out`` (module docstring)."""
    from ragexam.data.loaders import load_corpus, load_qa

    target = _check_arguments(to, out, corpus, qa, queries)
    corpus_obj = load_corpus(corpus) if corpus is not None else None
    if qa is not None and queries is not None:
        qa_obj = _qa_from_qrels(qa, queries)
    elif qa is not None:
        qa_obj = load_qa(qa, corpus=corpus_obj, split=split)
    else:
        qa_obj = None
    res = Converted(to, n_documents=len(corpus_obj) if corpus_obj is not None else 0,
                    n_questions=len(qa_obj) if qa_obj is not None else 0)
    if qa_obj is not None:
        res.n_judgments = sum(len(q.grades) for q in qa_obj)
    if to == "trec":
        _write_trec(target, qa_obj, res)
        return res
    try:
        target.mkdir(parents=True, exist_ok=True)
        if to == "beir" and qa_obj is not None:
            (target / "qrels").mkdir(exist_ok=True)
    except OSError as err:
        raise InputError(f"cannot create the folder: {err.strerror or err}.", source=str(target), field="out") from None
    if corpus_obj is not None:
        recs = corpus_records(corpus_obj) if to == "ragexam" else [
            {"_id": d.doc_id, "title": d.title or "", "text": d.content,
             **({"metadata": d.metadata} if d.metadata else {})} for d in corpus_obj]
        _write(target / "corpus.jsonl", _jsonl(recs), res)
    if qa_obj is None:
        return res
    if to == "ragexam":
        _write(target / "qa.jsonl", _jsonl(ragexam_record(q) for q in qa_obj), res)
        return res
    _write_beir_questions(target, qa_obj, split or "test", res)
    return res


def _write(path: Path, text: str, res: Converted) -> None:
    from ragexam.storage.runfolder import write_text

    write_text(path, text)
    res.files.append(str(path))


def _write_trec(target: Path, qa: "QASet", res: Converted) -> None:
    """The judgments of ``qa`` as one TREC qrels file, and the notes on what it cannot hold."""
    from ragexam.data.trec import write_trec_qrels
    from ragexam.data.trec_ids import encode_trec_id

    _doc_judged(qa, "TREC")
    write_trec_qrels(target, ((encode_trec_id(q.query_id), encode_trec_id(d), g) for q in qa
                              for d, g in q.grades.items()))
    res.files.append(str(target))
    n_ev = sum(1 for q in qa if q.evidence)
    n_ooc = sum(1 for q in qa if not q.answerable)
    res.notes.append(f"TREC qrels hold judgments only: the {len(qa)} question texts"
                     + (f", the evidence of {n_ev}" if n_ev else "")
                     + (f" and {n_ooc} out-of-corpus question(s) (no judgments)" if n_ooc else "")
                     + " are not in it.")
    if any(encode_trec_id(x) != x for q in qa for x in (q.query_id, *q.grades)):
        res.notes.append("ids with spaces or '%' are percent-encoded (a space is %20); ragexam decodes them when "
                         "it reads the file back.")


def _write_beir_questions(target: Path, qa: "QASet", split: str, res: Converted) -> None:
    """``queries.jsonl`` (ragexam's own fields in each query's metadata) and ``qrels/<split>.tsv``."""
    _doc_judged(qa, "BEIR")
    recs = []
    for q in qa:
        meta = dict(q.metadata)
        if q.evidence:
            meta["evidence"] = list(q.evidence)
        meta.update(_present(q, ("ground_truth", "type")))
        if not q.answerable:
            meta["answerable"] = False
        recs.append({"_id": q.query_id, "text": q.question, **({"metadata": meta} if meta else {})})
    lines = ["query-id\tcorpus-id\tscore"]
    for q in qa:
        for d, g in q.grades.items():
            for x in (q.query_id, d):
                if "\t" in x or "\n" in x:
                    raise InputError(f"id {x!r} holds a tab or a line break, which a BEIR qrels TSV cannot; rename "
                                     "it.", source=str(qa.source or "QASet"), field="id")
            lines.append(f"{q.query_id}\t{d}\t{int(g)}")
    _write(target / "queries.jsonl", _jsonl(recs), res)
    _write(target / "qrels" / f"{split}.tsv", "\n".join(lines) + "\n", res)
    res.notes.append("ragexam's evidence, ground_truth, type and out-of-corpus questions are kept in each query's "
                     "metadata (BEIR tools ignore them; ragexam reads them back).")
