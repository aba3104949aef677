"""Metric names: parsing strings such as ``ndcg@10`` or ``f0.5@3`` into :class:`Metric`.

Canonical names (the keys ragexam reports under) and the aliases accepted for them,
case-insensitive:

=============  =============================================  ===========================
canonical      also accepted                                  trec_eval measure
=============  =============================================  ===========================
``hit@K``      ``success@K``, ``success.K``, ``hit_rate@K``    ``success.K``
``mrr``        ``recip_rank``, ``rr``                         ``recip_rank``
``mrr@K``      ``rr@K``                                       (none: no cutoff in trec_eval)
``ndcg``                                                      ``ndcg``
``ndcg@K``     ``ndcg_cut.K``, ``ndcg_cut_K``                 ``ndcg_cut.K``
``p@K``        ``precision@K``, ``P.K``, ``P_K``              ``P.K``
``r@K``        ``recall@K``, ``recall.K``, ``recall_K``       ``recall.K``
``f1@K``       ``F1@K``                                       (none)
``fB@K``       e.g. ``f0.5@3``, ``f2@10``                     (none; ``set_F`` differs)
``rprec``      ``r-precision``, ``rprecision``, ``Rprec``     ``Rprec``
``map``        ``ap``                                         ``map``
``map@K``      ``map_cut.K``, ``map_cut_K``, ``ap@K``          ``map_cut.K``
=============  =============================================  ===========================

``K`` is a positive integer, ``B`` (beta) a positive number.  ``P.10`` and ``precision@10``
are the same metric, canonically ``p@10``; results are keyed by the name as it was asked
(``recall@10`` stays ``recall@10``), and carry the canonical name beside it
(:func:`parse_metric_names`).

Every metric with a cutoff can instead be cut at a *context budget*: ``@512t`` (tokens) or ``@2000c``
(characters), e.g. ``ndcg@512t``, ``p@2000c`` (definitions in :mod:`~ragexam.metrics.ranking.kernels`).
The names, aliases and cutoff rules come from the registry (:mod:`~ragexam.metrics.ranking.registry`):
a registered metric is parsed like the built-in ones.
"""

from __future__ import annotations

import re
from typing import Dict, Iterable, List, Optional, Sequence

from ragexam.errors import MetricNameError
from ragexam.metrics.ranking import kernels as _builtin_kernels  # noqa: F401  (registers the built-in metrics)
from ragexam.metrics.ranking.registry import Metric, alias_table, kernel_for, valid_forms

__all__ = ["Metric", "parse_metric", "parse_metrics", "parse_metric_names", "parse_cutoff", "canonical", "VALID_FORMS",
           "legend"]


def __getattr__(name: str):
    if name == "VALID_FORMS":  # the accepted forms of every registered metric (error messages, ``--help``)
        return valid_forms()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_FBETA_RE = re.compile(r"^f(?P<beta>[0-9]*\.?[0-9]+)$")
_TREC_STYLE_RE = re.compile(r"^(?P<base>.+?)[._](?P<k>[0-9]+)$")


def _error(name: object, why: str) -> MetricNameError:
    forms = ", ".join(valid_forms())
    return MetricNameError(
        f"invalid metric name {name!r}: {why}. Valid forms: {forms} (K a positive integer, or a context "
        "budget such as 512t or 2000c; trec_eval names such as P.10, ndcg_cut.10, recip_rank, Rprec, "
        "map_cut.10, success.5 work too).",
        source="metric")


def parse_metric(name: str | Metric) -> Metric:
    """Parse one metric name (see the module docstring for the accepted forms).

    Raises :class:`~ragexam.errors.MetricNameError` listing the valid forms when the name
    does not parse, when a cutoff is missing where one is required (``p``), given where
    none is allowed (``rprec@5``) or not a positive integer (``ndcg@0``, ``ndcg@x``).
    """
    if isinstance(name, Metric):
        return name
    if not isinstance(name, str):
        raise _error(name, f"expected a string, got {type(name).__name__}")
    text = name.strip()
    low = text.lower()
    k_txt: str | None
    if "@" in low:
        base, k_txt = low.rsplit("@", 1)
    else:
        m = _TREC_STYLE_RE.match(low)
        if m and not _FBETA_RE.match(low):
            base, k_txt = m.group("base"), m.group("k")
        else:
            base, k_txt = low, None
    if not base:
        raise _error(text, "it does not look like NAME or NAME@K")
    beta: float | None = None
    fm = _FBETA_RE.match(base)
    aliases = alias_table()
    if fm and "f" in aliases.values():
        kind = "f"
        beta = float(fm.group("beta"))
        if not beta > 0:
            raise _error(text, "the F-measure beta must be > 0")
    elif base in aliases and _named_alone(aliases[base], base):
        kind = aliases[base]
    else:
        raise _error(text, f"'{base}' is not a metric name")
    k, unit = _cutoff(text, k_txt)
    kernel = kernel_for(kind)
    if kernel.cutoff == "required" and k is None:
        raise _error(text, f"'{base}' needs a cutoff, e.g. {base}@10 or {base}@512t")
    if kernel.cutoff == "none" and k is not None:
        raise _error(text, f"{kind} takes no cutoff" + (" (R-precision cuts at R, the number of relevant items)"
                                                        if kind == "rprec" else ""))
    if unit is not None and not kernel.budget:
        raise _error(text, f"{kind} cannot be cut at a context budget")
    return Metric(kind=kind, k=k, beta=beta, unit=unit)


