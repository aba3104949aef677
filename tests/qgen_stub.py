"""A scripted OpenAI-compatible server on 127.0.0.1 for the question-generator tests (no tests here).

The same server answers the generator's calls and the judge's checks:

* a **generation** call (its user message holds ``<passage id="...">`` blocks) is parsed into a
  :class:`GenRequest` (passages, kind, number asked, request number, whether it is a retry after
  feedback) and answered with ``stub.script(request)`` -- a dict (sent as JSON), a string (sent as is)
  or a ``(content, finish_reason)`` pair; a ``--cite focus`` call (its last request lists ``Sentence: ...`` /
  ``문장: ...`` lines after the worked examples) is a :class:`GenRequest` with ``focus`` set and
  ``passages`` the (document title, sentence) pairs asked about;
* a **judge** call (recognised by the rubric text, see ``test_judge_stub.metric_of``, or the reply
  schema's name: the critic rubric ``question_critic``) is answered by
  ``stub.judge(metric, question, answer, contexts)``; the default supports every claim unless the
  answer is in ``stub.unsupported``, gives context relevance 5 to the first context when the question
  is in ``stub.in_corpus`` (else 1 everywhere), passes the critic (3) unless the question is in
  ``stub.not_content`` (1), and judges the reader's answer correct (5) unless the question is in
  ``stub.disagree`` (1);
* a **reader** call (the generator's answerable-from-evidence check, recognised by the reader prompt's
  system message) is answered with ``stub.reader_answers[question]`` when set, the decline sentence when
  the question is in ``stub.unanswerable``, else the evidence text it was given (extractive).

Replies depend only on the request's content, so two runs over the same prompts get the same replies.
``stub.block_after = N`` makes request N+1 and later wait until ``stub.release`` is set (kill tests);
``stub.fail`` (a set of doc ids) answers generation calls on those passages with HTTP 500.

:func:`helpdesk_script` answers from the bundled it_helpdesk question set (a focus call: the hand-written question
whose evidence is in the sentence, else the offline stub's): the hand-written questions
of the passage's document and kind, rotated by request number (two-document questions are built by
joining one question of each passage; out-of-corpus ones come from the bundled ones and a list of
topics the corpus does not cover).
"""

from __future__ import annotations

import json
import re
import threading
from collections import Counter
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import Any, Callable, Dict, List, Optional, Sequence, Set, Tuple

from test_judge_stub import completion, metric_of, send_json, start_server

_PASSAGE = re.compile(r'<passage id="([^"]+)"[^>]*>\n(.*?)\n</passage>', re.S)
_KIND = re.compile(r'"type": "([a-z_0-9]+)"\}\]\}')
_N = re.compile(r"질문을 (\d+)개|write (\d+) questions")
_REQUEST = re.compile(r"(\d+)번째 요청|request number (\d+)")
_Q = re.compile(r"^## (?:질문|Question)\n(.*?)\n\n", re.S | re.M)
_A = re.compile(r"^## (?:답변|Answer)\n(.*?)\n\n## ", re.S | re.M)
_CTX = re.compile(r"^\[(?:컨텍스트|Context) \d+\] : (.*?)(?=\n\n\[(?:컨텍스트|Context) \d+\] : |\n\n## )", re.S | re.M)


@dataclass
class GenRequest:
    passages: List[Tuple[str, str]]
    kind: str
    n: int
    request: int
    retry: int
    user: str
    body: Dict[str, Any]
    #: a ``--cite focus`` call: ``passages`` are (document title, sentence) pairs
    focus: bool = False

    @property
    def doc_ids(self) -> List[str]:
        return [d for d, _ in self.passages]


_FOCUS_LINE = re.compile(r"^(?:Sentence|문장)(?: \d+ \((.*?)\))?: (.*)$", re.M)
_FOCUS_DOC = re.compile(r"^(?:Document|문서): (.*)$", re.M)
_FOCUS_KINDS: Dict[str, str] = {}


def _focus_kind(user: str) -> str:
    if not _FOCUS_KINDS:
        from ragexam.questions.prompts import load_prompts

        for lang in ("en", "ko"):
            for name, text in load_prompts(lang).sections.items():
                if name.startswith("focus kind "):
                    _FOCUS_KINDS[text] = name[len("focus kind "):]
    return next((k for text, k in _FOCUS_KINDS.items() if text in user), "?")


