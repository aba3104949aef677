"""Seeded synthetic sentence pairs for testing and benchmarking the text metrics.

:func:`random_pairs` makes ``(hypothesis, references)`` pairs in English or Korean from a small
vocabulary, so that hypotheses and references overlap at every n-gram order.  The generator is
built to hit tokenizer and metric edge cases: punctuation glued to words (``word,`` ``(word)``),
numbers with separators (``3.14``, ``1,000``, ``2024-05``), symbols (``$``, ``%``, ``&amp;``),
mixed case, runs of spaces and tabs, Korean stems with particles, empty hypotheses, and
hypotheses shorter than four tokens (so that higher n-gram orders are missing).

Nothing here is random at import time; the same ``seed`` always gives the same pairs.
"""

from __future__ import annotations

__all__ = ["random_pairs", "random_sentence"]

_EN_WORDS = (
    "the a an of to in on for with is are was be retrieval answer question model "
    "context passage document index query score rank vector dense sparse token "
    "Paris London Seoul OpenAI BLEU chrF ROUGE evaluation system user data "
    "fast slow good bad new old first last best worst Pipeline Retriever Reader "
    "don't it's can't U.S. e.g. co-operate state-of-the-art"
).split()
_KO_STEMS = (
    "트랜스포머 메커니즘 셀프 어텐션 입력 시퀀스 위치 관계 병렬 처리 모델 검색 문서 질문 답변 "
    "비밀번호 계정 서비스 포털 인증 시간 확인 접속 평가 지표 정답 근거 결과 사용자 데이터"
).split()
_KO_PARTICLES = ("", "", "", "은", "는", "이", "가", "을", "를", "의", "에", "에서", "으로", "로", "와", "과", "도")
_KO_WORDS = (
    "합니다 했습니다 하세요 입니다 있습니다 없습니다 됩니다 모든 간 내 먼저 다시 VPN OTP API "
    "사용하여 처리합니다 확인하세요 잠기니 초기화하세요"
).split()
_NUMBERS = ("3.14", "1,000", "2024-05", "42", "0", "10%", "$5", "1.5x", "12:30", "7")
_PUNCT = (",", ".", "!", "?", ";", ":", "(", ")", "\"", "'", "-", "/", "&amp;", "&lt;", "…", "·", "—", "~")


def random_sentence(rng, lang: str = "en", min_len: int = 1, max_len: int = 25) -> str:
    """One random sentence of ``min_len``–``max_len`` tokens in ``lang`` (``"en"`` or ``"ko"``).

    ``rng`` is a :class:`numpy.random.Generator`.  Tokens are joined by single spaces, with a
    few glued punctuation marks, numbers and symbols mixed in.
    """
    n = int(rng.integers(min_len, max_len + 1))
    toks = []
    for _ in range(n):
        u = rng.random()
        if u < 0.08:
            tok = _NUMBERS[rng.integers(len(_NUMBERS))]
        elif u < 0.14:
            tok = _PUNCT[rng.integers(len(_PUNCT))]
        elif lang == "ko":
            if rng.random() < 0.7:
                tok = _KO_STEMS[rng.integers(len(_KO_STEMS))] + _KO_PARTICLES[rng.integers(len(_KO_PARTICLES))]
            else:
                tok = _KO_WORDS[rng.integers(len(_KO_WORDS))]
        else:
            tok = _EN_WORDS[rng.integers(len(_EN_WORDS))]
            if rng.random() < 0.1:
                tok = tok.upper() if rng.random() < 0.5 else tok.capitalize()
        if rng.random() < 0.1:  # glue punctuation to the word
            p = _PUNCT[rng.integers(len(_PUNCT))]
            tok = tok + p if rng.random() < 0.7 else p + tok
        toks.append(tok)
    return _join(rng, toks)


def _join(rng, toks) -> str:
    out = []
    for i, tok in enumerate(toks):
        if i:
            u = rng.random()
            out.append("  " if u < 0.03 else "\t" if u < 0.04 else " ")
        out.append(tok)
    s = "".join(out)
    u = rng.random()
    if u < 0.05:
        s = " " + s + "  "
    elif u < 0.25:
        s += "."
    return s


def _perturb(rng, ref: str, lang: str) -> str:
    """A hypothesis made from ``ref`` by dropping, swapping, replacing and inserting tokens."""
    toks = ref.split()
    out = []
    for tok in toks:
        u = rng.random()
        if u < 0.12:
            continue  # drop
        if u < 0.25:
            out.append(random_sentence(rng, lang, 1, 1))  # replace
            continue
        if u < 0.30 and lang == "ko" and len(tok) > 1:
            tok = tok[:-1] + _KO_PARTICLES[rng.integers(1, len(_KO_PARTICLES))]  # change a particle
        if u < 0.33:
            tok = tok.lower()
        out.append(tok)
        if rng.random() < 0.06:
            out.append(random_sentence(rng, lang, 1, 2))  # insert
    if len(out) > 2 and rng.random() < 0.2:
        i = int(rng.integers(len(out) - 1))
        out[i], out[i + 1] = out[i + 1], out[i]
    return _join(rng, out)


def random_pairs(n: int, lang: str = "en", seed: int = 0, n_refs: int = 1,
                 p_empty: float = 0.03) -> tuple[list[str], list[list[str]]]:
    """``n`` seeded ``(hypothesis, references)`` pairs.

    :param n: number of pairs.
    :param lang: ``"en"``, ``"ko"`` or ``"mixed"`` (each pair picks one of the two).
    :param seed: seed of :func:`numpy.random.default_rng`; equal seeds give equal pairs.
    :param n_refs: references per hypothesis.  ``0`` means a random count in 1..3 per pair.
    :param p_empty: probability that a hypothesis is empty (``""`` or only spaces).
    :return: ``(hypotheses, references)`` where ``references[i]`` is the list of references of
        ``hypotheses[i]`` (ragexam's per-segment layout).
    """
    import numpy as np

    rng = np.random.default_rng(seed)
    hyps: list[str] = []
    refs: list[list[str]] = []
    for _ in range(n):
        pair_lang = lang if lang != "mixed" else ("en", "ko")[int(rng.integers(2))]
        k = n_refs if n_refs > 0 else int(rng.integers(1, 4))
        r = [random_sentence(rng, pair_lang, 0 if rng.random() < 0.01 else 1) for _ in range(k)]
        u = rng.random()
        if u < p_empty:
            h = "" if rng.random() < 0.5 else "   "
        elif u < p_empty + 0.1:
            h = random_sentence(rng, pair_lang, 1, 3)  # short: missing higher orders
        elif u < p_empty + 0.2:
            h = random_sentence(rng, pair_lang)  # unrelated
        else:
            h = _perturb(rng, r[int(rng.integers(k))], pair_lang)
        hyps.append(h)
        refs.append(r)
    return hyps, refs
