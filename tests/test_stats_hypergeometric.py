"""The exact finite-population interval of a set's junk rate (ragexam.stats.hypergeometric) against
scipy.stats.hypergeom (the reference), and its invariants: coverage at least the nominal level for every
true count, bounds that never fall as more bad items are seen, no uncertainty when every item was read."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import hypergeom

from ragexam.errors import InputError
from ragexam.stats.hypergeometric import hypergeometric_cdf, hypergeometric_interval, hypergeometric_sf


def reference_interval(x: int, n: int, N: int, confidence: float = 0.95):
    """The definition, by brute force over every possible count with scipy's distribution function."""
    alpha = (1 - confidence) / 2
    possible = range(x, N - (n - x) + 1)
    upper = max(d for d in possible if hypergeom(N, d, n).cdf(x) > alpha) if x < n else N
    lower = min(d for d in possible if hypergeom(N, d, n).sf(x - 1) > alpha) if x > 0 else 0
    return lower, upper


@pytest.mark.parametrize("N,n", [(60, 20), (20, 20), (33, 5), (200, 40), (7, 1)])
def test_the_interval_is_the_inverted_scipy_distribution(N, n):
    for x in range(n + 1):
        iv = hypergeometric_interval(x, n, N)
        assert (iv.low_count, iv.high_count) == reference_interval(x, n, N), x


@settings(max_examples=60)
@given(st.integers(1, 300).flatmap(lambda N: st.tuples(st.just(N), st.integers(0, N), st.integers(0, N))),
       st.integers(0, 300))
def test_the_distribution_function_matches_scipy(params, k):
    N, bad, draws = params
    k = min(k, draws)
    assert hypergeometric_cdf(k, N, bad, draws) == pytest.approx(hypergeom(N, bad, draws).cdf(k), abs=1e-9)
    assert hypergeometric_sf(k, N, bad, draws) == pytest.approx(hypergeom(N, bad, draws).sf(k - 1), abs=1e-9)


@settings(max_examples=40)
@given(st.integers(1, 80).flatmap(lambda N: st.tuples(st.just(N), st.integers(1, N), st.integers(0, N))),
       st.sampled_from([0.8, 0.9, 0.95]))
def test_coverage_is_at_least_the_confidence_for_every_true_count(params, confidence):
    """For a true count D, the probability (over the samples) that the interval holds D is >= the level."""
    N, n, D = params
    lo = max(0, n - (N - D))
    xs = np.arange(lo, min(n, D) + 1)
    pmf = hypergeom(N, D, n).pmf(xs)
    covered = 0.0
    for x, p in zip(xs, pmf):
        iv = hypergeometric_interval(int(x), n, N, confidence)
        covered += p * (iv.low_count <= D <= iv.high_count)
    assert covered >= confidence - 1e-9


@settings(max_examples=40)
@given(st.integers(1, 150).flatmap(lambda N: st.tuples(st.just(N), st.integers(1, N))))
def test_bounds_rise_with_the_bad_items_seen_and_hold_the_estimate(params):
    N, n = params
    ivs = [hypergeometric_interval(x, n, N) for x in range(n + 1)]
    for a, b in zip(ivs, ivs[1:]):
        assert a.low_count <= b.low_count and a.high_count <= b.high_count
    for iv in ivs:
        assert iv.low <= iv.estimate <= iv.high
        # the bad ones seen are in the set, and so are the good ones seen
        assert iv.bad <= iv.low_count and iv.high_count <= N - (n - iv.bad)


def test_every_item_read_leaves_no_uncertainty_and_a_larger_sample_narrows():
    assert (hypergeometric_interval(7, 30, 30).low_count, hypergeometric_interval(7, 30, 30).high_count) == (7, 7)
    small, large = hypergeometric_interval(3, 10, 100), hypergeometric_interval(15, 50, 100)
    assert large.high - large.low < small.high - small.low


def test_a_finite_set_is_tighter_than_the_infinite_population_interval():
    """Clopper-Pearson (binomial) treats the set as infinite; 20 read of 40 pins the count down more."""
    from scipy.stats import beta

    iv = hypergeometric_interval(5, 20, 40)
    cp_low, cp_high = beta.ppf(0.025, 5, 16), beta.ppf(0.975, 6, 15)
    assert cp_low < iv.low and iv.high < cp_high


def test_nothing_read_is_the_whole_range_with_no_estimate():
    iv = hypergeometric_interval(0, 0, 60)
    assert (iv.low_count, iv.high_count, iv.estimate) == (0, 60, None)
    assert "ci:hypergeometric-exact" in iv.signature and "|n:0|N:60|" in iv.signature


@pytest.mark.parametrize("args,field", [((3, 2, 10), "bad"), ((1, 11, 10), "n"), ((-1, 2, 10), "bad"),
                                        ((1, 2, 10.5), "population")])
def test_impossible_counts_are_input_errors_naming_the_parameter(args, field):
    with pytest.raises(InputError) as err:
        hypergeometric_interval(*args)
    assert err.value.field == field


def test_the_estimate_stays_inside_its_interval_when_nearly_every_item_was_read():
    """Found by hypothesis: 1 bad of 80 read of 81 -- the set holds 1 bad one (its interval is [1, 1]), so its rate
    is 1/81, not the sample's 1/80."""
    iv = hypergeometric_interval(1, 80, 81)
    assert (iv.low_count, iv.high_count) == (1, 1) and iv.estimate == iv.low == 1 / 81
    assert hypergeometric_interval(3, 20, 60).estimate == 3 / 20
