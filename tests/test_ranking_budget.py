"""Ranking metrics cut at a context budget (``p@512t``, ``ndcg@2000c``) equal a brute-force reference.

The reference reads every ranked list character by character (each item expanded into ``size`` cells),
takes the first ``B`` cells and computes each metric from its definition in
:mod:`ragexam.metrics.ranking.kernels` with plain Python loops; the engine computes shares with numpy.
"""

from __future__ import annotations

import math
import random
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragexam.errors import InputError, MetricNameError
from ragexam.metrics.ranking import ContextSizes, evaluate, parse_metric

KINDS = ("hit", "mrr", "p", "r", "f1", "f0.5", "f2", "map", "ndcg")


def reference(grades, sizes, judged, budget, level=1):
    """Every budget metric of one ranked list: ``grades[i]``/``sizes[i]`` of the item at rank i + 1,
    ``judged`` every grade in the qrels (retrieved or not)."""
    cells = [i for i, z in enumerate(sizes) for _ in range(z)]
    read = Counter(cells[:budget])
    before = 0
    share = []
    for i, z in enumerate(sizes):
        share.append(read[i] / z if z else (1.0 if before < budget else 0.0))
        before += z
    R = sum(1 for g in judged if g >= level)
    rel = [i for i, g in enumerate(grades) if g >= level]
    out = {"hit": share[rel[0]] if rel else 0.0,
           "mrr": share[rel[0]] / (rel[0] + 1) if rel else 0.0,
           "p": sum(read[i] for i in rel) / budget,
           "r": sum(share[i] for i in rel) / R if R else 0.0}
    for beta, name in ((1.0, "f1"), (0.5, "f0.5"), (2.0, "f2")):
        P, Rc = out["p"], out["r"]
        den = beta * beta * P + Rc
        out[name] = (1 + beta * beta) * P * Rc / den if den > 0 else 0.0
    ap = 0.0
    for n_before, i in enumerate(rel):
        ap += share[i] * (n_before + 1) / (i + 1)
    out["map"] = ap / R if R else 0.0
    dcg = sum(share[i] * g / math.log2(i + 2) for i, g in enumerate(grades) if g > 0)
    depth = sum(share)
    ideal = sorted((g for g in judged if g > 0), reverse=True)
    idcg = sum(min(1.0, max(0.0, depth - j)) * g / math.log2(j + 2) for j, g in enumerate(ideal))
    out["ndcg"] = dcg / idcg if idcg > 0 else 0.0
    return out


def random_lists(seed, n):
    """``n`` random ranked lists: grades -2..3 (many 0), sizes 0..80 (some 0), unretrieved relevant units,
    budgets anywhere from 1 to past the end, often exactly on an item boundary."""
    rng = random.Random(seed)
    cases = []
    for q in range(n):
        depth = rng.randint(0, 12)
        grades = [rng.choice([0, 0, 0, 1, 1, 2, 3, -1]) for _ in range(depth)]
        sizes = [rng.choice([0, rng.randint(1, 80), rng.randint(1, 80), rng.randint(1, 8)]) for _ in range(depth)]
        unretrieved = [rng.choice([1, 2, 0, -2]) for _ in range(rng.randint(0, 3))]
        if not any(g >= 1 for g in grades + unretrieved):
            unretrieved.append(rng.randint(1, 3))
        total = sum(sizes)
        if sizes and rng.random() < 0.3:
            budget = max(1, sum(sizes[:rng.randint(1, depth)]))  # on a boundary
        else:
            budget = rng.randint(1, total + 40)
        cases.append((f"q{q}", grades, sizes, unretrieved, budget))
    return cases


def engine_values(cases, unit):
    """The engine's values of every budget metric, one evaluate call per distinct budget."""
    out = {}
    for budget in sorted({c[4] for c in cases}):
        sub = [c for c in cases if c[4] == budget]
        qrels, run, lists = {}, {}, {}
        for qid, grades, sizes, unretrieved, _ in sub:
            items = [f"{qid}-d{i}" for i in range(len(grades))]
            qrels[qid] = {d: g for d, g in zip(items, grades) if g != 0}
            qrels[qid].update({f"{qid}-u{j}": g for j, g in enumerate(unretrieved)})
            run[qid] = items
            lists[qid] = list(zip(items, sizes))
        names = [f"{k}@{budget}{unit}" for k in KINDS]
        res = evaluate(qrels, run, names, sizes=[ContextSizes.from_lists(unit, lists)])
        for qid, vals in res.per_query.items():
            out[qid] = {k: vals[f"{k}@{budget}{unit}"] for k in KINDS}
    return out


@pytest.mark.parametrize("seed,unit", [(0, "c"), (1, "t")])
def test_budget_metrics_equal_brute_force(seed, unit):
    """1,200 random ranked lists per seed (2,400 in all), every budget metric to 1e-12."""
    cases = random_lists(seed, 1200)
    got = engine_values(cases, unit)
    assert len(got) == len(cases)
    for qid, grades, sizes, unretrieved, budget in cases:
        judged = [g for g in grades if g != 0] + unretrieved
        want = reference(grades, sizes, judged, budget)
        for k in KINDS:
            assert abs(got[qid][k] - want[k]) <= 1e-12, (k, qid, grades, sizes, unretrieved, budget, got[qid][k],
                                                         want[k])
            assert 0.0 <= got[qid][k] <= 1.0 + 1e-12


