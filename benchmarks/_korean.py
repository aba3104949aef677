"""Seeded synthetic Korean corpora and question sets for the scale benchmarks (no data files needed).

Paragraphs are ~480 characters (the size of a KorQuAD 1.0 paragraph, ≈ 275 e5 tokens) of Korean
sentences built from templates: nouns drawn from a Zipf distribution over a lexicon of real helpdesk
nouns plus synthetic Hangul nouns (so the vocabulary grows with the corpus as in real text, and BM25
postings are realistic), with particles, verbs and endings that kiwi analyses as it would real text.

Each question quotes one sentence of one paragraph as its evidence (an exact substring, so evidence
relevance works) and asks with some of that sentence's nouns plus a question ending; 10% of the
questions are out-of-corpus (``answerable: false``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import List, Tuple

import numpy as np

REAL_NOUNS = ["VPN", "이메일", "프린터", "계정", "비밀번호", "출입카드", "노트북", "모니터", "회의실", "급여",
              "명세서", "연차", "휴가", "메신저", "OTP", "와이파이", "드라이브", "결재", "화상", "보안", "법인",
              "카드", "택배", "주차", "사원증", "백업", "ERP", "서버", "네트워크", "인증서", "권한", "관리자",
              "포털", "브라우저", "캐시", "설정", "업데이트", "설치", "프로그램", "문서", "위키", "담당자",
              "신청서", "승인", "부서", "팀장", "일정", "예약", "시스템", "데이터", "파일", "폴더", "공유"]
PARTICLES_SUBJ = ["이", "가", "은", "는"]
PARTICLES_OBJ = ["을", "를"]
PARTICLES_LOC = ["에서", "에", "으로", "의"]
VERBS = ["확인하세요", "변경할 수 있습니다", "신청해야 합니다", "설치하지 마세요", "다시 시도하세요", "요청하면 됩니다",
         "처리됩니다", "제한됩니다", "자동으로 해제됩니다", "문의하시기 바랍니다", "등록해야 합니다", "보관합니다",
         "삭제됩니다", "승인을 받아야 합니다", "안내해 드립니다", "점검할 예정입니다"]
NUMBERS = ["1~2일", "30분", "5회", "오전 9시", "오후 6시", "내선 1234", "3개월", "매주 월요일", "10GB", "2단계"]
ENDS = ["어떻게 해야 하나요?", "방법 알려주세요", "어디에 문의하나요?", "해결 방법이 있나요?", "왜 그런가요?",
        "절차가 궁금합니다"]


def _common_syllables() -> List[str]:
    """The Hangul syllables of the bundled helpdesk corpus (real, common syllables), in code-point order."""
    import ragexam.data as data

    text = (Path(data.__file__).parent / "samples" / "it_helpdesk" / "corpus.jsonl").read_text(encoding="utf-8")
    return sorted({ch for ch in text if "\uac00" <= ch <= "\ud7a3"})


def _lexicon(rng: np.random.Generator, size: int) -> List[str]:
    syll = _common_syllables()
    words = set(REAL_NOUNS)
    out = list(REAL_NOUNS)
    while len(out) < size:
        w = "".join(syll[i] for i in rng.integers(0, len(syll), size=int(rng.integers(2, 4))))
        if w not in words:
            words.add(w)
            out.append(w)
    return out


def _has_coda(word: str) -> bool:
    c = ord(word[-1])
    return 0xAC00 <= c <= 0xD7A3 and (c - 0xAC00) % 28 != 0


def _josa(word: str, kind: List[str]) -> str:
    if kind is PARTICLES_SUBJ:
        return word + ("이" if _has_coda(word) else "가") if len(word) % 2 else word + ("은" if _has_coda(word) else "는")
    if kind is PARTICLES_OBJ:
        return word + ("을" if _has_coda(word) else "를")
    return word + kind[len(word) % len(kind)]


class Generator:
    """Draws sentences, paragraphs and questions from one seeded lexicon."""

    def __init__(self, seed: int, lexicon_size: int = 60_000) -> None:
        self.rng = np.random.default_rng(seed)
        self.nouns = _lexicon(self.rng, lexicon_size)
        ranks = np.arange(1, len(self.nouns) + 1, dtype=np.float64)
        p = 1.0 / ranks ** 1.07
        self.cdf = np.cumsum(p / p.sum())

        self._buf: List[int] = []
        self._u: List[float] = []

    def _draw(self) -> int:
        if not self._buf:
            self._buf = np.minimum(np.searchsorted(self.cdf, self.rng.random(1 << 16)), len(self.nouns) - 1).tolist()
            self._u = self.rng.random(1 << 16).tolist()
        self._u.pop()
        return self._buf.pop()

    def _noun(self, n: int) -> List[str]:
        return [self.nouns[self._draw()] for _ in range(n)]

    def sentence(self) -> Tuple[str, List[str]]:
        a, b, c, d = self._noun(4)
        r = self._draw() % 10
        verb = VERBS[self._draw() % len(VERBS)]
        if r < 4:
            s = f"{_josa(a, PARTICLES_LOC)} {_josa(b, PARTICLES_SUBJ)} {_josa(c, PARTICLES_OBJ)} {verb}."
            used = [a, b, c]
        elif r < 7:
            s = f"{_josa(a, PARTICLES_SUBJ)} {NUMBERS[self._draw() % len(NUMBERS)]} 안에 {_josa(b, PARTICLES_LOC)} {verb}."
            used = [a, b]
        else:
            s = f"{a} {_josa(b, PARTICLES_OBJ)} 위해 {_josa(c, PARTICLES_LOC)} {_josa(d, PARTICLES_OBJ)} {verb}."
            used = [a, b, c, d]
        return s, used

    def paragraph(self, chars: int = 480) -> Tuple[str, List[Tuple[str, List[str]]]]:
        sents: List[Tuple[str, List[str]]] = []
        total = 0
        while total < chars - 20:
            s, used = self.sentence()
            sents.append((s, used))
            total += len(s) + 1
        return " ".join(s for s, _ in sents), sents


def make_dataset(n_chunks: int, n_questions: int, seed: int = 0, out_of_corpus: float = 0.1):
    """``(docs, questions)``: ``docs`` as ``(doc_id, content)``, ``questions`` as QA dicts (JSONL records)."""
    g = Generator(seed)
    docs, sents_of = [], []
    for i in range(n_chunks):
        text, sents = g.paragraph()
        docs.append((f"p{i:07d}", text))
        sents_of.append(sents)
    return docs, _questions(g, docs, sents_of, n_questions, out_of_corpus)


def _questions(g: Generator, docs, sents_of, n_questions: int, out_of_corpus: float = 0.1) -> List[dict]:
    """Questions quoting one drawn sentence of a drawn document each (its evidence), and ``out_of_corpus`` of them
    asking about nothing in the corpus."""
    qs = []
    n_docs = len(docs)
    n_ooc = int(round(n_questions * out_of_corpus))
    picks = g.rng.choice(n_docs, size=min(n_docs, n_questions - n_ooc), replace=n_docs < n_questions - n_ooc)
    for j, d in enumerate(picks.tolist()):
        sents = sents_of[d]
        s, used = sents[int(g.rng.integers(0, len(sents)))]
        words = " ".join(used[: max(2, len(used) - 1)])
        qs.append({"query_id": f"q{j:06d}", "question": f"{words} {g.rng.choice(ENDS)}", "evidence": [s.rstrip(".")],
                   "relevant_doc_ids": [docs[d][0]], "type": "synthetic"})
    for j in range(n_ooc):
        qs.append({"query_id": f"o{j:06d}", "question": f"{' '.join(g._noun(2))} 관련 규정이 있나요?",
                   "answerable": False, "type": "out-of-corpus"})
    return qs


def write_dataset(directory: Path, n_chunks: int, n_questions: int, seed: int = 0) -> Tuple[Path, Path]:
    """Write ``corpus.jsonl`` and ``qa.jsonl`` into ``directory`` (created); returns their paths."""
    directory.mkdir(parents=True, exist_ok=True)
    docs, qs = make_dataset(n_chunks, n_questions, seed)
    corpus, qa = directory / "corpus.jsonl", directory / "qa.jsonl"
    with open(corpus, "w", encoding="utf-8") as fh:
        for doc_id, content in docs:
            fh.write(json.dumps({"doc_id": doc_id, "content": content}, ensure_ascii=False) + "\n")
    with open(qa, "w", encoding="utf-8") as fh:
        for q in qs:
            fh.write(json.dumps(q, ensure_ascii=False) + "\n")
    return corpus, qa


def make_pages(n_pages: int, n_questions: int, seed: int = 0):
    """``(docs, questions)`` shaped like a PDF extraction: each page is a short title line and 2-6 paragraphs of
    1-10 sentences separated by blank lines (most paragraphs short, a few long), ~420 characters a page; each
    question quotes one sentence of one page (evidence relevance), 10% out-of-corpus."""
    g = Generator(seed)
    rng = np.random.default_rng(seed + 1)
    docs, sents_of = [], []
    for i in range(n_pages):
        paras, sents = [], []
        for _ in range(int(rng.integers(2, 7))):
            n = int(rng.choice([1, 2, 3, 4, 6, 10], p=[.2, .2, .2, .2, .1, .1]))
            drawn = [g.sentence() for _ in range(n)]
            sents.extend(drawn)
            paras.append(" ".join(s for s, _ in drawn))
        docs.append((f"page{i:05d}", g.sentence()[0][:30] + "\n\n" + "\n\n".join(paras)))
        sents_of.append(sents)
    return docs, _questions(g, docs, sents_of, n_questions)


def write_pages(directory: Path, n_pages: int, n_questions: int, seed: int = 0) -> Tuple[Path, Path]:
    """:func:`make_pages` written as ``corpus.jsonl`` and ``qa.jsonl`` into ``directory``; returns their paths."""
    directory.mkdir(parents=True, exist_ok=True)
    docs, qs = make_pages(n_pages, n_questions, seed)
    corpus, qa = directory / "corpus.jsonl", directory / "qa.jsonl"
    corpus.write_text("".join(json.dumps({"doc_id": d, "content": c}, ensure_ascii=False) + "\n" for d, c in docs),
                      encoding="utf-8")
    qa.write_text("".join(json.dumps(q, ensure_ascii=False) + "\n" for q in qs), encoding="utf-8")
    return corpus, qa
