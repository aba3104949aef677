"""What a run grades: its pipelines, built from spec strings, objects and results files, with unique names.

A *pipeline* yields, per question, a ranked list of retrieved items:

* kind ``chunks``: one of ragexam's retrievers (or an object with ``index(ids, texts)`` and
  ``search(queries, top_n)``) × a chunker, named ``"<retriever> | <chunker>"``;
* kind ``texts``: a pipeline that chunks on its own and returns texts: a results file
  (:mod:`ragexam.data.retrieved`), a search service (``http:URL``), a LangChain or LlamaIndex retriever, or any
  object with ``retrieve(queries, top_n)`` (:mod:`ragexam.retrieval.texts`), named by its spec or its results
  file's pipeline name;
* either of these followed by rerank stages (``A>rerank:...``).

:func:`plan_pipelines` turns a run's settings into a :class:`PipelinePlan`: the retriever objects, the chunkers and
every pipeline's :class:`PipelineSpec` in pipeline order (the first is the baseline).  Every pipeline name is
unique: a clash (two equal specs, or a results file whose pipeline is named like one of ragexam's, e.g.
``bm25 | paragraphs:400``) gets a ``#2`` suffix, so no pipeline's results replace another's.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

from ragexam.errors import InputError, setting
from ragexam.types import (ChunkerLike, ChunkerObject, RetrievedRef, RetrieverLike, RetrieverObject,
                           TextRetrieverObject)

if TYPE_CHECKING:
    from ragexam.data.chunking import Chunker
    from ragexam.data.retrieved import RetrievedFile
    from ragexam.retrieval.embedders import Embedder

#: a retriever object a pipeline runs: one that indexes ragexam's chunks, or one that returns its own texts
RetrieverObj = Union[RetrieverObject, TextRetrieverObject]

__all__ = ["Pipeline", "PipelineSpec", "PipelinePlan", "plan_pipelines", "make_chunker", "run_embedders", "slugify",
           "file_stem", "unique_names"]

#: the longest TREC file stem kept as written; a longer pipeline name is cut and given a hash of the whole name
STEM_CHARS = 80


def slugify(name: str) -> str:
    """``name`` made file-safe: every character outside ``[A-Za-z0-9._-]`` becomes ``_``."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", name)


def file_stem(name: str) -> str:
    """The file-name stem of a pipeline's TREC files: :func:`slugify` of ``name``, or, when that is longer than
    :data:`STEM_CHARS` (a file system refuses names over 255 bytes), its first characters and 10 hex digits of
    the name's SHA-256."""
    slug = slugify(name)
    if len(slug) <= STEM_CHARS:
        return slug
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:10]
    return f"{slug[:STEM_CHARS - 11].rstrip('_.')}-{digest}"


def unique_names(labels: Sequence[str]) -> List[str]:
    """``labels`` with the second and later copies of a name suffixed ``#2``, ``#3``, ... (never equal to
    another label)."""
    taken = set(labels)
    seen: Dict[str, int] = {}
    out = []
    for lab in labels:
        seen[lab] = seen.get(lab, 0) + 1
        if seen[lab] == 1:
            out.append(lab)
            continue
        n = seen[lab]
        while f"{lab} #{n}" in taken:
            n += 1
        seen[lab] = n
        taken.add(f"{lab} #{n}")
        out.append(f"{lab} #{n}")
    return out


@dataclass
class Pipeline:
    """One graded pipeline.  Kind ``chunks``: a ragexam retriever × a chunker, ``name`` is
    ``"<retriever> | <chunker>"``; kind ``texts``: a pipeline that returns texts (its own chunking),
    ``chunker`` is ``None`` and ``name`` is its label.  ``slug`` names its files in ``runs/``."""

    name: str
    retriever: str
    chunker: Optional[str]
    signature: str
    slug: str
    retriever_obj: Optional[RetrieverObj] = field(default=None, repr=False)
    kind: str = "chunks"

    def to_dict(self) -> Dict[str, Any]:
        return {"name": self.name, "retriever": self.retriever, "chunker": self.chunker, "kind": self.kind,
                "signature": self.signature, "slug": self.slug}


@dataclass
class PipelineSpec:
    """A pipeline before it ran: its unique ``name``, the retriever's label, the chunker spec (``None`` for kind
    ``texts``), the retriever object and the file stem ``slug``."""

    name: str
    retriever: str
    chunker: Optional[str]
    kind: str
    retriever_obj: RetrieverObj = field(repr=False)
    slug: str = ""


