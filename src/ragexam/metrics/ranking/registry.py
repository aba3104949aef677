"""The ranking-metric registry: one registered kernel per metric, owning everything about it.

A :class:`RankingKernel` holds a metric's name and aliases, which cutoffs it takes, its definition
(the kernel function's docstring), its help text, its one-line legend, its trec_eval name and where
the run table places it.  Everything else asks the registry:

* :mod:`~ragexam.metrics.ranking.names` parses names (``ndcg@10``, ``P.5``, ``hit@512t``) with the
  kernels' aliases and cutoff rules;
* :mod:`~ragexam.metrics.ranking.engine` computes a metric by calling its kernel;
* the CLI's ``--metric`` help is :func:`metric_help`; the run table's columns are :func:`table_columns`
  and its legend :func:`~ragexam.metrics.ranking.names.legend`.

Adding a ranking metric (docs/architecture.md, "where a new piece goes") is one decorated function::

    from ragexam.metrics.ranking.registry import Placement, ranking_metric

    @ranking_metric("hit2", aliases=("two_hits",), cutoff="required", forms=("hit2@K",),
                    legend="share of questions with two relevant chunks in the top k",
                    placement=Placement(sweep=("hit2@{k}",), sweep_rank=60))
    def hit2(g, m):
        \"\"\"``hit2@K`` — 1 if at least two relevant items have rank <= K, else 0.\"\"\"
        return (g.count(m) >= 2).astype(float)

The kernel receives the prepared judgments of one evaluation (:class:`~ragexam.metrics.ranking.graded.Graded`)
and the parsed :class:`Metric` (made by :func:`~ragexam.metrics.ranking.names.parse_metric`), and returns one float per scored query.
Registering in a module that is imported before the metric is used is enough (the built-in kernels are in
:mod:`~ragexam.metrics.ranking.kernels`, which :mod:`~ragexam.metrics.ranking.names` imports, so importing
anything from ``ragexam.metrics.ranking`` registers them); :func:`unregister` removes one (tests).
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence, Tuple

__all__ = ["Metric", "RankingKernel", "Placement", "ranking_metric", "register", "unregister", "kernels", "kernel_for",
           "alias_table", "valid_forms", "metric_help", "table_columns", "CUTOFFS"]

#: what a kernel accepts after ``@``: a chunk-count cutoff ``K`` is required, optional, or not allowed
CUTOFFS = ("required", "optional", "none")


@dataclass(frozen=True)
class Metric:
    """One ranking metric with its settings.

    ``kind`` is a registered kernel (built in: ``hit, mrr, ndcg, p, r, f, rprec, map``); ``k`` the cutoff
    (``None`` for the whole ranking); ``unit`` ``None`` when ``k`` counts items, ``"c"`` or ``"t"`` when it
    is a context budget in characters or tokens; ``beta`` the F-measure weight (only for ``kind == "f"``).
    """

    kind: str
    k: int | None = None
    beta: float | None = None
    unit: str | None = None

    @property
    def name(self) -> str:
        """The canonical name, e.g. ``ndcg@10``, ``f0.5@3``, ``mrr``, ``p@512t``."""
        base = "f" + _format_beta(self.beta) if self.kind == "f" else self.kind
        return base if self.k is None else f"{base}@{self.k}{self.unit or ''}"

    def __str__(self) -> str:
        return self.name


def _format_beta(beta: float | None) -> str:
    b = float(beta or 0.0)
    return str(int(b)) if b.is_integer() else repr(b)


@dataclass(frozen=True)
class Placement:
    """Where the run table (``analysis/run_tables``) puts a metric.

    ``main``: templates of its columns in the headline table, ``sweep``: templates of the columns computed
    for every cutoff (stored in summary.json, the P/R/F sweep), ``budget``: templates of its columns at each
    context budget (the table that compares chunkers at equal context).  Templates are formatted with ``k``
    (each cutoff), ``each`` (hit@1 and each cutoff), ``max`` (the largest cutoff), ``context`` (the context
    cutoff) and ``budget`` (a budget such as ``2000c``).  ``main_rank``/``sweep_rank`` order the columns
    across kernels (lower first; budget columns follow ``main_rank``).
    """

    main: Tuple[str, ...] = ()
    main_rank: int = 100
    sweep: Tuple[str, ...] = ()
    sweep_rank: int = 100
    budget: Tuple[str, ...] = ()


@dataclass(frozen=True)
class RankingKernel:
    """One ranking metric: ``kind`` (its canonical base name), ``aliases`` (other accepted base names,
    case-insensitive), ``cutoff`` (one of :data:`CUTOFFS`), ``budget`` (whether ``@512t``/``@2000c``
    context budgets apply), ``forms`` (its help text: the accepted forms, for ``--help`` and errors),
    ``legend`` (one line for the run table),
    ``trec`` (the trec_eval measure, ``""`` if none), ``placement`` and ``fn`` (the per-query values;
    its docstring is the definition)."""

    kind: str
    fn: Callable = field(repr=False)
    aliases: Tuple[str, ...] = ()
    cutoff: str = "optional"
    budget: bool = True
    forms: Tuple[str, ...] = ()
    legend: str = ""
    trec: str = ""
    placement: Placement = Placement()

    @property
    def definition(self) -> str:
        """The kernel's docstring: the metric's definition, edge cases included."""
        return inspect.cleandoc(self.fn.__doc__ or "")


_KERNELS: Dict[str, RankingKernel] = {}


def register(k: RankingKernel) -> RankingKernel:
    """Add ``k`` to the registry.  A kind or alias already taken by another kernel is an error."""
    if k.cutoff not in CUTOFFS:
        raise ValueError(f"kernel {k.kind!r}: cutoff must be one of {CUTOFFS}, got {k.cutoff!r}")
    if not (k.fn.__doc__ or "").strip():
        raise ValueError(f"kernel {k.kind!r}: its function needs a docstring (the metric's definition)")
    taken = alias_table()
    for name in (k.kind, *k.aliases):
        owner = taken.get(name.lower())
        if owner is not None and owner != k.kind:
            raise ValueError(f"kernel {k.kind!r}: the name {name!r} already belongs to {owner!r}")
    _KERNELS[k.kind] = k
    return k


def ranking_metric(kind: str, *, aliases: Sequence[str] = (), cutoff: str = "optional", budget: bool = True,
                   forms: Sequence[str] = (), legend: str = "", trec: str = "",
                   placement: Placement = Placement()) -> Callable[[Callable], Callable]:
    """Decorator: register the decorated function as the kernel of ``kind`` (see :class:`RankingKernel`).
    ``forms`` defaults to ``kind`` and/or ``kind@K`` as ``cutoff`` allows."""
    if not forms:
        forms = {"required": (f"{kind}@K",), "optional": (kind, f"{kind}@K"), "none": (kind,)}.get(cutoff, ())

    def deco(fn: Callable) -> Callable:
        register(RankingKernel(kind, fn, tuple(aliases), cutoff, budget, tuple(forms), legend, trec, placement))
        return fn
    return deco


def unregister(kind: str) -> None:
    """Remove the kernel of ``kind`` (for tests that build a throwaway metric)."""
    _KERNELS.pop(kind, None)


def kernels() -> List[RankingKernel]:
    """Every registered kernel, in registration order."""
    return list(_KERNELS.values())


def kernel_for(kind: str) -> Optional[RankingKernel]:
    """The kernel of the canonical ``kind``, or ``None``."""
    return _KERNELS.get(kind)


def alias_table() -> Dict[str, str]:
    """``{accepted base name (lower case): canonical kind}``."""
    out: Dict[str, str] = {}
    for k in _KERNELS.values():
        for name in (k.kind, *k.aliases):
            out[name.lower()] = k.kind
    return out


def valid_forms() -> Tuple[str, ...]:
    """The accepted forms of every metric, e.g. ``("hit@K", "mrr", "mrr@K", ...)`` (error messages)."""
    return tuple(form for k in kernels() for form in k.forms)


def metric_help() -> str:
    """The ``--metric`` help text of the CLI: every form, the budget forms and the trec_eval names."""
    forms = " ".join(f.split(" (")[0] for f in valid_forms())
    budget = [k.kind for k in kernels() if k.budget and k.cutoff != "none"]
    return (f"Metric name, repeatable: {forms} (trec_eval names work too). K is a number of retrieved items, or "
            f"a context budget: 512t (tokens), 2000c (characters) for {', '.join(budget)}. Results are keyed "
            "by the names as given. Default: a standard set.")


def table_columns(ks: Sequence[int], context: int, *, which: str = "main", budgets: Sequence[str] = ()) -> List[str]:
    """The run table's columns for cutoffs ``ks`` and context cutoff ``context``: ``which="main"`` the
    headline columns, ``"all"`` the headline columns then every kernel's sweep columns for hit@1 and each
    cutoff, then for each of ``budgets`` its budget columns and the sweep columns cut at it (the metrics stored
    in summary.json), ``"budget"`` every kernel's budget columns for each of ``budgets`` (e.g.
    ``["2000c", "512t"]``), budget by budget."""
    if which not in ("main", "all", "budget"):
        raise ValueError(f"which must be 'main', 'all' or 'budget', got {which!r}")
    ordered = sorted(kernels(), key=lambda x: x.placement.main_rank)
    if which == "budget":
        return [tpl.format(budget=b) for b in budgets for k in ordered for tpl in k.placement.budget]
    ks = sorted(set(ks))
    each = sorted({1, *ks})
    main: List[str] = []
    for k in sorted(kernels(), key=lambda x: x.placement.main_rank):
        for tpl in k.placement.main:
            names = [tpl.format(k=c, each=c, max=max(ks), context=context) for c in each] if "{each}" in tpl \
                else [tpl.format(max=max(ks), context=context)]
            main.extend(n for n in names if n not in main)
    if which == "main":
        return main
    out = list(main)
    swept = sorted(kernels(), key=lambda x: x.placement.sweep_rank)
    for c in each:
        for k in swept:
            for tpl in k.placement.sweep:
                name = tpl.format(k=c)
                if name not in out:
                    out.append(name)
    for b in budgets:
        names = [tpl.format(budget=b) for k in ordered for tpl in k.placement.budget]
        names += [tpl.format(k=b) for k in swept for tpl in k.placement.sweep if k.budget]
        out.extend(n for n in dict.fromkeys(names) if n not in out)
    return out
