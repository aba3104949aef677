"""Settings of a ``ragexam run``: defaults, validation, and config files (YAML or TOML).

A config file holds the same settings as the command-line flags, as one flat table::

    # run.toml                                  # run.yaml
    corpus = "docs.jsonl"                       corpus: docs.jsonl
    qa = "qa.jsonl"                             qa: qa.jsonl
    retrievers = ["bm25", "dense"]              retrievers: [bm25, dense]
    chunkers = ["paragraphs:400"]               chunkers: [paragraphs:400]
    k = [1, 3, 5, 10]                           k: [1, 3, 5, 10]

Keys (``-`` and ``_`` are interchangeable; the singular ``retriever``/``chunker`` of the flags
are accepted too and may be a string or a list): ``corpus``, ``qa``, ``retrievers``,
``chunkers``, ``retrieved`` (results files to grade, a path or a list), ``relevance`` (``doc`` | ``evidence``),
``k`` (list of ints or ``"1,3,5"``; a context budget such as ``"2000c"`` or ``"512t"`` among them cuts every
ranking metric at that many characters or tokens),
``depth``, ``miss_k``, ``seed``, ``n_resamples``, ``n_permutations``, ``ignore_punctuation``,
``overlap``, ``out``, ``workers`` (an integer >= 1; default every core) and ``executor`` (``local``,
``ray`` or ``ray://HOST:PORT``; see :mod:`ragexam.exec`).  An unknown key is an
:class:`~ragexam.errors.InputError` naming it and listing the valid keys; flags given on the command line override the file.  The format is
chosen by extension: ``.toml`` is TOML, ``.yaml``/``.yml`` YAML (PyYAML, an optional
dependency), anything else is an error.

Defaults and why
----------------
``chunkers = ["paragraphs:400"]``: paragraphs (blank-line separated) packed up to 400
characters.  Paragraph chunks never cut a sentence, a list item or a heading, so evidence
written inside one sentence is never split by a chunk boundary; 400 characters of Korean is
roughly 150-300 e5 tokens, inside multilingual-e5-small's 512-token window (no truncation or
window averaging); packing joins short paragraphs (headings, one-line notes) with their
neighbours so that no chunk is a context-free fragment; and a few hundred characters is the
usual size of a chunk handed to a generator.  On the bundled helpdesk set it gives 81 chunks
(4-5 per document).

``k = (1, 3, 5, 10)``: the lecture's cutoffs plus 10; ``depth = 100``: chunks retrieved per
question (ranks below ``depth`` count as "not found"); ``miss_k = 5``: a question is *missed*
when no relevant unit is in the top 5, the usual number of chunks put in a prompt.
"""

from __future__ import annotations

import math
from os import PathLike as PathLikeType
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from ragexam.data.chunking import DEFAULT_CHUNKER
from ragexam.errors import InputError, audience, option, setting
from ragexam.types import (ChunkerLike, Chunkers, CorpusData, CorpusLike, ExecutorLike, PathLike, QAData, QALike, RetrievedLike,
                           RetrievedRef, RetrieverLike, Retrievers, check_keywords)
from ragexam.storage.files import read_settings_file
from ragexam.storage.summary import DEFAULT_MISS_K

if TYPE_CHECKING:
    from ragexam.llm.settings import LLMSettings

__all__ = ["RunConfig", "RunOptions", "RUN_KEYWORDS", "run_parts", "DEFAULT_CHUNKER", "DEFAULT_RETRIEVERS", "DEFAULT_K", "DEFAULT_DEPTH",
           "DEFAULT_MISS_K", "CONFIG_KEYS", "load_config_file", "parse_k", "split_k", "merge_settings"]

DEFAULT_RETRIEVERS = ("bm25", "dense")
DEFAULT_K = (1, 3, 5, 10)
DEFAULT_DEPTH = 100
DEFAULT_N_RESAMPLES = 2000
DEFAULT_N_PERMUTATIONS = 10000

#: canonical key -> accepted spellings (after lower-casing and ``-`` -> ``_``)
_KEY_ALIASES: Dict[str, Tuple[str, ...]] = {
    "corpus": ("corpus",),
    "qa": ("qa",),
    "retrievers": ("retrievers", "retriever"),
    "chunkers": ("chunkers", "chunker"),
    "retrieved": ("retrieved",),
    "relevance": ("relevance",),
    "k": ("k",),
    "depth": ("depth",),
    "miss_k": ("miss_k",),
    "seed": ("seed",),
    "n_resamples": ("n_resamples",),
    "n_permutations": ("n_permutations",),
    "ignore_punctuation": ("ignore_punctuation",),
    "overlap": ("overlap",),
    "out": ("out",),
    "workers": ("workers",),
    "executor": ("executor",),
}
CONFIG_KEYS = tuple(_KEY_ALIASES)
_ALIAS_TO_KEY = {a: k for k, aliases in _KEY_ALIASES.items() for a in aliases}