@dataclass
class PipelinePlan:
    """Every pipeline of a run, in order, with the chunkers ragexam's retrievers need (``tokens:`` and ``semantic``
    bound to the first of ``embedders``), the labels of the retrievers given (``config.retrievers``), the results
    files read (checked against the question set by :meth:`check_questions`, which adds its warnings) and the
    embedders of the retrievers that index ragexam's chunks."""

    pipelines: List[PipelineSpec]
    chunkers: List["Chunker"]
    retriever_labels: List[str] = field(default_factory=list)
    results_files: List["RetrievedFile"] = field(default_factory=list, repr=False)
    warnings: List[str] = field(default_factory=list)
    #: the embedders of the retrievers that index ragexam's chunks (:func:`run_embedders`)
    embedders: List["Embedder"] = field(default_factory=list, repr=False)

    def check_questions(self, qa_ids: Sequence[str]) -> None:
        """Every results file's pipelines name questions of the set (else an error); lines naming unknown
        questions, and questions a file has no line for, become warnings."""
        for f in self.results_files:
            _results_file_checks(f, qa_ids, self.warnings)

    @property
    def chunker_specs(self) -> List[str]:
        return [c.spec for c in self.chunkers]

    @property
    def uses_cache(self) -> bool:
        """Whether a retriever of the run keeps the retrieval cache (its ``cache`` switch on, in a hybrid's
        members or a rerank stage too); with ``?cache=0`` on every one the run writes nothing there, so the
        chunk stage does not keep its chunkings either."""
        return any(getattr(part, "cache", None) is True for p in self.pipelines if p.retriever_obj is not None
                   for part in retriever_parts(p.retriever_obj))

    def of_chunker(self, spec: Optional[str]) -> List[PipelineSpec]:
        return [p for p in self.pipelines if p.chunker == spec]


# -- retrievers and chunkers -----------------------------------------------------------------------------------


class _SpansChunker:
    """Adapts an object with ``spec`` and ``spans(content)`` to the Chunker interface."""

    def __init__(self, obj: ChunkerObject) -> None:
        from ragexam.data.chunking import Chunker

        base = Chunker()
        base.spec = str(obj.spec)
        base.spans = obj.spans  # type: ignore[method-assign]
        self.chunker = base


def make_chunker(spec_or_obj: ChunkerLike, embedder: Optional["Embedder"] = None,
                 cache_dir: Optional[Union[str, Path]] = None) -> "Chunker":
    """A :class:`~ragexam.data.chunking.Chunker` from a spec string, a Chunker, or any object with ``spec`` and
    ``spans(content)``; ``tokens:`` and ``semantic`` bound to ``embedder`` (its tokenizer and passage vectors,
    e5's when ``None``, ``semantic``'s through the embedding cache of ``cache_dir``:
    :func:`ragexam.retrieval.chunk_models.bind_chunker`)."""
    from ragexam.data.chunking import Chunker
    from ragexam.retrieval.chunk_models import bind_chunker

    if isinstance(spec_or_obj, type):
        raise InputError(f"received the class {spec_or_obj.__name__}; expected a chunker object: pass an "
                         f"instance, {spec_or_obj.__name__}(...).", source="chunkers", field="chunkers")
    if isinstance(spec_or_obj, (str, Chunker)):
        return bind_chunker(spec_or_obj, embedder, cache_dir=cache_dir)
    if isinstance(getattr(spec_or_obj, "spec", None), str) and callable(getattr(spec_or_obj, "spans", None)):
        return _SpansChunker(spec_or_obj).chunker
    raise InputError(f"received a {type(spec_or_obj).__name__}; expected a chunker spec string such as "
                     "'paragraphs:400' or a Chunker object (anything with spec and spans(content)).",
                     source="chunkers")


def run_embedders(retrievers: Sequence[RetrieverObj]) -> List["Embedder"]:
    """The embedders of a run's retrievers, in the order given (a dense retriever's, a hybrid's members', a rerank
    stage's first stage and reranker), each once (by ``identity``: ``dense`` and ``rerank:dense`` share e5): the
    first counts ``tokens:`` chunkers and embeds ``semantic`` ones; every one is asked how many chunks exceed its
    window."""
    out: List["Embedder"] = []
    seen: set = set()
    for part in (part for r in retrievers for part in retriever_parts(r)):
        emb = getattr(part, "embedder", None)
        key = getattr(emb, "identity", None) or id(emb)
        if emb is not None and key not in seen:
            seen.add(key)
            out.append(emb)
    return out