def _named_alone(kind: str, base: str) -> bool:
    """Whether ``base`` names a metric by itself: an alias, or the kind when one of its forms is the bare kind
    (``f`` is not: its forms carry a beta, ``f1@K``)."""
    if base != kind:
        return True
    return any(form.split("@")[0].split(" ")[0] == kind for form in kernel_for(kind).forms)


_CUTOFF_RE = re.compile(r"([0-9]+)([ct]?)")


def parse_cutoff(text: str) -> tuple[int, str | None] | None:
    """A cutoff as written after ``@``: ``"10"`` -> ``(10, None)`` (a number of items), ``"512t"`` ->
    ``(512, "t")`` and ``"2000c"`` -> ``(2000, "c")`` (a context budget in tokens or characters); ``None`` when it
    is not one (the number must be >= 1; the unit is lower case)."""
    m = _CUTOFF_RE.fullmatch(text)
    if not m or int(m.group(1)) < 1:
        return None
    return int(m.group(1)), m.group(2) or None


def _cutoff(text: str, k_txt: str | None) -> tuple[int | None, str | None]:
    """``(K, unit)`` from the text after ``@``: ``10`` -> (10, None), ``512t`` -> (512, "t")."""
    if k_txt is None:
        return None, None
    parsed = parse_cutoff(k_txt)
    if parsed is None:
        raise _error(text, f"the cutoff '{k_txt}' is not a positive integer (or a budget such as 512t, 2000c)")
    return parsed


def canonical(name: str, valid: Sequence[str]) -> Optional[str]:
    """The one of ``valid`` (the metric columns a run or score has) that ``name`` means: itself, the same name in
    other case, or its canonical form (``recall@5`` is ``r@5``); ``None`` when it means none of them."""
    if name in valid:
        return name
    lowered = {v.lower(): v for v in valid}
    if name.lower() in lowered:
        return lowered[name.lower()]
    try:
        canon = parse_metric(name).name
    except MetricNameError:
        return None
    return canon if canon in valid else None


def parse_metrics(names: Iterable[str | Metric] | str | Metric) -> list[Metric]:
    """Parse several names (a list, or one comma/space separated string); duplicates dropped, order kept."""
    if isinstance(names, Metric):
        names = [names]
    elif isinstance(names, str):
        names = [n for n in re.split(r"[,\s]+", names) if n]
    out: list[Metric] = []
    for n in names:
        metric = parse_metric(n)
        if metric not in out:
            out.append(metric)
    if not out:
        raise MetricNameError("no metric given; pass at least one, e.g. ndcg@10", source="metrics")
    return out


def parse_metric_names(names: Iterable[str | Metric] | str | Metric) -> list[tuple[str, Metric]]:
    """``[(name as asked, Metric), ...]`` for several names (a list, or one comma/space separated
    string), in the order given.

    The name as asked is the string stripped of surrounding spaces (a :class:`Metric` gives its
    canonical name).  A name given twice is kept once; two spellings of one metric
    (``recall@10`` and ``r@10``) are both kept, so each asked name gets its value.
    """
    if isinstance(names, Metric):
        names = [names]
    elif isinstance(names, str):
        names = [n for n in re.split(r"[,\s]+", names) if n]
    out: list[tuple[str, Metric]] = []
    seen: set[str] = set()
    for n in names:
        metric = parse_metric(n)
        asked = n.name if isinstance(n, Metric) else n.strip()
        if asked not in seen:
            seen.add(asked)
            out.append((asked, metric))
    if not out:
        raise MetricNameError("no metric given; pass at least one, e.g. ndcg@10", source="metrics")
    return out


def legend(columns: Iterable[str]) -> str:
    """One line explaining ``columns`` (metric names) for a table: ``"hit@1, hit@5: <hit's legend> · mrr:
    <mrr's legend> · ..."``, each kernel's columns then its registered legend, in column order."""
    groups: Dict[str, List[str]] = {}
    for c in columns:
        groups.setdefault(parse_metric(c).kind, []).append(c)
    parts = []
    for kind, names in groups.items():
        k = kernel_for(kind)
        if k is not None and k.legend:
            parts.append(f"{', '.join(names)}: {k.legend}")
    return " · ".join(parts)