def _int(value: object, name: str, minimum: int, source: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, str) and value.strip().isdigit():
            value = int(value.strip())
        elif isinstance(value, float) and value.is_integer():
            value = int(value)
        else:
            raise InputError(f"received {value!r}; expected an integer >= {minimum}.", source=source,
                             field=name)
    if value < minimum:
        raise InputError(f"received {value}; expected an integer >= {minimum}.", source=source, field=name)
    return int(value)


def parse_k(value: Union[int, str, Iterable[Any], None], source: str = "k") -> Tuple[Union[int, str], ...]:
    """Cutoffs from ``5``, ``"1,3,5"``, ``["1", "3,5"]``, ``(1, 3, 5)``, with context budgets among them
    (``"5,2000c"``, ``["512t"]``): the cutoff grammar of metric names
    (:func:`ragexam.metrics.ranking.names.parse_cutoff`: a number of chunks K >= 1, or a budget B followed by
    ``c``, characters, or ``t``, tokens).  Returns the counts sorted, then the budgets (characters first, each
    sorted), each once; the defaults when ``value`` is ``None``."""
    from ragexam.metrics.ranking.names import parse_cutoff

    if value is None:
        return DEFAULT_K
    items: List[Any] = [value] if isinstance(value, (int, str)) else list(value)
    counts: List[int] = []
    budgets: List[Tuple[str, int]] = []
    for item in items:
        parts = item.split(",") if isinstance(item, str) else [item]
        for p in parts:
            if not isinstance(p, str):
                counts.append(_int(p, "k", 1, source))
                continue
            p = p.strip().lower()
            if not p:
                continue
            parsed = parse_cutoff(p)
            if parsed is None:
                raise InputError(f"received {p!r}; expected positive integer cutoffs such as {_k_example()}, "
                                 "or a context budget: 2000c (characters) or 512t (tokens).", source=source,
                                 field="k")
            if parsed[1] is None:
                counts.append(parsed[0])
            else:
                budgets.append((parsed[1], parsed[0]))
    if not counts and not budgets:
        raise InputError(f"no cutoff given; expected positive integers such as {_k_example()} (or a budget: "
                         f"{setting('k', '2000c')}).", source=source, field="k")
    return (*sorted(set(counts)), *(f"{n}{u}" for u, n in sorted(set(budgets))))


def _k_example() -> str:
    """How the reader writes cutoffs: ``-k 1 -k 3 or -k 1,3,5`` on the command line, ``k=(1, 3, 5)`` in Python."""
    return "-k 1 -k 3 or -k 1,3,5" if audience() == "cli" else "k=(1, 3, 5) or k='1,3,5'"


def split_k(k: Sequence[Union[int, str]]) -> Tuple[Tuple[int, ...], Tuple[str, ...]]:
    """``(counts, budgets)`` of parsed cutoffs (:func:`parse_k`); only budgets given: the default counts."""
    counts = tuple(c for c in k if isinstance(c, int))
    budgets = tuple(c for c in k if isinstance(c, str))
    return counts or DEFAULT_K, budgets


def _str_list(value: object, name: str, source: str, *, allow_empty: bool = False) -> List[object]:
    if isinstance(value, (str, Path)):
        return [value]
    if isinstance(value, Mapping) or not isinstance(value, Iterable):
        # a single retriever/chunker object
        return [value]
    items = list(value)
    if not items and not allow_empty:
        raise InputError(f"received an empty list; expected at least one {name[:-1]}.", source=source,
                         field=name)
    return items


_CHECKED = ("retrievers", "chunkers", "retrieved", "relevance", "k", "depth", "miss_k", "seed", "n_resamples",
            "n_permutations", "ignore_punctuation", "overlap", "workers", "executor")


