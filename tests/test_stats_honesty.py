"""Small-set honesty: resolution, minimum detectable difference, verdicts, compare()."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from ragexam import stats as S
from ragexam.errors import InputError

scipy_stats = pytest.importorskip("scipy.stats")


@pytest.mark.parametrize("q", [1e-10, 0.001, 0.025, 0.2, 0.5, 0.8, 0.975, 0.999999])
def test_normal_quantile_matches_scipy(q):
    assert S.normal_quantile(q) == pytest.approx(scipy_stats.norm.ppf(q), rel=1e-12, abs=1e-14)


def test_normal_quantile_rejects_the_ends():
    for q in (0, 1, 1.5, float("nan")):
        with pytest.raises(InputError, match=r"expected a number in \(0, 1\)"):
            S.normal_quantile(q)


def test_resolution():
    assert S.resolution(60) == 1 / 60
    assert S.resolution(1) == 1.0
    for bad in (0, -3, 2.5, True):
        with pytest.raises(InputError, match="integer >= 1"):
            S.resolution(bad)


def test_mdd_formula():
    rng = np.random.default_rng(0)
    a = (rng.random(60) < 0.6).astype(float)
    b = (rng.random(60) < 0.7).astype(float)
    sd = np.std(b - a, ddof=1)
    z = scipy_stats.norm.ppf(0.975) + scipy_stats.norm.ppf(0.8)
    assert S.minimum_detectable_difference(a, b) == pytest.approx(z * sd / math.sqrt(60), rel=1e-12)
    z2 = scipy_stats.norm.ppf(0.995) + scipy_stats.norm.ppf(0.9)
    assert S.minimum_detectable_difference(a, b, alpha=0.01, power=0.9) == pytest.approx(
        z2 * sd / math.sqrt(60), rel=1e-12)


def test_mdd_shrinks_with_more_questions():
    rng = np.random.default_rng(1)
    a, b = rng.random(400), rng.random(400)
    assert S.minimum_detectable_difference(a, b) < S.minimum_detectable_difference(a[:50], b[:50])


def test_mdd_is_none_without_spread():
    assert S.minimum_detectable_difference([0.1] * 8, [0.1] * 8) is None      # sd = 0
    assert S.minimum_detectable_difference([0, 0, 0], [0.1, 0.1, 0.1]) is None  # all equal
    assert S.minimum_detectable_difference([0.3], [0.9]) is None              # n = 1


def test_identical_runs_state_no_minimum_detectable_difference():
    """Two runs with the same value on every question: the verdict says so and states no MDD (it used to
    print 'differences below about 1/n are not detectable', a number with no spread behind it)."""
    c = S.compare([0.0, 1.0, 1.0, 0.5] * 10, [0.0, 1.0, 1.0, 0.5] * 10, names=("A", "B"))
    assert c.mdd is None and c.reading == "same"
    assert c.verdict == "no difference: A and B gave identical values on each of the 40 questions (one question = 0.025)"
    assert "detectable" not in c.verdict
    shifted = S.verdict(0.5, (0.5, 0.5), 0.5, 2, None)
    assert "every question differs by the same 0.5" in shifted and "detectable with" not in shifted
    assert "too few questions to tell" in S.verdict(0.5, (-0.2, 0.9), 0.5, 2, None)


def test_verdict_interval_is_written_as_in_the_tables():
    """The verdict's interval is fmt.signed_ci's, as the comparison tables print it (it was '-0.00038 to 0.14'
    beside a table's '0.000 to +0.138')."""
    from ragexam import fmt

    text = S.verdict(0.062, (-0.00038, 0.138), 0.22, 65, 0.104, p_adjusted=1.0)
    assert f"95% CI {fmt.signed_ci((-0.00038, 0.138))}," in text and "95% CI 0.000 to +0.138," in text


# --- verdict ---------------------------------------------------------------------------------


def test_verdict_significant():
    assert S.verdict(0.12, (0.05, 0.19), 0.003, 100, 0.05) == \
        "B is better than A by 0.12 (95% CI +0.050 to +0.190, p=0.003)"
    assert S.verdict(-0.3, (-0.4, -0.21), 0.0001, 100, 0.05, names=("bm25", "dense")) == \
        "bm25 is better than dense by 0.3 (95% CI -0.400 to -0.210, p<0.001)"


def test_verdict_no_detectable_difference():
    assert S.verdict(0.05, (-0.03, 0.13), 0.41, 60, 0.09) == (
        "no detectable difference: the difference 0.05 (B minus A) is within the noise "
        "(95% CI -0.030 to +0.130, p=0.41; one question = 0.017; differences below about 0.09 "
        "are not detectable with 60 questions)")


def test_verdict_flags_one_or_two_questions():
    text = S.verdict(0.02, (-0.03, 0.07), 0.41, 60, 0.09)
    assert text.startswith("no detectable difference: the difference 0.02 (B minus A)")
    assert text.endswith("; the difference is one or two questions — read them")
    sig = S.verdict(0.1, (0.1, 0.1), 0.002, 10, 0.1)
    assert sig == "B is better than A by 0.1 (95% CI +0.100 to +0.100, p=0.002); " \
                  "that is one or two questions — read them"
    assert "read them" not in S.verdict(0.04, (-0.03, 0.11), 0.3, 60, 0.09)  # 2.4 questions


def test_verdict_other_cases():
    assert S.verdict(0.0, (-0.05, 0.05), 1.0, 40, 0.1).startswith(
        "no difference: A and B have the same mean (95% CI -0.050 to +0.050, p=1.00; one question")
    mixed = S.verdict(0.5, (0.2, 0.8), 0.0625, 10, 0.47)
    assert mixed.startswith("borderline: B is ahead of A by 0.5, but the evidence is mixed")
    assert "p is not below 0.05 but the interval excludes 0" in mixed
    mixed2 = S.verdict(-0.1, (-0.2, 0.01), 0.04, 100, 0.08)
    assert mixed2.startswith("borderline: A is ahead of B by 0.1")
    assert "p is below 0.05 but the interval includes 0" in mixed2
    ns = S.verdict(0.1, (-0.01, 0.2), 0.07, 100, 0.09)
    assert ns.startswith("not significant: B is ahead of A by 0.1, but that is within the noise")
    assert "90% CI" in S.verdict(0.1, (-0.01, 0.2), 0.07, 100, 0.09, confidence=0.9)


def test_verdict_rejects_bad_inputs():
    with pytest.raises(InputError, match="low 0.2 > high 0.1"):
        S.verdict(0.1, (0.2, 0.1), 0.5, 10, 0.1)
    with pytest.raises(InputError, match="p-value between 0 and 1"):
        S.verdict(0.1, (0.0, 0.2), 1.5, 10, 0.1)
    with pytest.raises(InputError, match="finite"):
        S.verdict(float("nan"), (0.0, 0.2), 0.5, 10, 0.1)
    with pytest.raises(InputError, match="integer >= 1"):
        S.verdict(0.1, (0.0, 0.2), 0.5, 0, 0.1)


# --- compare ---------------------------------------------------------------------------------


def test_compare_combines_the_pieces():
    rng = np.random.default_rng(2)
    a = (rng.random(80) < 0.55).astype(float)
    b = np.where(rng.random(80) < 0.3, 1.0, a)
    c = S.compare(a, b, names=("base", "rerank"), seed=3)
    ci = S.paired_bootstrap_diff(a, b, seed=3)
    test = S.paired_randomization_test(a, b, seed=3)
    assert (c.diff, c.ci_low, c.ci_high) == (test.diff, ci.low, ci.high)
    assert (c.p_value, c.method, c.n_permutations) == (test.p_value, test.method, test.n_permutations)
    assert c.mdd == S.minimum_detectable_difference(a, b)
    assert c.resolution == 1 / 80 and c.n == 80 and c.seed == 3
    assert c.verdict == S.verdict(c.diff, (c.ci_low, c.ci_high), c.p_value, 80, c.mdd,
                                  names=("base", "rerank"))
    assert c.verdict.startswith("rerank is better than base by")


def test_compare_is_reproducible_and_json_ready():
    rng = np.random.default_rng(4)
    a, b = rng.random(50), rng.random(50)
    c = S.compare(a, b, seed=9)
    assert c == S.compare(a, b, seed=9)
    d = c.to_dict()
    json.dumps(d, allow_nan=False)
    assert d["names"] == ["A", "B"] and d["verdict"] == c.verdict and "signature" in d
    assert c.signature.startswith("ci:percentile|conf:0.95|bs:2000|test:paired-randomization|")


def test_compare_small_exact_case():
    c = S.compare([0, 0, 0, 0, 0], [1, 1, 1, 1, 1])
    assert c.method == "exact" and c.p_value == 2 / 32 and c.n_permutations == 32
    # five wins out of five cannot reach p < 0.05 with a two-sided sign-flip test
    assert c.verdict.startswith("borderline: B is ahead of A by 1")


def test_compare_identical():
    c = S.compare([0.2, 0.5, 0.9], [0.2, 0.5, 0.9])
    assert c.p_value == 1.0 and c.diff == 0.0
    assert c.verdict.startswith("no difference")


# --- one wording with a corrected p ------------------------------------------------------------


def test_verdict_decides_on_the_corrected_p_and_shows_it_first():
    v = S.assess(0.05, (0.01, 0.09), 0.022, 100, 0.04, p_adjusted=0.157)
    assert v.reading == "not after Holm" and not v.significant
    assert v.text == ("not significant after Holm's correction: B is ahead of A by 0.05, which one test alone "
                      "would call significant, but not with the other tests of this comparison (95% CI +0.010 to "
                      "+0.090, Holm-adjusted p=0.16 (unadjusted p=0.022); one question = 0.01; differences below "
                      "about 0.04 are not detectable with 100 questions)")
    # without a correction the same numbers are a significant difference
    alone = S.assess(0.05, (0.01, 0.09), 0.022, 100, 0.04)
    assert alone.reading == "better" and alone.significant and alone.text.startswith("B is better than A by 0.05")
    sig = S.assess(-0.05, (-0.09, -0.01), 0.001, 100, 0.04, p_adjusted=0.009)
    assert sig.reading == "worse" and sig.text == ("A is better than B by 0.05 (95% CI -0.090 to -0.010, "
                                                   "Holm-adjusted p=0.009 (unadjusted p=0.001))")
    border = S.assess(0.05, (-0.01, 0.09), 0.01, 100, 0.04, p_adjusted=0.03)
    assert border.reading == "borderline" and "the Holm-adjusted p is below 0.05 but the interval includes 0" in border.text
    assert S.verdict(0.05, (0.01, 0.09), 0.022, 100, 0.04, p_adjusted=0.157) == v.text
    with pytest.raises(InputError, match="p_adjusted"):
        S.assess(0.05, (0.01, 0.09), 0.022, 100, 0.04, p_adjusted=1.5)


def test_compare_family_is_compare_per_column_then_holm():
    rng = np.random.default_rng(11)
    a = (rng.random((60, 3)) < 0.5).astype(float)
    b = np.where(rng.random((60, 3)) < np.array([0.25, 0.1, 0.0]), 1.0, a)
    family = S.compare_family(a, b, names=("x", "y"), seed=4, n_resamples=400, n_permutations=3000)
    single = [S.compare(a[:, j], b[:, j], names=("x", "y"), seed=4, n_resamples=400, n_permutations=3000)
              for j in range(3)]
    adjusted = S.holm([c.p_value for c in single])
    for c, s, q in zip(family, single, adjusted):
        assert (c.diff, c.ci_low, c.ci_high, c.p_value, c.mdd) == (s.diff, s.ci_low, s.ci_high, s.p_value, s.mdd)
        assert c.p_adjusted == q and s.p_adjusted is None
        v = S.assess(s.diff, (s.ci_low, s.ci_high), s.p_value, 60, s.mdd, p_adjusted=q, names=("x", "y"))
        assert (c.verdict, c.reading) == (v.text, v.reading)
        assert "|mcc:holm|" in c.signature and "|mcc:" not in s.signature
    assert family[2].reading == "same"