def test_unit_sizes_and_budget_k_equal_count_cutoffs():
    """Every item of size 1 and a budget of K: the budget metrics are the count metrics at K."""
    cases = random_lists(3, 400)
    for qid, grades, sizes, unretrieved, _ in cases:
        sizes[:] = [1] * len(grades)
    qrels = {c[0]: {**{f"{c[0]}-d{i}": g for i, g in enumerate(c[1]) if g != 0},
                    **{f"{c[0]}-u{j}": g for j, g in enumerate(c[3])}} for c in cases}
    run = {c[0]: [f"{c[0]}-d{i}" for i in range(len(c[1]))] for c in cases}
    sizes = ContextSizes.from_lists("c", {q: [(d, 1) for d in items] for q, items in run.items()})
    for k in (1, 3, 5):
        names = ["hit", "mrr", "p", "r", "f1", "map", "ndcg"]
        budget = evaluate(qrels, run, [f"{n}@{k}c" for n in names], sizes=[sizes])
        count = evaluate(qrels, run, [f"{n}@{k}" for n in names])
        long_enough = np.array([len(run[q]) >= k for q in count.query_ids])
        for n in names:
            a, b = budget.column(f"{n}@{k}c"), count.column(f"{n}@{k}")
            if n == "ndcg":  # the ideal list is cut at the depth read: equal when K items are ranked
                a, b = a[long_enough], b[long_enough]
            assert np.allclose(a, b, atol=1e-12), n


@settings(max_examples=60, deadline=None)
@given(sizes=st.lists(st.integers(0, 50), min_size=1, max_size=10), seed=st.integers(0, 10_000),
       budgets=st.lists(st.integers(1, 600), min_size=2, max_size=2))
def test_recall_and_hit_never_fall_as_the_budget_grows(sizes, seed, budgets):
    rng = random.Random(seed)
    items = [f"d{i}" for i in range(len(sizes))]
    qrels = {"q": {d: 1 for d in items if rng.random() < 0.4} or {"u": 1}}
    cs = ContextSizes.from_lists("t", {"q": list(zip(items, sizes))})
    lo, hi = sorted(budgets)
    res = evaluate(qrels, {"q": items}, [f"r@{lo}t", f"r@{hi}t", f"hit@{lo}t", f"hit@{hi}t"], sizes=[cs])
    v = res.per_query["q"]
    assert v[f"r@{lo}t"] <= v[f"r@{hi}t"] + 1e-12 and v[f"hit@{lo}t"] <= v[f"hit@{hi}t"] + 1e-12


def test_straddling_chunk_counts_by_its_share_worked_example():
    """Sizes 300, 400, 500 characters, budget 1000: ranks 1 and 2 read whole (700), rank 3 straddles with
    300 of its 500 characters inside (share 0.6)."""
    qrels = {"q": {"b": 1, "c": 1}}
    cs = ContextSizes.from_lists("c", {"q": [("a", 300), ("b", 400), ("c", 500)]})
    res = evaluate(qrels, {"q": ["a", "b", "c"]}, ["hit@1000c", "r@1000c", "p@1000c", "mrr@1000c"], sizes=[cs])
    assert "|norel:excluded|budget:share,c=chars|" in res.signature and "budget" not in evaluate(qrels, {"q": ["a"]}, "p@1").signature
    v = res.per_query["q"]
    assert v == {"hit@1000c": 1.0, "r@1000c": pytest.approx((1 + 0.6) / 2), "p@1000c": pytest.approx(0.7),
                 "mrr@1000c": 0.5}
    cs = ContextSizes.from_lists("c", {"q": [("a", 300), ("c", 500), ("b", 400)]})  # starts follow this order
    tokens = ContextSizes.from_lists("t", {"q": [("a", 30), ("c", 50), ("b", 40)]}, counter="e5")
    res = evaluate(qrels, {"q": ["a", "c", "b"]}, ["hit@500c", "r@60t"], sizes=[cs, tokens])
    assert "|budget:share,c=chars,t=e5|" in res.signature and res.per_query["q"]["r@60t"] == pytest.approx(0.3)
    v = res.per_query["q"]
    assert v["hit@500c"] == pytest.approx(0.4)  # c straddles: 200 of 500 inside


def test_budget_names_and_errors():
    assert parse_metric("NDCG@512T").name == "ndcg@512t" and parse_metric("p@2000c").unit == "c"
    assert parse_metric("f0.5@300c").name == "f0.5@300c"
    with pytest.raises(MetricNameError, match="rprec cannot be cut at a context budget|rprec takes no cutoff"):
        parse_metric("rprec@512t")
    with pytest.raises(MetricNameError, match="not a positive integer"):
        parse_metric("p@0t")
    with pytest.raises(MetricNameError, match="not a positive integer"):
        parse_metric("p@512x")
    with pytest.raises(InputError, match=r"no sizes in tokens were given; pass sizes=\[ContextSizes\('t'"):
        evaluate({"q": {"a": 1}}, {"q": ["a"]}, ["p@512t"],
                 sizes=[ContextSizes.from_lists("c", {"q": [("a", 3)]})])
    with pytest.raises(InputError, match="no size in characters for item 'b' of query 'q'"):
        evaluate({"q": {"a": 1}}, {"q": ["a", "b"]}, ["p@5c"], sizes=[ContextSizes.from_lists("c", {"q": [("a", 3)]})])
    with pytest.raises(InputError, match="expected numbers >= 0"):
        ContextSizes("c", {"q": {"a": (0.0, -1.0)}})
    with pytest.raises(InputError, match="expected 'c' \\(characters\\) or 't' \\(tokens\\)"):
        ContextSizes("w", {})
