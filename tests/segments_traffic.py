"""The production traffic of the segments tests (``ragexam score --by``): four days of a RAG service over the bundled
it_helpdesk corpus, with a model switch and a prompt change.

* 2025-03-03 and 03-04: ``gpt-4o-mini``; 03-05 and 03-06: ``qwen2.5-7b-instruct`` (the switch), which declines
  every fourth question it could answer and answers every fifth with its first sentence only;
* tag ``prompt-v1`` on 03-03, ``prompt-v2`` from 03-04 on (the prompt change: it appends a pointer to the help
  desk); the questions about VPN also carry the tag ``vpn`` (an answer in two tags);
* 03-03 and 03-05 ask the first 12 answerable questions, 03-04 and 03-06 the 10th to the 22nd: a day and the next
  share 3 questions (an unpaired comparison), a model and the other all 22 (paired);
* every day also asks one user's paraphrase of an exam question (a near duplicate, :data:`NEAR`), one question
  with another error code than the exam question it copies (:data:`OTHER_DIGITS`, not the same question) and one
  question the exam does not have (:data:`OFF_TOPIC`); one request on 03-06 failed (a timeout);
* timestamps in Korean time (``+09:00``) -- a request at 08:30 KST is the previous day in UTC --, latencies,
  tokens, hashed-looking users, thumbs on some answers (down on the declines).

:func:`traces` builds them; ``python tests/segments_traffic.py`` writes :data:`ANSWERS` (the answers file, as an
application that logs its own answers would) and :data:`LANGFUSE` (the same requests as Langfuse's API export,
:func:`ragexam.data.traces.writers.langfuse_records`); a test checks the stored files are what it builds.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import List

from ragexam.analysis.answers.files import load_answers
from ragexam.analysis.answers.traces import answer_record
from ragexam.data.loaders import load_corpus, load_qa
from ragexam.data.traces import writers
from ragexam.data.traces.mapping import MappedTrace
from ragexam.data.traces.meta import Feedback, RetrievedDoc, TraceMeta

DATA = Path(__file__).parent / "data" / "traces"
ANSWERS = DATA / "segments_answers.jsonl"
LANGFUSE = DATA / "segments_langfuse.jsonl"
DAYS = ("2025-03-03", "2025-03-04", "2025-03-05", "2025-03-06")
MODELS = ("gpt-4o-mini", "qwen2.5-7b-instruct")
DECLINE = "제공된 문서에서 찾을 수 없습니다."
#: (exam question id, a user's paraphrase that e5 puts at cosine >= 0.92 of it)
NEAR = ("hq_001", "호텔에서 VPN 켜니까 VPN-ERR-619 떠요 어떻게 해요")
#: the exam question hq_001 with another error code: not the same question (the numbers differ)
OTHER_DIGITS = "호텔 와이파이에서 VPN 연결하면 VPN-ERR-733가 떠요. 어떻게 해결하나요?"
OFF_TOPIC = "오늘 구내식당 점심 메뉴가 뭐예요?"


def _answer(model: str, day: int, i: int, text: str) -> str:
    if model == MODELS[1] and i % 4 == 3:
        return DECLINE
    if model == MODELS[1] and i % 5 == 4:
        text = text.split(". ")[0].rstrip(".") + "."
    return text + (" 더 궁금한 점은 IT 헬프데스크(내선 1234)에 문의하세요." if day > 0 else "")


def _meta(k: int, day: int, model: str, question: str, negative: bool, docs: List[str]) -> TraceMeta:
    hour = (8 + 3 * (k % 5)) if k % 7 else 8  # 08:xx KST is the previous day in UTC
    minute = (k * 7) % 60
    ts = f"{DAYS[day]}T{hour:02d}:{minute:02d}:{k % 60:02d}.{k * 1013 % 1000000:06d}+09:00"
    slow = 2.1 if model == MODELS[1] else 1.0
    fb = (Feedback("thumbs", 0.0, "thumbs_down", "HUMAN", "답을 안 해 줘요"),) if negative else (
        (Feedback("thumbs", 1.0, "thumbs_up", "HUMAN", None),) if k % 3 == 0 else ())
    tags = ("prompt-v1" if day == 0 else "prompt-v2",) + (("vpn",) if "VPN" in question else ())
    tokens_in, tokens_out = 320 + (k * 13) % 150, 40 + (k * 11) % 90
    return TraceMeta("langfuse", f"seg-{k:03d}", ts, round(slow * (700 + (k * 37) % 900) + 0.25 * k, 3), model,
                     tokens_in, tokens_out, tokens_in + tokens_out, f"user-{k % 7}", f"session-{k // 3}", tags, fb,
                     tuple(RetrievedDoc(d, r, round(0.9 - 0.15 * r, 4)) for r, d in enumerate(docs, 1)),
                     (("retrieval", "retrieve"), ("generation", "generate")))


def traces() -> List[MappedTrace]:
    """The traffic (module docstring), in time order."""
    qa = load_qa("it_helpdesk")
    answerable = [q for q in qa if q.answerable]
    by_id = {q.query_id: q for q in qa}
    answers = {a.query_id: a.answer for a in load_answers("it_helpdesk")}
    docs = {d.doc_id: d.content for d in load_corpus("it_helpdesk").documents}
    ids = sorted(docs)
    out: List[MappedTrace] = []
    for day in range(4):
        model = MODELS[day // 2]
        asked = answerable[:12] if day % 2 == 0 else answerable[9:22]
        extra = [(by_id[NEAR[0]], NEAR[1]), (by_id[NEAR[0]], OTHER_DIGITS), (None, OFF_TOPIC)]
        for i, (q, text) in enumerate([(q, q.question) for q in asked] + extra):
            k = len(out)
            chosen = list(dict.fromkeys(list(q.relevant_doc_ids) + [ids[(k * 7) % len(ids)]]))[:3] if q is not None \
                else [ids[k % len(ids)]]
            answer = _answer(model, day, i, answers.get(q.query_id, "") if q is not None else DECLINE)
            failed = day == 3 and i == 5
            meta = _meta(k, day, model, text, answer == DECLINE and q is not None, chosen)
            out.append(MappedTrace(meta.trace_id, text, None if failed else answer,
                                   "timeout after 30 s" if failed else None, tuple(docs[d] for d in chosen),
                                   tuple(chosen), meta))
    return out


def answers_text() -> str:
    """The answers file (:data:`ANSWERS`)."""
    return "".join(json.dumps(answer_record(m).to_dict(), ensure_ascii=False) + "\n" for m in traces())


def langfuse_text() -> str:
    """The Langfuse API export of the same requests (:data:`LANGFUSE`)."""
    return "".join(json.dumps(rec, ensure_ascii=False) + "\n" for m in traces() for rec in writers.langfuse_records(m))


if __name__ == "__main__":  # pragma: no cover - rewrites the fixture files
    ANSWERS.write_text(answers_text(), encoding="utf-8")
    LANGFUSE.write_text(langfuse_text(), encoding="utf-8")
    print(f"wrote {ANSWERS} and {LANGFUSE}")