def check_settings(values: Mapping[str, Any], source: str) -> Dict[str, Any]:
    """``values`` (any subset of the run settings) checked and normalized, one rule per setting; the first
    problem raises :class:`InputError` naming ``source`` (a config file, or "run settings") and the field.
    Settings this function does not know (corpus, qa, out) pass through unchanged."""
    out = dict(values)
    if "retrievers" in out:
        out["retrievers"] = _str_list(out["retrievers"], "retrievers", source, allow_empty=True)
    if "chunkers" in out:
        out["chunkers"] = _str_list(out["chunkers"], "chunkers", source)
    if "retrieved" in out:
        out["retrieved"] = [] if out["retrieved"] is None else \
            _str_list(out["retrieved"], "retrieved", source, allow_empty=True)
    from ragexam.data.relevance import MODES

    rel = out.get("relevance")
    if rel is not None and rel not in MODES:
        raise InputError(f"received {rel!r}; expected 'doc' or 'evidence' (or leave it unset: evidence when "
                         "the questions have evidence).", source=source, field="relevance")
    if "k" in out:
        out["k"] = parse_k(out["k"], source)
    for name, low in (("depth", 1), ("miss_k", 1), ("seed", 0), ("n_resamples", 1), ("n_permutations", 1)):
        if name in out:
            out[name] = _int(out[name], name, low, source)
    if "ignore_punctuation" in out and not isinstance(out["ignore_punctuation"], bool):
        raise InputError(f"received {out['ignore_punctuation']!r}; expected true or false.", source=source,
                         field="ignore_punctuation")
    ov = out.get("overlap")
    if ov is not None:
        ok = isinstance(ov, (int, float)) and not isinstance(ov, bool) and math.isfinite(float(ov)) \
            and 0 < float(ov) <= 1
        if not ok:
            raise InputError(f"received {ov!r}; expected a fraction in (0, 1] (the part of an evidence string a "
                             "chunk must hold to count) or nothing for whole containment.", source=source,
                             field="overlap")
        out["overlap"] = float(ov)
    if out.get("workers") is not None:
        from ragexam.exec.base import check_workers

        out["workers"] = check_workers(out["workers"], source)
    ex = out.get("executor")
    if ex is not None:
        from ragexam.exec.spec import parse_executor

        parse_executor(ex, source=source)  # the one parser of the setting: an InputError names what it accepts
        if isinstance(ex, str):
            out["executor"] = ex.strip()
    return out


@dataclass
class RunConfig:
    """Every setting of one run, checked once (the ``config`` block of ``summary.json``: :meth:`to_settings`).

    ``retrievers`` and ``chunkers`` hold spec strings or objects (a retriever: anything with
    ``index(ids, texts)`` and ``search(queries, top_n)``, or with ``retrieve(queries, top_n)``; a chunker:
    a :class:`~ragexam.data.chunking.Chunker`); ``retrieved`` the results files to grade (paths or loaded
    files).  At least one retriever or results file is needed.  ``relevance`` ``None`` means "evidence when
    the question set has evidence, else doc" (decided when the questions are loaded).  ``cutoffs`` are the
    metric cutoffs in chunks (``-k``, the ``k`` key of config files and ``summary.json``) and ``budgets`` the context
    budgets every ranking metric is also cut at (``-k 2000c``, ``-k 512t``: given among the cutoffs, moved here;
    ``config.budgets``); ``miss_k`` the cutoff of a missed question; ``executor`` is ``"local"``, ``"ray"``, ``"ray://HOST:PORT"`` or an
    :class:`~ragexam.exec.Executor` (parsed here, once).
    """

    corpus: Optional[CorpusLike]
    qa: QALike
    retrievers: List[RetrieverLike] = field(default_factory=lambda: list(DEFAULT_RETRIEVERS))
    chunkers: List[ChunkerLike] = field(default_factory=lambda: [DEFAULT_CHUNKER])
    relevance: Optional[str] = None
    cutoffs: Tuple[int, ...] = DEFAULT_K
    depth: int = DEFAULT_DEPTH
    miss_k: int = DEFAULT_MISS_K
    seed: int = 12345
    n_resamples: int = DEFAULT_N_RESAMPLES
    n_permutations: int = DEFAULT_N_PERMUTATIONS
    ignore_punctuation: bool = False
    overlap: Optional[float] = None
    retrieved: List[RetrievedRef] = field(default_factory=list)
    workers: Optional[int] = None
    executor: ExecutorLike = None
    split: Optional[str] = None
    budgets: Tuple[str, ...] = ()

    def __post_init__(self) -> None:
        src = "run settings"
        values = {f: getattr(self, f) for f in _CHECKED if f != "k"}
        values["k"] = (*((self.cutoffs,) if isinstance(self.cutoffs, (int, str)) else self.cutoffs),
                       *self.budgets)
        checked = check_settings(values, src)
        self.cutoffs, self.budgets = split_k(checked.pop("k"))
        for key, value in checked.items():
            setattr(self, key, value)
        if not self.retrievers and not self.retrieved:
            raise InputError("received no retriever and no results file; expected at least one retriever (e.g. "
                             f"bm25) or a results file to grade ({setting('retrieved', 'FILE')}).", source=src,
                             field="retrievers")
        too_deep = [k for k in self.cutoffs if k > self.depth]
        if too_deep:
            raise InputError(f"cutoff k={too_deep[0]} is larger than the retrieval depth {self.depth}; "
                             f"raise the depth ({setting('depth', max(self.cutoffs))}) or lower the cutoffs.",
                             source=src, field="k")
        if self.miss_k > self.depth:
            raise InputError(f"miss_k={self.miss_k} is larger than the retrieval depth {self.depth}; raise the depth "
                             f"({setting('depth', self.miss_k)}) or lower {option('miss_k')}.",
                             source=src, field="miss_k")

    def to_dict(self, retriever_names: Sequence[str], chunker_names: Sequence[str]) -> Dict[str, Any]:
        """The ``config`` block of ``summary.json`` (objects appear under their names)."""
        out = {
            "corpus": _label(self.corpus) if self.corpus is not None else None, "qa": _label(self.qa),
            "retrievers": list(retriever_names), "chunkers": list(chunker_names),
            "retrieved": [_label(r) if not hasattr(r, "path") else str(r.path) for r in self.retrieved],
            "relevance": self.relevance, "k": list(self.cutoffs), "depth": self.depth, "miss_k": self.miss_k,
            "ignore_punctuation": self.ignore_punctuation, "overlap": self.overlap,
            "seed": self.seed, "n_resamples": self.n_resamples, "n_permutations": self.n_permutations,
            "workers": self.workers, "executor": _executor_label(self.executor),
        }
        if self.split is not None:
            out["split"] = self.split
        if self.budgets:
            out["budgets"] = list(self.budgets)
        return out


