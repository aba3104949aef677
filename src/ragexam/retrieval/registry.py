"""The retriever, reranker and embedder families: one decorated builder each, owning its spec forms, option schema,
help and how it is built.

A family is declared in the module of the class it builds, with one decorator::

    from ragexam.retrieval.registry import Build, Form, integer, number, retriever_family

    @retriever_family("bm25", arg="choice", choices=("kiwi", "whitespace"), arg_label="BM25 tokenizer",
                      forms=(Form("bm25", "BM25 over Korean morphemes (kiwi); same as bm25:kiwi"),
                             Form("bm25:whitespace", "BM25 over lowercased whitespace tokens")),
                      options={"k1": number("1.5"), "num_threads": integer()}, executor=True, order=10)
    def _from_spec(b: Build) -> "BM25Retriever":
        return BM25Retriever(b.arg, **b.options)

Everything else asks the registry: :mod:`ragexam.retrieval.spec` parses a spec's head against the families (its
name, then the argument the family's ``arg`` says: nothing, one of ``choices``, a model, a URL, an embedder or the
members of a hybrid), converts its options with the family's schema (:class:`Option`: a converter and a note)
and calls the builder; the list of valid forms every parse error prints (:func:`valid_forms`), the ``-r`` help
(:func:`retriever_help`) and the options reference (:func:`options_help`) are rendered from the declarations.
A ``dense`` form is ``dense:`` plus an embedder family's form, and so is a ``rerank:dense`` form: a new embedder
gives both.

The families of ragexam's own modules are found by reading the modules of :mod:`ragexam.retrieval` (and its
subpackages) for the decorators (:func:`families`, on first use), so a new retriever is its module and one
decorator; a family declared elsewhere (a plugin, a test) is known once its module is imported.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from importlib import import_module
from pathlib import Path
from typing import Callable, Dict, List, Mapping, Optional, Sequence, Tuple, TypeVar

__all__ = ["Option", "Form", "Family", "Build", "retriever_family", "reranker_family", "embedder_family",
           "families", "family", "unregister", "valid_forms", "retriever_help", "options_help", "ARGS", "KINDS",
           "text", "number", "integer", "flag", "numbers", "path", "COMMON", "EXECUTOR"]

#: what the text after ``<name>:`` is: nothing, one of ``choices``, a model (everything up to ``?``, colons
#: included), a URL, an embedder form (``dense``, ``rerank:dense``), or the members of a hybrid spec
ARGS = ("none", "choice", "model", "url", "embedder", "members")
KINDS = ("retriever", "reranker", "embedder")
Builder = TypeVar("Builder", bound=Callable[..., object])


# -- options ------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Option:
    """One option of a family: ``convert`` turns a spec's text (or a Python value) into the value the builder
    gets, ``ValueError`` saying what was expected; ``note`` is its default or its choices, for the help."""

    convert: Callable[[object], object]
    note: str = ""


def _bool(v: object) -> bool:
    if isinstance(v, bool):
        return v
    s = str(v).strip().lower()
    if s in ("true", "1", "yes", "on"):
        return True
    if s in ("false", "0", "no", "off"):
        return False
    raise ValueError("expected true or false")


def _int(v: object) -> int:
    if isinstance(v, bool):
        raise ValueError("expected an integer")
    if isinstance(v, int):
        return v
    if isinstance(v, float):
        if not v.is_integer():
            raise ValueError("expected an integer")
        return int(v)
    return int(str(v).strip())


def _float(v: object) -> float:
    if isinstance(v, bool):
        raise ValueError("expected a number")
    return float(v)  # type: ignore[arg-type]


def _str(v: object) -> str:
    if not isinstance(v, (str, bytes)) and hasattr(v, "__fspath__"):
        return str(v)
    if not isinstance(v, str):
        raise ValueError("expected a string")
    return v


def _floats(v: object) -> List[float]:
    if isinstance(v, str):
        return [float(x) for x in v.split(",") if x.strip()]
    return [_float(x) for x in v]  # type: ignore[union-attr]


def _path(v: object) -> object:
    return v if hasattr(v, "__fspath__") else _str(v)


def _option_kind(convert: Callable[[object], object], what: str) -> Callable[..., Option]:
    def make(note: str = "") -> Option:
        return Option(convert, note)
    make.__doc__ = f"{what} (``note``: its default or choices, for the help)."
    return make


text = _option_kind(_str, "A string option")
number = _option_kind(_float, "A number option")
integer = _option_kind(_int, "An integer option (``2.0`` is 2; ``2.5`` is an error)")
flag = _option_kind(_bool, "A true/false option: ``true/false``, ``1/0``, ``yes/no``, ``on/off``")
numbers = _option_kind(_floats, "A comma-separated list of numbers")
path = _option_kind(_path, "A path (a string, or an object with ``__fspath__``)")


#: the options every retriever and reranker takes (the token/embedding and result caches, progress bars)
COMMON: Dict[str, Option] = {"cache": flag("true"), "cache_dir": path(), "progress": flag("true")}


# -- families -----------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Form:
    """One way a family is written (``bm25:whitespace``, ``dense:st:MODEL_OR_PATH``, ``rerank:llm:MODEL``) and
    what it is, one line: the list of valid forms and the ``-r`` help are made of them."""

    spec: str
    help: str


@dataclass
class Build:
    """What a family's builder receives: ``arg`` (the choice, model or URL; ``None`` for a family without one),
    ``options`` (converted; the common ones too), the run's ``headers`` (``http:`` forms) and ``llm`` settings
    (``rerank:llm``); for an ``embedder`` family the built ``embedder``, its family and ``batch``
    (``{"batch_size": n}`` when given); for the hybrid family its built ``members``."""

    arg: Optional[str]
    options: Dict[str, object]
    spec: str = ""
    headers: Optional[Mapping[str, str]] = None
    llm: object = None
    embedder: object = None
    embedder_family: Optional["Family"] = None
    batch: Dict[str, object] = field(default_factory=dict)
    members: List[object] = field(default_factory=list)


@dataclass(frozen=True)
class Family:
    """One family (see the module docstring): ``kind`` (``retriever``, ``reranker``, ``embedder``), ``name`` (the
    head of its spec), ``build`` (the decorated builder), ``arg`` (one of :data:`ARGS`) with ``choices`` /
    ``default`` / ``placeholder`` (``MODEL``, ``URL``) / ``example`` (a URL for messages) / ``arg_label`` (what the
    argument is, for messages), ``forms``, ``options`` (its schema), ``executor`` (it takes ``executor``:
    :mod:`ragexam.exec`), ``member`` (a retriever that may be a member of a hybrid spec), ``self_batching`` (an
    embedder that batches its own requests) and ``order`` (its place in the help)."""

    kind: str
    name: str
    build: Callable[[Build], object] = field(repr=False)
    arg: str = "none"
    choices: Tuple[str, ...] = ()
    default: str = ""
    placeholder: str = ""
    example: str = ""
    arg_label: str = ""
    forms: Tuple[Form, ...] = ()
    options: Mapping[str, Option] = field(default_factory=dict)
    executor: bool = False
    member: bool = True
    self_batching: bool = False
    order: int = 100

    @property
    def synopsis(self) -> str:
        """The family in one form, for lists in messages: ``rerank:llm:MODEL``, ``rerank:dense[:EMBEDDER]``."""
        prefix = "rerank:" if self.kind == "reranker" else ""
        tail = {"none": "", "choice": f"[:{'|'.join(self.choices)}]", "model": f":{self.placeholder or 'MODEL'}",
                "url": f":{self.placeholder or 'URL'}", "embedder": "[:EMBEDDER]", "members": ":A+B[+C...]"}[self.arg]
        return prefix + self.name + tail

    def schema(self, embedder: Optional["Family"] = None) -> Dict[str, Option]:
        """Its options (with ``embedder``'s for an ``embedder`` family; ``executor`` when it takes one)."""
        out: Dict[str, Option] = dict(embedder.options) if embedder is not None else {}
        out.update(self.options)
        if self.executor:
            out["executor"] = EXECUTOR
        return out


def _executor(v: object) -> object:
    if isinstance(v, str):
        from ragexam.exec import get_executor

        return get_executor(v)
    from ragexam.exec.base import Executor

    if not isinstance(v, Executor):
        raise ValueError("expected an executor (ragexam.exec) or local / ray / ray://HOST:PORT")
    return v


#: where batch work runs (:mod:`ragexam.exec`), for the families that take it: an executor object, or its name
EXECUTOR = Option(_executor, "local | ray | ray://HOST:PORT; only as a keyword")
_FAMILIES: Dict[Tuple[str, str], Family] = {}
_LOADED: List[bool] = []
_LOCK = threading.RLock()
_DECORATOR = re.compile(r"^@(?:retriever|reranker|embedder)_family\(", re.M)


def _register(f: Family) -> Family:
    if f.kind not in KINDS or f.arg not in ARGS:
        raise ValueError(f"family {f.name!r}: kind must be one of {KINDS} and arg one of {ARGS}")
    old = _FAMILIES.get((f.kind, f.name))
    if old is not None and old.build is not f.build:
        raise ValueError(f"a {f.kind} family named {f.name!r} is already registered ({old.build.__module__})")
    _FAMILIES[(f.kind, f.name)] = f
    return f


def _decorator(kind: str, name: str, settings: Dict[str, object]) -> Callable[[Builder], Builder]:
    options = settings.pop("options", None) or {}
    forms = tuple(settings.pop("forms", None) or ())

    if kind != "embedder" and settings.get("arg") != "members":  # a hybrid's members take them, not the fusion
        options = {**options, **COMMON}

    def deco(fn: Builder) -> Builder:
        _register(Family(kind, name, fn, forms=forms, options=options, **settings))  # type: ignore[arg-type]
        return fn
    return deco


def retriever_family(name: str, **settings: object) -> Callable[[Builder], Builder]:
    """Decorator: register the decorated ``builder(Build) -> Retriever`` as the retriever family ``name``; the
    settings are :class:`Family`'s fields (``arg``, ``choices``, ``forms``, ``options``, ...); the :data:`COMMON`
    options are added (but to a hybrid's fusion: its members take them)."""
    return _decorator("retriever", name, dict(settings))


def reranker_family(name: str, **settings: object) -> Callable[[Builder], Builder]:
    """Decorator: register the decorated ``builder(Build) -> Reranker`` as the reranker family ``rerank:name``."""
    return _decorator("reranker", name, dict(settings))


def embedder_family(name: str, **settings: object) -> Callable[[Builder], Builder]:
    """Decorator: register the decorated ``builder(Build) -> Embedder`` as the embedder family ``name``, written
    ``dense:name`` and ``rerank:dense:name`` (its forms are written without ``dense:``).  Its options are the
    embedder's own (the common ones come with the retriever or reranker it serves)."""
    return _decorator("embedder", name, dict(settings))


def _load() -> None:
    """Import the modules of :mod:`ragexam.retrieval` that declare a family (once)."""
    if _LOADED:
        return
    with _LOCK:
        if _LOADED:
            return
        root = Path(__file__).resolve().parent
        for path in sorted(root.rglob("*.py")):
            if path.name != "registry.py" and _DECORATOR.search(path.read_text(encoding="utf-8")):
                parts = path.relative_to(root).with_suffix("").parts
                import_module(".".join(("ragexam.retrieval", *[p for p in parts if p != "__init__"])))
        _LOADED.append(True)


def families(kind: str) -> List[Family]:
    """Every registered family of ``kind``, in help order."""
    _load()
    return sorted((f for (k, _), f in _FAMILIES.items() if k == kind), key=lambda f: (f.order, f.name))


def family(kind: str, name: str) -> Optional[Family]:
    """The family ``name`` of ``kind``, or ``None``."""
    _load()
    return _FAMILIES.get((kind, name))


def unregister(kind: str, name: str) -> None:
    """Forget a family (for tests that declare a throwaway one)."""
    _FAMILIES.pop((kind, name), None)


# -- help -----------------------------------------------------------------------------------------------------------
def _embedder_forms(prefix: str) -> List[Form]:
    out = []
    for e in families("embedder"):
        for f in e.forms:
            if f.spec == e.name and e.name == _default_embedder():
                out.append(Form(prefix, f"{f.help}; same as {prefix}:{e.name}"))
            else:
                out.append(Form(f"{prefix}:{f.spec}", f.help))
    return out


def _default_embedder() -> str:
    dense = [f.default for f in families("retriever") if f.arg == "embedder"]
    return dense[0] if dense else ""


def _forms(kind: str) -> List[Form]:
    out: List[Form] = []
    for f in families(kind):
        prefix = ("rerank:" if kind == "reranker" else "") + f.name
        if f.arg == "embedder" and kind == "retriever":
            out += _embedder_forms(prefix)
        else:
            out += list(f.forms)
    return out


_EXAMPLES = """options follow '?' as key=value pairs joined by '&', for example
  bm25?variant=bm25l&k1=1.2
  hybrid:bm25+dense?method=wsum&weights=0.3,0.7
  hybrid:(bm25?k1=1.2)+dense      (parentheses give a member its own options)"""


def valid_forms() -> str:
    """The list of valid specs every parse error prints: each retriever form, each rerank stage, and how options
    are written."""
    rows = [(f.spec, f.help) for f in _forms("retriever")] + [("A>" + f.spec, f.help) for f in _forms("reranker")]
    width = max(len(spec) for spec, _ in rows) + 2
    lines = ["valid retriever specs:"] + [f"  {spec.ljust(width)}{help_}" for spec, help_ in rows]
    return "\n".join(lines + [_EXAMPLES])


def retriever_help() -> str:
    """The ``-r`` / ``--retriever`` help of the CLI: every retriever form and rerank stage."""
    retrievers = ", ".join(f.spec for f in _forms("retriever"))
    stages = ", ".join(f"'>{f.spec}'" for f in _forms("reranker"))
    return (f"Retriever spec, repeatable or comma-separated; the first is the baseline. {retrievers}, and any of "
            f"them followed by a rerank stage: {stages} (?top=N). Options follow '?': 'bm25?k1=1.2'. Default: bm25 "
            "and dense (none with --retrieved).")


def options_help() -> str:
    """Every form and its options with their defaults or choices (a reference; each ``has no option`` error lists
    the options of its form the same way)."""
    rows = []
    for kind in ("retriever", "reranker"):
        for f in families(kind):
            if f.arg == "embedder":
                for e in families("embedder"):
                    rows.append((f.synopsis.split("[")[0] + ":" + e.name, describe(f.schema(e))))
            else:
                rows.append((f.synopsis, describe(f.schema())))
    width = max(len(r[0]) for r in rows) + 2
    return "\n".join(f"{form.ljust(width)}{opts}" for form, opts in rows)


def describe(schema: Mapping[str, Option]) -> str:
    """``key (note), key, ...`` of a schema, in alphabetical order."""
    return ", ".join(f"{k} ({o.note})" if o.note else k for k, o in sorted(schema.items()))
