"""Deterministic replies to the question generator's prompts, for :class:`ragexam.testing.StubEndpoint`.

With no model behind it, the stub answers ``ragexam generate``'s three prompts so that the whole command
runs offline (tests, CI, examples) -- the *numbers* say nothing about a model:

* a **generation** prompt (``<passage ...>`` blocks): for each question asked, one sentence of the passages
  (the request number picks which, so a second request asks about other sentences) becomes the evidence
  (its text, or its number ``[k]`` when the passages are numbered) and the answer; the question is built
  from the sentence's first nouns (Kiwi for Korean) -- "``N1 N2``에 대해 알려 주세요." / "What does the
  documentation say about ``N1 N2``?" -- or, for ``lexical``, around a code-like token of the sentence;
  ``multi`` joins one sentence of each of two passages; ``out_of_corpus`` asks about a topic from a fixed
  list (HR and IT topics ragexam's bundled corpora do not cover);
* a ``--cite focus`` generation prompt (``Sentence: ...`` / ``문장: ...`` lines after worked examples): the
  question is built from the first sentence's nouns as above, the answer is the sentence;
* a **reader** prompt (the answerable-from-evidence check): the evidence line sharing the most character
  bigrams with the question, or the decline sentence when none shares a quarter of them;
* the **critic** rubric (``question_critic``): 3 (passes) when the question shares a term with the evidence,
  else 1.

:func:`stub_reply` returns ``None`` for any other prompt (the stub then answers as before).

:func:`call_kind` and :func:`replay_key` name a request the way recorded real replies are looked up
(``benchmarks/bench_generate_llm.py --record`` writes them, ``tests/test_generate_replay.py`` serves them):
the kind of call and what it is about, not its exact wording, so a recording survives a reworded prompt.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Any, Dict, List, Optional, Tuple

__all__ = ["stub_reply", "OOC_TOPICS", "call_kind", "replay_key", "request_sha"]

_PASSAGE = re.compile(r'<passage id="([^"]+)"[^>]*>\n(.*?)\n</passage>', re.S)
_NUMBERED = re.compile(r"^\[(\d+)\] (.*)$", re.M)
_KIND = re.compile(r'"type": "([a-z_0-9]+)"\}\]\}')
_N = re.compile(r"질문을 (\d+)개|write (\d+) questions")
_REQUEST = re.compile(r"(\d+)번째 요청|request number (\d+)")
_READER = re.compile(r"^## (?:글|Text)\n(.*?)\n\n## (?:질문|Question)\n(.*?)\n\n## ", re.S | re.M)
#: a sentence line of a ``--cite focus`` request (the last user message that has one is the request)
_FOCUS_LINE = re.compile(r"^(?:Sentence|문장)(?: \d+ \((?:.*?)\))?: (.*)$", re.M)
_SENT = re.compile(r"(?<=[.!?。])\s+|\n+")
_CODE = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:[-_./][A-Za-z0-9]+)+|[A-Z]{2,}[A-Za-z0-9]*|\d+(?:[.,]\d+)*")
#: out-of-corpus topics (ko, en)
OOC_TOPICS = [("사내 어린이집 운영 시간", "the opening hours of the company daycare"),
              ("명절 선물 신청 기간", "the holiday gift request period"),
              ("퇴직연금 운용 상품 변경", "changing the pension fund product"),
              ("사내 동호회 지원금", "the club activity allowance"),
              ("구내식당 주간 메뉴", "the cafeteria's weekly menu"),
              ("사택 입주 신청", "applying for company housing")]


def overlap(a: str, b: str) -> float:
    """Share of ``a``'s character bigrams (within words, lower-cased) found in ``b``."""
    def grams(t: str) -> set:
        return {w[i:i + 2] for w in re.findall(r"\w+", t.lower()) for i in range(max(1, len(w) - 1))}

    ga = grams(a)
    return len(ga & grams(b)) / len(ga) if ga else 0.0


def _korean(text: str) -> bool:
    letters = [c for c in text if c.isalpha()]
    return bool(letters) and sum("가" <= c <= "힣" for c in letters) / len(letters) >= 0.3


def _sentences(body: str) -> List[Tuple[Optional[int], str]]:
    numbered = _NUMBERED.findall(body)
    if numbered:
        return [(int(k), t.strip()) for k, t in numbered]
    return [(None, s.strip()) for s in _SENT.split(body) if len(s.strip()) >= 12]


def _nouns(text: str, korean: bool) -> List[str]:
    if korean:
        from ragexam.data.kiwi import tokenize

        return list(dict.fromkeys(t.form for t in tokenize([text])[0] if t.tag in ("NNG", "NNP") and len(t.form) > 1))
    return [w for w in re.findall(r"[A-Za-z]{4,}", text) if w.lower() not in ("this", "that", "with", "from")]


