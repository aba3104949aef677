"""What any retrieval pipeline returned: ranked texts per question, and the results files that hold them.

A pipeline ragexam did not build (a user's service, a LangChain or LlamaIndex retriever, a results file
written by any system) returns, per question, a ranked list of :class:`RetrievedItem`: a ``text`` and,
when the system knows them, the ``doc_id`` of its source document, the system's own ``id`` of the
passage and its ``score``.  It chunked the documents its own way; ragexam grades the texts (evidence
mode: a text counts when it contains an evidence string, :class:`ragexam.data.evidence.EvidenceMatcher`)
or the document ids (doc mode).

Results file (JSON Lines, UTF-8, one object per line and pipeline)::

    {"query_id": "hq_001", "pipeline": "my-rag-v2",
     "contexts": ["first retrieved text", {"text": "second", "doc_id": "hd_03", "id": "c-17", "score": 0.82}]}

==========  ==========================================================================================
field       meaning
==========  ==========================================================================================
query_id    str, required: a question of the QA set
pipeline    str, optional: which pipeline returned these contexts (default: the file name without
            its extension), so one file may hold several pipelines
contexts    list, required, in rank order (best first; ``score`` does not reorder it): each a string
            or an object with ``text`` (str, required, not empty) and optionally ``doc_id`` (str, the
            source document; doc-mode grading needs it), ``id`` (str or int, the system's passage id)
            and ``score`` (a finite number)
==========  ==========================================================================================

An answers file (:mod:`ragexam.analysis.answers.files`: ``query_id``, ``answer``, ``contexts`` as strings,
``context_ids``) is a results file too: its ``context_ids`` become the contexts' ``id``; its other
fields (``answer``, ``k``, ``model``, ...) are ignored here.  Other top-level fields are ignored.

Checks (:func:`load_retrieved` raises :class:`~ragexam.errors.InputError` naming the file, line and
field): a line that is not a JSON object, a missing or non-string ``query_id``, missing ``contexts`` or
one that is not a list, a context that is neither a string nor an object, an object without ``text``
or with keys other than ``text``, ``doc_id``, ``id``, ``score`` (the message lists the expected keys,
so ``{"content": ...}`` says to rename it), an empty text, a ``doc_id`` that is not a non-empty string,
a non-finite score, ``context_ids`` that do not match ``contexts`` one to one, and the same
(pipeline, query_id) on two lines.  Warnings (kept in :attr:`RetrievedFile.warnings`, shown by the run):
lines with an empty ``contexts`` list (the system retrieved nothing: the question counts as a miss).
Which questions the file lacks, or names that the QA set lacks, is decided against the QA set by the
run (:func:`ragexam.analysis.exam.run.run`); so is, in doc mode, whether the ``doc_id`` values name documents the
question set knows (:func:`check_doc_ids`: none known is an error -- every metric would be 0 -- and some
unknown a warning).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import AbstractSet, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from ragexam.errors import InputError

__all__ = ["RetrievedItem", "RetrievedSet", "RetrievedFile", "load_retrieved", "item_from_value", "ITEM_KEYS",
           "check_doc_ids"]

PathLike = Union[str, Path]

#: the keys a context object may have
ITEM_KEYS = ("text", "doc_id", "id", "score")


@dataclass(frozen=True)
class RetrievedItem:
    """One retrieved passage: its ``text``, and when known its source ``doc_id``, the system's ``id`` for it
    and the system's ``score`` (informational: the list order is the ranking)."""

    text: str
    doc_id: Optional[str] = None
    id: Optional[str] = None
    score: Optional[float] = None

    def to_dict(self) -> Dict[str, object]:
        out: Dict[str, object] = {"text": self.text}
        for k in ("doc_id", "id", "score"):
            v = getattr(self, k)
            if v is not None:
                out[k] = v
        return out


@dataclass
class RetrievedSet:
    """One pipeline's lists from a results file: ``lists[query_id]`` in rank order; ``lines[query_id]`` the
    line each came from."""

    pipeline: str
    source: str
    lists: Dict[str, Tuple[RetrievedItem, ...]] = field(default_factory=dict)
    lines: Dict[str, int] = field(default_factory=dict)


@dataclass
class RetrievedFile:
    """A results file: its pipelines in order of first appearance, and the warnings found reading it."""

    path: str
    sets: List[RetrievedSet]
    warnings: List[str] = field(default_factory=list)

    @property
    def pipelines(self) -> List[str]:
        return [s.pipeline for s in self.sets]


def _fail(msg: str, source: str, line: Optional[int], fld: Optional[str]) -> InputError:
    return InputError(msg, source=source, line=line, field=fld)


def _show(v: object, limit: int = 50) -> str:
    import json

    try:
        r = json.dumps(v, ensure_ascii=False)
    except (TypeError, ValueError):
        r = repr(v)
    return r if len(r) <= limit else r[: limit - 1] + "…"


