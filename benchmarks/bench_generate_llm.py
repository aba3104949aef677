"""ragexam generate on a real model: yield, rejections by reason, time per kept question, the kept questions.

    python benchmarks/bench_generate_llm.py --base-url http://127.0.0.1:8091/v1 --model qwen2.5-1.5b \\
        [--corpus tests/data/generate_handbook_corpus.jsonl] [-n 8] [--cite spans|sentences|focus] \\
        [--prompt-lang en|ko] [--skip-check NAME ...] [--mix ...] [--max-passes N] [--response-format none] \\
        [--out DIR] \\
        [--record tests/data/generate_replay_NAME.jsonl] [--json]

Any OpenAI-compatible endpoint works (``OPENAI_API_KEY`` or ``--api-key``; a local server accepts any key).
It runs ``ragexam.generate`` with the library's defaults unless an option says otherwise, prints the set's
numbers -- generation calls, candidates, kept, kept per generation call, rejections by reason, LLM check
calls, wall time and time per kept question, the machine's load average before and after -- and then every
kept question with its answer, evidence, type, critic score and the reader's answer, for a person to read
and label (docs/generate.md: "Measured on a real model").

``--record FILE`` puts a loopback proxy between ragexam and the endpoint and writes every request/reply pair
it forwarded (the raw reply text, finish reason and usage; the request's messages; a key per call) as JSON
Lines: the replay file that ``tests/test_generate_replay.py`` serves through a stub, so CI sees what the
real model wrote without the model.  Pairs are appended to ``FILE.partial`` as they happen; ``FILE`` (a header
with the options and the result, then the pairs) is written when the run ends, also on SIGTERM (result
``null``).  The cache is a fresh folder per run (``--cache-dir`` to reuse one) so every call is really made and
recorded.

Not part of CI (a call takes 6-30 s on 2 cores, minutes under load).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any, Dict, List, Optional

from ragexam.questions.offline import call_kind, replay_key, request_sha  # noqa: E402 (after the docstring)

ROOT = Path(__file__).resolve().parents[1]
HANDBOOK = ROOT / "tests" / "data" / "generate_handbook_corpus.jsonl"


# -- the recording proxy ----------------------------------------------------------------------------------
class Recorder:
    """A loopback proxy to ``upstream`` that keeps every forwarded exchange (see the module docstring)."""

    def __init__(self, upstream: str, timeout: float, script: Optional[Dict[str, Any]] = None,
                 partial: Optional[Path] = None) -> None:
        self.upstream = upstream.rstrip("/")
        self.timeout = timeout
        self.script = script
        #: every exchange is also appended here as it happens (a run stopped midway keeps what it recorded)
        self.partial = partial
        self.records: List[Dict[str, Any]] = []
        self.lock = threading.Lock()
        self.base_url = ""
        self._httpd: Any = None

    def start(self) -> "Recorder":
        from ragexam.testing.stub import LoopbackHTTPServer

        rec = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                path = self.path.split("/v1", 1)[-1]
                scripted = rec.scripted(json.loads(raw))
                if scripted is not None:
                    data = json.dumps(scripted, ensure_ascii=False).encode("utf-8")
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
                req = urllib.request.Request(rec.upstream + path, raw, {
                    "Content-Type": "application/json", "Authorization": self.headers.get("Authorization", "")})
                t0 = time.time()
                try:
                    with urllib.request.urlopen(req, timeout=rec.timeout) as r:
                        status, data = r.status, r.read()
                except urllib.error.HTTPError as err:
                    status, data = err.code, err.read()
                except Exception as err:  # noqa: BLE001 - the proxy reports every failure as a 502 to ragexam
                    status, data = 502, json.dumps({"error": {"message": f"proxy: {err}"}}).encode()
                rec.keep(json.loads(raw), status, data, time.time() - t0)
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._httpd = LoopbackHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._httpd.serve_forever, daemon=True).start()
        self.base_url = f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"
        return self

    def scripted(self, body: Dict[str, Any]) -> Optional[Dict[str, Any]]:
        """With ``--script``: a generation call answered from the script (``{doc_id: [items]}``, the first
        passage's document; recorded as ``scripted``), so only the checks go to the model."""
        if self.script is None or call_kind(body) != "generation":
            return None
        import re

        user = next((m.get("content") or "" for m in body["messages"] if m.get("role") == "user"), "")
        doc = re.search(r'<passage id="([^"]+)"', user).group(1)  # type: ignore[union-attr]
        content = json.dumps({"questions": self.script.get(doc, [])}, ensure_ascii=False)
        self.keep(body, 200, json.dumps({"choices": [{"message": {"content": content}, "finish_reason": "stop"}]}
                                        ).encode("utf-8"), 0.0, scripted=True)
        return {"id": "scripted", "object": "chat.completion", "created": 0, "model": body.get("model"),
                "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}],
                "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}}

    def keep(self, body: Dict[str, Any], status: int, data: bytes, seconds: float, scripted: bool = False) -> None:
        try:
            reply = json.loads(data)
            choice = reply["choices"][0]
            out = {"content": choice["message"].get("content"), "finish_reason": choice.get("finish_reason"),
                   "usage": reply.get("usage")}
        except (ValueError, KeyError, IndexError, TypeError):
            out = {"error": data.decode("utf-8", "replace")[:2000]}
        entry = {"kind": call_kind(body), "key": replay_key(body), "sha": request_sha(body), "status": status, "seconds": round(seconds, 1),
                 **({"scripted": True} if scripted else {}),
                 "request": {k: body.get(k) for k in ("messages", "response_format", "temperature", "max_tokens",
                                                      "seed")}, "reply": out}
        with self.lock:
            self.records.append(entry)
            if self.partial is not None:
                with open(self.partial, "a", encoding="utf-8") as f:
                    f.write(json.dumps(entry, ensure_ascii=False) + "\n")

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()


# -- the run ----------------------------------------------------------------------------------------------
def _portable(corpus: str) -> str:
    """The corpus as the replay test finds it: relative to the repository when inside it."""
    p = Path(corpus).resolve()
    try:
        return str(p.relative_to(ROOT))
    except ValueError:
        return corpus


def _load() -> List[float]:
    return [round(x, 2) for x in os.getloadavg()]


def run(args: argparse.Namespace) -> Dict[str, Any]:
    import ragexam

    script = json.loads(Path(args.script).read_text(encoding="utf-8")) if args.script else None
    partial = Path(args.record + ".partial") if args.record else None
    if partial is not None:
        partial.unlink(missing_ok=True)
    rec = Recorder(args.base_url, args.timeout, script, partial).start() if args.record or script else None
    out_dir = Path(args.out or tempfile.mkdtemp(prefix="bench_generate_"))
    out_dir.mkdir(parents=True, exist_ok=True)
    options: Dict[str, Any] = dict(max_passes=args.max_passes, seed=args.seed, concurrency=args.concurrency,
                                   timeout=args.timeout, cache_dir=args.cache_dir or out_dir / "cache")
    for name in ("mix", "cite", "prompt_language", "max_calls", "per_call", "max_tokens", "response_format",
                 "temperature"):
        if getattr(args, name) is not None:
            options[name] = getattr(args, name)
    if args.skip_check:
        options["skip_checks"] = tuple(args.skip_check)
    load_before = _load()
    t0 = time.time()
    res = None
    try:
        res = ragexam.generate(args.corpus, args.n, model=args.model, base_url=rec.base_url if rec else args.base_url,
                               api_key=args.api_key or os.environ.get("OPENAI_API_KEY") or "local",
                               out=out_dir / "qa.jsonl", **options)
    finally:
        if rec is not None:
            rec.stop()
        if rec is not None and args.record:
            header = {"header": {"corpus": _portable(args.corpus), "n": args.n, "model": args.model,
                                 "options": {**({"cite": res.card["cite"]} if res is not None else {}),
                                             **{k: (str(v) if isinstance(v, Path) else v) for k, v in options.items()
                                                if k not in ("cache_dir", "timeout", "concurrency")}},
                                 **({"script": _portable(args.script)} if args.script else {}),
                                 **({"checks": list(res.card["checks"])} if res is not None else {}),
                                 "recorded": time.strftime("%Y-%m-%d %H:%M"), "endpoint": args.base_url,
                                 "load_before": load_before, "load_after": _load(),
                                 "result": None if res is None else {
                                     "kept": [r["question"] for r in res.records],
                                     "rejections": dict(Counter(r["reason"] for r in res.rejects))}}}
            Path(args.record).write_text("".join(json.dumps(r, ensure_ascii=False) + "\n"
                                                 for r in [header] + rec.records), encoding="utf-8")
            if partial is not None:
                partial.unlink(missing_ok=True)
    seconds = time.time() - t0
    return summarize(res, seconds, load_before, _load(), args, out_dir)


def summarize(res: Any, seconds: float, load_before: List[float], load_after: List[float], args: Any,
              out_dir: Path) -> Dict[str, Any]:
    card = res.card
    usage = card["this_run"]["usage"]
    gen_calls = usage.get("generation", {}).get("calls", 0) + usage.get("generation", {}).get("cached", 0)
    kept = len(res.records)
    reasons = dict(Counter(r["reason"] for r in res.rejects))
    return {
        "command": " ".join(sys.argv), "date": time.strftime("%Y-%m-%d %H:%M"), "corpus": str(args.corpus),
        "n": args.n, "signature": res.signature, "generation_calls": gen_calls,
        "check_calls": usage.get("checks", {}).get("calls", 0) + usage.get("checks", {}).get("cached", 0),
        "candidates": card["candidates"], "kept": kept, "kept_per_call": round(kept / gen_calls, 2) if gen_calls else None,
        "rejections": reasons, "unwrapped": sum(1 for r in res.records if r["metadata"]["generation"].get("unwrapped")),
        "seconds": round(seconds, 1), "seconds_per_kept": round(seconds / kept, 1) if kept else None,
        "load_before": load_before, "load_after": load_after, "passes": card["passes"], "stopped": card["stopped"],
        "mix": card["mix"], "out": str(out_dir),
        "questions": [_brief(r) for r in res.records],
    }


def _brief(r: Dict[str, Any]) -> Dict[str, Any]:
    g = r["metadata"]["generation"]
    return {"query_id": r["query_id"], "type": r["type"], "question": r["question"], "answer": r["ground_truth"],
            "evidence": r.get("evidence", []), "docs": r.get("relevant_doc_ids", []),
            "critic": (g.get("critic") or {}).get("score"), "reader": (g.get("reader") or {}).get("answer"),
            "agreement": (g.get("reader") or {}).get("agreement"), "unwrapped": bool(g.get("unwrapped"))}


def print_summary(s: Dict[str, Any]) -> None:
    print(f"{s['date']}  {s['command']}")
    print(f"load average before {s['load_before']}, after {s['load_after']}")
    print(f"signature: {s['signature']}")
    print(f"generation calls {s['generation_calls']}, check calls {s['check_calls']}, candidates {s['candidates']}, "
          f"kept {s['kept']} ({s['kept_per_call']} per generation call), unwrapped evidence in {s['unwrapped']}")
    print(f"time {s['seconds']} s, {s['seconds_per_kept']} s per kept question; passes {s['passes']}, stopped: "
          f"{s['stopped']}")
    print("rejections: " + ", ".join(f"{k} {v}" for k, v in sorted(s["rejections"].items(), key=lambda kv: -kv[1])))
    for q in s["questions"]:
        print(f"\n[{q['query_id']}] ({q['type']}, critic {q['critic']}, {q['agreement']}) {q['question']}")
        print(f"   answer:   {q['answer']}")
        for e in q["evidence"]:
            print(f"   evidence: {e}")
        if q["reader"]:
            print(f"   reader:   {q['reader']}")


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--base-url", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--api-key")
    ap.add_argument("--corpus", default=str(HANDBOOK), help="corpus file or bundled name (default: the 12-document "
                                                            "Korean handbook in tests/data)")
    ap.add_argument("-n", type=int, default=8)
    ap.add_argument("--mix")
    ap.add_argument("--cite", choices=("spans", "sentences", "focus"))
    ap.add_argument("--prompt-lang", dest="prompt_language", choices=("ko", "en"))
    ap.add_argument("--skip-check", action="append", default=[])
    ap.add_argument("--per-call", type=int)
    ap.add_argument("--temperature", type=float, help="sampling temperature of the generation calls (default: "
                    "ragexam's)")
    ap.add_argument("--max-tokens", type=int, help="completion limit of a generation call (small: provokes truncation)")
    ap.add_argument("--response-format", choices=("auto", "json_schema", "json_object", "none"),
                    help="structured output asked of the endpoint (none: the model's own JSON habits, e.g. fences)")
    ap.add_argument("--max-passes", type=int, default=30)
    ap.add_argument("--max-calls", type=int)
    ap.add_argument("--seed", type=int, default=12345)
    ap.add_argument("--concurrency", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=900.0)
    ap.add_argument("--cache-dir")
    ap.add_argument("--out", help="folder for the set, its side files and summary.json")
    ap.add_argument("--record", help="write the replay file (JSON Lines) of every call")
    ap.add_argument("--script", help="answer generation calls from this JSON file ({doc_id: [items]}) instead of the "
                                     "model; the checks still go to the model (to record its verdicts on given "
                                     "questions)")
    ap.add_argument("--json", action="store_true", help="print the summary as JSON")
    args = ap.parse_args(argv)
    import signal

    def stop(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    before = signal.signal(signal.SIGTERM, stop)  # a stopped run still writes what it recorded (result: null)
    try:
        s = run(args)
    finally:
        signal.signal(signal.SIGTERM, before)
    Path(s["out"], "summary.json").write_text(json.dumps(s, ensure_ascii=False, indent=1), encoding="utf-8")
    if args.json:
        print(json.dumps(s, ensure_ascii=False, indent=1))
    else:
        print_summary(s)
    return 0


if __name__ == "__main__":
    sys.exit(main())
