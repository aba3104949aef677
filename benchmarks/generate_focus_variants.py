"""Experiment: can a small model's generated questions be made right in meaning by the prompt, or sorted by a signal?

docs/generate.md ("Three more tries") reads the local 1.5B model's ``--cite focus`` questions as a person would and
finds a third of the kept ones wrong.  ``tests/data/generate_focus_labelled.json`` holds the material: 41 focus
sentences of two labelled runs (the handbook's ``-n 40`` and it_helpdesk's ``-n 10``), and for each the model's
question and answer under three prompts, each labelled good or bad by a person (good: answerable from its evidence,
the key correct, natural Korean that stands on its own); and the 43 questions those two runs kept, with their labels.

* ``--variant focus|answer-first|rewrite --base-url URL --model M``: send one prompt variant for every sentence
  (temperature 0, seed 12345, the reply schema enforced) and print the question and answer beside the stored
  labelled ones -- the replies to read again (greedy decoding on another machine or llama.cpp build may differ) --
  and how well the model's confidence in each question (its tokens' log-probabilities) orders the stored labels:

  - ``focus``: ragexam's own ``--cite focus`` prompt (English instructions, Korean worked examples);
  - ``answer-first``: the same with the answer written before the question, copied from the sentence, and the
    question asked "as a person who has not read the document", naming the thing the sentence is about;
  - ``rewrite``: the sentence turned into a question by replacing its answer with a question word (a cloze
    rewrite, with worked examples in that style).

* ``--roundtrip``: no model.  Each labelled question searches the sentences of its corpus with multilingual-e5
  (ragexam's ``dense`` retriever over the sentences ``--cite focus`` asks about) and the rank of its evidence
  sentence is compared with the labels: ROC AUC of the rank, and what keeping only questions whose evidence ranks
  first would keep, good and bad (round-trip consistency, as PAQ and Promptagator filter) -- and, as a control,
  how many of the questions people wrote for the bundled it_helpdesk set it would keep.

    python benchmarks/generate_focus_variants.py --roundtrip
    python benchmarks/generate_focus_variants.py --variant answer-first --base-url http://127.0.0.1:8091/v1 \\
        --model qwen2.5-1.5b

Not part of ragexam; the numbers are the model's and the labels a person's, so say which model and machine made
them.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _bench import machine_line  # noqa: E402

DATA = Path(__file__).resolve().parents[1] / "tests" / "data" / "generate_focus_labelled.json"
#: the bundled set whose hand-written questions the round trip is tried on as well
HAND_WRITTEN = "it_helpdesk"
VARIANTS = {"focus": "focus", "answer-first": "answer_first", "rewrite": "rewrite"}

ANSWER_FIRST_USER = (
    "Document: {document}\n{sentences}\n\n{instructions}\n"
    "First copy the answer: the exact words of the sentence that answer (a number with its unit, a deadline, a place, "
    "a condition, who, or the action to take). Then write one question in {language} whose answer is exactly that, "
    "as a person who has not read the document would ask it: its verb is the verb the answer belongs to in the "
    "sentence, and it names the thing the sentence is about (take it from the document title when the sentence does "
    "not say it). Never mention the document, the sentence or the text. "
    "JSON: {{\"answer\": \"...\", \"question\": \"...\"}}")
REWRITE_USER = (
    "Document: {document}\nSentence: {sentence}\n\n"
    "Turn this sentence into one question in Korean by changing as few words as possible. First copy the answer: the "
    "words of the sentence that answer (a number with its unit, a deadline, a place, a name, who, or what happens or "
    "what to do). Then write the question: the sentence with those words replaced by a question word (몇, 얼마, 언제까지, "
    "어디, 누구, 무엇, 어떻게) and a question ending. Keep every condition of the sentence (who, which case, when). If the "
    "sentence does not name what it is about, add that from the document title at the start. "
    "JSON: {{\"answer\": \"...\", \"question\": \"...\"}}")
#: the worked examples of ``rewrite`` (document, sentence, answer, question)
REWRITE_EXAMPLES = (
    ("도서관 이용 안내", "노트북 대여는 학생증을 맡기면 하루 최대 4시간까지 가능합니다.", "하루 최대 4시간",
     "도서관 노트북 대여는 학생증을 맡기면 하루 최대 몇 시간까지 가능한가요?"),
    ("열람실 예약", "좌석을 예약한 뒤 30분 안에 입실하지 않으면 예약이 자동으로 취소됩니다.", "예약이 자동으로 취소됩니다",
     "열람실 좌석을 예약한 뒤 30분 안에 입실하지 않으면 어떻게 되나요?"),
    ("사내 메일 사용", "첨부 파일이 25MB를 넘으면 'BigFile' 링크로 자동 변환됩니다.", "'BigFile' 링크로 자동 변환됩니다",
     "메일 첨부 파일이 25MB를 넘으면 어떻게 되나요?"),
    ("VPN 접속 안내", "VPN 접속 중 ERR-104가 나오면 OTP 앱의 시간을 다시 맞춘 뒤 접속합니다.", "OTP 앱의 시간을 다시 맞춘 뒤 접속합니다",
     "VPN 접속 중 ERR-104가 나오면 어떻게 해야 하나요?"),
    ("열람실 예약", "열람실 좌석은 모바일 앱 '스마트좌석'에서 예약합니다.", "모바일 앱 '스마트좌석'", "열람실 좌석은 어디에서 예약하나요?"),
    ("학생증 발급", "학생증을 잃어버리면 학생지원센터에서 재발급을 신청하며, 발급에는 3일이 걸립니다.", "학생지원센터",
     "학생증을 잃어버리면 어디에서 재발급을 신청하나요?"),
)


def _schema(order: Sequence[str]) -> Dict[str, Any]:
    return {"type": "object", "properties": {k: {"type": "string"} for k in order}, "required": list(order),
            "additionalProperties": False}


def messages(variant: str, s: Dict[str, Any]) -> Tuple[List[Dict[str, str]], Dict[str, Any]]:
    """The messages and reply schema of ``variant`` for the labelled sentence ``s``."""
    import dataclasses

    from ragexam.questions.prompts import load_prompts

    prompts = load_prompts("en")
    if variant == "rewrite":
        out = [{"role": "system", "content": prompts.sections["system"]}]
        for doc, sentence, answer, question in REWRITE_EXAMPLES:
            out.append({"role": "user", "content": REWRITE_USER.format(document=doc, sentence=sentence)})
            out.append({"role": "assistant", "content": json.dumps({"answer": answer, "question": question},
                                                                   ensure_ascii=False)})
        out.append({"role": "user", "content": REWRITE_USER.format(document=s["title"],
                                                                  sentence=" ".join(s["sentence"].split()))})
        return out, _schema(["answer", "question"])
    if variant == "answer-first":
        sections = dict(prompts.sections, **{"focus user": ANSWER_FIRST_USER})
        prompts = dataclasses.replace(prompts, sections=sections)
    out = prompts.focus_messages(s["kind"], [s["title"]], [s["sentence"]], language="ko")
    if variant == "focus":
        return out, _schema(["question", "answer"])
    for m in out:
        if m["role"] == "assistant":
            d = json.loads(m["content"])
            m["content"] = json.dumps({"answer": d["answer"], "question": d["question"]}, ensure_ascii=False)
    return out, _schema(["answer", "question"])


def run_variant(a: argparse.Namespace, data: Dict[str, Any]) -> int:
    key = VARIANTS[a.variant]
    same = 0
    confidence: List[Tuple[float, float, str]] = []  # (mean, lowest) log-probability of the question's tokens
    for i, s in enumerate(data["sentences"]):
        msgs, schema = messages(a.variant, s)
        body = {"model": a.model, "messages": msgs, "temperature": 0, "seed": 12345, "max_tokens": 200,
                "logprobs": True,
                "response_format": {"type": "json_schema",
                                    "json_schema": {"name": "questions", "schema": schema, "strict": True}}}
        req = urllib.request.Request(a.base_url.rstrip("/") + "/chat/completions", json.dumps(body).encode(),
                                     {"Content-Type": "application/json", "Authorization": "Bearer " + a.api_key})
        t0 = time.perf_counter()
        with urllib.request.urlopen(req, timeout=a.timeout) as r:
            choice = json.loads(r.read(1 << 20))["choices"][0]
        reply = choice["message"]["content"]
        try:
            got = json.loads(reply)
        except ValueError:
            got = {"question": reply, "answer": ""}
        stored = s[key]
        same += got.get("question") == stored["question"]
        lps = question_logprobs(choice.get("logprobs"))
        if lps and got.get("question") == stored["question"]:
            confidence.append((sum(lps) / len(lps), min(lps), stored["label"]))
        print(f"[{i}] {time.perf_counter() - t0:.1f}s  {got.get('question')} | {got.get('answer')}\n"
              f"     stored ({stored['label']}): {stored['question']} | {stored['answer']}", flush=True)
    print(f"{a.variant}: {same} of {len(data['sentences'])} questions equal the stored ones; stored labels: "
          f"{[s[key]['label'] for s in data['sentences']].count('good')} good of {len(data['sentences'])}")
    if confidence:
        for i, what in ((0, "mean"), (1, "lowest")):
            area = auc([c[i] for c in confidence if c[2] == "good"], [c[i] for c in confidence if c[2] == "bad"])
            print(f"the model's confidence in its question ({what} token log-probability) orders the stored labels of "
                  f"the {len(confidence)} equal questions: ROC AUC {'-' if area is None else f'{area:.2f}'}")
    print(machine_line())
    return 0


def question_logprobs(logprobs: Any) -> List[float]:
    """The log-probabilities of the reply tokens inside the JSON string value of ``"question"`` (the tokens
    after ``"question": "`` up to the one holding the closing quote); ``[]`` without token log-probabilities."""
    tokens = (logprobs or {}).get("content") or []
    text, out, inside = "", [], False
    for t in tokens:
        text += t["token"]
        if not inside:
            inside = '"question": "' in text.replace('":"', '": "')
        elif '"' in t["token"]:
            break
        else:
            out.append(float(t["logprob"]))
    return out


def _occurrences(content: str, text: str) -> List[int]:
    """Where ``text`` occurs in ``content`` (whitespace runs matched loosely)."""
    import re

    pattern = r"\s+".join(re.escape(w) for w in text.split())
    return [m.start() for m in re.finditer(pattern, content)] if pattern else []


def _path(corpus: str) -> Any:
    """A corpus of the data file (a path from the repository's root) or a bundled name."""
    return corpus if corpus == HAND_WRITTEN else ROOT / corpus


def auc(pos: Sequence[float], neg: Sequence[float]) -> Optional[float]:
    """:func:`ragexam.stats.discrimination.auc` (ties count half); ``None`` without both."""
    from ragexam.stats.discrimination import auc as roc_auc

    return roc_auc(pos, neg) if pos and neg else None


def roundtrip(data: Dict[str, Any], retriever: str, hand_written: bool = True) -> Dict[str, Any]:
    """Per labelled question: the rank of its evidence sentence among its corpus's sentences (see the module
    docstring); per set, the AUC of ``-rank`` and what a rank-1 filter keeps.  ``hand_written``: also the bundled
    it_helpdesk set's hand-written answerable questions (a sentence holding any of its evidence strings counts)."""
    from ragexam.data import load_corpus
    from ragexam.data.chunking import sentence_spans
    from ragexam.retrieval.spec import parse_retriever

    sets: Dict[str, List[Tuple[str, str, List[str], str]]] = {}  # name -> (corpus, question, evidence, label)
    for s in data["sentences"]:
        for key in VARIANTS.values():
            if key in s:
                sets.setdefault(key, []).append((s["corpus"], s[key]["question"], [s["sentence"]], s[key]["label"]))
    for k in data["kept"]:
        sets.setdefault("kept:" + k["run"], []).append((k["corpus"], k["question"], [k["evidence"]], k["label"]))
    if hand_written:  # people's questions: good by definition
        from ragexam.data import load_qa

        for q in load_qa(HAND_WRITTEN):
            if q.answerable and q.evidence:
                sets.setdefault("hand-written", []).append((HAND_WRITTEN, q.question, list(q.evidence), "good"))
    indexes = {}
    for corpus in sorted({c for rows in sets.values() for c, _, _, _ in rows}):
        ids: Dict[str, str] = {}
        docs = []  # (content, [(start, end, id)])
        for d in load_corpus(_path(corpus)):
            docs.append((d.content, [(a, b, ids.setdefault(" ".join(d.content[a:b].split()), str(len(ids))))
                                     for a, b in sentence_spans(d.content)]))
        r = parse_retriever(retriever, progress=False)
        r.index(list(ids.values()), list(ids))
        indexes[corpus] = (r, docs, len(ids))
    out: Dict[str, Any] = {}
    for name, rows in sets.items():
        ranks = []
        for corpus, question, evidence, label in rows:
            r, docs, n = indexes[corpus]
            hits = r.search([question], n)[0]
            # the sentences an evidence string lies in, wherever it occurs
            # (a two-document question's evidence is stored as its two sentences joined: each is looked for)
            pieces = [p for e in evidence for p in ([e] if any(_occurrences(c, e) for c, _ in docs)
                                                   else [e[a:b] for a, b in sentence_spans(e)])]
            ev = {sid for e in pieces for content, sents in docs for at in _occurrences(content, e)
                  for a, b, sid in sents if a < at + len(e) and at < b}
            if not ev:
                raise SystemExit(f"no sentence of {corpus} holds the evidence {evidence[0][:60]!r}")
            # a retriever that returns only matching sentences (bm25) ranks an evidence it did not return last
            ranks.append((next((k for k, (cid, _) in enumerate(hits, 1) if cid in ev), n), label, question))
        good = [-k for k, lab, _ in ranks if lab == "good"]
        bad = [-k for k, lab, _ in ranks if lab == "bad"]
        kg, kb = sum(1 for x in good if x == -1), sum(1 for x in bad if x == -1)
        out[name] = {"n": len(ranks), "good": len(good), "bad": len(bad), "auc": auc(good, bad),
                     "kept_good": kg, "kept_bad": kb, "junk_before": len(bad) / len(ranks),
                     "junk_after": kb / max(1, kg + kb),
                     "not_first": [(k, lab, q) for k, lab, q in ranks if k > 1]}
    return out


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--variant", choices=sorted(VARIANTS), help="send this prompt variant for every sentence")
    p.add_argument("--base-url", help="an OpenAI-compatible endpoint, e.g. http://127.0.0.1:8091/v1")
    p.add_argument("--model", default="qwen2.5-1.5b")
    p.add_argument("--api-key", default="local")
    p.add_argument("--timeout", type=float, default=900.0, help="seconds per request")
    p.add_argument("--roundtrip", action="store_true", help="the e5 round-trip ranks of the labelled questions "
                                                            "(no model)")
    p.add_argument("--retriever", default="dense", help="the retriever spec the round trip searches with")
    a = p.parse_args(argv)
    data = json.loads(DATA.read_text(encoding="utf-8"))
    if a.variant:
        if not a.base_url:
            p.error("--variant needs --base-url")
        return run_variant(a, data)
    if not a.roundtrip:
        p.error("give --variant or --roundtrip")
    for name, v in roundtrip(data, a.retriever).items():
        area = "-" if v["auc"] is None else f"{v['auc']:.2f}"
        print(f"{name:18s} n {v['n']:2d} (good {v['good']}, bad {v['bad']}): AUC of the evidence's rank {area}; "
              f"evidence ranked first: kept {v['kept_good']} good, {v['kept_bad']} bad -- junk "
              f"{v['junk_before']:.0%} -> {v['junk_after']:.0%}")
        for k, lab, q in v["not_first"]:
            print(f"    rank {k:2d} {lab:4s} {q}")
    print(machine_line())
    return 0


if __name__ == "__main__":
    sys.exit(main())