def parse_focus(body: Dict[str, Any]) -> Optional[GenRequest]:
    """A ``--cite focus`` call: the last user message that lists sentences is the request (the worked examples
    come before it; feedback after it)."""
    msgs = body["messages"]
    at = [i for i, m in enumerate(msgs) if m["role"] == "user" and _FOCUS_LINE.search(m["content"])]
    if not at or (body.get("response_format") or {}).get("json_schema", {}).get("name") not in (None, "questions"):
        return None
    user = msgs[at[-1]]["content"]
    doc = _FOCUS_DOC.search(user)
    lines = _FOCUS_LINE.findall(user)
    passages = [(d or (doc.group(1) if doc else ""), t) for d, t in lines]
    retry = sum(1 for m in msgs[at[-1]:] if m["role"] == "assistant")
    return GenRequest(passages, _focus_kind(user), 1, 1, retry, user, body, focus=True)


def parse_generation(body: Dict[str, Any]) -> Optional[GenRequest]:
    msgs = body["messages"]
    user = next((m["content"] for m in msgs if m["role"] == "user"), "")
    passages = _PASSAGE.findall(user)
    if not passages:
        return parse_focus(body)
    kind = _KIND.search(user)
    n = _N.search(user)
    r = _REQUEST.search(user)
    retry = sum(1 for m in msgs if m["role"] == "assistant")
    return GenRequest(passages, kind.group(1) if kind else "?", int(next(g for g in n.groups() if g)) if n else 1,
                      int(next(g for g in r.groups() if g)) if r else 1, retry, user, body)


def judge_inputs(body: Dict[str, Any]) -> Tuple[str, str, List[str]]:
    user = next((m["content"] for m in body["messages"] if m["role"] == "user"), "")
    q = _Q.search(user)
    a = _A.search(user)
    return (q.group(1).strip() if q else "", a.group(1).strip() if a else "", [c.strip() for c in _CTX.findall(user)])


_READER_SYSTEMS = None
_READER = re.compile(r"^## (?:글|Text)\n(.*?)\n\n## (?:질문|Question)\n(.*?)\n\n## ", re.S | re.M)


def reader_inputs(body: Dict[str, Any]) -> Optional[Tuple[str, str]]:
    """``(question, evidence)`` of a reader call, else ``None``."""
    global _READER_SYSTEMS
    if _READER_SYSTEMS is None:
        from ragexam.questions.prompts import load_reader

        _READER_SYSTEMS = {load_reader(lang).sections["system"] for lang in ("ko", "en")}
    msgs = body["messages"]
    if not msgs or msgs[0].get("content") not in _READER_SYSTEMS:
        return None
    # the request is the last user message that holds a question (worked examples come before it, feedback after)
    user = next((m["content"] for m in reversed(msgs) if m["role"] == "user" and _READER.search(m["content"])), "")
    m = _READER.search(user)
    return (m.group(2).strip(), m.group(1).strip()) if m else ("", "")


class GenStub:
    def __init__(self) -> None:
        self.requests: List[Dict[str, Any]] = []
        self.lock = threading.Lock()
        self.script: Callable[[GenRequest], Any] = lambda req: {"questions": []}
        self.unsupported: Set[str] = set()
        self.in_corpus: Set[str] = set()
        self.not_content: Set[str] = set()
        self.disagree: Set[str] = set()
        self.unanswerable: Set[str] = set()
        self.reader_answers: Dict[str, str] = {}
        self.fail: Set[str] = set()
        self.block_after: Optional[int] = None
        self.release = threading.Event()
        self.arrived = threading.Event()
        self.base_url = ""

    def judge(self, metric: str, question: str, answer: str, contexts: Sequence[str],
              claims: Sequence[str] = ()) -> Dict[str, Any]:
        if metric == "faithfulness":  # one verdict per claim (sentence) of the answer; from an unsupported answer: false
            return {"supported": [not any(c in u for u in self.unsupported) for c in claims], "reasoning": "checked"}
        if metric == "question_critic":
            bad = question in self.not_content
            return {"score": 1 if bad else 3, "reasoning": "stub critic"}
        if metric == "answer_correctness":
            bad = question in self.disagree
            return {"score": 1 if bad else 5, "reasoning": "stub"}
        if metric == "context_relevance":
            n = max(1, len(contexts))
            scores = [1] * n
            if question in self.in_corpus:
                scores[0] = 5
            return {"scores": scores, "average": round(sum(scores) / n, 2), "reasoning": "r"}
        return {}

    def reader(self, question: str, evidence: str) -> str:
        if question in self.reader_answers:
            return self.reader_answers[question]
        if question in self.unanswerable:
            return "문서에서 찾을 수 없습니다."
        return evidence

    def generation_bodies(self) -> List[Dict[str, Any]]:
        with self.lock:
            return [b for b in self.requests if parse_generation(b) is not None]

    def judge_bodies(self, metric: Optional[str] = None) -> List[Dict[str, Any]]:
        with self.lock:
            return [b for b in self.requests if parse_generation(b) is None
                    and (metric is None or metric_of(b) == metric)]


