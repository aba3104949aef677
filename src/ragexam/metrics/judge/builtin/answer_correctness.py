"""``answer_correctness``: does the answer agree with the reference answer (1-5)?

Reply: ``{"score": 1-5, "reasoning": str}``.  Score: the 1-5 score.  Label by the band of the score
(:data:`BANDS`): ``correct`` (4-5), ``partially_correct`` (2-3), ``incorrect`` (1; declining included).  Pass:
verdict ``correct``.  Graded on answerable questions; its verdict is an answer's correctness in ``ragexam
score``'s stage attribution.  Agreement units: the 1-5 score (a human label is an integer 1-5).
"""

from __future__ import annotations

from typing import Any, Dict, Sequence, Tuple

from ragexam.metrics.judge import stubs
from ragexam.metrics.judge.contract import Contract, Field, Levels
from ragexam.metrics.judge.metric import Allowance, JudgeMetric
from ragexam.metrics.judge.prompts import REASONING, Prompts
from ragexam.metrics.judge.replies import Verdict, band_label

#: the prompt (the user message) per language
TEMPLATES = {
    "ko": """답변이 정답과 일치하는지 평가하세요.

## 질문
{question}

## 정답
{ground_truth}

## 답변
{answer}

## 평가 기준
정답의 핵심 내용(숫자, 기한, 이름, 메뉴 경로, 절차, 조건)을 답변이 맞게 전하는지 보세요. 표현이 달라도 뜻이 같으면 맞은 것입니다. 정답에 없는 내용을 덧붙인 것만으로는 감점하지 않지만, 정답과 어긋나는 내용이 있으면 틀린 것입니다.
- 5 : 핵심 내용이 모두 맞음
- 4 : 핵심은 맞고 사소한 세부만 빠지거나 덜 정확함
- 3 : 핵심 중 일부만 맞고 일부가 빠짐
- 2 : 대부분 빠지거나 틀렸지만 맞는 내용이 조금 있음
- 1 : 틀렸거나 정답과 어긋남, 또는 답하지 않음(답변 거절 포함)

## 응답 형식 (JSON)
{"score": 점수, "reasoning": "판단 근거"}
"score"는 위 기준의 1-5 정수 하나입니다.

반드시 유효한 JSON만 출력하세요.""",
    "en": """Judge whether the answer agrees with the reference answer.

## Question
{question}

## Reference answer
{ground_truth}

## Answer
{answer}

## Rubric
Check whether the answer conveys the key content of the reference answer (numbers, deadlines, names, menu paths, procedures, conditions). Different wording with the same meaning is correct. Adding content that the reference does not mention is not penalised by itself; content that contradicts the reference is wrong.
- 5 : all key content is right
- 4 : the key content is right, a minor detail is missing or imprecise
- 3 : part of the key content is right, part is missing
- 2 : mostly missing or wrong, but something right
- 1 : wrong, contradicts the reference, or no answer (declining included)

## Response format (JSON)
{"score": score, "reasoning": "why"}
"score" is one integer from 1 to 5 by the rubric.

Output valid JSON only.""",
}


#: verdict -> the scores of its band
BANDS: Dict[str, Tuple[int, ...]] = {"correct": (4, 5), "partially_correct": (2, 3), "incorrect": (1,)}


def read(r: Dict[str, Any], units: Sequence[str]) -> Verdict:
    label = band_label(r["score"], BANDS)
    return Verdict(float(r["score"]), label, {"verdict": label, "score": r["score"], "reasoning": r["reasoning"]})


def stub(x: stubs.StubInputs) -> Dict[str, Any]:
    s = 1 if stubs.declines(x.answer) else stubs.band(stubs.f1(x.answer, x.ground_truth), (0.5, 0.35, 0.25, 0.12))
    if stubs.contradicts(x.answer, x.ground_truth, clauses=True):
        s = min(s, 2)
    return {"score": s, "reasoning": stubs.WHY}


METRIC = JudgeMetric(
    name="answer_correctness", question="does the answer agree with the ground truth (1-5)",
    needs=("answer", "ground_truth"), applies_to="answerable", labels=("incorrect", "partially_correct", "correct"),
    score_range=(1.0, 5.0), unit_scale=(1, 2, 3, 4, 5), ordinal=True, prompts=Prompts(TEMPLATES, version="2"),
    contract=Contract((Field("score", Levels((1, 2, 3, 4, 5))), REASONING), score="score"),
    reader=read, stub=stub, pass_rule=lambda s, label, d: label == "correct", pass_text="verdict correct (4-5)",
    allowance=Allowance(base=80), order=60, default_for=("score", "check"), human_example=4)
