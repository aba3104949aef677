"""``answer_relevancy``: does the answer address what the question asked (not: is it correct)?

Reply: ``{"declined": true/false, "score": 1-5, "reasoning": str}``.  Score: the 1-5 score.  Label by the band
of the score (:data:`BANDS`): ``relevant`` (4-5), ``partially_relevant`` (2-3), ``irrelevant`` (1).  An answer
that declines is unjudged ``declined`` (not applicable: the abstention metric grades declining).  Pass: verdict
``relevant``.  Agreement units: the 1-5 score.
"""

from __future__ import annotations

from typing import Any, Dict, Sequence, Tuple

from ragexam.metrics.judge import stubs
from ragexam.metrics.judge.contract import Contract, Field, Flag, Levels, NotApplicable
from ragexam.metrics.judge.metric import Allowance, JudgeMetric
from ragexam.metrics.judge.prompts import REASONING, Prompts
from ragexam.metrics.judge.replies import Verdict, band_label

#: the prompt (the user message) per language
TEMPLATES = {
    "ko": """답변이 질문이 물은 것에 답하는지 평가하세요. 답변의 내용이 맞는지는 평가하지 않습니다.

## 질문
{question}

## 답변
{answer}

## 평가 기준
먼저 답변이 답하기를 거절하는지(문서에서 찾을 수 없다, 모른다, 문의하라 등) 보세요. 거절하고 다른 답을 내놓지 않았으면 "declined"는 true이고 "score"는 1로 두세요. 아니면 "declined"는 false입니다.
질문이 무엇을 물었는지(무엇, 언제, 어떻게, 왜, 얼마)를 정하고, 답변이 바로 그것에 답하는지 보세요. 사실이 맞는지, 문서에 있는지는 보지 않습니다.
- 5 : 물은 것에 정면으로 답하고 상관없는 내용이 없음
- 4 : 물은 것에 답하지만 상관없는 내용이 조금 섞였거나 물은 것 중 사소한 부분이 빠짐
- 3 : 물은 것의 일부에만 답함, 또는 상관없는 내용이 절반쯤 됨
- 2 : 질문의 주제는 다루지만 물은 것에는 거의 답하지 않음
- 1 : 다른 질문에 대한 답이거나 질문과 무관함

## 응답 형식 (JSON)
{"declined": false, "score": 점수, "reasoning": "판단 근거"}

반드시 유효한 JSON만 출력하세요.""",
    "en": """Judge whether the answer addresses what the question asked. Do not judge whether the answer is correct.

## Question
{question}

## Answer
{answer}

## Rubric
First see whether the answer declines (says the documents do not contain it, that it does not know, to ask someone). If it declines and gives no other answer, "declined" is true and "score" is 1. Otherwise "declined" is false.
Decide what the question asks for (what, when, how, why, how much), then whether the answer responds to exactly that. Whether the facts are right, or found in any document, does not matter here.
- 5 : responds directly to what was asked, nothing unrelated
- 4 : responds to what was asked, with a little unrelated content or a minor part of the question left out
- 3 : responds to part of what was asked, or about half of it is unrelated
- 2 : touches the question's topic but hardly responds to what was asked
- 1 : answers a different question or is unrelated to it

## Response format (JSON)
{"declined": false, "score": score, "reasoning": "why"}

Output valid JSON only.""",
}


#: verdict -> the scores of its band
BANDS: Dict[str, Tuple[int, ...]] = {"relevant": (4, 5), "partially_relevant": (2, 3), "irrelevant": (1,)}


def read(r: Dict[str, Any], units: Sequence[str]) -> Verdict:
    if r["declined"]:
        raise NotApplicable("declined", "the answer declines to answer, so whether it addresses the question is "
                                        "not defined (the abstention metric grades declining)",
                            {"declined": True, "reasoning": r["reasoning"]})
    label = band_label(r["score"], BANDS)
    return Verdict(float(r["score"]), label, {"verdict": label, "score": r["score"], "reasoning": r["reasoning"]})


def stub(x: stubs.StubInputs) -> Dict[str, Any]:
    return {"declined": stubs.declines(x.answer),
            "score": stubs.band(stubs.overlap(x.question, x.answer) * 2, (0.8, 0.5, 0.3, 0.1)), "reasoning": stubs.WHY}


METRIC = JudgeMetric(
    name="answer_relevancy", question="does the answer address the question asked (not: is it correct)",
    needs=("answer",), applies_to="all", labels=("irrelevant", "partially_relevant", "relevant"),
    score_range=(1.0, 5.0), unit_scale=(1, 2, 3, 4, 5), ordinal=True, prompts=Prompts(TEMPLATES, version="2"),
    contract=Contract((Field("declined", Flag()), Field("score", Levels((1, 2, 3, 4, 5))), REASONING), score="score"),
    reader=read, stub=stub, pass_rule=lambda s, label, d: label == "relevant", pass_text="verdict relevant (4-5)",
    allowance=Allowance(base=80), order=50)
