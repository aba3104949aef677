"""``context_relevance``: how relevant is each retrieved context to the question (the lecture's rubric, section 4)?

Units: the retrieved contexts.  Reply: ``{"scores": [one integer 1-5 per context], "average": a number,
"reasoning": str}`` (the lecture's key order).  Score: the mean of the scores, 1-5; no label.  The judge's own
``average`` is never used: ragexam recomputes it and records ``average_mismatch`` when the two differ by more
than :data:`AVERAGE_TOLERANCE` (so two-decimal rounding such as 2.33 for 7/3 is not a mismatch); summaries count
the mismatches.  Pass: some retrieved context scores 4 or 5 (the judge's "hit"), beside which ``ragexam score``
reports its evidence twin ``evidence_hit``.  Agreement units: one 1-5 score per context.
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Sequence

from ragexam.metrics.judge import stubs
from ragexam.metrics.judge.contract import Contract, Field, Levels, Number, PerUnit
from ragexam.metrics.judge.metric import Allowance, JudgeMetric
from ragexam.metrics.judge.prompts import REASONING, Prompts
from ragexam.metrics.judge.replies import Verdict

#: the prompt (the user message) per language
TEMPLATES = {
    "ko": """질문과 검색된 컨텍스트의 관련성을 평가하세요.

## 질문
{question}

## 검색된 컨텍스트
{contexts}

## 평가 기준
각 컨텍스트에 대해 1-5점으로 평가하세요:
- 5 : 질문에 직접적으로 답할 수 있는 핵심 정보 포함
- 4 : 질문과 매우 관련 있는 정보 포함
- 3 : 부분적으로 관련 있는 정보 포함
- 2 : 간접적으로만 관련 있음
- 1 : 거의 관련 없음

컨텍스트는 {n}개입니다. "scores"에는 [컨텍스트 1]부터 [컨텍스트 {n}]까지 순서대로 1-5 정수를 정확히 {n}개 넣으세요. 점수 척도(1-5)를 나열하지 말고 컨텍스트마다 점수 하나만 쓰세요.

## 응답 형식 (JSON)
{"scores": [{slots}], "average": 평균점수, "reasoning": "평가 근거"}

반드시 유효한 JSON만 출력하세요.""",
    "en": """Rate how relevant each retrieved context is to the question.

## Question
{question}

## Retrieved contexts
{contexts}

## Rubric
Score each context from 1 to 5:
- 5 : contains the key information that directly answers the question
- 4 : contains information closely related to the question
- 3 : contains partly relevant information
- 2 : only indirectly related
- 1 : barely related

There are {n} contexts. "scores" must hold exactly {n} integers from 1 to 5, in order from [Context 1] to [Context {n}]. Do not list the scale (1-5): write one score per context.

## Response format (JSON)
{"scores": [{slots}], "average": average_score, "reasoning": "why"}

Output valid JSON only.""",
}


#: largest |reported - recomputed| average that is not a mismatch.
AVERAGE_TOLERANCE = 0.005


def read(r: Dict[str, Any], units: Sequence[str]) -> Verdict:
    ints: List[int] = r["scores"]
    mean = sum(ints) / len(ints)
    return Verdict(mean, None, {"scores": ints, "average": mean, "average_reported": r["average"],
                                "average_mismatch": abs(r["average"] - mean) > AVERAGE_TOLERANCE + 1e-12,
                                "reasoning": r["reasoning"]})


def stub(x: stubs.StubInputs) -> Dict[str, Any]:
    scores = [stubs.band(stubs.overlap(x.question, c), (0.5, 0.35, 0.2, 0.1)) for c in x.units]
    return {"scores": scores, "average": round(sum(scores) / len(scores), 2) if scores else 0, "reasoning": stubs.WHY}


def _units(score: Optional[float], label: Optional[str], details: Mapping[str, Any]) -> List[int]:
    return [int(s) for s in details.get("scores", [])]


METRIC = JudgeMetric(
    name="context_relevance", question="how relevant is each retrieved context to the question (1-5)",
    needs=("contexts",), applies_to="all", labels=(), score_range=(1.0, 5.0), unit_scale=(1, 2, 3, 4, 5), ordinal=True,
    prompts=Prompts(TEMPLATES, version="2"),
    contract=Contract((Field("scores", PerUnit(Levels((1, 2, 3, 4, 5)), "contexts")), Field("average", Number()),
                       REASONING), score="scores"),
    reader=read, stub=stub, pass_rule=lambda s, label, d: max(d.get("scores") or [0]) >= 4,
    pass_text="some context scores 4 or 5", unit_rule=_units, allowance=Allowance(base=60, per_unit=8),
    order=10, default_for=("score", "check"), evidence_twin=("evidence_hit", "passed"), average_check=True)
