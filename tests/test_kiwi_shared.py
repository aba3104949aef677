"""One Kiwi analyser per process, and install hints that name real extras."""

from __future__ import annotations

import re
import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]


def test_every_kiwi_user_shares_one_analyser(monkeypatch):
    import kiwipiepy

    from ragexam.data import kiwi as kiwi_mod
    from ragexam.data.chunking import sentence_spans
    from ragexam.metrics.text.tokenizers import tokenize_lines
    from ragexam.retrieval.tokenizers import KiwiTokenizer

    created = []
    real = kiwipiepy.Kiwi

    class Counting(real):  # type: ignore[misc, valid-type]
        def __init__(self, *a, **kw):
            created.append(kw)
            super().__init__(*a, **kw)

    monkeypatch.setattr(kiwipiepy, "Kiwi", Counting)
    monkeypatch.setattr(kiwi_mod, "_KIWI", None)
    text = "VPN 접속이 안 될 때는 먼저 OTP 앱의 시간을 확인하세요. 그래도 안 되면 헬프데스크에 문의하세요."
    assert len(sentence_spans(text)) == 2
    assert KiwiTokenizer().tokenize([text])[0][:2] == ["vpn", "접속"]
    assert tokenize_lines([text], "ko-kiwi")[0][:3] == ["VPN", "접속", "이"]
    assert len(created) == 1
    assert created[0]["model_type"] == kiwi_mod.KIWI_MODEL_TYPE


def test_install_hints_name_extras_that_exist():
    extras = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"])
    calls = []
    for path in (ROOT / "src" / "ragexam").rglob("*.py"):
        for m in re.finditer(r"MissingDependencyError\(\s*[^,]+,\s*\"([^\"]+)\"", path.read_text()):
            calls.append((path.name, m.group(1)))
    assert calls, "no MissingDependencyError call found: the pattern is stale"
    bad = [(f, e) for f, e in calls if e not in extras]
    assert not bad, f"install hints name extras that pyproject.toml does not define: {bad}"


def _bundled_text() -> str:
    import json

    path = ROOT / "src" / "ragexam" / "data" / "samples" / "it_helpdesk" / "corpus.jsonl"
    return "\n".join(json.loads(line)["content"] for line in path.read_text(encoding="utf-8").splitlines())


def test_pieces_cover_the_text_and_stay_short():
    from ragexam.data.kiwi import pieces

    text = _bundled_text()
    assert len(text) > 10_000
    parts = pieces(text, 1000)
    assert "".join(p for _, p in parts) == text
    assert all(text[off:off + len(p)] == p for off, p in parts)
    assert max(len(p) for _, p in parts) <= 1000
    assert pieces("", 10) == []
    assert pieces("a" * 25, 10) == [(0, "a" * 10), (10, "a" * 10), (20, "a" * 5)]  # no break point: hard cuts


def test_long_texts_give_the_same_morphemes_in_pieces():
    """Kiwi's time grows faster than the length of one string, so long texts are analysed in pieces; on
    ordinary text the morphemes are the same as analysing the whole string at once."""
    from ragexam.data.kiwi import PIECE_CHARS, kiwi, tokenize

    text = _bundled_text()
    assert len(text) > 2 * PIECE_CHARS
    whole = [(t.form, t.tag) for t in kiwi().tokenize(text)]
    cut = [(t.form, t.tag) for t in tokenize([text])[0]]
    assert cut == whole
