"""The Python API of the question generator: :func:`generate` and :func:`plan` (the dry run).

::

    import ragexam

    res = ragexam.generate("docs.jsonl", n=200, model="gpt-4o-mini", out="qa.jsonl")
    res.card["mix"], res.card["rejections"], res.shortfall
    ragexam.generate_plan("docs.jsonl", n=200, model="gpt-4o-mini").to_dict()   # nothing is sent

Keyword arguments are the fields of :class:`~ragexam.questions.engine.GenerateConfig` (``mix``,
``kinds``, ``per_call``, ``language``, ``prompt``, ``seed``, ``ambiguous``, ``retriever``, ``max_calls``,
``budget``, ...) and of :class:`~ragexam.llm.settings.LLMSettings` (``base_url``, ``api_key``,
``temperature``, ``max_tokens``, ``concurrency``, ``timeout``, ``max_retries``, ``cache``, ``cache_dir``,
``price``, ``response_format``, ...), or pass ``settings=`` / ``config=`` objects.  The generator's
temperature defaults to 0.7 (varied questions; the cache makes reruns reproducible), 0 with ``cite="focus"``
(:data:`~ragexam.questions.engine.FOCUS_TEMPERATURE`); the LLM checks always run at temperature 0.
"""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path
from typing import Any, Callable, Dict, Optional, Sequence, Tuple, Union

from ragexam.errors import InputError

from ragexam.questions.engine import DEFAULT_TEMPERATURE  # noqa: E402 (re-exported)

__all__ = ["generate", "plan", "parse_kinds", "DEFAULT_TEMPERATURE"]


def parse_kinds(specs: Optional[Sequence[str]]) -> Dict[str, str]:
    """``["NAME=INSTRUCTION", ...]`` (the ``--kind`` option) as ``{name: instruction}``."""
    out: Dict[str, str] = {}
    for spec in specs or ():
        name, sep, text = str(spec).partition("=")
        if not sep:
            raise InputError(f"received {spec!r}; expected NAME=INSTRUCTION, e.g. procedure='asks how to carry out "
                             "a multi-step procedure'", source="--kind", field="kind")
        if name.strip() in out:
            raise InputError(f"kind {name.strip()!r} is given twice", source="--kind", field="kind")
        out[name.strip()] = text
    return out


def _split(model: Optional[str], options: Dict[str, Any], settings: Any, config: Any) -> Tuple[Any, Any]:
    from ragexam.questions.engine import GenerateConfig
    from ragexam.llm.settings import LLMSettings

    cfg_names = {f.name for f in fields(GenerateConfig)}
    llm_names = {f.name for f in fields(LLMSettings)} - {"model", "seed"}
    cfg_opts = {k: v for k, v in options.items() if k in cfg_names}
    llm_opts = {k: v for k, v in options.items() if k in llm_names}
    unknown = sorted(set(options) - cfg_names - llm_names)
    if unknown:
        raise InputError(f"unknown option(s) {', '.join(unknown)}; expected fields of GenerateConfig "
                         f"({', '.join(sorted(cfg_names))}) or LLMSettings ({', '.join(sorted(llm_names))})",
                         source="generate", field=unknown[0])
    if config is None:
        config = GenerateConfig(**cfg_opts)
    elif cfg_opts:
        from dataclasses import replace

        config = replace(config, **cfg_opts)
    if settings is None:
        if not model:
            raise InputError("needs a model (e.g. gpt-4o-mini, or a local model name with base_url)",
                             source="--model", field="model")
        from ragexam.questions.engine import default_temperature

        llm_opts.setdefault("temperature", default_temperature(config.cite))
        settings = LLMSettings(model, **llm_opts)
    else:
        if llm_opts:
            settings = settings.replace(**llm_opts)
        if model and model != settings.model:
            settings = settings.replace(model=model)
    return config, settings


def _generator(corpus: Any, model: Optional[str], n: Optional[int], options: Dict[str, Any], settings: Any,
               config: Any, judge_model: Optional[str], progress: Any):
    from ragexam.questions.engine import Generator

    if n is not None:
        options = dict(options, n=n)
    elif config is None:
        raise InputError("needs n, the number of questions (e.g. n=200)", source="-n", field="n")
    config, settings = _split(model, options, settings, config)
    return Generator(corpus, config, settings, judge_model=judge_model, progress=progress)


def generate(corpus: Any, n: Optional[int] = None, *, model: Optional[str] = None,
             out: Union[str, Path, None] = None, judge_model: Optional[str] = None, settings: Any = None,
             config: Any = None, progress: Optional[Callable[[str, int, int], None]] = None, **options: Any):
    """Generate a verified question set from ``corpus`` (a file, a bundled name or a
    :class:`~ragexam.data.schema.Corpus`); with ``out``, write the set and its side files
    (:mod:`ragexam.questions.output`), checked before any call.

    :returns: :class:`~ragexam.questions.engine.GenerateResult`.
    :raises InputError: bad settings, an unwritable ``out``, an unreadable corpus or prompt file.
    :raises ragexam.llm.transport.EndpointError: the endpoint refused the configuration (401/403/404);
        every call finished before that is cached.
    """
    if out is not None:
        from ragexam.questions.output import check_outputs
        from ragexam.storage.paths import In

        prompt = options.get("prompt") if config is None else getattr(config, "prompt", None)
        check_outputs(out, [In(getattr(corpus, "source", corpus), "--corpus"), In(prompt, "--prompt")])
    gen = _generator(corpus, model, n, options, settings, config, judge_model, progress)
    result = gen.run()
    if out is not None:
        result.save(out)
    return result


def plan(corpus: Any, n: Optional[int] = None, *, model: Optional[str] = None, judge_model: Optional[str] = None,
         settings: Any = None, config: Any = None, **options: Any):
    """The dry run of :func:`generate` (same arguments): what the first uncached pass would call, with
    estimated tokens and cost.  Nothing is sent.  :returns: :class:`~ragexam.questions.engine.GeneratePlan`."""
    options.pop("out", None)
    gen = _generator(corpus, model, n, options, settings, config, judge_model, None)
    return gen.plan()
