"""Experiment: does the faithfulness verdict depend on the reply format? Resend recorded requests in other formats.

docs/judge.md found the small local judge's faithfulness verdicts tied to the slot, not the claim (in
``{"supported": [v1, v2]}`` the first of two claims is written ``true`` every time).  This script takes the
faithfulness requests ragexam recorded (``tests/data/judge_qwen_*.jsonl.gz``, made by
``benchmarks/bench_judge_llm.py --record``), rewrites only their reply format, sends them to an
OpenAI-compatible endpoint and compares the new verdicts with the recorded ones claim by claim:

* ``echo``: ``{"claims": [{"claim": "<claim i, fixed by the schema>", "supported": true|false}, ...]}`` -- each
  verdict written right after the claim it is about;
* ``quote``: the same with ``"evidence"`` (a context sentence quoted, or "") between claim and verdict.

Which claims are supported is known for the recorded sets: the reference answers' sentences are, except
``hq_057``'s second sentence (its paragraph is not in BM25's top 3) and ``hq_059``'s (BM25 missed its
evidence); in ``judge_qwen_score8_perturbed`` a sentence that differs from its key's is not.

    python benchmarks/judge_reply_formats.py --base-url http://127.0.0.1:8091/v1 --model qwen2.5-1.5b \\
        --format echo tests/data/judge_qwen_score8.jsonl.gz tests/data/judge_qwen_score8_perturbed.jsonl.gz

Not part of ragexam (the format ragexam sends is ``prompts.CONTRACTS["faithfulness"]``); the numbers are the
model's, so say which model and machine produced them.
"""

from __future__ import annotations

import argparse
import copy
import gzip
import json
import re
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _bench import machine_line  # noqa: E402

#: (question prefix, claim prefix) of the recorded claims whose evidence is not in the contexts
UNSUPPORTED = (("Daon MDM에 태블릿", "다온포털 > 내 정보"), ("다음 주 금요일", ""))


def claims_of(prompt: str) -> List[str]:
    section = prompt.split("## 답변의 주장", 1)[1].split("## 판단 기준", 1)[0].strip()
    return [m.group(1).strip() for m in re.finditer(r"\[주장 \d+\] : (.*?)(?=\n\n\[주장 \d+\] : |\Z)", section, re.S)]


def rewrite(request: Dict[str, Any], fmt: str, claims: List[str]) -> Dict[str, Any]:
    """``request`` with the reply format ``fmt`` in its schema and in the prompt's format section."""
    n = len(claims)
    example = '{"claim": "주장 %d의 문장 그대로", ' + ('"evidence": "이 주장을 뒷받침하는 컨텍스트 문장 그대로, 없으면 빈 '
                                                   '문자열", ' if fmt == "quote" else "") + '"supported": true 또는 false}'

    def item(claim: str) -> Dict[str, Any]:
        props: Dict[str, Any] = {"claim": {"const": claim}}
        if fmt == "quote":
            props["evidence"] = {"type": "string", "maxLength": 200}
        props["supported"] = {"type": "boolean"}
        return {"type": "object", "properties": props, "required": list(props), "additionalProperties": False}

    schema = {"type": "object", "properties": {"claims": {"type": "array", "prefixItems": [item(c) for c in claims],
                                                          "minItems": n, "maxItems": n}},
              "required": ["claims"], "additionalProperties": False}
    body = copy.deepcopy(request)
    text = body["messages"][-1]["content"]
    text = re.sub(r'"supported"에는 .*?넣으세요\.', f'"claims"에는 [주장 1]부터 [주장 {n}]까지 순서대로, 주장마다 그 문장을 '
                  '"claim"에 그대로 옮겨 적고 "supported"에 true 또는 false를 쓰세요.', text)
    fmt_line = '{"claims": [' + ", ".join(example % (i + 1) for i in range(n)) + "]}"
    text = re.sub(r"## 응답 형식 \(JSON\)\n.*?\n\n", lambda _: "## 응답 형식 (JSON)\n" + fmt_line + "\n\n", text, flags=re.S)
    body["messages"][-1]["content"] = text
    body["response_format"] = {"type": "json_schema", "json_schema": {"name": "faithfulness", "schema": schema}}
    body["max_tokens"] = 1024
    return body


