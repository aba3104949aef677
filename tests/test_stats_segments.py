"""The statistics of ``score --by``: percentiles with the values each needs (against numpy), and the unpaired
comparison of two segments (against scipy's permutation test and two-sample bootstrap)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, strategies as st

from ragexam.errors import InputError
from ragexam.stats.quantiles import min_values, percentiles
from ragexam.stats.unpaired import permutation_test, unpaired_bootstrap_diff, unpaired_compare

finite = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, allow_infinity=False)


@given(st.lists(finite, min_size=0, max_size=250))
def test_percentiles_are_numpys_where_there_are_enough_values(values):
    p = percentiles(values)
    assert p.n == len(values)
    for q in (50, 90, 99):
        if len(values) >= min_values(q):
            assert p.values[q] == pytest.approx(float(np.percentile(values, q)), rel=1e-12, abs=1e-9)
            assert q not in p.too_few
        else:
            assert p.values[q] is None and p.too_few[q] == min_values(q)


def test_the_values_a_percentile_needs():
    assert (min_values(50), min_values(90), min_values(99)) == (2, 10, 100)
    assert percentiles([3.0]).values == {50: None, 90: None, 99: None}
    assert percentiles([1.0, 5.0]).values[50] == 3.0
    with pytest.raises(InputError):
        percentiles([1.0, float("nan")])
    with pytest.raises(InputError):
        min_values(100)


def test_the_unpaired_p_value_is_scipys_permutation_test():
    from scipy import stats as sst

    rng = np.random.default_rng(3)
    a, b = rng.normal(0.60, 0.2, 23), rng.normal(0.75, 0.2, 31)
    ref = sst.permutation_test((b, a), lambda x, y, axis: np.mean(x, axis=axis) - np.mean(y, axis=axis),
                               permutation_type="independent", n_resamples=20000, vectorized=True,
                               alternative="two-sided", random_state=1)
    mine = permutation_test(a, b, n_permutations=20000, seed=7)
    assert abs(mine - ref.pvalue) < 0.01 and 0 < mine < 0.1
    assert permutation_test([1.0] * 6, [1.0] * 5) == 1.0  # nothing differs: every label shuffle is as extreme


def test_the_unpaired_interval_is_scipys_two_sample_bootstrap():
    from scipy import stats as sst

    rng = np.random.default_rng(4)
    a, b = rng.uniform(0, 1, 40), rng.uniform(0.1, 1.1, 35)
    ref = sst.bootstrap((b, a), lambda x, y, axis: np.mean(x, axis=axis) - np.mean(y, axis=axis), paired=False,
                        method="percentile", n_resamples=20000, vectorized=True, random_state=2)
    low, high = unpaired_bootstrap_diff(a, b, n_resamples=20000, seed=5)
    assert low == pytest.approx(ref.confidence_interval.low, abs=0.015)
    assert high == pytest.approx(ref.confidence_interval.high, abs=0.015)


@given(st.lists(st.floats(0, 1), min_size=2, max_size=30), st.lists(st.floats(0, 1), min_size=2, max_size=30))
def test_an_unpaired_comparison_is_antisymmetric_and_reproducible(a, b):
    ab = unpaired_compare(a, b, n_resamples=300, n_permutations=300, seed=11)
    ba = unpaired_compare(b, a, n_resamples=300, n_permutations=300, seed=11)
    assert ab.diff == pytest.approx(-ba.diff, abs=1e-12)
    assert ab.diff == pytest.approx(np.mean(b) - np.mean(a), abs=1e-12)
    assert 0 < ab.p_value <= 1 and ab.ci_low <= ab.ci_high
    assert ab.mdd is None or ab.mdd > 0
    if len(set(a)) == 1 and len(set(b)) == 1:
        assert ab.mdd is None  # no spread, no scale
    assert ab == unpaired_compare(a, b, n_resamples=300, n_permutations=300, seed=11)
    assert ab.signature.startswith("ci:percentile-2sample|conf:0.95|bs:300|test:permutation|perm:300|seed:11|")
    assert (ab.n_a, ab.n_b) == (len(a), len(b))


def test_the_groups_are_resampled_apart():
    """Two groups of the same size are never resampled with the same indices (that would pair them)."""
    a = np.arange(20, dtype=float)
    low, high = unpaired_bootstrap_diff(a, a.copy(), n_resamples=2000, seed=1)
    assert low < -2 and high > 2  # paired resampling of a against itself would be [0, 0]


def test_the_minimum_detectable_difference_uses_welchs_standard_error():
    a, b = [0.0, 1.0] * 10, [0.0, 1.0, 1.0, 1.0] * 5
    c = unpaired_compare(a, b)
    se = math.sqrt(np.var(a, ddof=1) / len(a) + np.var(b, ddof=1) / len(b))
    assert c.mdd == pytest.approx((1.959963984540054 + 0.8416212335729143) * se)
    same = unpaired_compare([1.0] * 5, [1.0] * 8)
    assert same.mdd is None and same.reading == "same"
    assert same.verdict == "no difference: every value of A and of B is the same"


def test_two_constant_groups_state_no_detectable_difference():
    """Neither group varies: no MDD is made up (it was 1 / min(n_a, n_b), 'differences below 0.2 are not
    detectable'), and the text says why, in the words of two groups (not 'every question differs')."""
    c = unpaired_compare([0.0] * 2, [1.0] * 2)
    assert c.mdd is None and c.reading == "borderline"
    assert "neither group varies" in c.verdict and "every question" not in c.verdict
    assert "not detectable" not in c.verdict


def test_the_same_values_in_another_order_are_no_difference():
    """Sums in float depend on their order (0.1 + 0.2 + 0.3 != 0.3 + 0.2 + 0.1): two groups of the same values read
    "no difference", not a difference of 0.000000000000000028 "within the noise"."""
    c = unpaired_compare([0.1, 0.2, 0.3] * 3, [0.3, 0.2, 0.1] * 3)
    assert c.diff == 0.0 and c.mean_a == c.mean_b and c.reading == "same"
    assert "0.0000" not in c.verdict


def test_a_questions_mean_over_its_answers_does_not_depend_on_their_order(monkeypatch):
    from types import SimpleNamespace

    from ragexam.analysis.answers import segments

    monkeypatch.setattr(segments, "pair_key", lambda r: r.q)
    rows = [SimpleNamespace(q="q1", v=v) for v in (0.1, 0.2, 0.3)]
    a, n_a = segments._by_question(rows, lambda r: r.v)
    b, n_b = segments._by_question(rows[::-1], lambda r: r.v)
    assert a == b and n_a == n_b == 3
