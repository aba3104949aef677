"""The registry of judge metrics: the built-in ones (:mod:`ragexam.metrics.judge.builtin`, one module each, found
there on first use) and any registered by a plugin or a test, which the judge, the CLI's help, the stub endpoint,
``judge-agreement`` and ``judge-check`` ask.

Also here, computed from the built-in metrics for code written against earlier versions (they were hand-kept
tables): ``METRICS`` (the per-answer ones in report order), ``DEFAULT_METRICS`` (those ``ragexam score
--judge-model`` grades when none is named), ``RUBRIC_NAMES`` (every one), ``RUBRICS`` (``(metric, language) ->
Rubric``), ``CONTRACTS``, ``READERS``, ``BUILTIN`` and :data:`PROMPT_SET_VERSION`.
"""

from __future__ import annotations

import hashlib
import json
import threading
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from ragexam.metrics.judge.metric import JudgeMetric
from ragexam.metrics.judge.prompts import LANGUAGES, Rubric
from ragexam.metrics.judge.replies import Verdict

__all__ = ["builtin_metrics", "builtin_metric", "register", "unregister", "registered", "metric_help",
           "default_metrics", "label_example", "resolve_metrics", "get_rubric", "validate_reply",
           "prompt_set_version", "BUILTIN", "METRICS", "DEFAULT_METRICS", "RUBRIC_NAMES", "RUBRICS", "CONTRACTS",
           "READERS", "PROMPT_SET_VERSION"]

_REGISTRY: Dict[str, JudgeMetric] = {}
_BUILTIN: Dict[str, JudgeMetric] = {}
_LOADING = threading.RLock()


def _load_builtins() -> Dict[str, JudgeMetric]:
    """The built-in metrics (:mod:`ragexam.metrics.judge.builtin`, imported on first use) in report order,
    registered ahead of any metric registered before they were loaded."""
    if _BUILTIN:
        return _BUILTIN
    with _LOADING:
        if not _BUILTIN:
            from ragexam.metrics.judge import builtin

            found = {m.name: m for m in builtin.load()}
            earlier = dict(_REGISTRY)
            clash = sorted(set(found) & set(earlier))
            if clash:
                raise ValueError(f"a judge metric named {clash[0]!r} was registered before the built-in one")
            _REGISTRY.clear()
            _REGISTRY.update(found)
            _REGISTRY.update(earlier)
            _BUILTIN.update(found)
    return _BUILTIN


def builtin_metrics() -> Dict[str, JudgeMetric]:
    """The built-in metrics by name, in report order (each one module of :mod:`ragexam.metrics.judge.builtin`)."""
    return dict(_load_builtins())


def register(metric: JudgeMetric) -> JudgeMetric:
    """Make ``metric`` known by name to the judge, the CLI's help, the stub endpoint and the agreement
    commands; ``ValueError`` when another metric already has its name."""
    _load_builtins()
    old = _REGISTRY.get(metric.name)
    if old is not None and old is not metric:
        raise ValueError(f"a judge metric named {metric.name!r} is already registered ({old.source})")
    _REGISTRY[metric.name] = metric
    return metric


def unregister(name: str) -> None:
    """Forget the registered metric ``name`` (a built-in cannot be unregistered)."""
    if name in _load_builtins():
        raise ValueError(f"{name!r} is a built-in judge metric")
    _REGISTRY.pop(name, None)


def registered() -> Dict[str, JudgeMetric]:
    """Every registered metric by name (the built-ins first)."""
    _load_builtins()
    return dict(_REGISTRY)


def default_metrics(command: str) -> Tuple[str, ...]:
    """The built-in metrics ``command`` (``score``, ``check``) judges when no ``--metric`` is named, in report
    order."""
    return tuple(n for n, m in _load_builtins().items() if command in m.default_for)


def metric_help(*, per_answer: bool = True, default_for: Optional[str] = None,
                able: Optional[Callable[[JudgeMetric], bool]] = None) -> str:
    """The registered metrics' names for ``--metric`` help (``per_answer``: without the metrics that compare
    two answers; ``able``: only the metrics it accepts), with the defaults of the command ``default_for``."""
    names = [n for n, m in registered().items()
             if not (per_answer and not m.per_answer) and (able is None or able(m))]
    text = ", ".join(names) + ", or a --rubric file's name"
    if default_for is not None:
        text += f" (default: {', '.join(default_metrics(default_for))} and every --rubric)"
    return text


