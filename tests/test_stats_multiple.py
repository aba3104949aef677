"""Holm and Benjamini–Hochberg adjusted p-values against hand-computed values and invariants."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragexam.stats import benjamini_hochberg, holm
from ragexam.errors import InputError


@pytest.mark.parametrize("p, expected", [
    # sorted 0.005, 0.01, 0.03, 0.04 -> 4*.005, 3*.01, 2*.03, max(.06, 1*.04)
    ([0.01, 0.04, 0.03, 0.005], [0.03, 0.06, 0.06, 0.02]),
    # R: p.adjust(c(.01,.02,.03,.04,.05), "holm")
    ([0.01, 0.02, 0.03, 0.04, 0.05], [0.05, 0.08, 0.09, 0.09, 0.09]),
    # capped at 1: sorted .3,.5,.8 -> .9, min(1, 1.0), max(1.0, .8)
    ([0.5, 0.8, 0.3], [1.0, 1.0, 0.9]),
    ([0.2], [0.2]),
    ([0.0, 1.0], [0.0, 1.0]),
])
def test_holm_hand_values(p, expected):
    assert holm(p) == pytest.approx(expected, abs=1e-15)


@pytest.mark.parametrize("p, expected", [
    # sorted .005,.01,.03,.04 -> 4*.005/1, 4*.01/2, 4*.03/3, 4*.04/4 = .02,.02,.04,.04
    ([0.01, 0.04, 0.03, 0.005], [0.02, 0.04, 0.04, 0.02]),
    # R: p.adjust(c(.01,.02,.03,.04,.05), "BH") is 0.05 everywhere
    ([0.01, 0.02, 0.03, 0.04, 0.05], [0.05] * 5),
    # sorted .3,.5,.8 -> .9, .75, .8 -> step-up min from the top: .75, .75, .8
    ([0.5, 0.8, 0.3], [0.75, 0.8, 0.75]),
    ([0.2], [0.2]),
])
def test_bh_hand_values(p, expected):
    assert benjamini_hochberg(p) == pytest.approx(expected, abs=1e-15)


def test_ties_get_equal_adjusted_values():
    p = [0.02, 0.01, 0.02, 0.02]
    h = holm(p)
    q = benjamini_hochberg(p)
    assert h[0] == h[2] == h[3] and q[0] == q[2] == q[3]


pvals = st.lists(st.floats(0, 1), min_size=1, max_size=30)


@settings(max_examples=200, deadline=None)
@given(pvals)
def test_invariants(p):
    raw = np.array(p)
    h = holm(raw)
    q = benjamini_hochberg(raw)
    m = raw.size
    eps = 1e-12
    assert np.all(h >= raw - eps) and np.all(q >= raw - eps)
    assert np.all(h <= 1) and np.all(q <= 1)
    assert np.all(h <= np.minimum(1, m * raw) + eps)       # never worse than Bonferroni
    assert np.all(q <= h + eps)                            # BH is never stricter than Holm
    order = np.argsort(raw, kind="stable")
    assert np.all(np.diff(h[order]) >= -eps) and np.all(np.diff(q[order]) >= -eps)  # monotone


@pytest.mark.parametrize("bad, match", [
    ([], "no values"), ([0.1, 1.5], "1.5 at index 1"), ([-0.1], "between 0 and 1"),
    ([0.1, float("nan")], "NaN at index 1"),
])
def test_bad_pvalues_raise(bad, match):
    for fn in (holm, benjamini_hochberg):
        with pytest.raises(InputError, match=match) as e:
            fn(bad)
        assert e.value.field == "pvalues"
