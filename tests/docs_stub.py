"""One loopback endpoint for every model and service the docs' examples call (tests/test_docs_snippets.py).

It answers, on 127.0.0.1 (``base_url`` ends in ``/v1``; the root serves the same routes):

* ``POST .../chat/completions``:
  - a **question-generation** call (its user message holds ``<passage id=...>`` blocks, see
    ``qgen_stub.parse_generation``) with ``qgen_stub.helpdesk_script``: the bundled it_helpdesk questions of
    the passage's document and kind;
  - an **LLM rerank** call (``rerank:llm:MODEL``; ``retrieval/rerank/llm.py``'s prompts): listwise
    ``{"ranking": [...]}`` or pointwise ``{"relevance": g}``, by word overlap with the question;
  - a **span check** of ``locate-evidence --model`` (``questions/locate_llm.py``'s prompt): ``{"supports":
    "yes"}`` when the passage holds a third of the answer's bigrams (``overlap``), else ``"no"``;
  - anything else (judge rubrics, answer generation) as :class:`ragexam.testing.StubEndpoint` answers it;
* ``POST .../embeddings``: StubEndpoint's hashed bigram vectors;
* ``POST .../rerank``: a rerank service in the Cohere/Jina shape (``documents`` -> ``{"results": [...]}``)
  or the TEI shape (``texts`` -> ``[{index, score}]``), scored by word overlap;
* ``POST .../search``: a search service (``-r http:URL``, docs/pipelines.md) over the paragraphs of the bundled
  it_helpdesk corpus, best word overlap first: ``{"query", "top_k"}`` -> the ``top_k`` hits, both under
  ``results`` and under ``data.hits`` (for ``results_path=data.hits``).

Every request path is counted in ``counts``.  Replies depend only on the request, so a rerun is a cache hit.
"""

from __future__ import annotations

import json
import re
import threading
from collections import Counter
from typing import Any, Dict, List, Optional, Tuple

from json_stub import json_server
from qgen_stub import helpdesk_script, parse_generation
from test_judge_stub import completion

from ragexam.testing.stub import StubEndpoint, overlap

_LISTWISE = re.compile(r"^Question: (.*?)\n\nPassages:\n(.*)\n\nRanking \(JSON\):$", re.S)
_POINTWISE = re.compile(r"^Question: (.*?)\n\nPassage: (.*)\n\nGrade \(JSON\):$", re.S)
_NUMBERED = re.compile(r"^\[(\d+)\] (.*?)(?=\n\n\[\d+\] |\Z)", re.S | re.M)
#: a span check of ``locate-evidence --model`` (questions/locate_llm.py's prompt, English or Korean)
_SPAN_CHECK = re.compile(r"^(?:Question|질문): .*?\n(?:Answer|답): (.*?)\n(?:Passage|문단): (.*)\n\nJSON:$", re.S)


def _rerank_reply(user: str) -> Dict[str, Any] | None:
    """The JSON reply to an LLM-rerank prompt, or None when ``user`` is not one."""
    m = _LISTWISE.match(user)
    if m:
        question, passages = m.group(1), _NUMBERED.findall(m.group(2))
        order = sorted(passages, key=lambda p: -overlap(question, p[1]))
        return {"ranking": [int(i) for i, _ in order]}
    m = _POINTWISE.match(user)
    if m:
        return {"relevance": round(3 * overlap(m.group(1), m.group(2)))}
    return None


class DocsEndpoint:
    """The endpoint (see the module docstring); ``start()`` returns it with ``base_url`` set."""

    def __init__(self) -> None:
        self._stub = StubEndpoint()  # not started: its reply functions answer judge, answer and embedding calls
        self._generate = helpdesk_script()
        self.counts: Counter = Counter()
        self.lock = threading.Lock()
        self.base_url = ""
        self._shutdown = None
        self._hits: Optional[List[Dict[str, Any]]] = None

    def handle(self, path: str, body: Any, headers: Any) -> Tuple[int, Any]:
        route = path.split("?", 1)[0]
        with self.lock:
            self.counts[route] += 1
        if route.endswith("/rerank"):
            query, texts = body.get("query", ""), body.get("texts") or body.get("documents") or []
            scores = [(i, overlap(query, t if isinstance(t, str) else t.get("text", ""))) for i, t in enumerate(texts)]
            if "texts" in body:
                return 200, [{"index": i, "score": s} for i, s in scores]
            return 200, {"id": "stub", "results": [{"index": i, "relevance_score": s} for i, s in scores]}
        if route.endswith("/search"):
            query = body.get("query", "")
            hits = sorted(self._paragraphs(), key=lambda h: -overlap(query, h["text"]))[: int(body.get("top_k", 10))]
            return 200, {"results": hits, "data": {"hits": hits}}
        if route.endswith("/embeddings"):
            return 200, self._stub._embeddings(body)
        if not route.endswith("/chat/completions"):
            return 404, {"error": {"message": f"no route {route}"}}
        request = parse_generation(body)
        if request is not None:
            return 200, completion(json.dumps(self._generate(request), ensure_ascii=False), model="docs-stub")
        user = next((m.get("content") or "" for m in body.get("messages", []) if m.get("role") == "user"), "")
        reranked = _rerank_reply(user)
        if reranked is not None:
            return 200, completion(json.dumps(reranked), model="docs-stub")
        m = _SPAN_CHECK.match(user)
        if m:  # supported when the passage holds a third of the answer's bigrams
            return 200, completion(json.dumps({"supports": "yes" if overlap(m.group(1), m.group(2)) >= 1 / 3
                                               else "no"}), model="docs-stub")
        return 200, self._stub._chat(body)

    def _paragraphs(self) -> List[Dict[str, Any]]:
        if self._hits is None:
            from ragexam.data.loaders import load_corpus

            self._hits = [{"text": p.strip(), "doc_id": d.doc_id, "id": f"{d.doc_id}#{i}"}
                          for d in load_corpus("it_helpdesk")
                          for i, p in enumerate(d.content.split("\n\n")) if p.strip()]
        return self._hits

    def start(self) -> "DocsEndpoint":
        url, self._shutdown = json_server(self.handle)
        self.base_url = url + "/v1"
        return self

    def stop(self) -> None:
        if self._shutdown is not None:
            self._shutdown()
            self._shutdown = None
