"""Wilson and Clopper-Pearson intervals (ragexam.stats.proportion) against scipy's, and the rule that a handful of
items gets no interval at all."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.stats import binomtest

from ragexam.errors import InputError
from ragexam.stats.proportion import MIN_FOR_INTERVAL, clopper_pearson, too_few, wilson


@given(st.integers(1, 200).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))),
       st.sampled_from([0.9, 0.95, 0.99]))
def test_both_match_scipy(kn, confidence):
    k, n = kn
    ref_w = binomtest(k, n).proportion_ci(confidence_level=confidence, method="wilson")
    ref_cp = binomtest(k, n).proportion_ci(confidence_level=confidence, method="exact")
    assert wilson(k / n, n, confidence=confidence) == pytest.approx((ref_w.low, ref_w.high), abs=1e-9)
    assert clopper_pearson(k, n, confidence=confidence) == pytest.approx((ref_cp.low, ref_cp.high), abs=1e-7)


@given(st.integers(1, 60).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))))
def test_never_zero_width(kn):
    k, n = kn
    for low, high in (wilson(k / n, n), clopper_pearson(k, n)):
        assert 0.0 <= low < high <= 1.0 and low <= k / n <= high


def test_issue_41_examples_and_the_too_few_rule():
    assert [round(x, 2) for x in wilson(1.0, 4)] == [0.51, 1.0]  # the bootstrap said [1.00-1.00]
    assert [round(x, 2) for x in clopper_pearson(4, 4)] == [0.4, 1.0]
    assert too_few(4) == "n = 4: too few for an interval" and too_few(MIN_FOR_INTERVAL) is None
    for bad in ((1.5, 4), (0.5, 0), (True, 3)):
        with pytest.raises(InputError):
            wilson(*bad)
    with pytest.raises(InputError):
        clopper_pearson(5, 4)
