"""Every public function rejects bad input with an InputError naming the parameter."""

from __future__ import annotations

import numpy as np
import pytest

from ragexam import stats as S
from ragexam.errors import InputError

PAIRED = [
    ("paired_bootstrap_diff", lambda a, b: S.paired_bootstrap_diff(a, b)),
    ("paired_randomization_test", lambda a, b: S.paired_randomization_test(a, b)),
    ("minimum_detectable_difference", lambda a, b: S.minimum_detectable_difference(a, b)),
    ("compare", lambda a, b: S.compare(a, b)),
    ("spearman", lambda a, b: S.spearman(a, b)),
    ("bootstrap_ratio_ci", lambda a, b: S.bootstrap_ratio_ci(a, b)),
]


@pytest.mark.parametrize("name, fn", PAIRED)
def test_mismatched_lengths_name_both(name, fn):
    with pytest.raises(InputError) as e:
        fn([0.1, 0.2, 0.3], [0.1, 0.2])
    msg = str(e.value)
    assert msg.startswith(f"{name}():")
    assert "has 3 values" in msg and "has 2" in msg


@pytest.mark.parametrize("name, fn", PAIRED)
def test_nan_names_the_parameter(name, fn):
    with pytest.raises(InputError, match="NaN at index 1") as e:
        fn([0.1, 0.2, 0.3], [0.1, float("nan"), 0.3])
    assert e.value.field in ("b", "denominator")


@pytest.mark.parametrize("name, fn", PAIRED)
def test_empty_raises(name, fn):
    with pytest.raises(InputError, match="no values"):
        fn([], [])


@pytest.mark.parametrize("bad, match", [
    ([], "no values"), ([1.0, np.nan], "NaN at index 1"), ([1.0, np.inf], "inf at index 1"),
    ([[1.0, 2.0], [3.0, np.nan]], "row 1, column 1"), (["0.5", "1"], "dtype <U"),
    ([0.5, None], "None at index 1"), ([[1.0], [2.0, 3.0]], "could not read"),
    (np.ones((2, 2, 2)), "shape"), (np.ones((3, 0)), "no values"), (3.0, "shape"),
])
def test_bootstrap_ci_bad_values(bad, match):
    with pytest.raises(InputError, match=match) as e:
        S.bootstrap_ci(bad)
    assert e.value.source == "bootstrap_ci()" and e.value.field == "values"


def test_2d_shape_mismatch_names_both_shapes():
    with pytest.raises(InputError, match=r"a has shape \(4, 2\) but b has shape \(4, 3\)"):
        S.paired_bootstrap_diff(np.ones((4, 2)), np.ones((4, 3)))


def test_tests_want_one_column():
    with pytest.raises(InputError, match="one metric column at a time"):
        S.paired_randomization_test(np.ones((4, 2)), np.ones((4, 2)))


@pytest.mark.parametrize("kwargs, field", [
    ({"seed": None}, "seed"), ({"seed": -1}, "seed"), ({"seed": 1.5}, "seed"), ({"seed": True}, "seed"),
    ({"n_resamples": 0}, "n_resamples"), ({"n_resamples": 10.0}, "n_resamples"),
    ({"confidence": 95}, "confidence"), ({"confidence": 1.0}, "confidence"),
    ({"confidence": 0}, "confidence"),
])
def test_bootstrap_settings(kwargs, field):
    with pytest.raises(InputError) as e:
        S.bootstrap_ci([0.1, 0.2], **kwargs)
    assert e.value.field == field


@pytest.mark.parametrize("kwargs, field", [
    ({"n_permutations": 0}, "n_permutations"), ({"alternative": "two_sided"}, "alternative"),
    ({"seed": None}, "seed"),
])
def test_randomization_settings(kwargs, field):
    with pytest.raises(InputError) as e:
        S.paired_randomization_test([0.1, 0.2], [0.2, 0.3], **kwargs)
    assert e.value.field == field


def test_mdd_settings():
    with pytest.raises(InputError) as e:
        S.minimum_detectable_difference([0.1, 0.2], [0.2, 0.4], power=80)
    assert e.value.field == "power"


def test_inputs_are_not_modified():
    a = np.array([0.1, 0.5, 0.9])
    b = np.array([0.2, 0.5, 0.7])
    a0, b0 = a.copy(), b.copy()
    S.compare(a, b)
    S.spearman(a, b)
    assert np.array_equal(a, a0) and np.array_equal(b, b0)


def test_accepts_lists_bools_ints_and_pandas():
    pd = pytest.importorskip("pandas")
    assert S.bootstrap_ci([True, False, True, True]).mean == 0.75
    assert S.bootstrap_ci(pd.Series([1, 0, 1, 1])).mean == 0.75
    assert S.paired_bootstrap_diff(pd.Series([0, 1]), [1, 1]).mean == 0.5