def item_from_value(value: object, *, source: str, line: Optional[int] = None, where: str = "contexts[0]",
                    default_id: Optional[str] = None) -> RetrievedItem:
    """A :class:`RetrievedItem` from a context as written in a results file (a string, or an object with the
    keys of :data:`ITEM_KEYS`), checked; ``where`` names it in messages."""
    if isinstance(value, str):
        if not value.strip():
            raise _fail("is an empty text; expected the retrieved passage (drop the entry if the system returned "
                        "nothing there).", source, line, where)
        return RetrievedItem(value, None, default_id, None)
    if not isinstance(value, dict):
        raise _fail(f"received {_show(value)}; expected a string or an object "
                    '{"text": ..., "doc_id"?: ..., "id"?: ..., "score"?: ...}.', source, line, where)
    unknown = [k for k in value if k not in ITEM_KEYS]
    if unknown or "text" not in value:
        have = ", ".join(map(str, value)) or "none"
        hint = ""
        for alias in ("content", "page_content", "passage", "document", "chunk", "body"):
            if alias in value and "text" not in value:
                hint = f"; rename {alias!r} to 'text'"
                break
        what = f"has key(s) {', '.join(map(repr, unknown))} that a context does not have" if unknown and \
            "text" in value else "has no 'text'"
        raise _fail(f"{what} (keys: {have}); expected {{\"text\", \"doc_id\"?, \"id\"?, \"score\"?}}{hint}.",
                    source, line, where)
    text = value["text"]
    if not isinstance(text, str) or not text.strip():
        raise _fail(f"text is {_show(text)}; expected the retrieved passage as a non-empty string.", source, line,
                    f"{where}.text")
    doc_id = value.get("doc_id")
    if doc_id is not None and (not isinstance(doc_id, str) or not doc_id.strip()):
        raise _fail(f"doc_id is {_show(doc_id)}; expected the source document's id as a non-empty string.",
                    source, line, f"{where}.doc_id")
    ident = value.get("id", default_id)
    if ident is not None:
        if isinstance(ident, bool) or not isinstance(ident, (str, int)) or (isinstance(ident, str) and not ident):
            raise _fail(f"id is {_show(ident)}; expected a non-empty string (or an integer).", source, line,
                        f"{where}.id")
        ident = str(ident)
    score = value.get("score")
    if score is not None:
        if isinstance(score, bool) or not isinstance(score, (int, float)) or not math.isfinite(float(score)):
            raise _fail(f"score is {_show(score)}; expected a finite number (or leave it out).", source, line,
                        f"{where}.score")
        score = float(score)
    return RetrievedItem(text, doc_id, ident, score)


def load_retrieved(path: PathLike, *, pipeline: Optional[str] = None) -> RetrievedFile:
    """Read a results file (module docstring) strictly: the first error raises :class:`InputError` naming the
    file, line and field.  ``pipeline`` names the pipeline of lines without one (default: the file name
    without its extension)."""
    from ragexam.data.problems import ProblemCollector
    from ragexam.data.reading import iter_jsonl, read_lines

    p = Path(path)
    src = str(p)
    if not p.exists():
        raise InputError("no such file; expected a results file (JSONL: one line per question with its "
                         "retrieved contexts).", source=src)
    col = ProblemCollector(strict=True)
    text = read_lines(p, src, col)
    if text is None:  # pragma: no cover - strict collector raised already
        raise InputError("cannot be read as UTF-8 text.", source=src)
    default = pipeline or p.stem
    sets: Dict[str, RetrievedSet] = {}
    empty: List[str] = []
    example = '{"query_id": ..., "pipeline"?: ..., "contexts": ["text", {"text": ..., "doc_id": ...}]}'
    for line, obj in iter_jsonl(text, src, col, example=example):
        qid = obj.get("query_id")
        if qid is None:
            raise _fail(("received null" if "query_id" in obj else "the required field 'query_id' is absent")
                        + "; expected the id of the question these contexts were retrieved for.", src, line,
                        "query_id")
        if not isinstance(qid, str) or not qid.strip():
            fix = f'; write it as a string: "{qid}"' if isinstance(qid, int) and not isinstance(qid, bool) else ""
            raise _fail(f"received {_show(qid)}; expected a non-empty string id{fix}.", src, line, "query_id")
        name = obj.get("pipeline", default)
        if name is None:
            name = default
        if not isinstance(name, str) or not name.strip():
            raise _fail(f"received {_show(name)}; expected the pipeline's name as a non-empty string (or leave it "
                        "out).", src, line, "pipeline")
        if "contexts" not in obj or obj["contexts"] is None:
            near = [k for k in obj if k in ("context", "results", "documents", "passages", "hits", "retrieved")]
            hint = f"; rename {near[0]!r} to 'contexts'" if near else ""
            what = "received null" if "contexts" in obj else f"the required field 'contexts' is absent{hint}"
            raise _fail(f"{what}; expected the retrieved texts in rank order ([] when the system returned none).",
                        src, line, "contexts")
        ctx = obj["contexts"]
        if not isinstance(ctx, list):
            raise _fail(f"received {_show(ctx)}; expected a list of texts or objects in rank order.", src, line,
                        "contexts")
        ids = obj.get("context_ids")
        if ids is not None and (not isinstance(ids, list) or len(ids) != len(ctx)):
            raise _fail(f"has {len(ids) if isinstance(ids, list) else _show(ids)} entries for {len(ctx)} contexts; "
                        "expected one id per context, in the same order.", src, line, "context_ids")
        items = tuple(item_from_value(v, source=src, line=line, where=f"contexts[{i}]",
                                      default_id=(str(ids[i]) if ids is not None and ids[i] is not None else None))
                      for i, v in enumerate(ctx))
        s = sets.get(name)
        if s is None:
            s = sets[name] = RetrievedSet(name, src)
        if qid in s.lists:
            raise _fail(f"question {qid!r} of pipeline {name!r} already appeared on line {s.lines[qid]}; expected "
                        "one line per question and pipeline.", src, line, "query_id")
        s.lists[qid] = items
        s.lines[qid] = line
        if not items:
            empty.append(f"{qid} (line {line})")
    warnings = []
    if empty:
        shown = ", ".join(empty[:5]) + (f" and {len(empty) - 5} more" if len(empty) > 5 else "")
        warnings.append(f"{src}: {len(empty)} line(s) have an empty contexts list (nothing retrieved; counted as "
                        f"misses): {shown}")
    return RetrievedFile(src, list(sets.values()), warnings)


