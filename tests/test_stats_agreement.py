"""Cohen's kappa and Spearman's rho against hand values and scipy."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragexam.stats import cohen_kappa, spearman
from ragexam.errors import InputError

scipy_stats = pytest.importorskip("scipy.stats")


def _kappa_loops(a, b, weights, labels):
    """Slow reference following the sklearn formula with explicit loops."""
    L = len(labels)
    pos = {c: i for i, c in enumerate(labels)}
    n = len(a)
    O = [[0.0] * L for _ in range(L)]
    for x, y in zip(a, b):
        O[pos[x]][pos[y]] += 1 / n
    row = [sum(O[i]) for i in range(L)]
    col = [sum(O[i][j] for i in range(L)) for j in range(L)]

    def w(i, j):
        return {None: float(i != j), "linear": abs(i - j), "quadratic": (i - j) ** 2}[weights]

    num = sum(w(i, j) * O[i][j] for i in range(L) for j in range(L))
    den = sum(w(i, j) * row[i] * col[j] for i in range(L) for j in range(L))
    return 1 - num / den


def test_kappa_textbook_example():
    # 50 items: yes/yes 20, yes/no 5, no/yes 10, no/no 15 -> po = .7, pe = .5, kappa = .4
    a = ["yes"] * 25 + ["no"] * 25
    b = ["yes"] * 20 + ["no"] * 5 + ["yes"] * 10 + ["no"] * 15
    assert cohen_kappa(a, b) == pytest.approx(0.4)


@pytest.mark.parametrize("weights, expected", [(None, 0.2), ("linear", 3 / 7), ("quadratic", 7 / 11)])
def test_kappa_weighted_hand_values(weights, expected):
    # O = 1/4 at (0,0), (1,2), (2,2), (2,1); both marginals (1/4, 1/4, 1/2)
    assert cohen_kappa([0, 1, 2, 2], [0, 2, 2, 1], weights=weights) == pytest.approx(expected)


def test_kappa_perfect_and_chance_and_worse():
    assert cohen_kappa([1, 2, 3, 1], [1, 2, 3, 1]) == pytest.approx(1.0)
    assert cohen_kappa([0, 0, 1, 1], [0, 1, 0, 1]) == pytest.approx(0.0)
    assert cohen_kappa([0, 1, 0, 1], [1, 0, 1, 0]) == pytest.approx(-1.0)


def test_kappa_labels_fix_the_ordinal_scale():
    a, b = [1, 2, 5, 5], [1, 5, 5, 2]
    inferred = cohen_kappa(a, b, weights="linear")
    full = cohen_kappa(a, b, weights="linear", labels=[1, 2, 3, 4, 5])
    assert inferred == pytest.approx(_kappa_loops(a, b, "linear", [1, 2, 5]))
    assert full == pytest.approx(_kappa_loops(a, b, "linear", [1, 2, 3, 4, 5]))
    assert inferred != pytest.approx(full)


@settings(max_examples=100, deadline=None)
@given(st.integers(2, 30).flatmap(lambda n: st.tuples(
    st.lists(st.integers(0, 4), min_size=n, max_size=n), st.lists(st.integers(0, 4), min_size=n, max_size=n))),
    st.sampled_from([None, "linear", "quadratic"]))
def test_kappa_matches_loop_reference(ab, weights):
    a, b = ab
    labels = sorted(set(a) | set(b))
    if len(labels) == 1:
        with pytest.raises(InputError, match="undefined"):
            cohen_kappa(a, b, weights=weights)
        return
    assert cohen_kappa(a, b, weights=weights) == pytest.approx(_kappa_loops(a, b, weights, labels), abs=1e-12)


def test_kappa_numpy_input_and_errors():
    assert cohen_kappa(np.array([0, 1, 1]), np.array([0, 1, 0])) == pytest.approx(0.4)
    with pytest.raises(InputError, match="a has 3 labels but b has 2"):
        cohen_kappa([0, 1, 1], [0, 1])
    with pytest.raises(InputError, match="undefined"):
        cohen_kappa(["x", "x"], ["x", "x"])
    with pytest.raises(InputError, match="not in labels"):
        cohen_kappa([1, 7], [1, 2], labels=[1, 2, 3])
    with pytest.raises(InputError, match="weights"):
        cohen_kappa([1, 2], [1, 2], weights="cubic")
    with pytest.raises(InputError, match="None at index 1"):
        cohen_kappa([1, None], [1, 2])
    with pytest.raises(InputError, match="no labels"):
        cohen_kappa([], [])


def test_spearman_hand_values():
    assert spearman([1, 2, 3, 4], [10, 20, 30, 40]) == 1.0
    assert spearman([1, 2, 3, 4], [4, 3, 2, 1]) == -1.0
    # ranks a = 1, 2.5, 2.5, 4; b = 1, 4, 2.5, 2.5 -> rho = 0.5
    assert spearman([1, 2, 2, 3], [1, 3, 2, 2]) == pytest.approx(0.5)


@settings(max_examples=150, deadline=None)
@given(st.integers(2, 40).flatmap(lambda n: st.tuples(
    st.lists(st.integers(0, 5), min_size=n, max_size=n), st.lists(st.integers(0, 5), min_size=n, max_size=n))))
def test_spearman_matches_scipy_with_ties(ab):
    a, b = ab
    if len(set(a)) == 1 or len(set(b)) == 1:
        with pytest.raises(InputError, match="undefined"):
            spearman(a, b)
        return
    assert spearman(a, b) == pytest.approx(scipy_stats.spearmanr(a, b).statistic, abs=1e-12)


def test_spearman_errors():
    with pytest.raises(InputError, match="a has 3 values but b has 2"):
        spearman([1, 2, 3], [1, 2])
    with pytest.raises(InputError, match="at least 2"):
        spearman([1], [2])
    with pytest.raises(InputError, match="NaN"):
        spearman([1, float("nan")], [1, 2])