def _question(kind: str, sentence: str, korean: bool) -> str:
    nouns = _nouns(sentence, korean)[:2] or ["이 규정" if korean else "this rule"]
    code = next((m.group() for m in _CODE.finditer(sentence) if any(c.isdigit() or c.isupper() for c in m.group())),
                None)
    topic = " ".join(nouns)
    if kind == "lexical" and code:
        return f"{code}와 관련된 {topic} 규정을 알려 주세요." if korean else f"What does {code} mean for {topic}?"
    return f"{topic}에 대해 알려 주세요." if korean else f"What does the company say about {topic.lower()}?"


def _generation(user: str) -> str:
    passages = _PASSAGE.findall(user)
    kind = (_KIND.search(user) or [None, "meaning"])[1]
    m = _N.search(user)
    n = next(int(g) for g in m.groups() if g) if m else 1
    r = _REQUEST.search(user)
    request = next((int(g) for g in r.groups() if g), 1) if r else 1
    korean = _korean(user)
    items: List[Dict[str, Any]] = []
    if kind == "out_of_corpus":
        for j in range(n):
            ko, en = OOC_TOPICS[((request - 1) * n + j + sum(map(ord, passages[0][0]))) % len(OOC_TOPICS)]
            items.append({"question": f"{ko}은 어떻게 되나요?" if korean else f"What is {en}?", "answer": "",
                          "evidence": [], "type": kind})
        return json.dumps({"questions": items}, ensure_ascii=False)
    per = [_sentences(body) for _, body in passages]
    if kind == "multi" and len(per) >= 2 and per[0] and per[1]:
        a = per[0][(request - 1) % len(per[0])]
        b = per[1][(request - 1) % len(per[1])]
        q = _question("meaning", a[1], korean).rstrip(".?") + (", 그리고 " if korean else ", and ") + \
            _question("meaning", b[1], korean)
        ev = [a[0], b[0]] if a[0] is not None else [a[1], b[1]]
        items.append({"question": q, "answer": f"{a[1]} {b[1]}", "evidence": ev, "type": kind})
        return json.dumps({"questions": items}, ensure_ascii=False)
    flat = [s for sents in per for s in sents]
    for j in range(n):
        i = (request - 1) * n + j
        if i >= len(flat):
            break
        number, text = flat[i]
        items.append({"question": _question(kind, text, korean), "answer": text,
                      "evidence": [number if number is not None else text], "type": kind})
    return json.dumps({"questions": items}, ensure_ascii=False)


def _focus(user: str) -> str:
    sentences = [t.strip() for t in _FOCUS_LINE.findall(user)]
    korean = _korean(" ".join(sentences))
    return json.dumps({"question": _question("meaning", sentences[0], korean).replace("에 대해 알려 주세요.", "은 어떻게 되나요?"),
                       "answer": " ".join(sentences)}, ensure_ascii=False)


def _request(msgs: List[Dict[str, Any]], pattern: "re.Pattern[str]") -> Tuple[int, str]:
    """(index, text) of the last user message that matches ``pattern`` -- the request, after any worked examples
    (earlier turns) and before any feedback -- else of the first user message."""
    for i in range(len(msgs) - 1, -1, -1):
        m = msgs[i]
        if m.get("role") == "user" and isinstance(m.get("content"), str) and pattern.search(m["content"]):
            return i, m["content"]
    i = next((i for i, m in enumerate(msgs) if m.get("role") == "user"), -1)
    return i, (msgs[i].get("content") or "") if i >= 0 else ""


def _reader(user: str) -> str:
    from ragexam.questions.prompts import DECLINE

    m = _READER.search(user)
    if not m:
        return DECLINE["ko"]
    evidence, question = m.group(1), m.group(2).strip()
    lines = [ln.strip() for ln in evidence.splitlines() if ln.strip()]
    best = max(lines, key=lambda ln: overlap(question, ln), default="")
    if not best or overlap(question, best) < 0.25:
        return DECLINE["ko" if _korean(question) else "en"]
    return best


def _critic(user: str) -> str:
    q = re.search(r"^## (?:질문|Question)\n(.*?)\n\n", user.split("# 채점할 자료")[-1].split("# Material to grade")[-1],
                  re.S | re.M)
    ctx = user.rsplit("## 검색된 컨텍스트", 1)[-1] if "## 검색된 컨텍스트" in user else user.rsplit("## Retrieved contexts", 1)[-1]
    question = q.group(1).strip() if q else ""
    ok = overlap(question, ctx) >= 0.2
    return json.dumps({"reasoning": "stub: shares words with the evidence" if ok else "stub: shares no words",
                       "score": 3 if ok else 1}, ensure_ascii=False)