@dataclass(frozen=True)
class RunOptions:
    """How a run works, beside what it grades (none of it changes a result, none of it is stored in
    ``summary.json``): ``cache_dir`` the retrieval and call cache (default ``$RAGEXAM_CACHE_DIR`` or
    ``~/.cache/ragexam``), ``progress`` bars on stderr (only when it is a terminal), ``headers`` the HTTP
    headers of ``http:`` retrievers and ``rerank:http:`` rerankers (never stored, printed or part of a cache
    key), ``llm`` the :class:`~ragexam.llm.settings.LLMSettings` of ``rerank:llm:MODEL`` stages."""

    cache_dir: Optional[PathLike] = None
    progress: bool = True
    headers: Optional[Mapping[str, str]] = None
    llm: Optional["LLMSettings"] = None

    def __post_init__(self) -> None:
        if self.cache_dir is not None and not isinstance(self.cache_dir, (str, PathLikeType)):
            raise InputError(f"received {self.cache_dir!r}; expected a folder (a path).", source="run",
                             field="cache_dir")
        if not isinstance(self.progress, bool):
            raise InputError(f"received {self.progress!r}; expected True or False.", source="run", field="progress")
        h = self.headers
        if h is not None and not (isinstance(h, Mapping) and all(isinstance(k, str) and isinstance(v, str)
                                                                 for k, v in h.items())):
            raise InputError(f"received a {type(h).__name__}; expected a dict of header names to values, e.g. "
                             "headers={'Authorization': 'Bearer ...'}.", source="run", field="headers")
        if self.llm is not None:
            from ragexam.llm.settings import settings_object

            settings_object(self.llm, "llm", model="'rerank'")  # the model comes from the rerank:llm:MODEL spec


#: the keywords of :func:`ragexam.run` beside corpus, qa, retrievers, chunkers and retrieved: ``k`` (the cutoffs
#: and budgets) and the other settings of :class:`RunConfig`, then those of :class:`RunOptions`
RUN_KEYWORDS = ("k", *(f.name for f in fields(RunConfig) if f.name not in (
    "corpus", "qa", "retrievers", "chunkers", "retrieved", "cutoffs", "budgets")), *(f.name for f in fields(RunOptions)))


