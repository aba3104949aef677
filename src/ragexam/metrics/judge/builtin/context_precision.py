"""``context_precision``: is each retrieved context useful for arriving at the reference answer?

Units: the retrieved contexts.  Reply: ``{"useful": [one true/false per context], "reasoning": str}``.  Score:
the rank-aware average precision of the flags in retrieved order, 0-1
(:func:`~ragexam.metrics.judge.replies.average_precision`; 0 when no context is useful), and with probability
scoring the same formula over the probabilities of "useful"; no label, no pass rule (read the mean).  Graded on
answerable questions; ``ragexam score`` reports its evidence twin ``evidence_precision`` beside it.  Agreement
units: one useful (1) / not useful (0) per context.
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Sequence

from ragexam.metrics.judge import stubs
from ragexam.metrics.judge.contract import Contract, Field, Flag, PerUnit
from ragexam.metrics.judge.metric import Allowance, JudgeMetric
from ragexam.metrics.judge.prompts import REASONING, Prompts
from ragexam.metrics.judge.replies import Verdict, average_precision

#: the prompt (the user message) per language
TEMPLATES = {
    "ko": """검색된 각 컨텍스트가 정답에 이르는 데 쓸모 있는지 판단하세요.

## 질문
{question}

## 정답
{ground_truth}

## 검색된 컨텍스트
{contexts}

## 판단 기준
- true : 정답의 내용(숫자, 이름, 절차, 조건 등) 가운데 적어도 일부가 이 컨텍스트에 있어서, 이 컨텍스트를 읽으면 정답에 이를 수 있거나 가까워집니다.
- false : 정답에 이르는 데 도움이 되지 않습니다. 주제나 낱말만 비슷하고 정답의 내용은 없는 컨텍스트도 false입니다.
컨텍스트마다 따로 판단하고, 순서는 판단에 넣지 마세요.

컨텍스트는 {n}개입니다. "useful"에는 [컨텍스트 1]부터 [컨텍스트 {n}]까지 순서대로 true 또는 false를 정확히 {n}개 넣으세요.

## 응답 형식 (JSON)
{"useful": [{slots}], "reasoning": "판단 근거"}

반드시 유효한 JSON만 출력하세요.""",
    "en": """Decide for each retrieved context whether it is useful for arriving at the reference answer.

## Question
{question}

## Reference answer
{ground_truth}

## Retrieved contexts
{contexts}

## Criteria
- true : the context holds at least part of the reference answer's content (numbers, names, procedures, conditions), so reading it gets one to the answer or closer to it.
- false : it does not help to arrive at the reference answer. A context that only shares the topic or some words, without the answer's content, is false.
Judge each context on its own; do not let its position influence you.

There are {n} contexts. "useful" must hold exactly {n} values true or false, in order from [Context 1] to [Context {n}].

## Response format (JSON)
{"useful": [{slots}], "reasoning": "why"}

Output valid JSON only.""",
}


def read(r: Dict[str, Any], units: Sequence[str]) -> Verdict:
    useful = r["useful"]
    return Verdict(average_precision(useful), None, {"useful": list(useful), "n_useful": sum(useful),
                                                     "reasoning": r["reasoning"]})


def stub(x: stubs.StubInputs) -> Dict[str, Any]:
    return {"useful": [stubs.overlap(x.ground_truth, c) >= 0.3 for c in x.units], "reasoning": stubs.WHY}


def _units(score: Optional[float], label: Optional[str], details: Mapping[str, Any]) -> List[int]:
    return [int(bool(u)) for u in details.get("useful", [])]


METRIC = JudgeMetric(
    name="context_precision",
    question="is each retrieved context useful for reaching the reference answer; rank-aware share",
    needs=("contexts", "ground_truth"), applies_to="answerable", labels=(), score_range=(0.0, 1.0), unit_scale=(0, 1),
    ordinal=False, prompts=Prompts(TEMPLATES, version="2"),
    contract=Contract((Field("useful", PerUnit(Flag(), "contexts")), REASONING), score="useful"),
    reader=read, stub=stub, unit_rule=_units, allowance=Allowance(base=60, per_unit=6), combine="ap",
    order=20, evidence_twin=("evidence_precision", "score"))
