"""``pairwise``: which of two answers to the same question is better (asked in both orders)?

Not a per-answer metric: :mod:`ragexam.metrics.judge.pairwise` asks it for each pair in both orders and counts a
verdict only when both orders agree.  Reply: ``{"winner": "1" | "2" | "tie", "reasoning": str}``.  Score: 1 when
the first answer shown wins, 0 when the second does, 0.5 for a tie; the label is the winner.  No pass rule.
Agreement units: 1 / 0 for a decisive verdict (ties are left out).
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Sequence

from ragexam.metrics.judge import stubs
from ragexam.metrics.judge.contract import Choice, Contract, Field
from ragexam.metrics.judge.metric import Allowance, JudgeMetric
from ragexam.metrics.judge.prompts import REASONING, Prompts
from ragexam.metrics.judge.replies import Verdict

#: the prompt (the user message) per language
TEMPLATES = {
    "ko": """두 답변 가운데 질문에 더 잘 답한 답변을 고르세요.

## 질문
{question}

## 정답
{ground_truth}

## 답변 1
{answer}

## 답변 2
{second_answer}

## 판단 기준
정답과 맞는지(숫자, 기한, 이름, 메뉴 경로, 절차, 조건), 질문이 물은 것에 답하는지, 정답과 어긋나는 내용을 덧붙이지 않았는지를 보세요. 정답이 "문서에 없다"는 내용이면, 답을 지어내지 않고 답할 수 없다고 밝힌 답변이 더 낫습니다. 답변의 길이, 말투, 그리고 어느 쪽이 먼저 나왔는지는 판단에 넣지 마세요.
- "1" : 답변 1이 더 낫습니다.
- "2" : 답변 2가 더 낫습니다.
- "tie" : 두 답변이 같은 수준입니다(둘 다 맞거나 둘 다 틀림).

## 응답 형식 (JSON)
{"winner": "1", "reasoning": "판단 근거"}
"winner"는 "1", "2", "tie" 중 하나입니다.

반드시 유효한 JSON만 출력하세요.""",
    "en": """Choose which of two answers answers the question better.

## Question
{question}

## Reference answer
{ground_truth}

## Answer 1
{answer}

## Answer 2
{second_answer}

## Criteria
Check agreement with the reference answer (numbers, deadlines, names, menu paths, procedures, conditions), whether the answer responds to what was asked, and whether it adds content that contradicts the reference. When the reference says the documents do not contain the answer, an answer that declines instead of inventing one is better. Do not let length, tone, or which answer comes first influence you.
- "1" : answer 1 is better.
- "2" : answer 2 is better.
- "tie" : both are equally good (both right, or both wrong).

## Response format (JSON)
{"winner": "1", "reasoning": "why"}
"winner" is one of "1", "2", "tie".

Output valid JSON only.""",
}


def read(r: Dict[str, Any], units: Sequence[str]) -> Verdict:
    w = r["winner"]
    return Verdict({"1": 1.0, "2": 0.0, "tie": 0.5}[w], w, {"winner": w, "reasoning": r["reasoning"]})


def stub(x: stubs.StubInputs) -> Dict[str, Any]:
    a1, a2 = x.answer, x.second_answer
    if stubs.declines(x.ground_truth):
        v1, v2 = float(stubs.declines(a1)), float(stubs.declines(a2))
    else:
        v1, v2 = stubs.f1(a1, x.ground_truth), stubs.f1(a2, x.ground_truth)
    return {"winner": "tie" if abs(v1 - v2) < 0.05 else "1" if v1 > v2 else "2", "reasoning": stubs.WHY}


def _units(score: Optional[float], label: Optional[str], details: Mapping[str, Any]) -> List[int]:
    return [{"1": 1, "2": 0}[label]] if label in ("1", "2") else []


METRIC = JudgeMetric(
    name="pairwise", question="which of two answers is better (asked in both orders)",
    needs=("answer", "second_answer", "ground_truth"), applies_to="all", labels=("2", "tie", "1"),
    score_range=(0.0, 1.0), unit_scale=(0, 1), ordinal=False, prompts=Prompts(TEMPLATES, version="2"),
    contract=Contract((Field("winner", Choice(("1", "2", "tie"))), REASONING), score="winner"),
    reader=read, stub=stub, unit_rule=_units, allowance=Allowance(base=80), order=80, per_answer=False)
