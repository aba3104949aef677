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
    with pytest.raises(ValueError, match="contains '>>'"):  # '>>' joins a first stage and its reranker
        Signature({"spec": "a>>b"})


_key = st.from_regex(r"[a-z][a-z0-9_]{0,6}", fullmatch=True).filter(lambda k: k != "version")
_val = st.text(st.characters(blacklist_characters="|", blacklist_categories=("Cs",)), max_size=12).filter(
    lambda v: ">>" not in v)


@given(st.dictionaries(_key, _val, max_size=6))
def test_parse_round_trip(fields):
    s = Signature(fields)
    assert str(Signature.parse(str(s))) == str(s)
    assert Signature.parse(str(s)) == s


def test_a_signature_is_its_text():
    """A Signature is a ``str``: JSON, CSV and f-strings take it as it is, and it pickles (Ray) as itself."""
    import json
    import pickle

    s = Signature({"tok": "13a"})
    assert isinstance(s, str) and json.dumps({"s": s}) == json.dumps({"s": str(s)}) and f"{s}" == str(s)
    assert pickle.loads(pickle.dumps(s)) == s and pickle.loads(pickle.dumps(s)).items() == s.items()
    assert s[:4] == "tok:" and s["tok"] == "13a"


def test_compound_signatures_round_trip():
    first = Signature({"bm25": "kiwi", "k1": 1.5}, version=False)
    fused = Signature({"hybrid": "rrf"}, version=False).with_members([first, "bm25:whitespace"])
    reranked = fused.then(Signature({"rerank": "http:x", "shape": "tei"}, version=False), join=">>").extend({"top": 20})
    graded = reranked.then(Signature({"relevance": "evidence", "depth": 100}))
    text = str(graded)
    assert text == ("hybrid:rrf|[bm25:kiwi|k1:1.5]+[bm25:whitespace]>>rerank:http:x|shape:tei|top:20"
                    f"||relevance:evidence|depth:100|version:ragexam-{__version__}")
    back = Signature.parse(text)
    assert back == graded and back.joins == (">>", "||") and [str(m) for m in back.members] == [
        "bm25:kiwi|k1:1.5", "bm25:whitespace"]
    assert back.sections[1]["top"] == "20" and back["depth"] == "100"
    for bad in ("a:1|", "abc", "h:rrf|[a:1"):
        with pytest.raises(ValueError):
            Signature.parse(bad)