def label_example() -> str:
    """A ``human`` object as judge-agreement and ``score --human`` read it, e.g. ``{"<metric>": 4}``, from the
    first registered metric that gives an example of its labels."""
    m = next(m for m in registered().values() if m.human_example is not None)
    return json.dumps({m.name: m.human_example}, ensure_ascii=False)


def builtin_metric(name: str) -> JudgeMetric:
    """The registered metric ``name``; ``InputError`` listing the names otherwise."""
    m = registered().get(name)
    if m is None:
        from ragexam.errors import InputError

        raise InputError(f"unknown judge metric {name!r}; expected one of {metric_help()} (--rubric FILE)",
                         source="judge", field="metric")
    return m


def resolve_metrics(metrics: Sequence[Any], custom: Mapping[str, JudgeMetric] = {}) -> List[JudgeMetric]:
    """Names or :class:`JudgeMetric` objects as metric objects (names looked up in ``custom``, then the
    registry); a name given twice is kept once."""
    out: Dict[str, JudgeMetric] = {}
    for m in metrics:
        if isinstance(m, JudgeMetric):
            obj = m
        elif m in custom:
            obj = custom[m]
        else:
            obj = builtin_metric(m)
        if obj.name in out and out[obj.name] is not obj and out[obj.name].rubrics != obj.rubrics:
            from ragexam.errors import InputError

            raise InputError(f"two different metrics are named {obj.name!r} ({out[obj.name].source} and "
                             f"{obj.source}); give one of them another name", source="judge", field="metric")
        out.setdefault(obj.name, obj)
    return list(out.values())


def get_rubric(metric: str, language: str) -> Rubric:
    """The rubric of the built-in ``metric`` in ``language`` (``ko`` / ``en``)."""
    from ragexam.errors import one_of

    built_in = _load_builtins()
    one_of(metric, built_in, source="judge", field="metric", what="judge metric")
    one_of(language, LANGUAGES, source="judge", field="language", what="judge language")
    return built_in[metric].rubric(language)


def validate_reply(metric: str, obj: Dict[str, Any], *, n_contexts: int = 0,
                   units: Optional[Sequence[str]] = None) -> Verdict:
    """Check ``obj`` against the built-in ``metric``'s contract and read it; ``ReplyError`` /
    ``NotApplicable`` (:mod:`ragexam.metrics.judge.replies`).  ``units``: the claims / statements (default
    ``n_contexts`` unnamed units)."""
    units = list(units) if units is not None else [f"{i}" for i in range(1, n_contexts + 1)]
    return _load_builtins()[metric].validate(obj, units)


def prompt_set_version() -> str:
    """The version of the built-in prompt set as a whole: 12 hex digits of the SHA-256 of every built-in
    rubric's name and hash, so it changes whenever any rubric changes, is added or is removed."""
    names = sorted(f"{r.name}@{r.sha}" for m in _load_builtins().values() for r in m.rubrics.values())
    return hashlib.sha256("\n".join(names).encode("utf-8")).hexdigest()[:12]


_VIEWS: Dict[str, Callable[[], object]] = {
    "BUILTIN": builtin_metrics,
    "METRICS": lambda: tuple(n for n, m in _load_builtins().items() if m.per_answer),
    "DEFAULT_METRICS": lambda: default_metrics("score"),
    "RUBRIC_NAMES": lambda: tuple(_load_builtins()),
    "RUBRICS": lambda: {(n, lang): r for n, m in _load_builtins().items() for lang, r in m.rubrics.items()},
    "CONTRACTS": lambda: {n: m.contract for n, m in _load_builtins().items()},
    "READERS": lambda: {n: m.reader for n, m in _load_builtins().items()},
    "PROMPT_SET_VERSION": prompt_set_version,
}


def __getattr__(name: str) -> object:
    if name in _VIEWS:  # computed from the built-in metrics on each use
        return _VIEWS[name]()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
