"""The ranking-metric registry: a throwaway metric built through the documented steps only (the example in
``ragexam.metrics.ranking.registry``'s docstring, run as written) is parsed, computed, listed in the help,
placed in the run table and explained in its legend; the built-in kernels own their definitions."""

from __future__ import annotations

import re
import textwrap

import numpy as np
import pytest

from ragexam.errors import MetricNameError
from ragexam.metrics.ranking import evaluate, legend, metric_help, parse_metric, registry, table_columns, valid_forms


def _documented_example() -> str:
    """The code block after ``::`` in the registry module's docstring."""
    doc = registry.__doc__
    block = doc.split("::\n", 1)[1]
    lines = []
    for line in block.splitlines()[1:]:
        if line and not line.startswith("    "):
            break
        lines.append(line)
    return textwrap.dedent("\n".join(lines))


@pytest.fixture
def hit2():
    code = _documented_example()
    assert "@ranking_metric(" in code and "def hit2" in code
    exec(compile(code, "registry-docstring-example", "exec"), {})
    yield registry.kernel_for("hit2")
    registry.unregister("hit2")


def test_throwaway_metric_through_the_documented_steps(hit2):
    assert hit2 is not None and hit2.definition.startswith("``hit2@K`` — 1 if at least two relevant items")
    assert parse_metric("hit2@3").name == "hit2@3" and parse_metric("two_hits@3").kind == "hit2"
    with pytest.raises(MetricNameError, match="needs a cutoff"):
        parse_metric("hit2")
    qrels = {"q1": {"a": 1, "b": 1}, "q2": {"a": 1, "c": 1}}
    run = {"q1": ["a", "x", "b"], "q2": ["a", "x", "y", "c"]}
    res = evaluate(qrels, run, ["hit2@3", "hit@1"])
    assert res.per_query == {"q1": {"hit2@3": 1.0, "hit@1": 1.0}, "q2": {"hit2@3": 0.0, "hit@1": 1.0}}
    assert "hit2@K" in valid_forms() and "hit2@K" in metric_help()
    assert table_columns([3, 5], 5, which="all")[-2:] == ["f2@5", "hit2@5"]  # ndcg@5 is a main column
    assert "hit2@3" in table_columns([3], 3, which="all") and "hit2@3" not in table_columns([3], 3)
    assert "hit2@3: share of questions with two relevant chunks in the top k" in legend(["hit2@3"])


def test_throwaway_metric_is_gone_after_unregister():
    with pytest.raises(MetricNameError, match="'hit2' is not a metric name"):
        parse_metric("hit2@3")


def test_registration_rules():
    with pytest.raises(ValueError, match="needs a docstring"):
        registry.ranking_metric("nodoc")(lambda g, m: np.zeros(g.nS))
    with pytest.raises(ValueError, match="the name 'recall' already belongs to 'r'"):
        @registry.ranking_metric("recall2", aliases=("recall",))
        def recall2(g, m):
            """clashes"""
    with pytest.raises(ValueError, match="cutoff must be one of"):
        registry.ranking_metric("bad", cutoff="sometimes")(test_registration_rules)


def test_a_kind_that_carries_a_parameter_is_not_a_name_alone():
    with pytest.raises(MetricNameError, match="'f' is not a metric name"):
        parse_metric("f@5")
    assert parse_metric("F1@5").name == "f1@5" and parse_metric("f2@3t").name == "f2@3t"


def test_builtin_kernels_own_their_knowledge():
    """Every built-in metric has a definition mentioning its trec_eval measure (where there is one), forms
    that parse, a legend, and the run table's columns come from the placements."""
    for k in registry.kernels():
        assert k.definition and k.legend and k.forms
        for measure in filter(None, re.split(r",\s*", k.trec)):
            assert measure.split(".")[0] in k.definition, (k.kind, measure)
        for form in k.forms:
            name = form.split(" ")[0].replace("@K", "@3").replace("fB", "f2")
            assert parse_metric(name).kind == k.kind
    assert table_columns([1, 3, 5, 10], 5) == ["hit@1", "hit@3", "hit@5", "hit@10", "mrr", "ndcg@10", "p@5",
                                                "r@5", "f1@5", "rprec", "map"]
    assert table_columns([3], 3, which="all") == ["hit@1", "hit@3", "mrr", "ndcg@3", "p@3", "r@3", "f1@3", "rprec",
                                                  "map", "p@1", "r@1", "f0.5@1", "f1@1", "f2@1", "ndcg@1",
                                                  "f0.5@3", "f2@3"]
    assert table_columns([5], 5, which="budget", budgets=["2000c", "512t"]) == [
        "hit@2000c", "mrr@2000c", "ndcg@2000c", "p@2000c", "r@2000c", "f1@2000c",
        "hit@512t", "mrr@512t", "ndcg@512t", "p@512t", "r@512t", "f1@512t"]
    text = metric_help()
    assert text.startswith("Metric name, repeatable: hit@K mrr mrr@K ndcg ndcg@K p@K r@K f1@K fB@K rprec map map@K")
    assert "512t (tokens), 2000c (characters)" in text