def stub_reply(body: Dict[str, Any]) -> Optional[str]:
    """The reply to one of the generator's prompts (see the module docstring), or ``None``."""
    msgs = body.get("messages") or []
    user = next((m.get("content") or "" for m in msgs if m.get("role") == "user"), "")
    if not isinstance(user, str):
        return None
    kind = call_kind(body)
    if kind == "generation":
        return _generation(user)
    if kind == "generation:focus":
        return _focus(_request(msgs, _FOCUS_LINE)[1])
    if kind == "reader":
        return _reader(_request(msgs, _READER)[1])
    if kind == "judge:question_critic":
        return _critic(user)
    return None


def call_kind(body: Dict[str, Any]) -> str:
    """``generation``, ``generation:focus`` (a ``--cite focus`` call), ``reader`` or ``judge:<metric>`` (the reply
    schema's name) of a chat request."""
    msgs = body.get("messages") or []
    user = next((m.get("content") or "" for m in msgs if m.get("role") == "user"), "")
    if isinstance(user, str) and "<passage id=" in user:
        return "generation"
    system = msgs[0].get("content") if msgs else None
    readers, generators = _systems()
    if system in readers:
        return "reader"
    name = ((body.get("response_format") or {}).get("json_schema") or {}).get("name")
    if name in ("questions", None) and system in generators and _FOCUS_LINE.search(_request(msgs, _FOCUS_LINE)[1]):
        return "generation:focus"
    return "judge:" + (name or "?")


@lru_cache(maxsize=1)
def _systems() -> Tuple[frozenset, frozenset]:
    """The system messages of the bundled reader and generation prompts (both instruction languages)."""
    from ragexam.questions.prompts import load_prompts, load_reader

    return (frozenset(load_reader(lang).sections["system"] for lang in ("ko", "en")),
            frozenset(load_prompts(lang).sections["system"] for lang in ("ko", "en")))


def _after(user: str, names: Tuple[str, ...]) -> str:
    for name in names:
        m = re.search(r"^## " + re.escape(name) + r"\n(.*?)(?=\n\n## |\n\n# |\Z)", user, re.S | re.M)
        if m:
            return " ".join(m.group(1).split())
    return ""


def replay_key(body: Dict[str, Any]) -> str:
    """What a request is about: for a generation call its kind, passages, request number and attempt (a focus call:
    its sentences and attempt); for the reader its question and evidence; for a judge call its metric, question,
    answer, contexts and reference."""
    kind = call_kind(body)
    msgs = body.get("messages") or []
    user = next((m.get("content") or "" for m in msgs if m.get("role") == "user"), "")
    if kind == "generation":
        ids = ",".join(d for d, _ in _PASSAGE.findall(user))
        k = _KIND.search(user)
        r = _REQUEST.search(user)
        request = next((g for g in r.groups() if g), "1") if r else "1"
        attempt = sum(1 for m in msgs if m.get("role") == "assistant")
        numbered = "numbered" if _NUMBERED.search(user) else "text"
        return f"generation|{k.group(1) if k else '?'}|{ids}|{request}|{attempt}|{numbered}"
    if kind == "generation:focus":
        i, req = _request(msgs, _FOCUS_LINE)
        attempt = sum(1 for m in msgs[i:] if m.get("role") == "assistant")
        sentences = " / ".join(" ".join(t.split()) for t in _FOCUS_LINE.findall(req))
        return f"generation:focus|{sentences}|{attempt}"
    if kind == "reader":
        m = _READER.search(_request(msgs, _READER)[1])
        return f"reader|{' '.join(m.group(2).split()) if m else ''}|{' '.join(m.group(1).split()) if m else ''}"
    material = re.split(r"\n# (?:채점할 자료|Material to grade)\n", user)[-1]
    fields = [_after(material, names) for names in (("질문", "Question"), ("답변", "Answer"),
                                                    ("검색된 컨텍스트", "Retrieved contexts"),
                                                    ("정답", "Reference answer"))]
    return "|".join([kind] + fields)


def request_sha(body: Dict[str, Any]) -> str:
    """SHA-256 (16 hex) of what a model sees of a request: messages, reply schema, sampling settings."""
    import hashlib

    part = {k: body.get(k) for k in ("messages", "response_format", "temperature", "max_tokens", "seed")}
    return hashlib.sha256(json.dumps(part, ensure_ascii=False, sort_keys=True).encode("utf-8")).hexdigest()[:16]
