"""The one check of a choice, a whole number and a finite number (``ragexam.errors``): what passes, and the message
of what does not (received, expected, where, the fix)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragexam.errors import InputError, integer_in, number_in, one_of


def _message(fn, *args, **kwargs) -> str:
    with pytest.raises(InputError) as ei:
        fn(*args, **kwargs)
    return str(ei.value)


def test_one_of_returns_the_value_or_names_what_was_received_and_the_choices():
    assert one_of("rrf", ("rrf", "wsum")) == "rrf"
    assert one_of("b", {"a": 1, "b": 2}) == "b"  # a mapping's keys are its choices
    assert _message(one_of, "max", ("rrf", "wsum"), source="hybrid", field="method", what="fusion method") == \
        "hybrid: field 'method': unknown fusion method 'max'; expected one of rrf, wsum."
    assert _message(one_of, "x", ("a", "b"), source="f.jsonl", line=3, field="mode") == \
        "f.jsonl:3: field 'mode': received 'x'; expected one of a, b."


def test_integer_in_takes_python_and_numpy_integers_and_never_a_bool():
    assert integer_in(3, 1) == 3 and type(integer_in(np.int64(3), 1)) is int
    assert integer_in(-5) == -5 and integer_in(5, 1, 5) == 5
    for bad in (True, False, 2.0, "2", None, np.bool_(True)):
        assert "expected an integer" in _message(integer_in, bad)
    assert _message(integer_in, 0, 1, source="--repeat", field="repeat") == \
        "--repeat: field 'repeat': received 0; expected an integer >= 1."
    assert _message(integer_in, 7, 1, 5) == "received 7; expected an integer from 1 to 5."
    assert _message(integer_in, 9, None, 5) == "received 9; expected an integer <= 5."
    assert _message(integer_in, 0, 1, what="the number of workers") == \
        "received 0; expected the number of workers, an integer >= 1."


def test_number_in_bounds_open_or_closed_and_the_fix():
    assert number_in(0.5, 0, 1) == 0.5 and type(number_in(np.float32(2), 0)) is float and number_in(1, 0, 1) == 1.0
    for bad in (True, math.nan, math.inf, -math.inf, "0.5", None):
        assert "expected a finite number" in _message(number_in, bad)
    assert _message(number_in, 0, 0, above=True) == "received 0; expected a number > 0."
    assert _message(number_in, 1, 0, 1, above=True, below=True, source="bootstrap_ci()", field="confidence",
                    fix="Fix: use 0.95.") == \
        "bootstrap_ci(): field 'confidence': received 1; expected a number in (0, 1). Fix: use 0.95."
    assert _message(number_in, 0, 0, 1, above=True) == "received 0; expected a number in (0, 1]."
    assert _message(number_in, 3, 0, 2, what="a temperature") == "received 3; expected a temperature from 0 to 2."
    assert _message(number_in, "x", what="a finite number (or null)") == \
        "received 'x'; expected a finite number (or null)."


@given(st.floats(allow_nan=True, allow_infinity=True), st.floats(-10, 10), st.floats(-10, 10), st.booleans(),
       st.booleans())
def test_number_in_passes_exactly_the_finite_numbers_inside_the_bounds(x, a, b, above, below):
    low, high = min(a, b), max(a, b)
    inside = math.isfinite(x) and (x > low if above else x >= low) and (x < high if below else x <= high)
    if inside:
        assert number_in(x, low, high, above=above, below=below) == x
    else:
        with pytest.raises(InputError):
            number_in(x, low, high, above=above, below=below)


@given(st.integers(-1000, 1000), st.integers(-50, 50), st.integers(-50, 50))
def test_integer_in_passes_exactly_the_integers_inside_the_bounds(x, a, b):
    low, high = min(a, b), max(a, b)
    if low <= x <= high:
        assert integer_in(x, low, high) == x
    else:
        with pytest.raises(InputError, match=f"expected an integer from {low} to {high}"):
            integer_in(x, low, high)


def test_did_you_mean_names_a_close_known_spelling_only():
    from ragexam.errors import did_you_mean

    assert did_you_mean("bm26", ["bm25", "dense"]) == " Did you mean 'bm25'?"
    assert did_you_mean("DENSE", ["bm25", "dense"]) == " Did you mean 'dense'?"
    assert did_you_mean("paragraph", ["paragraphs"], spell="{}:400") == " Did you mean 'paragraphs:400'?"
    assert did_you_mean("bm25", ["bm25", "dense"]) == ""
    assert did_you_mean("zzz", ["bm25", "dense"]) == ""