def p_true(choice: Dict[str, Any], n: int) -> List[Optional[float]]:
    """P(true) at each claim's ``"supported"`` value (ragexam's reader, :mod:`ragexam.llm.logprobs`)."""
    from ragexam.llm.logprobs import distribution_at, parse_logprobs, value_offsets

    content = choice["message"]["content"]
    tokens = parse_logprobs(choice)
    spans = value_offsets(content)
    out: List[Optional[float]] = []
    for i in range(n):
        at = spans.get(("claims", i, "supported"))
        d = distribution_at(tokens, content, at[0], ["true", "false"]) if tokens and at else None
        out.append(round(d.probs.get("true", 0.0), 2) if d else None)
    return out


def truth(question: str, claim: str, key_claims: List[str]) -> bool:
    if any(question.startswith(q) and claim.startswith(c) for q, c in UNSUPPORTED):
        return False
    return claim in key_claims


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base-url", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--format", choices=("echo", "quote"), required=True)
    ap.add_argument("--timeout", type=float, default=900.0)
    ap.add_argument("files", nargs="+", help="recordings of bench_judge_llm.py --record (a file named *perturbed* holds perturbed keys)")
    args = ap.parse_args()
    print(machine_line())
    url = args.base_url.rstrip("/") + "/chat/completions"
    rows: List[Tuple[str, str, List[str], List[bool], List[bool], List[Optional[float]]]] = []
    keys: Dict[str, List[str]] = {}
    for path in args.files:
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            records = [json.loads(line) for line in fh if line.strip()]
        for rec in records:
            req = rec["request"]
            if "supported" not in json.dumps(req.get("response_format", {})) or "## 답변의 주장" not in \
                    req["messages"][-1]["content"]:
                continue
            prompt = req["messages"][-1]["content"]
            question = prompt.split("## 질문", 1)[1].split("##", 1)[0].strip()
            claims = claims_of(prompt)
            old = json.loads(re.search(r"\{.*\}", rec["response"]["choices"][0]["message"]["content"], re.S)
                             .group(0))["supported"]
            body = {**rewrite(req, args.format, claims), "model": args.model}
            t0 = time.time()
            with urllib.request.urlopen(urllib.request.Request(url, json.dumps(body).encode("utf-8"), {
                    "Content-Type": "application/json"}), timeout=args.timeout) as resp:
                reply = json.load(resp)
            choice = reply["choices"][0]
            new = [c["supported"] for c in json.loads(choice["message"]["content"])["claims"]]
            probs = p_true(choice, len(claims))
            if "perturbed" not in path and question not in keys:
                keys[question] = claims
            rows.append((Path(path).name, question, claims, old, new, probs))
            print(f"{Path(path).name:<42} {question[:24]:<26} recorded {old} now {new} P(true) {probs} "
                  f"{time.time() - t0:.0f} s", flush=True)
    for col, label in ((3, "recorded format"), (4, f"{args.format} format")):
        sup = [(truth(q, c, keys.get(q, [])), v) for _, q, cl, *vals in rows for c, v in zip(cl, vals[col - 3])]
        # a key is judged right when it is faithful exactly when every claim is supported (hq_059: no evidence)
        keys_right = [all(r[col]) == all(truth(r[1], c, keys.get(r[1], [])) for c in r[2]) for r in rows
                      if "perturbed" not in r[0] and not r[1].startswith("다음 주 금요일")]
        pert = [not all(r[col]) for r in rows if "perturbed" in r[0]]
        print(f"{label}: supported claims written true {sum(v for t, v in sup if t)} of {sum(t for t, _ in sup)}, "
              f"unsupported written false {sum(not v for t, v in sup if not t)} of {sum(not t for t, _ in sup)}; "
              f"keys with their evidence judged right {sum(keys_right)} of {len(keys_right)}; perturbed keys "
              f"unfaithful {sum(pert)} of {len(pert)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