def retriever_parts(obj: RetrieverObj) -> Iterator[RetrieverObj]:
    """``obj`` and, depth first, what it is made of: a hybrid's member retrievers, a rerank stage's first stage
    and reranker."""
    yield obj
    for member in getattr(obj, "retrievers", None) or ():
        yield from retriever_parts(member)
    for part in ("first", "reranker"):
        if getattr(obj, part, None) is not None:
            yield from retriever_parts(getattr(obj, part))


def make_retriever(spec_or_obj: RetrieverLike, options: Mapping[str, object]) -> Tuple[str, RetrieverObj]:
    """``(label, retriever)`` of a spec string (parsed with ``options``: cache_dir, progress, headers, llm,
    executor) or a retriever object."""
    if isinstance(spec_or_obj, str):
        from ragexam.retrieval.spec import parse_retriever

        obj = parse_retriever(spec_or_obj, **{k: v for k, v in options.items() if v is not None})
        # the spec as written names the pipeline, without the credentials a URL in it may hold
        return re.sub(r"://[^/@?>]*@", "://", spec_or_obj.strip()), obj
    from ragexam.retrieval.texts import is_text_retriever

    if isinstance(spec_or_obj, type):
        raise InputError(f"received the class {spec_or_obj.__name__}; expected a retriever object: pass an "
                         f"instance, {spec_or_obj.__name__}(...).", source="retrievers", field="retrievers")
    if (callable(getattr(spec_or_obj, "index", None)) and callable(getattr(spec_or_obj, "search", None))) \
            or is_text_retriever(spec_or_obj):
        label = getattr(spec_or_obj, "spec", None)
        return (label if isinstance(label, str) and label else type(spec_or_obj).__name__), spec_or_obj
    raise InputError(f"received a {type(spec_or_obj).__name__}; expected a retriever spec string such as "
                     "'bm25' or 'hybrid:bm25+dense', an object with index(ids, texts) and search(queries, top_n) "
                     "(it indexes ragexam's chunks), or one with retrieve(queries, top_n) (it returns texts).",
                     source="retrievers")


def _split_rerank(ref: RetrievedRef) -> Tuple[RetrievedRef, List[str]]:
    """``("results.jsonl", ["rerank:..."])`` from ``"results.jsonl>rerank:...[>rerank:...]"``; a path that exists
    as written is never split."""
    if not isinstance(ref, str) or Path(ref).exists() or ">rerank:" not in ref:
        return ref, []
    path, *stages = ref.split(">rerank:")
    return path, ["rerank:" + st for st in stages]


def _results_file_checks(f: "RetrievedFile", qa_ids: Sequence[str], warnings: List[str]) -> None:
    """Every pipeline of results file ``f`` names questions of the set; lines it lacks are warned about."""
    known = set(qa_ids)
    for s in f.sets:
        unknown = [q for q in s.lists if q not in known]
        if unknown and len(unknown) == len(s.lists):
            raise InputError(f"none of the {len(s.lists)} question ids of pipeline {s.pipeline!r} is in the "
                             f"question set (e.g. {unknown[0]!r}, line {s.lines[unknown[0]]}); is it the "
                             "results file of another question set?", source=f.path, field="query_id")
        if unknown:
            shown = ", ".join(f"{q} (line {s.lines[q]})" for q in unknown[:5])
            warnings.append(f"{f.path}: {len(unknown)} line(s) of pipeline {s.pipeline!r} name questions the "
                            f"question set does not have (ignored): {shown}"
                            + (f" and {len(unknown) - 5} more" if len(unknown) > 5 else ""))
        missing = [q for q in qa_ids if q not in s.lists]
        if missing:
            shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
            warnings.append(f"{f.path}: pipeline {s.pipeline!r} has no line for {len(missing)} question(s) "
                            f"(graded as misses, listed as unretrieved): {shown}")