class _Quiet(BaseHTTPRequestHandler):
    """HTTP/1.1, no request log, the JSON body read."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def body(self) -> Dict[str, Any]:
        return json.loads(self.rfile.read(int(self.headers["Content-Length"])))


def _handler(stub: GenStub):
    class Handler(_Quiet):
        def do_POST(self):
            body = self.body()
            with stub.lock:
                stub.requests.append(body)
                n = len(stub.requests)
            if stub.block_after is not None and n > stub.block_after:
                stub.arrived.set()
                stub.release.wait(60)
                return send_json(self, 503, {"error": {"message": "released"}})
            if self.path != "/v1/chat/completions":
                return send_json(self, 404, {"error": {"message": "not found"}})
            req = parse_generation(body)
            if req is not None:
                if stub.fail & set(req.doc_ids):
                    return send_json(self, 500, {"error": {"message": "boom"}})
                out = stub.script(req)
                finish = "stop"
                if isinstance(out, tuple):
                    out, finish = out
                content = out if isinstance(out, str) else json.dumps(out, ensure_ascii=False)
                return send_json(self, 200, completion(content, finish_reason=finish, model="stub-gen"))
            rq = reader_inputs(body)
            if rq is not None:
                return send_json(self, 200, completion(stub.reader(*rq)))
            metric = ((body.get("response_format") or {}).get("json_schema") or {}).get("name") or metric_of(body)
            q, a, ctx = judge_inputs(body)
            from ragexam.testing.stub import read_prompt

            claims = read_prompt(next((m["content"] for m in body["messages"] if m["role"] == "user"), "")).units
            return send_json(self, 200, completion(json.dumps(stub.judge(metric, q, a, ctx, claims),
                                                              ensure_ascii=False)))

    return Handler


def write_docs(path, docs):
    """``docs`` (dicts) written as a corpus file, one JSON object a line; returns ``path``."""
    path.write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in docs), encoding="utf-8")
    return path


def start_gen_stub():
    """``(stub, shutdown)`` with ``stub.base_url`` set."""
    stub = GenStub()
    return start_server(stub, _handler(stub))


# -- the bundled it_helpdesk set as a "model" ------------------------------------------------------------------
OOC_TOPICS = ["연차 휴가", "주차 등록", "법인카드 한도", "출장 일비", "건강검진 일정", "사내 어린이집", "사내 동호회 지원금",
              "경조사비", "퇴직연금 운용", "명절 선물", "구내식당 메뉴", "사택 신청", "자기계발비", "승진 심사", "야근 식대"]


def helpdesk_script(extra: Optional[Callable[[GenRequest, List[Dict[str, Any]]], List[Dict[str, Any]]]] = None):
    """A script answering from the bundled it_helpdesk questions (see the module docstring).  ``extra``
    may rewrite the list of items before it is sent (to add bad ones)."""
    from ragexam.data.loaders import load_qa

    qa = list(load_qa("it_helpdesk"))
    by_doc: Dict[Tuple[str, str], List[Any]] = {}
    for q in qa:
        if q.answerable and len(q.relevant_doc_ids) == 1:
            by_doc.setdefault((q.relevant_doc_ids[0], q.type), []).append(q)
    ooc = [q.question for q in qa if not q.answerable]
    ooc += [f"{t} 관련 규정은 어떻게 확인하나요?" for t in OOC_TOPICS]

    def item(q) -> Dict[str, Any]:
        return {"question": q.question, "answer": q.ground_truth, "evidence": [q.evidence[0]], "type": q.type}

    def script(req: GenRequest):
        items: List[Dict[str, Any]] = []
        if req.focus:  # --cite focus: the hand-written question whose evidence is in the sentence, else a plain one
            sentence = " ".join(t for _, t in req.passages)
            q = next((q for q in qa if q.answerable and any(e in sentence for e in q.evidence)), None)
            if q is not None:
                return {"question": q.question, "answer": q.ground_truth}
            from ragexam.questions.offline import stub_reply

            return json.loads(stub_reply(req.body))
        if req.kind in ("meaning", "lexical"):
            pool = by_doc.get((req.doc_ids[0], req.kind), []) or by_doc.get(
                (req.doc_ids[0], "lexical" if req.kind == "meaning" else "meaning"), [])
            start = (req.request - 1) * req.n
            items = [item(q) for q in pool[start:start + req.n]]
        elif req.kind == "multi":
            a = by_doc.get((req.doc_ids[0], "meaning"), []) + by_doc.get((req.doc_ids[0], "lexical"), [])
            b = by_doc.get((req.doc_ids[1], "meaning"), []) + by_doc.get((req.doc_ids[1], "lexical"), [])
            if a and b:
                i = (req.request - 1) % min(len(a), len(b))
                qa_, qb = a[i], b[i]
                items = [{"question": qa_.question.rstrip("?. ") + ", 그리고 " + qb.question,
                          "answer": f"{qa_.ground_truth} {qb.ground_truth}",
                          "evidence": [qa_.evidence[0], qb.evidence[0]], "type": "multi"}]
        elif req.kind == "out_of_corpus":
            start = ((req.request - 1) * req.n + sum(map(ord, req.doc_ids[0]))) % len(ooc)
            items = [{"question": ooc[(start + j) % len(ooc)], "answer": "", "evidence": [], "type": "out_of_corpus"}
                     for j in range(req.n)]
        if extra is not None:
            items = extra(req, items)
        return {"questions": items}

    return script


# -- replaying a real model's recorded replies ----------------------------------------------------------------
class ReplayStub:
    """Serves the replies a real model gave, recorded by ``benchmarks/bench_generate_llm.py --record`` (JSON
    Lines: a ``header`` line, then one ``{kind, key, sha, request, reply}`` per call).  A request is looked up by
    the SHA of what the model saw (:func:`ragexam.questions.offline.request_sha`), else by what it is
    about (:func:`~ragexam.questions.offline.replay_key`, so a reworded prompt still finds its reply);
    a request found neither way gets HTTP 500 and is listed in ``missed``.  ``served`` counts how each was
    found."""

    def __init__(self, path) -> None:
        lines = [json.loads(line) for line in open(path, encoding="utf-8") if line.strip()]
        self.header = lines[0]["header"] if lines and "header" in lines[0] else {}
        records = [r for r in lines if "reply" in r]
        self.by_sha: Dict[str, Dict[str, Any]] = {}
        self.by_key: Dict[str, Dict[str, Any]] = {}
        for r in records:
            self.by_sha.setdefault(r["sha"], r)
            self.by_key.setdefault(r["key"], r)
        self.records = records
        self.requests: List[Dict[str, Any]] = []
        self.missed: List[str] = []
        self.served = Counter()
        self.lock = threading.Lock()
        self.release = threading.Event()
        self.base_url = ""

    def lookup(self, body: Dict[str, Any]) -> Optional[Dict[str, Any]]:
        from ragexam.questions.offline import replay_key, request_sha

        r = self.by_sha.get(request_sha(body))
        if r is not None:
            self.served["sha"] += 1
            return r
        key = replay_key(body)
        r = self.by_key.get(key)
        if r is not None:
            self.served["key"] += 1
            return r
        self.missed.append(key)
        return None


def _replay_handler(stub: ReplayStub):
    class Handler(_Quiet):
        def do_POST(self):
            body = self.body()
            with stub.lock:
                stub.requests.append(body)
                r = stub.lookup(body)
            if r is None:
                return send_json(self, 500, {"error": {"message": "not recorded"}})
            reply = r["reply"]
            if "content" not in reply:
                return send_json(self, r.get("status") or 500, {"error": {"message": reply.get("error", "")}})
            return send_json(self, 200, completion(reply["content"], finish_reason=reply.get("finish_reason") or "stop",
                                                   model="replay"))

    return Handler


def start_replay_stub(path):
    """``(stub, shutdown)`` serving the recorded replies of ``path``."""
    stub = ReplayStub(path)
    return start_server(stub, _replay_handler(stub))
