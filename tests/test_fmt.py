"""ragexam.fmt: the one set of number and count formatters."""

from __future__ import annotations

import math
import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragexam import fmt


@pytest.mark.parametrize("x,digits,want", [
    (0.6154, 3, "0.615"), (1, 3, "1.000"), (0.0, 2, "0.00"), (-0.0001, 3, "0.000"), (-0.25, 2, "-0.25"),
    (None, 3, "-"), (float("nan"), 3, "-"), (float("inf"), 3, "-"), (True, 3, "-"), ("0.5", 3, "-"),
])
def test_num(x, digits, want):
    assert fmt.num(x, digits) == want


@pytest.mark.parametrize("pair,kw,want", [
    ((0.49, 0.74), {}, ".49–.74"), ([0.9231, 1.0], {}, ".92–1.00"), ((-0.05, 0.12), {}, "-.05–.12"),
    ((0.49, 0.74), {"short": False, "digits": 3}, "0.490–0.740"), (None, {}, ""), ((0.1,), {}, ""),
    ((0.1, None), {}, ""), ((0.1, float("nan")), {}, ""), ((-0.001, 0.004), {}, ".00–.00"),
])
def test_ci(pair, kw, want):
    assert fmt.ci(pair, **kw) == want


@pytest.mark.parametrize("x,want", [(0.0625, "+0.062"), (-0.015, "-0.015"), (0.0, "0.000"), (-0.0002, "0.000"),
                                    (0.0004, "0.000"), (None, "-")])
def test_signed(x, want):
    assert fmt.signed(x) == want


def test_signed_ci():
    assert fmt.signed_ci((-0.015, 0.1234)) == "-0.015 to +0.123"
    assert fmt.signed_ci(None) == "-"


@pytest.mark.parametrize("p,want,sentence", [(0.0004, "<0.001", "p<0.001"), (0.001, "0.001", "p=0.001"),
                                             (0.0219, "0.022", "p=0.022"), (0.1, "0.10", "p=0.10"),
                                             (0.2934, "0.29", "p=0.29"), (1.0, "1.00", "p=1.00"),
                                             (None, "-", "-")])
def test_p_value(p, want, sentence):
    assert fmt.p_value(p) == want
    assert fmt.p_value(p, prefix=True) == sentence


@pytest.mark.parametrize("x,want", [(0.123, "0.12"), (0.0172, "0.017"), (0.09, "0.09"), (1.5, "1.5"),
                                    (12.345, "12.35"), (0, "0"), (-0.0461, "-0.046"), (0.1, "0.1")])
def test_approx(x, want):
    assert fmt.approx(x) == want


def test_percent_and_cost():
    assert fmt.percent(0.95) == "95%" and fmt.percent(0.125, 1) == "12.5%" and fmt.percent(None) == "-"
    assert fmt.cost(0.01234) == "$0.0123" and fmt.cost("unknown") == "unknown"


@pytest.mark.parametrize("n,word,want", [
    (1, "document", "1 document"), (0, "document", "0 documents"), (2, "query", "2 queries"),
    (1, "query", "1 query"), (3, "day", "3 days"), (2, "match", "2 matches"), (2, "box", "2 boxes"),
    (5, "evidence string", "5 evidence strings"), (2, "analysis", "2 analyses"),
])
def test_plural(n, word, want):
    many = "analyses" if word == "analysis" else None
    assert fmt.plural(n, word, many) == want


def test_noun():
    assert fmt.noun(2, "query") == "queries" and fmt.noun(1, "passage") == "passage"


@pytest.mark.parametrize("text,want", [("Connection error.", "Connection error."), ("HTTP 500", "HTTP 500."),
                                       ("done..", "done."), ("wait...", "wait..."), ("why?", "why?"), ("", "")])
def test_sentence(text, want):
    assert fmt.sentence(text) == want


@given(st.floats(min_value=-1, max_value=1, allow_nan=False), st.floats(min_value=-1, max_value=1, allow_nan=False))
def test_ci_reads_back(a, b):
    lo, hi = min(a, b), max(a, b)
    text = fmt.ci((lo, hi))
    left, right = text.split("–")
    assert abs(float(left) - lo) <= 0.005 + 1e-12 and abs(float(right) - hi) <= 0.005 + 1e-12
    assert not text.startswith("0") and "–" in text


@given(st.floats(allow_nan=False, allow_infinity=False, min_value=-1e6, max_value=1e6))
def test_signed_reads_back(x):
    s = fmt.signed(x)
    assert math.isclose(float(s), x, abs_tol=0.0005 + 1e-9)
    assert s[0] in "+-" or float(s) == 0


def test_fmt_is_a_bottom_layer():
    """fmt imports nothing of ragexam (any other package may import it)."""
    code = "import sys, ragexam.fmt; print(sorted(m for m in sys.modules if m.startswith('ragexam.')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    # _version and _lazy (the lazy exports helper, which imports nothing of ragexam) come with the package
    assert out.strip() == "['ragexam._lazy', 'ragexam._version', 'ragexam.fmt']"