def results_retrievers(retrieved: Sequence[RetrievedRef], warnings: List[str], files: List["RetrievedFile"],
                       stage_options: Optional[Mapping[str, object]] = None) -> List[Tuple[str, RetrieverObj]]:
    """``(label, retriever)`` per pipeline of each results file (paths, or already loaded
    :class:`~ragexam.data.retrieved.RetrievedFile` objects): a
    :class:`~ragexam.retrieval.texts.ResultsRetriever`, wrapped in rerank stages for ``"file>rerank:..."``.
    A file named twice (once plain, once with a rerank stage) is read once; each file read is appended to
    ``files``."""
    from ragexam.data.retrieved import RetrievedFile, load_retrieved
    from ragexam.retrieval.texts import ResultsRetriever

    loaded: Dict[object, "RetrievedFile"] = {}
    out = []
    for entry in retrieved:
        ref, stages = _split_rerank(entry)
        key = id(ref) if isinstance(ref, RetrievedFile) else str(ref)
        f = loaded.get(key)
        if f is None:
            f = loaded[key] = ref if isinstance(ref, RetrievedFile) else load_retrieved(ref)
            warnings.extend(f.warnings)
            if not f.sets:
                raise InputError("has no results; expected one line per question with its retrieved contexts.",
                                 source=f.path)
            files.append(f)
        for s in f.sets:
            r: RetrieverObj = ResultsRetriever(s)
            label = s.pipeline
            for st in stages:
                from ragexam.retrieval.rerank.base import rerank_stage
                from ragexam.retrieval.spec import parse_reranker

                reranker, top = parse_reranker(st, **dict(stage_options or {}))
                r = rerank_stage(r, reranker, top)
                label += ">" + st
            out.append((label, r))
    return out


# -- the plan --------------------------------------------------------------------------------------------------


def plan_pipelines(retrievers: Sequence[RetrieverLike], chunkers: Sequence[ChunkerLike],
                   retrieved: Sequence[RetrievedRef], options: Mapping[str, object], *, have_corpus: bool
                   ) -> PipelinePlan:
    """Every pipeline of a run in order: for each chunker, ragexam's retrievers in the order given; then the
    pipelines that return texts (services, frameworks, then each results file's pipelines).  ``options`` are
    :func:`make_retriever`'s (and the rerank stages' of results files)."""
    from ragexam.retrieval.texts import is_text_retriever

    warnings: List[str] = []
    slots = [make_retriever(r, options) for r in retrievers]
    chunk_slots = [i for i, (_, obj) in enumerate(slots) if not is_text_retriever(obj)]
    if chunk_slots and not have_corpus:
        raise InputError(f"retriever {slots[chunk_slots[0]][0]!r} indexes ragexam's chunks of a corpus, but no corpus "
                         f"was given; pass the corpus ({setting('corpus', 'PATH_OR_NAME')}), or grade only pipelines "
                         f"that return texts ({setting('retrieved', 'FILE')}, http:URL).", source="corpus",
                         field="corpus")
    stage_options = {k: options.get(k) for k in ("progress", "headers", "llm", "cache_dir")
                     if options.get(k) is not None}
    n_given = len(slots)
    files: List["RetrievedFile"] = []
    slots.extend(results_retrievers(retrieved, warnings, files, stage_options))
    if not slots:
        raise InputError("nothing to grade: give at least one retriever or results file.", source="retrievers")
    embedders = run_embedders([slots[i][1] for i in chunk_slots])
    chunker_objs = [make_chunker(c, embedders[0] if embedders else None, options.get("cache_dir"))
                    for c in chunkers] if chunk_slots else []
    specs = [c.spec for c in chunker_objs]
    dup = [s for i, s in enumerate(specs) if s in specs[:i]]
    if dup:
        raise InputError(f"chunker {dup[0]!r} is given twice; give each chunker once.", source="chunkers")
    labels = unique_names([lab for lab, _ in slots])
    # pipeline order: per chunker, the slots in the order given; a pipeline returning texts takes its slot's
    # place in the first chunker's group (or stands alone when no pipeline chunks)
    raw: List[Tuple[str, str, Optional[str], str, RetrieverObj]] = []
    for ci, ch in enumerate(chunker_objs or [None]):
        for si, (_, obj) in enumerate(slots):
            if not is_text_retriever(obj):
                if ch is not None:
                    raw.append((f"{labels[si]} | {ch.spec}", labels[si], ch.spec, "chunks", obj))
            elif ci == 0:
                raw.append((labels[si], labels[si], None, "texts", obj))
    names = unique_names([r[0] for r in raw])
    pipelines: List[PipelineSpec] = []
    stems: set = set()
    for name, (_, label, spec, kind, obj) in zip(names, raw):
        slug = file_stem(name)
        while slug in stems:
            slug += "_"
        stems.add(slug)
        pipelines.append(PipelineSpec(name, label if kind == "chunks" else name, spec, kind, obj, slug))
    return PipelinePlan(pipelines, chunker_objs, labels[:n_given], files, warnings, embedders)