def run_parts(corpus: Optional[CorpusLike], qa: QALike, retrievers: Optional[Retrievers], chunkers: Chunkers,
              retrieved: Optional[RetrievedLike], keywords: Mapping[str, object]) -> Tuple[RunConfig, RunOptions]:
    """The :class:`RunConfig` (checked) and :class:`RunOptions` of a call of :func:`ragexam.run`; a keyword it
    does not take is a ``TypeError`` naming the ones it takes."""
    from ragexam.data.loaders import check_qa, corpus_object, qa_object

    check_keywords(keywords, RUN_KEYWORDS, "run")
    opts = RunOptions(**{k: v for k, v in keywords.items() if k in _OPTION_NAMES})  # type: ignore[arg-type]
    settings = {("cutoffs" if k == "k" else k): v for k, v in keywords.items() if k not in _OPTION_NAMES}
    # objects made in Python are checked as files are (against the corpus once it is loaded: run())
    if corpus is not None and not isinstance(corpus, (str, PathLikeType)):
        corpus = corpus_object(corpus)
    if not isinstance(qa, (str, PathLikeType)):
        qa = check_qa(qa_object(qa))
    refs = _as_list(retrieved)
    if retrievers is None:
        retrievers = [] if refs else list(DEFAULT_RETRIEVERS)
    cfg = RunConfig(corpus=corpus, qa=qa, retrievers=retrievers, chunkers=chunkers,  # type: ignore[arg-type]
                    retrieved=refs, **settings)  # type: ignore[arg-type]
    return cfg, opts


_OPTION_NAMES = frozenset(f.name for f in fields(RunOptions))


def _as_list(value: Optional[RetrievedLike]) -> List[RetrievedRef]:
    """The results files of ``retrieved``: one (a path or a loaded file) or any iterable of them."""
    if value is None:
        return []
    one = isinstance(value, (str, PathLikeType, Mapping)) or hasattr(value, "sets")
    refs = [value] if one or not isinstance(value, Iterable) else list(value)  # type: ignore[arg-type]
    for ref in refs:
        if not (isinstance(ref, (str, PathLikeType)) or hasattr(ref, "sets")):
            shown = repr(ref) if len(repr(ref)) <= 40 else repr(ref)[:37] + "..."
            raise InputError(f"received {type(ref).__name__} {shown}; expected a results file (a path; 'FILE>rerank:...' "
                             "reranks it), a loaded RetrievedFile, or a list of them.", source="run",
                             field="retrieved")
    return refs  # type: ignore[return-value]


def _executor_label(ex: ExecutorLike) -> str:
    """``local``, ``ray`` or the address (never credentials: Ray addresses carry none)."""
    if ex is None:
        return "local"
    if isinstance(ex, str):
        return ex
    address = getattr(ex, "address", None)
    return str(address) if address else str(getattr(ex, "name", type(ex).__name__))


def _label(x: Union[PathLike, CorpusData, QAData, RetrievedRef]) -> str:
    if isinstance(x, (str, Path)):
        return str(x)
    src = getattr(x, "source", None)
    return str(src) if src else f"<{type(x).__name__}>"


def _canonical_keys(data: Mapping[str, Any], source: str) -> Dict[str, Any]:
    out: Dict[str, Any] = {}
    for raw, value in data.items():
        norm = str(raw).strip().lower().replace("-", "_")
        key = _ALIAS_TO_KEY.get(norm)
        if key is None:
            raise InputError(f"unknown key {raw!r}; valid keys: {', '.join(CONFIG_KEYS)} (retriever and "
                             "chunker are accepted for retrievers and chunkers).", source=source,
                             field=str(raw))
        if key in out:
            raise InputError(f"the setting {key!r} is given twice (as {raw!r} too); give it once.",
                             source=source, field=str(raw))
        out[key] = value
    return out


def load_config_file(path: Union[str, Path]) -> Dict[str, Any]:
    """The settings in a YAML (``.yaml``/``.yml``) or TOML (``.toml``) file, keys canonical.

    Raises :class:`InputError` for a missing or unparsable file, a top level that is not a
    table, or an unknown key (naming it and listing the valid keys).
    """
    src = str(Path(path))
    data = read_settings_file(path, what="config file", suffixes=(".toml", ".yaml", ".yml"))
    if data is None:
        data = {}
    if not isinstance(data, Mapping):
        raise InputError(f"the file holds a {type(data).__name__}; expected a table of settings such as "
                         "'retrievers = [\"bm25\"]'.", source=src)
    return check_settings(_canonical_keys(data, src), src)


def merge_settings(file_settings: Mapping[str, Any], flags: Mapping[str, Any]) -> Dict[str, Any]:
    """File settings overridden by every flag that was given (``None`` = not given)."""
    out = dict(file_settings)
    for key, value in flags.items():
        if value is not None:
            out[key] = value
    return out
