"""ragexam.signature.Signature: rendering, order, version last, parse round trip."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragexam import __version__
from ragexam.signature import Signature


def test_render_order_and_version_last():
    s = Signature([("tok", "13a"), ("smooth", "exp"), ("lower", False), ("k", [1, 3]), ("seed", None),
                   ("beta", 0.5)])
    assert str(s) == f"tok:13a|smooth:exp|lower:no|k:1,3|seed:none|beta:0.5|version:ragexam-{__version__}"


def test_version_stays_last_after_extend():
    s = Signature({"a": 1}).extend({"b": 2})
    assert str(s).split("|")[-1] == f"version:ragexam-{__version__}"
    assert s["b"] == "2"


def test_bad_keys_and_values():
    with pytest.raises(ValueError, match="key 'Bad Key'"):
        Signature({"Bad Key": 1})
    with pytest.raises(ValueError, match="contains '\\|'"):
        Signature({"url": "a|b"})


_key = st.from_regex(r"[a-z][a-z0-9_]{0,6}", fullmatch=True).filter(lambda k: k != "version")
_val = st.text(st.characters(blacklist_characters="|", blacklist_categories=("Cs",)), max_size=12)


@given(st.dictionaries(_key, _val, max_size=6))
def test_parse_round_trip(fields):
    s = Signature(fields)
    assert str(Signature.parse(str(s))) == str(s)
    assert Signature.parse(str(s)) == s