def _examples(ids: Iterable[str], n: int = 3) -> str:
    return ", ".join(repr(x) for x in sorted(ids)[:n])


def check_doc_ids(pipeline: str, lists: Mapping[str, Sequence[RetrievedItem]], judged: AbstractSet[str],
                  corpus_ids: Optional[AbstractSet[str]] = None) -> Optional[str]:
    """Doc-mode grading of a pipeline's ``lists`` (``{query_id: items}``) counts a text for its ``doc_id``: the
    ids must be the question set's.  ``judged`` are the document ids the question set judges, ``corpus_ids``
    the corpus's (when there is one: then it is the reference).  Returns a warning when some returned ids are not
    in the corpus (they count as non-relevant); ``None`` when all are, or without a corpus -- a document the
    question set does not judge is not relevant, as in trec_eval, and a real index returns many of them.

    :raises InputError: when not one returned ``doc_id`` is known -- every metric would be 0 (chunk ids in
        ``doc_id``, or the results of another corpus)."""
    returned = {it.doc_id for items in lists.values() for it in items if it.doc_id is not None}
    if not returned:
        return None
    known = corpus_ids if corpus_ids is not None else judged
    where = "in the corpus" if corpus_ids is not None else "judged by the question set"
    unknown = returned - set(known)
    if unknown == returned:
        raise InputError(f"none of the {len(returned)} doc_id(s) it returned is {where} (it returned e.g. "
                         f"{_examples(returned)}; the question set judges e.g. {_examples(judged)}), so every "
                         "doc-relevance metric would be 0; return each context's source document id as doc_id "
                         "(not a chunk id), check that the results belong to this question set, or grade with "
                         "relevance 'evidence'.", source=f"pipeline {pipeline}", field="doc_id")
    if not unknown:
        return None
    if corpus_ids is None:  # without a corpus only the ids that look like a judged document's chunks are suspect
        chunk_like = {u for u in unknown if _judged_prefix(u, judged) is not None}
        if not chunk_like:
            return None
        u = sorted(chunk_like)[0]
        return (f"pipeline {pipeline!r}: {len(chunk_like)} of the {len(returned)} doc_id(s) it returned look like "
                f"chunks of judged documents (e.g. {u!r} of {_judged_prefix(u, judged)!r}); they count as "
                "non-relevant: return each context's source document id as doc_id")
    return (f"pipeline {pipeline!r}: {len(unknown)} of the {len(returned)} doc_id(s) it returned are not {where} "
            f"(e.g. {_examples(unknown)}); their texts count as non-relevant")


#: what separates a document id from a chunk's number in the chunk ids of common pipelines (``doc#3``, ``doc/3``)
_CHUNK_SEPARATORS = "#/:_-."


def _judged_prefix(doc_id: str, judged: AbstractSet[str]) -> Optional[str]:
    """The judged document ``doc_id`` extends by a separator and more (``hd_01#2`` of ``hd_01``), if any."""
    for i, ch in enumerate(doc_id):
        if ch in _CHUNK_SEPARATORS and i and i < len(doc_id) - 1 and doc_id[:i] in judged:
            return doc_id[:i]
    return None
