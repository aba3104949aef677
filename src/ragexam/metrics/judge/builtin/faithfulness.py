"""``faithfulness``: is every claim (sentence) of the answer supported by the retrieved contexts?

Units: the claims of the answer (its sentences, :func:`~ragexam.metrics.judge.units.claims_of`; an answer without a
factual claim is unjudged ``no_claims``).  Reply: ``{"supported": [one true/false per claim], "reasoning": str}``.
Score: the supported share, 0-1.  Label: ``faithful`` when every claim is supported, else ``unfaithful``.  Pass:
every claim supported.  Quotable: a claim a context states in the same words is supported without the judge's
say.  Agreement units: faithful (1) / unfaithful (0) per item.
"""

from __future__ import annotations

from typing import Any, Dict, Sequence

from ragexam.metrics.judge import stubs
from ragexam.metrics.judge.contract import Contract, Field, Flag, PerUnit
from ragexam.metrics.judge.metric import Allowance, JudgeMetric, binary_units
from ragexam.metrics.judge.prompts import REASONING, Prompts
from ragexam.metrics.judge.replies import Verdict, read_supported

#: the prompt (the user message) per language
TEMPLATES = {
    "ko": """답변의 각 주장이 검색된 컨텍스트에 근거하는지 판단하세요.

## 질문
{question}

## 검색된 컨텍스트
{contexts}

## 답변의 주장
{claims}

## 판단 기준
주장마다 따로, 컨텍스트가 그 내용을 뒷받침하는지 판단하세요.
- true : 어떤 컨텍스트에 그 내용이 있거나 컨텍스트의 내용에서 바로 따라 나옵니다. 표현이 달라도 뜻이 같으면 true입니다.
- false : 어느 컨텍스트에도 그 내용이 없거나 컨텍스트와 어긋납니다. 상식으로 맞는 말이어도 컨텍스트에 없으면 false입니다.

주장은 {n}개입니다. "supported"에는 [주장 1]부터 [주장 {n}]까지 순서대로 true 또는 false를 정확히 {n}개 넣으세요.

## 응답 형식 (JSON)
{"supported": [{slots}], "reasoning": "판단 근거"}

반드시 유효한 JSON만 출력하세요.""",
    "en": """Judge whether each claim of the answer is grounded in the retrieved contexts.

## Question
{question}

## Retrieved contexts
{contexts}

## Claims of the answer
{claims}

## Criteria
For each claim on its own, decide whether the contexts support it.
- true : some context states it or it follows directly from a context. Different wording with the same meaning is true.
- false : no context states it, or a context contradicts it. A claim that is common knowledge but absent from the contexts is false.

There are {n} claims. "supported" must hold exactly {n} values true or false, in order from [Claim 1] to [Claim {n}].

## Response format (JSON)
{"supported": [{slots}], "reasoning": "why"}

Output valid JSON only.""",
}


def read(r: Dict[str, Any], units: Sequence[str]) -> Verdict:
    return read_supported(r, units, "claim", ("unfaithful", "faithful"))


METRIC = JudgeMetric(
    name="faithfulness", question="is every claim (sentence) of the answer supported by the contexts",
    needs=("answer", "contexts"), applies_to="all", labels=("unfaithful", "faithful"), score_range=(0.0, 1.0),
    unit_scale=(0, 1), ordinal=False, prompts=Prompts(TEMPLATES, version="2"),
    contract=Contract((Field("supported", PerUnit(Flag(), "claims")), REASONING), score="supported"),
    reader=read, stub=stubs.supported_reply, pass_rule=lambda s, label, d: label == "faithful", pass_text="every claim supported",
    unit_rule=binary_units("faithful"), allowance=Allowance(base=60, per_unit=6), quotable=True,
    order=40, default_for=("score", "check"))
