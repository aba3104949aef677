"""``context_recall``: which share of the reference answer's statements do the retrieved contexts support?

Units: the statements of the reference answer (its sentences, :func:`~ragexam.metrics.judge.units.split_sentences`).
Reply: ``{"supported": [one true/false per statement], "reasoning": str}``.  Score: the supported share, 0-1.
Label: ``complete`` when every statement is supported, else ``incomplete``.  Pass: every statement supported.
Quotable: a statement a context states in the same words is supported without the judge's say.  Graded on
answerable questions; ``ragexam score`` reports its evidence twin ``evidence_recall`` beside it.  Agreement
units: complete (1) / incomplete (0) per item.
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
    "ko": """정답의 각 진술이 검색된 컨텍스트에 들어 있는지 판단하세요.

## 질문
{question}

## 검색된 컨텍스트
{contexts}

## 정답의 진술
{statements}

## 판단 기준
진술마다 따로 판단하세요.
- true : 어떤 컨텍스트에 그 내용이 있거나 컨텍스트의 내용에서 바로 따라 나옵니다.
- false : 어느 컨텍스트에도 그 내용이 없습니다. 상식으로 맞는 말이어도 컨텍스트에 없으면 false입니다.

진술은 {n}개입니다. "supported"에는 [진술 1]부터 [진술 {n}]까지 순서대로 true 또는 false를 정확히 {n}개 넣으세요.

## 응답 형식 (JSON)
{"supported": [{slots}], "reasoning": "판단 근거"}

반드시 유효한 JSON만 출력하세요.""",
    "en": """Judge whether each statement of the reference answer is found in the retrieved contexts.

## Question
{question}

## Retrieved contexts
{contexts}

## Statements of the reference answer
{statements}

## Criteria
Judge each statement on its own.
- true : some context states it or it follows directly from a context.
- false : no context states it. A statement that is common knowledge but absent from the contexts is false.

There are {n} statements. "supported" must hold exactly {n} values true or false, in order from [Statement 1] to [Statement {n}].

## Response format (JSON)
{"supported": [{slots}], "reasoning": "why"}

Output valid JSON only.""",
}


def read(r: Dict[str, Any], units: Sequence[str]) -> Verdict:
    return read_supported(r, units, "statement", ("incomplete", "complete"))


METRIC = JudgeMetric(
    name="context_recall", question="which share of the reference answer's statements do the contexts support",
    needs=("contexts", "ground_truth"), applies_to="answerable", labels=("incomplete", "complete"),
    score_range=(0.0, 1.0), unit_scale=(0, 1), ordinal=False, prompts=Prompts(TEMPLATES, version="2"),
    contract=Contract((Field("supported", PerUnit(Flag(), "statements")), REASONING), score="supported"),
    reader=read, stub=stubs.supported_reply, pass_rule=lambda s, label, d: label == "complete", pass_text="every statement supported",
    unit_rule=binary_units("complete"), allowance=Allowance(base=60, per_unit=6), quotable=True,
    order=30, evidence_twin=("evidence_recall", "score"))
