"""Bootstrap confidence intervals: definition, coverage, reproducibility, invariants."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from ragexam import stats as S
from ragexam.stats import _checks
from ragexam.errors import InputError


def _numbers(ci):
    return (ci.mean, ci.low, ci.high)


def test_matches_the_definition_drawn_in_one_go():
    x = np.random.default_rng(1).random(37)
    ci = S.bootstrap_ci(x, n_resamples=500, confidence=0.9, seed=7)
    idx = np.random.default_rng(7).integers(0, 37, size=(500, 37))
    means = x[idx].sum(axis=1) / 37
    low, high = np.quantile(means, [0.05, 0.95])
    assert ci.low == pytest.approx(low, rel=1e-12, abs=1e-15)
    assert ci.high == pytest.approx(high, rel=1e-12, abs=1e-15)
    assert ci.mean == pytest.approx(x.mean(), rel=1e-12)
    assert (ci.n, ci.n_resamples, ci.seed, ci.confidence, ci.method) == (37, 500, 7, 0.9, "percentile")


def _percentile(x, n_resamples, seed, confidence=0.95):
    """The definition, drawn in one go: means of resampled rows, then their quantiles."""
    idx = np.random.default_rng(seed).integers(0, len(x), size=(n_resamples, len(x)))
    tail = (1 - confidence) / 2
    return tuple(np.quantile(x[idx].sum(axis=1) / len(x), [tail, 1 - tail]))


def test_coverage_of_a_known_mean():
    # Bernoulli(0.7), n = 100: a 95% percentile interval should cover 0.7 about 95% of the time.
    rng = np.random.default_rng(2024)
    trials = 400
    covered = 0
    for t in range(trials):
        x = (rng.random(100) < 0.7).astype(float)
        ci = S.bootstrap_ci(x, n_resamples=1000, seed=t)
        assert (ci.low, ci.high) == pytest.approx(_percentile(x, 1000, t), rel=1e-12)  # every interval
        covered += ci.low <= 0.7 <= ci.high
    # 2 binomial standard errors around 0.95 for 400 trials (the percentile interval of a proportion
    # at n = 100 undercovers a little; a 90% or a 99% interval would fall outside)
    assert abs(covered / trials - 0.95) <= 2 * (0.95 * 0.05 / trials) ** 0.5


def test_same_seed_same_interval_and_different_seed_differs():
    x = np.random.default_rng(3).random(50)
    assert S.bootstrap_ci(x, seed=11) == S.bootstrap_ci(x, seed=11)
    assert _numbers(S.bootstrap_ci(x, seed=11)) != _numbers(S.bootstrap_ci(x, seed=12))


def test_chunk_size_does_not_change_the_result(monkeypatch):
    x = np.random.default_rng(4).random((200, 2))
    whole = S.bootstrap_ci(x, n_resamples=300, seed=5)
    monkeypatch.setattr(_checks, "_CHUNK_BYTES", 200 * 16 * 7)  # 7 resamples per chunk
    assert S.bootstrap_ci(x, n_resamples=300, seed=5) == whole


def test_2d_columns_equal_1d_runs_bit_for_bit():
    rng = np.random.default_rng(6)
    x = np.c_[rng.random(80), rng.random(80) ** 3, (rng.random(80) < 0.5)]
    cis = S.bootstrap_ci(x, n_resamples=400, seed=9)
    assert isinstance(cis, list) and len(cis) == 3
    for j in range(3):
        assert cis[j] == S.bootstrap_ci(x[:, j], n_resamples=400, seed=9)


def test_constant_values_give_a_point_interval():
    ci = S.bootstrap_ci([0.25] * 9)
    assert ci.low == ci.high == ci.mean == 0.25


def test_single_question():
    ci = S.bootstrap_ci([0.4])
    assert (ci.mean, ci.low, ci.high, ci.n) == (0.4, 0.4, 0.4, 1)


def test_signature_and_to_dict():
    ci = S.bootstrap_ci([0, 1, 1, 0, 1], n_resamples=100, seed=3)
    assert ci.signature.startswith("stat:mean|ci:percentile|conf:0.95|bs:100|seed:3|n:5|version:")
    d = ci.to_dict()
    assert d["signature"] == ci.signature and d["low"] == ci.low and d["method"] == "percentile"


@settings(max_examples=60, deadline=None)
@given(arrays(np.float64, st.integers(1, 40),
              elements=st.floats(-1e3, 1e3, allow_nan=False, allow_infinity=False)),
       st.integers(0, 2**32), st.sampled_from([0.5, 0.8, 0.95, 0.99]))
def test_interval_is_ordered_and_inside_the_data_range(x, seed, confidence):
    ci = S.bootstrap_ci(x, n_resamples=200, confidence=confidence, seed=seed)
    tol = 1e-9 * (1 + np.abs(x).max())
    assert ci.low <= ci.high
    assert x.min() - tol <= ci.low and ci.high <= x.max() + tol
    assert x.min() - tol <= ci.mean <= x.max() + tol


# --- ratio of sums and general summable statistics ------------------------------------------


def test_ratio_with_unit_denominators_is_the_mean():
    x = np.random.default_rng(8).random(60)
    ratio = S.bootstrap_ratio_ci(x, np.ones(60), n_resamples=500, seed=1)
    mean = S.bootstrap_ci(x, n_resamples=500, seed=1)
    assert _numbers(ratio) == pytest.approx(_numbers(mean), rel=1e-12)
    assert ratio.statistic == "ratio"


def test_ratio_estimate_is_sum_over_sum_not_mean_of_ratios():
    # 1/2 and 9/10: the mean of ratios is 0.7, the ratio of sums 10/12.
    num = np.tile([1.0, 9.0], 30)
    den = np.tile([2.0, 10.0], 30)
    ci = S.bootstrap_ratio_ci(num, den, n_resamples=300, seed=0)
    assert ci.mean == pytest.approx(10 / 12)
    idx = np.random.default_rng(0).integers(0, 60, size=(300, 60))
    ratios = num[idx].sum(axis=1) / den[idx].sum(axis=1)
    means_of_ratios = (num / den)[idx].mean(axis=1)
    assert (ci.low, ci.high) == pytest.approx(tuple(np.quantile(ratios, [0.025, 0.975])), rel=1e-12)
    assert ci.low > np.quantile(means_of_ratios, 0.975)  # not the interval of the mean of ratios (0.7)


def test_ratio_matches_direct_resampling():
    rng = np.random.default_rng(12)
    num = rng.integers(0, 20, 45).astype(float)
    den = num + rng.integers(1, 10, 45)
    ci = S.bootstrap_ratio_ci(num, den, n_resamples=400, seed=21)
    idx = np.random.default_rng(21).integers(0, 45, size=(400, 45))
    r = num[idx].sum(axis=1) / den[idx].sum(axis=1)
    assert (ci.low, ci.high) == pytest.approx(tuple(np.quantile(r, [0.025, 0.975])), rel=1e-12)


def test_ratio_2d():
    rng = np.random.default_rng(13)
    num = rng.random((30, 2))
    den = num + 1
    cis = S.bootstrap_ratio_ci(num, den, n_resamples=200, seed=2)
    for j in range(2):
        one = S.bootstrap_ratio_ci(num[:, j], den[:, j], n_resamples=200, seed=2)
        assert _numbers(cis[j]) == _numbers(one)


def test_ratio_zero_denominator_total_raises():
    with pytest.raises(InputError, match="sums to 0"):
        S.bootstrap_ratio_ci([0, 0], [0, 0])


def test_ratio_undefined_on_resamples_raises_with_counts():
    with pytest.raises(InputError, match=r"of 2000 resamples .* only 1 of 5 questions"):
        S.bootstrap_ratio_ci([1, 0, 0, 0, 0], [2, 0, 0, 0, 0])


def test_sums_ci_reproduces_the_ratio():
    rng = np.random.default_rng(14)
    stats = np.c_[rng.integers(0, 5, 40), rng.integers(5, 10, 40)].astype(float)
    general = S.bootstrap_sums_ci(stats, lambda s: s[:, 0] / s[:, 1], name="prec",
                                  n_resamples=300, seed=4)
    ratio = S.bootstrap_ratio_ci(stats[:, 0], stats[:, 1], n_resamples=300, seed=4)
    assert _numbers(general) == _numbers(ratio)
    assert general.statistic == "prec" and general.signature.startswith("stat:prec|")


def test_sums_ci_bleu_like_statistic_with_several_outputs():
    # per question: matches, candidate length; score = precision and a brevity-like ratio
    rng = np.random.default_rng(15)
    stats = np.c_[rng.integers(0, 8, 50), rng.integers(8, 12, 50), rng.integers(8, 12, 50)]

    def score(s):
        return np.stack([s[:, 0] / s[:, 1], np.minimum(1.0, np.exp(1 - s[:, 2] / s[:, 1]))], axis=1)

    cis = S.bootstrap_sums_ci(stats, score, n_resamples=200, seed=1)
    assert isinstance(cis, list) and len(cis) == 2
    idx = np.random.default_rng(1).integers(0, 50, size=(200, 50))
    direct = np.array([score(stats[row].sum(axis=0)[None, :].astype(float))[0] for row in idx])
    for j, ci in enumerate(cis):
        assert ci.mean == pytest.approx(score(stats.sum(axis=0)[None, :].astype(float))[0, j], rel=1e-12)
        assert (ci.low, ci.high) == pytest.approx(tuple(np.quantile(direct[:, j], [0.025, 0.975])), rel=1e-12)


def test_sums_ci_statistic_of_wrong_shape_raises():
    with pytest.raises(InputError, match="statistic"):
        S.bootstrap_sums_ci(np.ones((5, 2)), lambda s: s.sum())


def test_sums_ci_nonfinite_statistic_raises():
    with pytest.raises(InputError, match="non-finite"):
        S.bootstrap_sums_ci(np.ones((5, 2)), lambda s: s[:, 0] * np.nan)


# --- paired bootstrap -----------------------------------------------------------------------


def test_paired_diff_is_the_bootstrap_of_differences():
    rng = np.random.default_rng(16)
    a = rng.random(70)
    b = a + rng.normal(0.05, 0.1, 70)
    ci = S.paired_bootstrap_diff(a, b, n_resamples=500, seed=3)
    ref = S.bootstrap_ci(b - a, n_resamples=500, seed=3)
    assert _numbers(ci) == _numbers(ref)
    assert ci.mean == pytest.approx(b.mean() - a.mean())
    assert ci.statistic == "mean_diff"


def test_paired_resampling_is_joint():
    # b = a + 0.1 exactly: every paired resample has difference 0.1, whatever a varies by.
    a = np.random.default_rng(17).random(50)
    ci = S.paired_bootstrap_diff(a, a + 0.1)
    assert ci.low == pytest.approx(0.1) and ci.high == pytest.approx(0.1)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 30).flatmap(lambda n: st.tuples(
    arrays(np.float64, n, elements=st.floats(0, 1)), arrays(np.float64, n, elements=st.floats(0, 1)))),
    st.integers(0, 1000))
def test_paired_interval_is_inside_the_range_of_differences(ab, seed):
    a, b = ab
    d = b - a
    ci = S.paired_bootstrap_diff(a, b, n_resamples=200, seed=seed)
    assert d.min() - 1e-12 <= ci.low <= ci.high <= d.max() + 1e-12
