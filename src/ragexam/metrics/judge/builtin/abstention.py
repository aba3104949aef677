"""``abstention``: on an out-of-corpus question, did the answer decline instead of inventing an answer?

Reply: ``{"verdict": "abstained" | "answered", "reasoning": str}``.  Score: 1 for ``abstained``, 0 for
``answered``; the label is the verdict.  Pass: verdict ``abstained``.  Graded on out-of-corpus (unanswerable)
questions only; its verdict is an answer's abstention in ``ragexam score``'s stage attribution.  Agreement
units: abstained (1) / answered (0).
"""

from __future__ import annotations

from typing import Any, Dict, Sequence

from ragexam.metrics.judge import stubs
from ragexam.metrics.judge.contract import Choice, Contract, Field
from ragexam.metrics.judge.metric import Allowance, JudgeMetric, binary_units
from ragexam.metrics.judge.prompts import REASONING, Prompts
from ragexam.metrics.judge.replies import Verdict

#: the prompt (the user message) per language
TEMPLATES = {
    "ko": """이 질문은 제공된 문서로는 답할 수 없는 질문(문서 밖 질문)입니다. 답변이 답을 지어내지 않고 답할 수 없다고 밝혔는지 판단하세요.

## 질문
{question}

## 답변
{answer}

## 판단 기준
- "abstained" : 문서에서 찾을 수 없다, 알 수 없다, 담당 부서에 문의하라는 식으로 답을 삼갔고, 질문에 대한 구체적인 답(숫자, 날짜, 금액, 절차 등)을 내놓지 않았습니다.
- "answered" : 질문에 대한 구체적인 답을 내놓았습니다. "문서에는 없지만 보통은 …"처럼 단서를 달고 추측한 답도 "answered"입니다.

## 응답 형식 (JSON)
{"verdict": "abstained", "reasoning": "판단 근거"}
"verdict"는 "abstained" 또는 "answered"입니다.

반드시 유효한 JSON만 출력하세요.""",
    "en": """The documents cannot answer this question (an out-of-corpus question). Judge whether the answer declined instead of inventing an answer.

## Question
{question}

## Answer
{answer}

## Criteria
- "abstained" : the answer declines (says the documents do not contain it, that it cannot tell, or to ask the responsible team) and gives no concrete answer to the question (numbers, dates, amounts, procedures).
- "answered" : the answer gives a concrete answer to the question. A hedged guess ("the documents don't say, but usually ...") is "answered".

## Response format (JSON)
{"verdict": "abstained", "reasoning": "why"}
"verdict" is "abstained" or "answered".

Output valid JSON only.""",
}


def read(r: Dict[str, Any], units: Sequence[str]) -> Verdict:
    v = r["verdict"]
    return Verdict(1.0 if v == "abstained" else 0.0, v, {"verdict": v, "reasoning": r["reasoning"]})


def stub(x: stubs.StubInputs) -> Dict[str, Any]:
    return {"verdict": "abstained" if stubs.declines(x.answer) else "answered", "reasoning": stubs.WHY}


METRIC = JudgeMetric(
    name="abstention", question="(out-of-corpus questions) did the answer decline", needs=("answer",),
    applies_to="unanswerable", labels=("answered", "abstained"), score_range=(0.0, 1.0), unit_scale=(0, 1),
    ordinal=False, prompts=Prompts(TEMPLATES, version="2"),
    contract=Contract((Field("verdict", Choice(("abstained", "answered"), positive="abstained")), REASONING),
                      score="verdict"),
    reader=read, stub=stub, pass_rule=lambda s, label, d: label == "abstained", pass_text="verdict abstained",
    unit_rule=binary_units("abstained"), allowance=Allowance(base=70), order=70, default_for=("score",))
