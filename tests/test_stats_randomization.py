"""Paired randomization (sign-flip) test: exact answers, Monte-Carlo agreement, reproducibility."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragexam import stats as S
from ragexam.stats import _checks


def _exact_p_integers(k: list[int], alternative: str = "two-sided") -> float:
    """Reference: exact sign-flip p-value for integer differences, by counting sums (DP)."""
    nz = [v for v in k if v != 0]
    obs = sum(nz)
    counts = {0: 1}  # sum -> number of sign patterns
    for v in nz:
        nxt: dict[int, int] = {}
        for s, c in counts.items():
            nxt[s + v] = nxt.get(s + v, 0) + c
            nxt[s - v] = nxt.get(s - v, 0) + c
        counts = nxt
    if alternative == "two-sided":
        hit = sum(c for s, c in counts.items() if abs(s) >= abs(obs))
    elif alternative == "greater":
        hit = sum(c for s, c in counts.items() if s >= obs)
    else:
        hit = sum(c for s, c in counts.items() if s <= obs)
    return hit / 2 ** len(nz)


def test_all_differences_positive_and_equal():
    a = np.zeros(10)
    b = np.full(10, 0.3)
    r = S.paired_randomization_test(a, b)
    assert r.method == "exact"
    assert r.p_value == 2 / 2**10
    assert (r.n, r.n_nonzero, r.n_permutations) == (10, 10, 1024)
    assert r.diff == pytest.approx(0.3)
    assert S.paired_randomization_test(a, b, alternative="greater").p_value == 1 / 2**10
    assert S.paired_randomization_test(a, b, alternative="less").p_value == 1.0


def test_identical_runs_give_p_one():
    a = np.random.default_rng(0).random(40)
    r = S.paired_randomization_test(a, a.copy())
    assert (r.p_value, r.method, r.n_nonzero, r.diff) == (1.0, "exact", 0, 0.0)


def test_zero_differences_are_left_out_of_the_sign_patterns():
    a = np.zeros(30)
    b = np.zeros(30)
    b[:5] = 1.0  # 25 ties, 5 wins
    r = S.paired_randomization_test(a, b, n_permutations=100)
    assert r.method == "exact" and r.n_nonzero == 5 and r.n_permutations == 32
    assert r.p_value == 2 / 32


def test_binary_outcomes_match_the_binomial_formula():
    # d in {-1, 0, +1}: T = 2K - m with K ~ Binomial(m, 1/2).
    rng = np.random.default_rng(1)
    a = (rng.random(40) < 0.5).astype(float)
    b = (rng.random(40) < 0.7).astype(float)
    d = b - a
    m = int(np.count_nonzero(d))
    obs = int(d.sum())
    exact = sum(math.comb(m, k) for k in range(m + 1) if abs(2 * k - m) >= abs(obs)) / 2**m
    r = S.paired_randomization_test(a, b, n_permutations=2**m)
    assert r.method == "exact" and r.p_value == exact


@settings(max_examples=80, deadline=None)
@given(st.lists(st.integers(-5, 5), min_size=1, max_size=11),
       st.sampled_from(["two-sided", "greater", "less"]))
def test_exact_test_counts_decimal_ties_as_ties(k, alternative):
    # Differences like 0.1 + 0.2 vs 0.3 tie in decimal but not in binary floating point;
    # the test must give the p-value of the decimal numbers.
    a = np.zeros(len(k))
    b = np.array(k) / 10
    r = S.paired_randomization_test(a, b, n_permutations=2**11, alternative=alternative)
    assert r.method == "exact"
    assert r.p_value == _exact_p_integers(k, alternative)


def test_exact_enumeration_matches_counting_reference_n14():
    k = list(np.random.default_rng(2).integers(-3, 4, 14))
    r = S.paired_randomization_test(np.zeros(14), np.array(k, float), n_permutations=2**14)
    assert r.method == "exact"
    assert r.p_value == _exact_p_integers(k)


def test_approximate_agrees_with_exact_n25():
    k = [int(v) for v in np.random.default_rng(4).integers(-2, 3, 25)]
    exact = _exact_p_integers(k)
    assert 0.01 < exact < 0.5  # a case where Monte-Carlo error is visible
    n_perm = 20000
    r = S.paired_randomization_test(np.zeros(25), np.array(k, float), n_permutations=n_perm, seed=4)
    assert r.method == "approximate" and r.n_permutations == n_perm
    se = math.sqrt(exact * (1 - exact) / n_perm)
    assert abs(r.p_value - exact) < 4.5 * se


def test_approximate_p_is_plus_one_corrected_and_never_zero():
    # 20 equal positive differences: only 2 of 2**20 patterns are as extreme, so almost
    # surely none is drawn; ranx would report p = 0 here.
    r = S.paired_randomization_test(np.zeros(20), np.ones(20), n_permutations=999, seed=0)
    assert r.method == "approximate"
    assert r.p_value == 1 / 1000


def test_same_seed_same_p_and_seed_matters():
    rng = np.random.default_rng(5)
    a, b = rng.random(60), rng.random(60)
    p1 = S.paired_randomization_test(a, b, seed=7)
    assert p1 == S.paired_randomization_test(a, b, seed=7)
    assert p1.method == "approximate"
    assert p1.p_value != S.paired_randomization_test(a, b, seed=8).p_value


def test_chunk_size_does_not_change_the_result(monkeypatch):
    rng = np.random.default_rng(6)
    a, b = rng.random(50), rng.random(50)
    whole = S.paired_randomization_test(a, b, n_permutations=3000, seed=1)
    exact = S.paired_randomization_test(a[:12], b[:12], n_permutations=5000)
    monkeypatch.setattr(_checks, "_CHUNK_BYTES", 50 * 16 * 13)
    assert S.paired_randomization_test(a, b, n_permutations=3000, seed=1) == whole
    assert S.paired_randomization_test(a[:12], b[:12], n_permutations=5000) == exact


def test_exact_is_chosen_only_when_patterns_fit():
    a = np.zeros(14)
    b = np.ones(14)
    assert S.paired_randomization_test(a, b, n_permutations=2**14).method == "exact"
    assert S.paired_randomization_test(a, b, n_permutations=2**14 - 1).method == "approximate"
    # very many nonzero differences never overflow the pattern count
    big = S.paired_randomization_test(np.zeros(200), np.ones(200), n_permutations=10)
    assert big.method == "approximate" and big.p_value == 1 / 11


def test_signature_and_to_dict():
    r = S.paired_randomization_test([0, 1, 1], [1, 1, 0])
    assert r.signature.startswith("test:paired-randomization|method:exact|alt:two-sided|perm:4|")
    assert r.to_dict()["p_value"] == r.p_value


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 1), st.floats(0, 1)), min_size=1, max_size=40),
       st.integers(0, 100), st.sampled_from(["two-sided", "greater", "less"]))
def test_p_is_in_zero_one_and_never_zero(pairs, seed, alternative):
    a = [p[0] for p in pairs]
    b = [p[1] for p in pairs]
    r = S.paired_randomization_test(a, b, n_permutations=200, seed=seed, alternative=alternative)
    assert 0 < r.p_value <= 1
    if r.method == "approximate":
        assert r.p_value >= 1 / 201
    else:
        assert r.p_value >= 2.0 ** -r.n_nonzero


def test_sign_patterns_enumerated_are_all_distinct():
    # the exact branch must visit each of the 2**m patterns once: compare with itertools
    d = np.array([0.5, -1.25, 2.0, 0.75])
    obs = d.sum()
    ref = sum(abs(np.dot(s, d)) >= abs(obs) - 1e-12
              for s in itertools.product([1, -1], repeat=4)) / 16
    assert S.paired_randomization_test(np.zeros(4), d).p_value == ref
