"""Batch tokenizers equal sacrebleu's line-by-line tokenizers, also on adversarial text."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragexam.metrics.text.synthetic import random_pairs
from ragexam.metrics.text.tokenizers import tokenize_lines

pytest.importorskip("sacrebleu")
from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a  # noqa: E402
from sacrebleu.tokenizers.tokenizer_char import TokenizerChar  # noqa: E402
from sacrebleu.tokenizers.tokenizer_intl import TokenizerV14International  # noqa: E402

SACRE = {"13a": Tokenizer13a, "intl": TokenizerV14International, "char": TokenizerChar}
# characters that drive the 13a / intl rules: digits, . , -, every ASCII punctuation mark,
# entities, newlines, Unicode punctuation, symbols and numbers (including the intl separator)
TRICKY = list("0123456789.,-- \t\n&;<>\"'()[]{}!?$%#@/\\:*+=^_`|~ab가나") + [
    "&amp;", "&quot;", "&lt;", "&gt;", "<skipped>", "-\n", "…", "·", "—", "「", "」", "€", "½", "Ⅳ",
    "\u2188", "\u00a0", "\u3000", "١", "²"]
lines_strategy = st.lists(st.lists(st.sampled_from(TRICKY), max_size=30).map("".join), min_size=1, max_size=8)


def _sacre(name, lines):
    tok = SACRE[name]()
    return [tok(line).split() for line in lines]


@pytest.mark.parametrize("name", ["13a", "intl", "char"])
@settings(max_examples=400, deadline=None)
@given(lines=lines_strategy)
def test_adversarial_lines(name, lines):
    lines = [line.rstrip() for line in lines]  # BLEU right-strips before tokenizing
    assert tokenize_lines(lines, name) == _sacre(name, lines)


@pytest.mark.parametrize("name", ["13a", "intl", "char", "none"])
@pytest.mark.parametrize("lang", ["en", "ko"])
def test_random_corpus(name, lang):
    hyps, refs = random_pairs(2000, lang, seed=51)
    lines = [line.rstrip() for line in hyps + [r[0] for r in refs]]
    expected = [line.split() for line in lines] if name == "none" else _sacre(name, lines)
    assert tokenize_lines(lines, name) == expected


def test_ko_mecab_equals_sacrebleu():
    pytest.importorskip("mecab_ko")
    from sacrebleu.tokenizers.tokenizer_ko_mecab import TokenizerKoMecab

    tok = TokenizerKoMecab()
    hyps, refs = random_pairs(300, "ko", seed=52)
    lines = [line.rstrip() for line in hyps + [r[0] for r in refs]]
    assert tokenize_lines(lines, "ko-mecab") == [tok(line).split() for line in lines]
